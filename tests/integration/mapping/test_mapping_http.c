/* Mappings end to end through the real `cebridge run`, HTTP side:
 *
 * 1. meemoo's example webhook (tests/data/meemoo/, the guide's worked
 *    example) through the intermediary with the ready mapping
 *    contrib/mappings/meemoo-webhook.jq: the guide's signature verifies
 *    with our verifier at its own time; sent as it is today it is stale
 *    (401, before any mapping); the same body and webhook-id signed now
 *    with the guide's secret is 202 and arrives at a webhook receiver as
 *    the expected CloudEvent, byte for byte; meemoo's retry of it (same
 *    webhook-id) is a duplicate; a signed body that is no meemoo payload
 *    is 400 mapping.failed.
 * 2. The error paths of a program, each with its answer: it throws (400),
 *    outputs a non-object (400), an invalid CloudEvent (422), loops
 *    forever (400, stopped at mapping.timeout); the good requests around
 *    them arrive, and the receiver has exactly those (counted after the
 *    bridge drained and stopped). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "http_webhook_sig.h"
#include "map_test_util.h"
#include "ceb_test_rx.h"

#define MEEMOO_SECRET "whsec_YWxvbmd3ZWJob29rbWVlbW9vc2VjcmV0"
#define MEEMOO_ID "msg_333a3NGSYKk1vyFtMgj9Qy8gm3y"
#define MEEMOO_TS "1758548009"
#define MEEMOO_SIG "v1,cVueLJYV5JY6qXHw3+MIHbZCPHHnX7N7jjaebaI2+5o="
#define CE_SOURCE "urn:nld:oin:00000001234567890000:systeem:meemoo"

/* What the receiver must get for the guide's webhook: the CloudEvent the
 * ready mapping makes, as the bridge journals and sends it (the JSON
 * format in the SDK's attribute order). */
static const char k_expected[] =
    "{\"specversion\":\"1.0\",\"id\":\"" MEEMOO_ID "\","
    "\"source\":\"" CE_SOURCE "\","
    "\"type\":\"nl.example.partner.meemoo.sip.archived\","
    "\"datacontenttype\":\"application/json\","
    "\"subject\":\"843e9ba457593d0edf69a24baa0babf3\","
    "\"time\":\"2025-09-03T20:26:10.344522Z\","
    "\"data\":{\"correlation_id\":\"843e9ba457593d0edf69a24baa0babf3\","
    "\"outcome\":\"success\",\"pid\":\"kdleipkyuj\"}}";

/* One program for every error path, chosen by the body's "case". */
static const char k_errors_map[] =
    "if .body.case == \"throw\" then error(\"thrown on purpose\") "
    "elif .body.case == \"nonobject\" then 42 "
    "elif .body.case == \"invalid\" then {specversion: \"1.0\", id: "
    ".body.id, type: \"nl.example.invalid\"} "
    "elif .body.case == \"loop\" then (def f: f; f) "
    "else {specversion: \"1.0\", id: .body.id, source: "
    "\"urn:nld:oin:00000001234567890000:systeem:errors\", type: "
    "\"nl.example.good\", datacontenttype: \"application/json\", data: .body} "
    "end";

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)req;
  (void)index;
  resp->status = 204;
}

static int write_conf(const char *dir, int rx_port) {
  char conf[512];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  mkdir(conf, 0700);
  const char *defs[] = {"ce_source", "\"" CE_SOURCE "\"", "type_prefix",
                        "\"nl.example.partner.\"", NULL};
  if (map_copy_ready(conf, "meemoo-webhook.jq", defs) != 0) return -1;
  char text[4096];
  snprintf(text, sizeof text,
           "[bridge]\n"
           "store = %s/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "log.format = text\n"
           "drain_timeout = 10s\n"
           "mapping.timeout = 300ms\n"
           "\n[source meemoo]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/meemoo.port\n"
           "auth = none\n"
           "webhook.secrets = " MEEMOO_SECRET "\n"
           "map = file:meemoo-webhook.jq\n"
           "\n[source errors]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/errors.port\n"
           "auth = none\n"
           "map = %s\n"
           "\n[sink partner]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:%d/hook\n"
           "allow_insecure_http = true\n"
           "mode = structured\n"
           "\n[route to-partner]\n"
           "from = meemoo, errors\n"
           "to = partner\n",
           dir, dir, dir, k_errors_map, rx_port);
  return ceb_test_write_file(conf, "00-bridge.conf", text);
}

/* POSTs body with the webhook headers id / ts / sig (NULL: not sent). */
static int post(int port, const char *id, const char *ts, const char *sig,
                const char *body, char **out) {
  char url[128], h_id[160], h_ts[64], h_sig[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  const char *hdrs[5] = {"Content-Type: application/json", NULL};
  size_t n = 1;
  if (id) {
    snprintf(h_id, sizeof h_id, "webhook-id: %s", id);
    snprintf(h_ts, sizeof h_ts, "webhook-timestamp: %s", ts);
    snprintf(h_sig, sizeof h_sig, "webhook-signature: %s", sig);
    hdrs[n++] = h_id;
    hdrs[n++] = h_ts;
    hdrs[n++] = h_sig;
  }
  hdrs[n] = NULL;
  return ceb_test_http("POST", url, hdrs, body, strlen(body), out);
}

/* Signs body as meemoo would now, with the guide's secret. */
static int post_signed_now(int port, const char *id, const char *body,
                           char **out) {
  const char *secret = MEEMOO_SECRET;
  http_webhook_keys *k = NULL;
  CHECK_INT(http_webhook_keys_new(&secret, 1, &k, NULL), CEB_OK);
  char ts[32], *sig = NULL;
  snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
  CHECK_INT(http_webhook_sign(k, id, ts, body, strlen(body), &sig), CEB_OK);
  int st = post(port, id, ts, sig ? sig : "", body, out);
  free(sig);
  http_webhook_keys_free(k);
  return st;
}

typedef struct rx_arg {
  rx_server *rx;
  size_t n;
} rx_arg;

static int port_of(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return ceb_test_wait_port_file(path, 30000);
}

static void meemoo(int port, rx_server *rx, const char *body) {
  /* the guide's signature is right, at the guide's time */
  const char *secret = MEEMOO_SECRET;
  http_webhook_keys *k = NULL;
  CHECK_INT(http_webhook_keys_new(&secret, 1, &k, NULL), CEB_OK);
  CHECK_INT(http_webhook_verify(k, MEEMOO_ID, MEEMOO_TS, MEEMOO_SIG, body,
                                strlen(body), 1758548009, 300),
            CEB_OK);
  http_webhook_keys_free(k);
  /* the guide's request today: stale, refused before any mapping */
  char *resp = NULL;
  CHECK_INT(post(port, MEEMOO_ID, MEEMOO_TS, MEEMOO_SIG, body, &resp), 401);
  free(resp);
  /* the same webhook sent now */
  resp = NULL;
  CHECK_INT(post_signed_now(port, MEEMOO_ID, body, &resp), 202);
  CHECK_STR(resp ? resp : "",
            "{\"status\":\"accepted\",\"accepted\":1,\"duplicates\":0}");
  free(resp);
  CHECK(rx_wait(rx, 1, 30000));
  if (rx_count(rx) >= 1) {
    const rx_request *r = rx_get(rx, 0);
    CHECK_STR(r->body, k_expected);
    CHECK_STR(ceb_headers_get(&r->headers, "Content-Type"),
              "application/cloudevents+json");
  }
  /* meemoo's retry (same webhook-id, a new timestamp): a duplicate */
  resp = NULL;
  CHECK_INT(post_signed_now(port, MEEMOO_ID, body, &resp), 202);
  CHECK_STR(resp ? resp : "",
            "{\"status\":\"accepted\",\"accepted\":0,\"duplicates\":1}");
  free(resp);
  /* signed, but not a meemoo payload: the mapping refuses it */
  resp = NULL;
  CHECK_INT(post_signed_now(port, "msg_not_meemoo", "{\"hello\":1}", &resp),
            400);
  CHECK(resp && strstr(resp, "\"code\":\"mapping.failed\""));
  CHECK_MSG(resp && strstr(resp, "not a meemoo webhook: payload type missing"),
            "%s", resp ? resp : "");
  free(resp);
}

static void errors(int port) {
  static const struct {
    const char *body;
    int status;
    const char *says;
  } cases[] = {
      {"{\"id\":\"good-1\"}", 202, "\"accepted\":1"},
      {"{\"case\":\"throw\",\"id\":\"bad-1\"}", 400, "thrown on purpose"},
      {"{\"case\":\"nonobject\",\"id\":\"bad-2\"}", 400, "not a JSON object"},
      {"{\"case\":\"invalid\",\"id\":\"bad-3\"}", 422, "\"event.invalid\""},
      {"{\"case\":\"loop\",\"id\":\"bad-4\"}", 400, "timed out after 300 ms"},
      {"{\"id\":\"good-2\"}", 202, "\"accepted\":1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *resp = NULL;
    CHECK_INT(post(port, NULL, NULL, NULL, cases[i].body, &resp),
              cases[i].status);
    CHECK_MSG(resp && strstr(resp, cases[i].says), "%s: %s", cases[i].body,
              resp ? resp : "(none)");
    free(resp);
  }
}

int main(void) {
  char *dir = ceb_test_tmpdir("mapping-http");
  size_t body_len = 0;
  char *body =
      map_read_source("tests/data/meemoo/sip_archived.body.json", &body_len);
  rx_server *rx = rx_start(respond, NULL);
  CHECK(dir && body && rx);
  if (!dir || !body || !rx || write_conf(dir, rx_port(rx)) != 0) {
    CHECK(0);
    return ceb_test_done("integration_mapping_http");
  }
  char conf[512], log[512];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  pid_t bridge = ceb_test_bridge_start(conf, log);
  int mport = port_of(dir, "meemoo.port"), eport = port_of(dir, "errors.port");
  CHECK(bridge > 0 && mport > 0 && eport > 0);
  if (mport > 0 && eport > 0) {
    meemoo(mport, rx, body);
    errors(eport);
  }
  CHECK(rx_wait(rx, 3, 30000));
  CHECK_INT(ceb_test_pid_stop(bridge, SIGTERM, 30000), 0);
  /* exactly the good ones, once each */
  CHECK_INT(rx_count(rx), 3);
  const char *ids[] = {"\"id\":\"" MEEMOO_ID "\"", "\"id\":\"good-1\"",
                       "\"id\":\"good-2\""};
  for (size_t i = 0; i < 3; i++) {
    int seen = 0;
    for (size_t k = 0; k < rx_count(rx); k++)
      seen += strstr(rx_get(rx, k)->body, ids[i]) != NULL;
    CHECK_MSG(seen == 1, "%s seen %d times", ids[i], seen);
  }
  if (ceb_test_failures) {
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "---- bridge log ----\n%s\n", text ? text : "(none)");
    free(text);
  }
  rx_stop(rx);
  free(body);
  free(dir);
  return ceb_test_done("integration_mapping_http");
}
