/* Issue 16 B6 end to end through the real `cebridge run` (intermediary ->
 * route -> webhook sink with url = .../${subject} -> a local receiver): the
 * endpoint of institution "bad" answers 503 until its circuit opens
 * (circuit.failures 2, circuit.open_for 10 minutes); institution "good"'s
 * events, posted after, are all delivered while that circuit is open, so
 * they never wait for it (the wait's deadline is far below 10 minutes); the
 * host's circuit of the sink stays closed; "bad"'s later events are not
 * sent (its circuit refuses them at once, counted as attempts). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:dest"
#define ADMIN_TOKEN "http-out-dest-admin-token"

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)index;
  resp->status = strcmp(req->path, "/inst/bad") == 0 ? 503 : 204;
}

static int post(int port, const char *id, const char *inst) {
  char url[96], body[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  int n = snprintf(body, sizeof body,
                   "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"" SRC
                   "\",\"type\":\"nl.edu.dest.updated\",\"subject\":\"%s\","
                   "\"time\":\"2026-11-26T10:00:00Z\","
                   "\"datacontenttype\":\"application/json\",\"data\":{}}",
                   id, inst);
  const char *h[] = {"Content-Type: application/cloudevents+json", NULL};
  return ceb_test_http("POST", url, h, body, (size_t)n, NULL);
}

typedef struct count_arg {
  rx_server *rx;
  const char *path;
  size_t n;
} count_arg;

static int path_count_reached(void *arg) {
  count_arg *a = arg;
  return rx_count_path(a->rx, a->path) >= a->n;
}

/* GET on the admin API; 1 when the body contains needle. */
static int admin_has(int port, const char *path, const char *needle) {
  char url[160], *out = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
  const char *h[] = {"Authorization: Bearer " ADMIN_TOKEN, NULL};
  int st = ceb_test_http("GET", url, h, NULL, 0, &out);
  int has = st == 200 && out && strstr(out, needle) != NULL;
  free(out);
  return has;
}

typedef struct admin_arg {
  int port;
  const char *path, *needle;
} admin_arg;

static int admin_reached(void *arg) {
  admin_arg *a = arg;
  return admin_has(a->port, a->path, a->needle);
}

int main(void) {
  char *dir = ceb_test_tmpdir("http-out-dest");
  rx_server *rx = rx_start(respond, NULL);
  CHECK(dir && rx);
  if (!dir || !rx) return ceb_test_done("integration_http_out_dest");
  char conf[600], text[2048], log[600], inport[600], adport[600];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  mkdir(conf, 0700);
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nlog.format = text\n"
           "admin.listen = 127.0.0.1:0\nadmin.port_file = %s/admin.port\n"
           "admin.token = " ADMIN_TOKEN "\ndrain_timeout = 5s\n"
           "\n[source intermediary]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "port_file = %s/in.port\nauth = none\n"
           "\n[sink partner]\nplugin = http\n"
           "url = http://127.0.0.1:%d/inst/${subject}\n"
           "allow_insecure_http = true\ncircuit.failures = 2\n"
           "circuit.open_for = 10m\n"
           "\n[route to-partner]\nfrom = intermediary\nto = partner\n"
           "order_by = subject\nretry.schedule = 0s 0s 1h\n",
           dir, dir, dir, rx_port(rx));
  CHECK_INT(ceb_test_write_file(conf, "00-bridge.conf", text), 0);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(inport, sizeof inport, "%s/in.port", dir);
  snprintf(adport, sizeof adport, "%s/admin.port", dir);
  pid_t pid = ceb_test_bridge_start(conf, log);
  int in = ceb_test_wait_port_file(inport, 30000);
  int admin = ceb_test_wait_port_file(adport, 30000);
  CHECK(pid > 0 && in > 0 && admin > 0);

  /* "bad": attempts 1 and 2 (schedule 0s 0s) are sent and fail: its
   * circuit opens for 10 minutes */
  CHECK_INT(post(in, "bad-1", "bad"), 202);
  count_arg bad = {rx, "/inst/bad", 2};
  CHECK(ceb_test_wait(path_count_reached, &bad, 30000));
  admin_arg retrying = {admin, "/v1/events/bad-1/status", "\"retrying\""};
  CHECK(ceb_test_wait(admin_reached, &retrying, 30000));
  /* "good"'s events flow at once */
  for (int i = 0; i < 5; i++) {
    char id[16];
    snprintf(id, sizeof id, "good-%d", i);
    CHECK_INT(post(in, id, "good"), 202);
  }
  count_arg good = {rx, "/inst/good", 5};
  CHECK_MSG(ceb_test_wait(path_count_reached, &good, 60000),
            "%zu of 5 events of \"good\" delivered while \"bad\"'s circuit "
            "is open",
            rx_count_path(rx, "/inst/good"));
  admin_arg done = {admin, "/v1/events/good-4/status", "\"done\""};
  CHECK(ceb_test_wait(admin_reached, &done, 30000));
  /* the sink as a whole: closed */
  CHECK(admin_has(admin, "/v1/routes", "\"circuit\":\"closed\""));
  /* "bad" got nothing more than its two attempts */
  CHECK_INT(rx_count_path(rx, "/inst/bad"), 2);

  if (pid > 0) CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  if (ceb_test_failures) {
    char *t = ceb_test_read_file(log, NULL);
    fprintf(stderr, "---- bridge log ----\n%s\n", t ? t : "");
    free(t);
  }
  rx_stop(rx);
  free(dir);
  return ceb_test_done("integration_http_out_dest");
}
