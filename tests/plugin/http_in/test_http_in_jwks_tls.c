/* The JWKS fetch follows the TLS policy (oauth2.tls.*): an issuer that
 * offers only static RSA key exchange (no forward secrecy) or only TLS 1.1
 * is refused, so no key is loaded and tokens get 401; an issuer with TLS
 * 1.2 and ECDHE works (oauth2.tls.ca_file trusts its certificate). The
 * issuers are OpenSSL servers at security level 0, so each refusal is the
 * bridge's. */
#include <curl/curl.h>
#include <openssl/ssl.h>
#include <stdlib.h>

#include "ceb_test_tls.h"
#include "hin_harness.h"

static long post(hin_env *e, const char *tok) {
  char authz[4096];
  snprintf(authz, sizeof authz, "Authorization: Bearer %s", tok);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              authz, NULL};
  hin_resp r = hin_post(e, hdrs,
                        "{\"specversion\":\"1.0\",\"id\":\"j\",\"source\":"
                        "\"urn:t\",\"type\":\"nl.edu.j\"}");
  long st = r.status;
  hin_resp_free(&r);
  return st;
}

/* Status of a request with a valid token when the issuer offers versions
 * lo..hi and ciphers; *handshakes gets the issuer's completed handshakes. */
static long with_issuer(const char *crt, const char *key, const char *jwks,
                        const char *tok, int lo, int hi, const char *ciphers,
                        int *handshakes) {
  ceb_tls_srv *srv = ceb_tls_srv_start(crt, key, lo, hi, ciphers, jwks);
  CHECK(srv != NULL);
  if (!srv) return -1;
  char url[160], ca[600];
  snprintf(url, sizeof url, "oauth2.jwks_url=https://127.0.0.1:%d/certs",
           ceb_tls_srv_port(srv));
  snprintf(ca, sizeof ca, "oauth2.tls.ca_file=%s", crt);
  const char *const cfg[] = {url, ca, "oauth2.audience=cebridge", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  long st = e ? post(e, tok) : -1;
  hin_stop(e);
  *handshakes = ceb_tls_srv_handshakes(srv);
  ceb_tls_srv_stop(srv);
  return st;
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  char *dir = ceb_test_tmpdir("http_in_jwks_tls");
  CHECK_INT(ceb_tls_rsa_cert(dir), 0);
  char crt[512], key[512], path[512];
  snprintf(crt, sizeof crt, "%s/rsa.crt", dir);
  snprintf(key, sizeof key, "%s/rsa.key", dir);
  snprintf(path, sizeof path, "%s/jwks.json", dir);
  hin_issuer *iss = hin_issuer_new();
  CHECK(iss != NULL);
  CHECK_INT(hin_issuer_write_jwks(iss, path, "RS256", 0), CEB_OK);
  char *jwks = ceb_test_read_file(path, NULL);
  char *claims = hin_claims("partner-a", 600, -10, NULL, NULL);
  char *tok = hin_token(iss, "RS256", "rsa1", claims);
  CHECK(jwks && tok);
  int hs = -1;
  CHECK_INT(with_issuer(crt, key, jwks, tok, TLS1_2_VERSION, TLS1_3_VERSION,
                        "ECDHE-RSA-AES128-GCM-SHA256", &hs),
            202);
  CHECK(hs >= 1);
  CHECK_INT(with_issuer(crt, key, jwks, tok, TLS1_2_VERSION, TLS1_2_VERSION,
                        "AES128-GCM-SHA256:AES128-SHA", &hs),
            401);
  CHECK_INT(hs, 0);
  CHECK_INT(with_issuer(crt, key, jwks, tok, TLS1_1_VERSION, TLS1_1_VERSION,
                        "DEFAULT", &hs),
            401);
  CHECK_INT(hs, 0);
  free(claims);
  free(tok);
  free(jwks);
  hin_issuer_free(iss);
  ceb_test_rmtree(dir);
  free(dir);
  curl_global_cleanup();
  return ceb_test_done("test_http_in_jwks_tls");
}
