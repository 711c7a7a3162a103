/* The TLS policy on libmicrohttpd listeners and libcurl clients
 * (http_tls.h). */
#include "http_tls.h"

#include "http_in_util.h"

#include <gnutls/gnutls.h>
#include <stdlib.h>
#include <string.h>

int http_tls_priority(const ceb_host *host, ceb_instance *inst,
                      const ceb_config *cfg, const char *prefix, char **out) {
  char buf[1024];
  char key[64];
  snprintf(key, sizeof key, "%stls.priority", prefix);
  *out = NULL;
  if (ceb_tls_priority(cfg, prefix, buf, sizeof buf) != CEB_OK) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "%s (%s): longer than %zu bytes", key,
            ceb_config_origin(cfg, key), sizeof buf - 64);
    return CEB_ECONFIG;
  }
  /* Checked here so that a typo is a config error naming the key, not a
   * listener that fails to start with libmicrohttpd's generic message. */
  gnutls_priority_t p;
  const char *at = NULL;
  int rc = gnutls_priority_init(&p, buf, &at);
  if (rc != GNUTLS_E_SUCCESS) {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "%s (%s): GnuTLS refuses the priority string near '%.40s': %s", key,
            ceb_config_origin(cfg, key), at ? at : buf, gnutls_strerror(rc));
    return CEB_ECONFIG;
  }
  gnutls_priority_deinit(p);
  *out = strdup(buf);
  return *out ? CEB_OK : CEB_ENOMEM;
}

#define PEM_MAX (1024 * 1024)

static int read_pem(const ceb_host *host, ceb_instance *inst,
                    const ceb_config *cfg, const char *prefix, const char *name,
                    char **out) {
  char key[64];
  snprintf(key, sizeof key, "%s%s", prefix, name);
  const char *path = ceb_config_str(cfg, key);
  *out = NULL;
  if (!path) return CEB_OK;
  int st = http_file_read(path, PEM_MAX, out, NULL);
  if (st == CEB_OK) return CEB_OK;
  CEB_LOG(host, inst, CEB_LOG_ERROR, "%s (%s): cannot read %s: %s", key,
          ceb_config_origin(cfg, key), path, ceb_strerror(st));
  return st == CEB_ENOMEM ? CEB_ENOMEM : CEB_ECONFIG;
}

int http_tls_listener_load(const ceb_host *host, ceb_instance *inst,
                           const ceb_config *cfg, const char *prefix,
                           http_tls_listener *t) {
  memset(t, 0, sizeof *t);
  int st;
  if ((st = read_pem(host, inst, cfg, prefix, "tls.cert", &t->cert)) !=
          CEB_OK ||
      (st = read_pem(host, inst, cfg, prefix, "tls.key", &t->key)) != CEB_OK ||
      (st = read_pem(host, inst, cfg, prefix, "tls.client_ca",
                     &t->client_ca)) != CEB_OK ||
      (st = http_tls_priority(host, inst, cfg, prefix, &t->priority)) != CEB_OK)
    return st;
  if (!t->cert != !t->key || (t->client_ca && !t->cert)) {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "%stls.cert and %stls.key go together; %stls.client_ca needs "
            "them",
            prefix, prefix, prefix);
    return CEB_ECONFIG;
  }
  return CEB_OK;
}

void http_tls_listener_free(http_tls_listener *t) {
  if (!t) return;
  if (t->key) {
    memset(t->key, 0, strlen(t->key));
    free(t->key);
  }
  free(t->cert);
  free(t->client_ca);
  free(t->priority);
  memset(t, 0, sizeof *t);
}

void http_tls_listener_options(const http_tls_listener *t, unsigned *flags,
                               struct MHD_OptionItem *opts, size_t *n) {
  if (!t->cert) return;
  *flags |= MHD_USE_TLS;
  opts[(*n)++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, t->cert};
  opts[(*n)++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, t->key};
  if (t->client_ca)
    opts[(*n)++] =
        (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_TRUST, 0, t->client_ca};
  /* without it GnuTLS's NORMAL applies: TLS 1.0 and static RSA */
  opts[(*n)++] =
      (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, t->priority};
}

int http_tls_peer_verified(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (!ci || !ci->tls_session) return 0;
  gnutls_session_t session = (gnutls_session_t)ci->tls_session;
  unsigned status = 0;
  unsigned n = 0;
  if (!gnutls_certificate_get_peers(session, &n) || n == 0) return 0;
  return gnutls_certificate_verify_peers2(session, &status) == 0 && status == 0;
}

static char *dup_key(const ceb_config *cfg, const char *prefix,
                     const char *name, int *oom) {
  char key[64];
  snprintf(key, sizeof key, "%s%s", prefix, name);
  const char *v = ceb_config_str(cfg, key);
  if (!v || !*v) return NULL;
  char *c = strdup(v);
  if (!c) *oom = 1;
  return c;
}

int http_tls_client_load(http_tls_client *t, const ceb_config *cfg,
                         const char *prefix) {
  int oom = 0;
  memset(t, 0, sizeof *t);
  t->min_version = ceb_tls_min_version(cfg, prefix);
  t->ciphers = dup_key(cfg, prefix, "tls.ciphers", &oom);
  t->ciphersuites = dup_key(cfg, prefix, "tls.ciphersuites", &oom);
  t->ca_file = dup_key(cfg, prefix, "tls.ca_file", &oom);
  t->client_cert = dup_key(cfg, prefix, "tls.client_cert", &oom);
  t->client_key = dup_key(cfg, prefix, "tls.client_key", &oom);
  if (!oom) return CEB_OK;
  http_tls_client_free(t);
  return CEB_ENOMEM;
}

void http_tls_client_free(http_tls_client *t) {
  if (!t) return;
  free(t->ciphers);
  free(t->ciphersuites);
  free(t->ca_file);
  free(t->client_cert);
  free(t->client_key);
  memset(t, 0, sizeof *t);
}

CURLcode http_tls_client_apply(CURL *e, const http_tls_client *t) {
  CURLcode rc;
#define TRY(opt, val)                                                          \
  if ((rc = curl_easy_setopt(e, opt, val)) != CURLE_OK) return rc
  TRY(CURLOPT_SSL_VERIFYPEER, 1L);
  TRY(CURLOPT_SSL_VERIFYHOST, 2L);
  /* The minimum is ours, not the TLS library's: a cipher list lowering
   * OpenSSL's security level (@SECLEVEL=0) must not bring TLS 1.0 back. */
  TRY(CURLOPT_SSLVERSION,
      t->min_version >= 13 ? CURL_SSLVERSION_TLSv1_3 : CURL_SSLVERSION_TLSv1_2);
  TRY(CURLOPT_SSL_CIPHER_LIST,
      t->ciphers ? t->ciphers : CEB_TLS_CIPHERS_DEFAULT);
  if (t->ciphersuites) TRY(CURLOPT_TLS13_CIPHERS, t->ciphersuites);
  if (t->ca_file) TRY(CURLOPT_CAINFO, t->ca_file);
  if (t->client_cert) TRY(CURLOPT_SSLCERT, t->client_cert);
  if (t->client_key) TRY(CURLOPT_SSLKEY, t->client_key);
#undef TRY
  return CURLE_OK;
}
