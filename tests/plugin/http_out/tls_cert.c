#include "tls_cert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static char *bio_string(BIO *bio) {
  char *data = NULL;
  long n = BIO_get_mem_data(bio, &data);
  char *s = n > 0 ? strndup(data, (size_t)n) : NULL;
  BIO_free(bio);
  return s;
}

static char *key_pem(EVP_PKEY *k) {
  BIO *bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, k, NULL, NULL, 0, NULL, NULL);
  return bio_string(bio);
}

static char *cert_pem(X509 *c) {
  BIO *bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, c);
  return bio_string(bio);
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
  X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
  if (!ext) return -1;
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok ? 0 : -1;
}

static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer,
                       EVP_PKEY *issuer_key, long serial, int is_ca,
                       const char *san) {
  X509 *c = X509_new();
  X509_set_version(c, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c), serial);
  X509_gmtime_adj(X509_getm_notBefore(c), -3600);
  X509_gmtime_adj(X509_getm_notAfter(c), 24 * 3600);
  X509_set_pubkey(c, key);
  X509_NAME *name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             (const unsigned char *)cn, -1, -1, 0);
  X509_set_issuer_name(c, issuer ? X509_get_subject_name(issuer) : name);
  X509 *iss = issuer ? issuer : c;
  int rc = add_ext(c, iss, NID_basic_constraints,
                   is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  if (rc == 0 && is_ca)
    rc = add_ext(c, iss, NID_key_usage, "critical,keyCertSign,cRLSign");
  if (rc == 0 && !is_ca)
    rc = add_ext(c, iss, NID_ext_key_usage, "serverAuth,clientAuth");
  if (rc == 0 && san) rc = add_ext(c, iss, NID_subject_alt_name, san);
  if (rc != 0 || !X509_sign(c, issuer_key ? issuer_key : key, EVP_sha256())) {
    X509_free(c);
    return NULL;
  }
  return c;
}

int tls_pki_new(tls_pki *pki) {
  memset(pki, 0, sizeof(*pki));
  EVP_PKEY *ca_key = EVP_EC_gen("P-256");
  EVP_PKEY *srv_key = EVP_EC_gen("P-256");
  EVP_PKEY *cli_key = EVP_EC_gen("P-256");
  X509 *ca = ca_key
                 ? make_cert(ca_key, "cebridge test CA", NULL, NULL, 1, 1, NULL)
                 : NULL;
  X509 *srv = ca ? make_cert(srv_key, "localhost", ca, ca_key, 2, 0,
                             "IP:127.0.0.1,DNS:localhost")
                 : NULL;
  X509 *cli =
      ca ? make_cert(cli_key, "cebridge-client", ca, ca_key, 3, 0, NULL) : NULL;
  int rc = -1;
  if (ca && srv && cli) {
    pki->ca_cert = cert_pem(ca);
    pki->server_cert = cert_pem(srv);
    pki->server_key = key_pem(srv_key);
    pki->client_cert = cert_pem(cli);
    pki->client_key = key_pem(cli_key);
    rc = pki->ca_cert && pki->server_cert && pki->server_key &&
                 pki->client_cert && pki->client_key
             ? 0
             : -1;
  }
  X509_free(ca);
  X509_free(srv);
  X509_free(cli);
  EVP_PKEY_free(ca_key);
  EVP_PKEY_free(srv_key);
  EVP_PKEY_free(cli_key);
  return rc;
}

void tls_pki_free(tls_pki *pki) {
  free(pki->ca_cert);
  free(pki->server_cert);
  free(pki->server_key);
  free(pki->client_cert);
  free(pki->client_key);
  memset(pki, 0, sizeof(*pki));
}

char *tls_write(const char *dir, const char *name, const char *pem) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *path = malloc(n);
  snprintf(path, n, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f || fputs(pem, f) < 0) {
    if (f) fclose(f);
    free(path);
    return NULL;
  }
  fclose(f);
  return path;
}
