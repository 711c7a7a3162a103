/* The ready egress mapping contrib/mappings/ce-to-meemoo.jq end to end
 * through the real `cebridge run`, checked by the Standard Webhooks
 * reference library (npm standardwebhooks, pinned; `npm ci` at test time):
 * CloudEvents posted to the intermediary reach a webhook receiver as
 * meemoo-style bodies {type, timestamp, data}, byte for byte, signed over
 * that body (verify.js check: each verifies, a forged body or key does
 * not), with the delivery's stable Idempotency-Key as webhook-id. Events
 * the mapping refuses (no time; binary data) are dead-lettered with reason
 * "mapping" and never sent: the receiver has exactly the good ones. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "map_test_util.h"
#include "swh_interop.h"

#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SRC "urn:nld:oin:00000001234567890000:systeem:archive"

static int write_conf(const char *dir, int rx_port) {
  char conf[512];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  mkdir(conf, 0700);
  const char *defs[] = {"type_prefix", "\"nl.example.\"", NULL};
  if (map_copy_ready(conf, "ce-to-meemoo.jq", defs) != 0) return -1;
  char text[2048];
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nadmin.listen = 127.0.0.1:0\n"
           "log.format = text\ndrain_timeout = 10s\n"
           "\n[source in]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "port_file = %s/in.port\nauth = none\n"
           "\n[sink partner]\nplugin = http\n"
           "url = http://127.0.0.1:%d/hook\nallow_insecure_http = true\n"
           "mode = structured\nwebhook.secrets = " SECRET "\n"
           "map = file:ce-to-meemoo.jq\n"
           "\n[route to-partner]\nfrom = in\nto = partner\ndlq = store\n",
           dir, dir, rx_port);
  return ceb_test_write_file(conf, "00-bridge.conf", text);
}

static void post(int port, const char *id, const char *extra, int want) {
  char url[128], body[1024];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"" SRC "\","
           "\"type\":\"nl.example.meemoo.sip.archived\"%s}",
           id, extra);
  const char *hdrs[] = {"Content-Type: application/cloudevents+json", NULL};
  CHECK_INT(ceb_test_http("POST", url, hdrs, body, strlen(body), NULL), want);
}

/* The store's dead letters of the route, with their reasons. */
static void check_dead_letters(const char *conf) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s/bin/cebridge' dlq list -c '%s' --json",
           CEB_BINARY_DIR, conf);
  FILE *pp = popen(cmd, "r");
  CHECK(pp != NULL);
  if (!pp) return;
  char out[16384];
  size_t n = fread(out, 1, sizeof out - 1, pp);
  out[n] = '\0';
  CHECK_INT(pclose(pp), 0);
  CHECK_MSG(strstr(out, "\"no-time\"") && strstr(out, "\"binary\""), "%s", out);
  CHECK_MSG(strstr(out, "no time") && strstr(out, "data_base64"), "%s", out);
}

int main(void) {
  int rc = swh_npm_ci(CEB_EGRESS_NPM_DIR);
  CHECK_INT(rc, 0);
  char *dir = ceb_test_tmpdir("mapping-egress");
  rx_server *rx = rx_start(swh_answer_204, NULL);
  if (rc != 0 || !dir || !rx || write_conf(dir, rx_port(rx)) != 0) {
    CHECK(0);
    return ceb_test_done("interop_mapping_egress");
  }
  char conf[512], log[512], path[600];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(path, sizeof path, "%s/in.port", dir);
  pid_t bridge = ceb_test_bridge_start(conf, log);
  int port = ceb_test_wait_port_file(path, 30000);
  CHECK(bridge > 0 && port > 0);
  static const char data1[] =
      "{\"correlation_id\":\"843e9ba457593d0edf69a24baa0babf3\","
      "\"outcome\":\"success\",\"pid\":\"kdleipkyuj\"}";
  char extra[512];
  snprintf(extra, sizeof extra,
           ",\"time\":\"2025-09-03T20:26:10.344522Z\","
           "\"datacontenttype\":\"application/json\",\"data\":%s",
           data1);
  post(port, "sip-1", extra, 202);
  post(port, "no-time", ",\"data\":{\"x\":1}", 202);
  post(port, "binary",
       ",\"time\":\"2026-01-01T00:00:00Z\",\"datacontenttype\":"
       "\"application/octet-stream\",\"data_base64\":\"AAEC\"",
       202);
  post(port, "sip-2",
       ",\"time\":\"2026-01-02T03:04:05Z\",\"datacontenttype\":"
       "\"application/json\",\"data\":{\"outcome\":\"failure\","
       "\"message\":\"checksum \\u00e9\"}",
       202);
  CHECK(rx_wait(rx, 2, 30000));
  CHECK_INT(ceb_test_pid_stop(bridge, SIGTERM, 30000), 0);
  CHECK_INT(rx_count(rx), 2);
  static const char *const want[] = {
      "{\"type\":\"meemoo.sip.archived\",\"timestamp\":"
      "\"2025-09-03T20:26:10.344522Z\",\"data\":{\"correlation_id\":"
      "\"843e9ba457593d0edf69a24baa0babf3\",\"outcome\":\"success\",\"pid\":"
      "\"kdleipkyuj\"}}",
      "{\"type\":\"meemoo.sip.archived\",\"timestamp\":"
      "\"2026-01-02T03:04:05Z\",\"data\":{\"outcome\":\"failure\","
      "\"message\":\"checksum \xc3\xa9\"}}"};
  /* no ordering key: the two may arrive in either order (two sink
   * connections); each body exactly once */
  int seen[2] = {0, 0};
  for (size_t i = 0; i < rx_count(rx) && i < 2; i++) {
    const rx_request *r = rx_get(rx, i);
    size_t w = r->body && strcmp(r->body, want[1]) == 0 ? 1 : 0;
    seen[w]++;
    CHECK_STR(r->body, want[w]);
    CHECK_STR(ceb_headers_get(&r->headers, "Content-Type"), "application/json");
    const char *key = ceb_headers_get(&r->headers, "Idempotency-Key");
    CHECK(key && *key);
    CHECK_STR(ceb_headers_get(&r->headers, "webhook-id"), key ? key : "");
    CHECK(ceb_headers_get(&r->headers, "ce-id") == NULL);
  }
  CHECK(seen[0] == 1 && seen[1] == 1);
  snprintf(path, sizeof path, "%s/requests.json", dir);
  CHECK_INT(swh_save_requests(rx, path), 0);
  /* each verifies; a forged body or key does not */
  long verified, rejected;
  swh_node_check(CEB_EGRESS_NPM_DIR, path, SECRET, &verified, &rejected);
  CHECK_INT(verified, rx_count(rx));
  CHECK_INT(rejected, 2 * rx_count(rx));
  check_dead_letters(conf);
  if (ceb_test_failures) {
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "---- bridge log ----\n%s\n", text ? text : "(none)");
    free(text);
  }
  rx_stop(rx);
  free(dir);
  return ceb_test_done("interop_mapping_egress");
}
