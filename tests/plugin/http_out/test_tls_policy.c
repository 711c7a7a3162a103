/* The webhook sink's TLS policy against OpenSSL servers that offer only
 * what each case names (security level 0 on the server, so a refusal is
 * the sink's): a server with only static RSA key exchange (no forward
 * secrecy) is refused, also for the OAuth2 token request; a TLS 1.1-only
 * server is refused even when tls.ciphers lowers OpenSSL's security level
 * (the minimum version is set explicitly, not left to OpenSSL); TLS 1.2
 * with ECDHE works; tls.min_version = 1.3 refuses a TLS 1.2 server and
 * takes a TLS 1.3 one. */
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "ceb_test_tls.h"
#include "sink_fixture.h"

static char crt[512], key[512];

/* Delivers one event through a sink with kv and returns its outcome
 * (-100 when it did not settle). */
static int deliver(const char *const *kv) {
  sink_fx fx;
  int rc = fx_init(&fx, kv);
  CHECK_INT(rc, CEB_OK);
  int outcome = -100;
  if (rc == CEB_OK) {
    ceb_event *ev = fx_event("evt-tls-policy", "{\"x\":1}");
    fx_deliver(&fx, ev, 1, NULL);
    ceb_fake_settle st;
    if (fx_settle(&fx, 0, &st, 15000)) outcome = (int)st.info.outcome;
    ceb_event_unref(ev);
  }
  fx_free(&fx);
  return outcome;
}

/* One server offering versions lo..hi and ciphers; deliver with the extra
 * sink keys; returns the outcome and the server's completed handshakes. */
static int case_run(int lo, int hi, const char *ciphers, const char *k1,
                    const char *v1, int *handshakes) {
  ceb_tls_srv *srv = ceb_tls_srv_start(crt, key, lo, hi, ciphers, "{}");
  CHECK(srv != NULL);
  if (!srv) return -100;
  char url[128];
  snprintf(url, sizeof url, "https://127.0.0.1:%d/hook", ceb_tls_srv_port(srv));
  const char *kv[] = {"url", url, "tls.ca_file", crt, k1, v1, NULL};
  int outcome = deliver(kv);
  *handshakes = ceb_tls_srv_handshakes(srv);
  ceb_tls_srv_stop(srv);
  return outcome;
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  char *dir = ceb_test_tmpdir("http-out-tls-policy");
  CHECK_INT(ceb_tls_rsa_cert(dir), 0);
  snprintf(crt, sizeof crt, "%s/rsa.crt", dir);
  snprintf(key, sizeof key, "%s/rsa.key", dir);
  int hs = -1;

  /* works: TLS 1.2 with ECDHE */
  CHECK_INT(case_run(TLS1_2_VERSION, TLS1_2_VERSION,
                     "ECDHE-RSA-AES128-GCM-SHA256", NULL, NULL, &hs),
            CEB_ACK);
  CHECK_INT(hs, 1);
  /* static RSA only: no forward secrecy, refused */
  CHECK_INT(case_run(TLS1_2_VERSION, TLS1_2_VERSION,
                     "AES128-GCM-SHA256:AES128-SHA", NULL, NULL, &hs),
            CEB_RETRY);
  CHECK_INT(hs, 0);
  /* TLS 1.1 only: refused, also with a cipher list at security level 0 */
  CHECK_INT(
      case_run(TLS1_1_VERSION, TLS1_1_VERSION, "DEFAULT", NULL, NULL, &hs),
      CEB_RETRY);
  CHECK_INT(hs, 0);
  CHECK_INT(case_run(TLS1_1_VERSION, TLS1_1_VERSION, "DEFAULT", "tls.ciphers",
                     "DEFAULT:!kRSA@SECLEVEL=0", &hs),
            CEB_RETRY);
  CHECK_INT(hs, 0);
  CHECK_INT(case_run(TLS1_VERSION, TLS1_VERSION, "DEFAULT", "tls.ciphers",
                     "DEFAULT:!kRSA@SECLEVEL=0", &hs),
            CEB_RETRY);
  CHECK_INT(hs, 0);
  /* tls.min_version = 1.3 */
  CHECK_INT(case_run(TLS1_2_VERSION, TLS1_2_VERSION,
                     "ECDHE-RSA-AES128-GCM-SHA256", "tls.min_version", "1.3",
                     &hs),
            CEB_RETRY);
  CHECK_INT(hs, 0);
  CHECK_INT(case_run(TLS1_2_VERSION, TLS1_3_VERSION,
                     "ECDHE-RSA-AES128-GCM-SHA256", "tls.min_version", "1.3",
                     &hs),
            CEB_ACK);
  CHECK_INT(hs, 1);
  /* an operator may allow static RSA for an old partner */
  CHECK_INT(case_run(TLS1_2_VERSION, TLS1_2_VERSION, "AES128-GCM-SHA256",
                     "tls.ciphers", "DEFAULT", &hs),
            CEB_ACK);
  CHECK_INT(hs, 1);

  /* The OAuth2 token request follows the same policy: a static-RSA-only
   * token endpoint is refused and no event is sent without a token. */
  ceb_tls_srv *hook =
      ceb_tls_srv_start(crt, key, TLS1_2_VERSION, TLS1_3_VERSION, NULL, "{}");
  ceb_tls_srv *idp = ceb_tls_srv_start(
      crt, key, TLS1_2_VERSION, TLS1_2_VERSION, "AES128-GCM-SHA256",
      "{\"access_token\":\"t\",\"token_type\":\"bearer\",\"expires_in\":600}");
  CHECK(hook && idp);
  if (hook && idp) {
    char url[128], token[128];
    snprintf(url, sizeof url, "https://127.0.0.1:%d/hook",
             ceb_tls_srv_port(hook));
    snprintf(token, sizeof token, "https://127.0.0.1:%d/token",
             ceb_tls_srv_port(idp));
    const char *kv[] = {"url",
                        url,
                        "tls.ca_file",
                        crt,
                        "oauth2.token_url",
                        token,
                        "oauth2.client_id",
                        "c1",
                        "oauth2.client_secret",
                        "pw",
                        NULL};
    CHECK(deliver(kv) != CEB_ACK);
    CHECK_INT(ceb_tls_srv_handshakes(idp), 0);
    CHECK_INT(ceb_tls_srv_requests(hook), 0);
  }
  ceb_tls_srv_stop(hook);
  ceb_tls_srv_stop(idp);

  ceb_test_rmtree(dir);
  free(dir);
  curl_global_cleanup();
  return ceb_test_done("plugin_http_out_tls_policy");
}
