/* Interop with the Standard Webhooks reference library (npm standardwebhooks,
 * pinned by package-lock.json; `npm ci` runs at test time, so an unreachable
 * registry fails the test). The webhook sink delivers in binary, structured
 * and batch mode, signing with two secrets on its real clock; the receiver
 * saves the requests and `node verify.js check` verifies every one with each
 * secret. The other way round, node signs and http_webhook_verify checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "http_webhook_sig.h"
#include "sink_fixture.h"
#include "swh_interop.h"

#define NODE_TIMEOUT "120"
#define SECRET_A "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SECRET_B "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"

/* Delivers n events through a sink in `mode`; all must be acknowledged. */
static void deliver_mode(rx_server *rx, const char *mode, int n) {
  char url[128];
  const char *kv[] = {"url",
                      fx_url(url, sizeof(url), rx_port(rx), "/hook"),
                      "allow_insecure_http",
                      "true",
                      "mode",
                      mode,
                      "batch.max",
                      "4",
                      "batch.wait",
                      "100ms",
                      "webhook.secrets",
                      SECRET_A " " SECRET_B,
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  for (int i = 0; i < n; i++) {
    char id[64], data[128];
    snprintf(id, sizeof(id), "%s-%d", mode, i);
    snprintf(data, sizeof(data), "{\"mode\":\"%s\",\"i\":%d,\"t\":\"é ✓\"}",
             mode, i);
    ceb_event *ev = fx_event(id, data);
    fx_deliver(&fx, ev, 1, NULL);
    ceb_event_unref(ev);
  }
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, (size_t)n - 1, &st, 10000));
  for (int i = 0; i < n; i++) {
    CHECK(ceb_fake_settle_get(fx.fake, (size_t)i, &st));
    CHECK_INT(st.info.outcome, CEB_ACK);
  }
  fx_free(&fx);
}

static void we_check_node_signatures(void) {
  const char *cmd = "cd '" CEB_HTTP_OUT_NPM_DIR "' && timeout " NODE_TIMEOUT
                    " node verify.js sign '" SECRET_A "' 5";
  FILE *pp = popen(cmd, "r");
  CHECK(pp != NULL);
  if (!pp) return;
  const char *secret = SECRET_A, *other = SECRET_B;
  http_webhook_keys *keys = NULL, *wrong = NULL;
  CHECK_INT(http_webhook_keys_new(&secret, 1, &keys, NULL), CEB_OK);
  CHECK_INT(http_webhook_keys_new(&other, 1, &wrong, NULL), CEB_OK);
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof(line), pp)) {
    json_error_t jerr;
    json_t *j = json_loads(line, 0, &jerr);
    CHECK_MSG(j != NULL, "node output: %s", line);
    if (!j) continue;
    const char *id = json_string_value(json_object_get(j, "id"));
    const char *ts = json_string_value(json_object_get(j, "timestamp"));
    const char *body = json_string_value(json_object_get(j, "body"));
    const char *sig = json_string_value(json_object_get(j, "signature"));
    CHECK(id && ts && body && sig);
    if (id && ts && body && sig) {
      CHECK_INT(http_webhook_verify(keys, id, ts, sig, body, strlen(body),
                                    (int64_t)time(NULL), 300),
                CEB_OK);
      CHECK_INT(http_webhook_verify(wrong, id, ts, sig, body, strlen(body),
                                    (int64_t)time(NULL), 300),
                CEB_EAUTH);
      /* and our signature for the same input is byte-identical */
      char *ours = NULL;
      CHECK_INT(http_webhook_sign(keys, id, ts, body, strlen(body), &ours),
                CEB_OK);
      CHECK_STR(ours, sig);
      free(ours);
    }
    n++;
    json_decref(j);
  }
  CHECK_INT(pclose(pp), 0);
  CHECK_INT(n, 5);
  http_webhook_keys_free(keys);
  http_webhook_keys_free(wrong);
}

int main(void) {
  int rc = swh_npm_ci(CEB_HTTP_OUT_NPM_DIR);
  CHECK_INT(rc, 0);
  if (rc != 0) return ceb_test_done("interop_http_out");
  rx_server *rx = rx_start(swh_answer_204, NULL);
  CHECK(rx != NULL);
  if (!rx) return ceb_test_done("interop_http_out");
  deliver_mode(rx, "binary", 3);
  deliver_mode(rx, "structured", 3);
  deliver_mode(rx, "batch", 6); /* a full batch of 4 and one of 2 */
  size_t nreq = rx_count(rx);
  CHECK_INT(nreq, 8);
  char *dir = ceb_test_tmpdir("http-out-interop");
  char file[512];
  snprintf(file, sizeof(file), "%s/requests.json", dir);
  CHECK_INT(swh_save_requests(rx, file), 0);
  /* every request verified with each of the two secrets; the forgeries of
   * each request (stranger's key, altered body) rejected */
  long verified, rejected;
  swh_node_check(CEB_HTTP_OUT_NPM_DIR, file, SECRET_A " " SECRET_B, &verified,
                 &rejected);
  CHECK_INT(verified, 2 * nreq);
  CHECK_INT(rejected, 2 * nreq);
  we_check_node_signatures();
  remove(file);
  rmdir(dir);
  free(dir);
  rx_stop(rx);
  return ceb_test_done("interop_http_out");
}
