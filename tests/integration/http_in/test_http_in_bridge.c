/* End to end through the real `cebridge run` binary: a partner POSTs to the
 * intermediary (http source), the bridge journals the event before its 202,
 * routes it and delivers it with the http sink to a receiver in this test.
 * Also through the real runtime: an Idempotency-Key replay is byte for byte
 * and not delivered twice, a second event with the same (source, id) is a
 * duplicate (202, "duplicates":1), the host's NL GOV profile violations
 * (profile = enforce) come back as 422 with their attribute, and SIGTERM
 * drains and exits 0. */
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ceb_test_proc.h"
#include "ceb_test_rx.h"
#include "hin_harness.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:e2e"

/* ---- receiver: ceb_test_rx, answering 204 ---- */

static void rx_answer(void *arg, const rx_request *req, size_t index,
                      rx_response *resp) {
  (void)arg;
  (void)req;
  (void)index;
  resp->status = 204;
}

/* ---- bridge process ---- */

static pid_t start_bridge(const char *dir) {
  char log[512], conf[512];
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(conf, sizeof conf, "%s/conf", dir);
  return ceb_test_bridge_start(conf, log);
}

static int stop_bridge(pid_t pid) {
  return ceb_test_pid_stop(pid, SIGTERM, 30000);
}

typedef struct port_wait {
  char path[512];
  int port;
} port_wait;

static int port_ready(void *arg) {
  port_wait *p = arg;
  char *text = ceb_test_read_file(p->path, NULL);
  p->port = text ? atoi(text) : 0;
  free(text);
  return p->port > 0;
}

static void write_conf(const char *dir, int rxp) {
  char path[512];
  snprintf(path, sizeof path, "%s/conf", dir);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/conf/00-bridge.conf", dir);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f,
          "[bridge]\n"
          "store = %s/store.db\n"
          "admin.listen = 127.0.0.1:0\n"
          "log.format = text\n"
          "profile = enforce\n"
          "drain_timeout = 10s\n"
          "\n[source intermediary]\n"
          "plugin = http\n"
          "listen = 127.0.0.1:0\n"
          "port_file = %s/port\n"
          "auth = none\n"
          "idempotency = optional\n"
          "\n[sink partner]\n"
          "plugin = http\n"
          "url = http://127.0.0.1:%d/hook\n"
          "allow_insecure_http = true\n"
          "mode = structured\n"
          "\n[route partners]\n"
          "from = intermediary\n"
          "to = partner\n",
          dir, dir, rxp);
  fclose(f);
}

static hin_resp post_event(const char *url, const char *id, const char *type,
                           const char *key) {
  char h_id[96], h_type[128], h_key[96];
  snprintf(h_id, sizeof h_id, "ce-id: %s", id);
  snprintf(h_type, sizeof h_type, "ce-type: %s", type);
  snprintf(h_key, sizeof h_key, "Idempotency-Key: %s", key ? key : "");
  const char *const hdrs[] = {"ce-specversion: 1.0",
                              "ce-source: " SRC,
                              "ce-time: 2026-01-01T00:00:00Z",
                              h_id,
                              h_type,
                              "Content-Type: application/json",
                              key ? h_key : NULL,
                              NULL};
  return hin_request(url, "POST", hdrs, "{\"n\":1}", 7, 0);
}

int main(void) {
  char *dir = ceb_test_tmpdir("http_in_e2e");
  rx_server *r = rx_start(rx_answer, NULL);
  CHECK(r != NULL);
  if (!r) return ceb_test_done("integration_http_in");
  write_conf(dir, rx_port(r));
  pid_t pid = start_bridge(dir);
  port_wait pw;
  snprintf(pw.path, sizeof pw.path, "%s/port", dir);
  CHECK(ceb_test_wait(port_ready, &pw, 15000));
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", pw.port);

  hin_resp a = post_event(url, "e2e-1", "nl.edu.test.created", NULL);
  CHECK_INT(a.status, 202);
  hin_resp_free(&a);
  CHECK(rx_wait_event(r, "e2e-1", 20000));

  /* Idempotency-Key through the real store: replayed, delivered once */
  const char *key = "0f8e7d6c-5b4a-4321-8fed-cba987654321";
  hin_resp k1 = post_event(url, "e2e-2", "nl.edu.test.created", key);
  hin_resp k2 = post_event(url, "e2e-2", "nl.edu.test.created", key);
  CHECK_INT(k1.status, 202);
  CHECK_INT(k2.status, 202);
  CHECK(k1.len == k2.len && memcmp(k1.body, k2.body, k1.len) == 0);
  char h[32];
  CHECK_STR(hin_header(&k2, "Idempotent-Replayed", h, sizeof h), "true");
  hin_resp_free(&k1);
  hin_resp_free(&k2);
  hin_resp k3 = post_event(url, "e2e-other", "nl.edu.test.created", key);
  CHECK_INT(k3.status, 422);
  hin_resp_free(&k3);

  /* the same (source, id) again without a key: a duplicate, still 202 */
  hin_resp dup = post_event(url, "e2e-1", "nl.edu.test.created", NULL);
  CHECK_INT(dup.status, 202);
  CHECK(strstr(dup.body, "\"duplicates\":1") != NULL);
  hin_resp_free(&dup);

  /* the host's profile check (enforce) */
  hin_resp bad = post_event(url, "e2e-bad", "created", NULL);
  CHECK_INT(bad.status, 422);
  CHECK(hin_json_str(&bad, "code", "event.invalid"));
  CHECK(strstr(bad.body, "\"attribute\":\"type\"") != NULL);
  hin_resp_free(&bad);

  /* a last event; once it arrived, e2e-1 and e2e-2 were delivered once */
  hin_resp last = post_event(url, "e2e-3", "nl.edu.test.created", NULL);
  CHECK_INT(last.status, 202);
  hin_resp_free(&last);
  CHECK(rx_wait_event(r, "e2e-3", 20000));
  CHECK(rx_wait_event(r, "e2e-2", 20000));
  CHECK_INT(rx_count_event(r, "e2e-2"), 1);
  CHECK_INT(rx_count_event(r, "e2e-bad"), 0);

  CHECK_INT(stop_bridge(pid), 0);
  rx_stop(r);
  if (ceb_test_failures) {
    char log[600];
    snprintf(log, sizeof log, "%s/bridge.log", dir);
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "--- bridge log ---\n%s\n", text ? text : "(none)");
    free(text);
  }
  free(dir);
  return ceb_test_done("integration_http_in");
}
