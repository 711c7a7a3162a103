/* TLS on the admin API (ceb_admin_tls.h). */
#include "admin/ceb_admin_tls.h"

#include <errno.h>
#include <gnutls/gnutls.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>
#include <ceb/tls.h>

#define PEM_MAX (1024 * 1024)

/* The file's text (at most PEM_MAX bytes), malloc'd; NULL with err. */
static char *read_pem(const char *key, const char *path, const char *origin,
                      char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  char *buf = f ? malloc(PEM_MAX + 1) : NULL;
  size_t n = buf ? fread(buf, 1, PEM_MAX + 1, f) : 0;
  if (f) fclose(f);
  if (!buf || n == 0 || n > PEM_MAX) {
    snprintf(err, errlen, "%s (%s): cannot read %s%s", key, origin, path,
             !f            ? ""
             : n > PEM_MAX ? ": larger than 1 MiB"
                           : ": empty");
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  return buf;
}

/* The priority string for cfg into out; CEB_OK or CEB_ECONFIG with err. */
static int priority(const ceb_config *cfg, char *out, size_t size, char *err,
                    size_t errlen) {
  if (ceb_tls_priority(cfg, "admin.", out, size) != CEB_OK) {
    snprintf(err, errlen, "admin.tls.priority is too long");
    return CEB_ECONFIG;
  }
  /* checked with GnuTLS so that a typo names the key, not a listener that
   * fails to start with libmicrohttpd's generic message */
  gnutls_priority_t p;
  const char *at = NULL;
  int rc = gnutls_priority_init(&p, out, &at);
  if (rc != GNUTLS_E_SUCCESS) {
    snprintf(err, errlen,
             "admin.tls.priority: GnuTLS refuses the priority string near "
             "'%.40s': %s",
             at ? at : out, gnutls_strerror(rc));
    return CEB_ECONFIG;
  }
  gnutls_priority_deinit(p);
  return CEB_OK;
}

int ceb_admin_tls_check(const ceb_bridge_cfg *b, const char **origin, char *err,
                        size_t errlen) {
  const char *cert = b->admin.tls_cert;
  const char *pkey = b->admin.tls_key;
  if (!cert != !pkey) {
    *origin = cert ? b->admin.tls_cert_origin : b->admin.tls_key_origin;
    snprintf(err, errlen, "admin.tls.cert and admin.tls.key go together");
    return CEB_ECONFIG;
  }
  char prio[1024];
  *origin = b->admin.tls_priority_origin;
  return priority(b->cfg, prio, sizeof prio, err, errlen);
}

int ceb_admin_tls_load(const ceb_bridge_cfg *b, ceb_admin_tls *t, char *err,
                       size_t errlen) {
  memset(t, 0, sizeof *t);
  const char *origin = NULL;
  char why[400];
  if (ceb_admin_tls_check(b, &origin, why, sizeof why) != CEB_OK) {
    snprintf(err, errlen, "%s (%s)", why, origin);
    return CEB_ECONFIG;
  }
  if (!b->admin.tls_cert) return CEB_OK;
  char prio[1024];
  if (priority(b->cfg, prio, sizeof prio, err, errlen) != CEB_OK)
    return CEB_ECONFIG;
  t->priority = strdup(prio);
  if (!t->priority) return CEB_ENOMEM;
  if (!(t->cert = read_pem("admin.tls.cert", b->admin.tls_cert,
                           b->admin.tls_cert_origin, err, errlen)) ||
      !(t->key = read_pem("admin.tls.key", b->admin.tls_key,
                          b->admin.tls_key_origin, err, errlen))) {
    ceb_admin_tls_free(t);
    return CEB_ECONFIG;
  }
  return CEB_OK;
}

void ceb_admin_tls_free(ceb_admin_tls *t) {
  if (!t) return;
  if (t->key) OPENSSL_cleanse(t->key, strlen(t->key));
  free(t->key);
  free(t->cert);
  free(t->priority);
  memset(t, 0, sizeof *t);
}

int ceb_admin_tls_pin(const ceb_bridge_cfg *b, const char *base_dir, char *pin,
                      size_t pinlen, char *err, size_t errlen) {
  pin[0] = '\0';
  const char *value = b->admin.tls_cert;
  if (!value || !*value) return 0;
  char path[4096];
  if (value[0] != '/' && base_dir)
    snprintf(path, sizeof path, "%s/%s", base_dir, value);
  else
    snprintf(path, sizeof path, "%s", value);
  FILE *f = fopen(path, "r");
  X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
  if (f) fclose(f);
  unsigned char *spki = NULL;
  int len = x ? i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &spki) : -1;
  X509_free(x);
  unsigned char md[32];
  unsigned mdlen = 0;
  int ok = len > 0 &&
           EVP_Digest(spki, (size_t)len, md, &mdlen, EVP_sha256(), NULL) == 1;
  OPENSSL_free(spki);
  char b64[64];
  if (!ok || EVP_EncodeBlock((unsigned char *)b64, md, (int)mdlen) <= 0) {
    snprintf(err, errlen, "admin.tls.cert %s: no PEM certificate to trust",
             path);
    return -1;
  }
  snprintf(pin, pinlen, "sha256//%s", b64);
  return 1;
}
