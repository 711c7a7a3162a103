/* TLS in the webhook sink: verification is always on (an unknown CA fails
 * as a network error, no request is made), tls.ca_file trusts a private CA,
 * tls.client_cert/tls.client_key present a client certificate, and the
 * OAuth2 token fetch uses the same TLS settings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "ceb_test_rx.h"
#include "sink_fixture.h"
#include "tls_cert.h"

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)index;
  if (strcmp(req->path, "/token") == 0) {
    resp->len = (size_t)snprintf(resp->body, sizeof(resp->body),
                                 "{\"access_token\":\"tls-tok\","
                                 "\"token_type\":\"bearer\","
                                 "\"expires_in\":600}");
    return;
  }
  const char *auth = ceb_headers_get(&req->headers, "Authorization");
  resp->status = !auth || strcmp(auth, "Bearer tls-tok") == 0 ? 200 : 401;
}

static int deliver(const char *const *kv, ceb_fake_settle *st) {
  sink_fx fx;
  int rc = fx_init(&fx, kv);
  CHECK_INT(rc, CEB_OK);
  int got = 0;
  if (rc == CEB_OK) {
    ceb_event *ev = fx_event("evt-tls", "{\"secure\":true}");
    fx_deliver(&fx, ev, 1, NULL);
    got = fx_settle(&fx, 0, st, 8000);
    ceb_event_unref(ev);
  }
  fx_free(&fx);
  return got;
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  tls_pki pki;
  CHECK_INT(tls_pki_new(&pki), 0);
  char *dir = ceb_test_tmpdir("http-out-tls");
  char *ca = tls_write(dir, "ca.pem", pki.ca_cert);
  char *ccert = tls_write(dir, "client.pem", pki.client_cert);
  char *ckey = tls_write(dir, "client.key", pki.client_key);
  CHECK(ca && ccert && ckey);
  rx_server *rx =
      rx_start_tls(respond, NULL, pki.server_key, pki.server_cert, pki.ca_cert);
  CHECK(rx != NULL);
  if (!rx || !ca || !ccert || !ckey)
    return ceb_test_done("plugin_http_out_tls");
  char url[128], local[128], token[128];
  snprintf(url, sizeof(url), "https://127.0.0.1:%d/hook", rx_port(rx));
  snprintf(local, sizeof(local), "https://localhost:%d/hook", rx_port(rx));
  snprintf(token, sizeof(token), "https://127.0.0.1:%d/token", rx_port(rx));
  ceb_fake_settle st;

  /* Unknown CA: refused by verification before any request. */
  const char *untrusted[] = {"url", url, NULL};
  CHECK(deliver(untrusted, &st));
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_STR(st.reason, "network");
  CHECK_INT(rx_count(rx), 0);

  const char *trusted[] = {"url", url, "tls.ca_file", ca, NULL};
  CHECK(deliver(trusted, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(rx_count(rx), 1);
  const rx_request *r = rx_get(rx, 0);
  CHECK(r && r->client_certs == 0);

  const char *by_name[] = {"url", local, "tls.ca_file", ca, NULL};
  CHECK(deliver(by_name, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);

  const char *mtls[] = {
      "url", url, "tls.ca_file", ca, "tls.client_cert", ccert, "tls.client_key",
      ckey,  NULL};
  size_t before = rx_count(rx);
  CHECK(deliver(mtls, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);
  r = rx_get(rx, before);
  CHECK(r && r->client_certs >= 1);

  const char *half[] = {"url", url, "tls.client_cert", ccert, NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, half), CEB_ECONFIG);
  fx_free(&fx);

  /* The token endpoint is reached with the same TLS settings. */
  const char *oauth[] = {"url",
                         url,
                         "tls.ca_file",
                         ca,
                         "oauth2.token_url",
                         token,
                         "oauth2.client_id",
                         "c1",
                         "oauth2.client_secret",
                         "pw",
                         NULL};
  before = rx_count(rx);
  CHECK(deliver(oauth, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(rx_count(rx) - before, 2);
  r = rx_get(rx, before + 1);
  CHECK(r && strcmp(ceb_headers_get(&r->headers, "Authorization"),
                    "Bearer tls-tok") == 0);

  rx_stop(rx);
  remove(ca);
  remove(ccert);
  remove(ckey);
  rmdir(dir);
  free(ca);
  free(ccert);
  free(ckey);
  free(dir);
  tls_pki_free(&pki);
  curl_global_cleanup();
  return ceb_test_done("plugin_http_out_tls");
}
