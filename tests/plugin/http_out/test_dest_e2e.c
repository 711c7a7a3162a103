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
#include <unistd.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "ceb_test_bridge.h"
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
  char text[2048];
  ceb_test_webhook_opts o = {
      .token = ADMIN_TOKEN,
      .rx_port = rx_port(rx),
      .path = "/inst/${subject}",
      .bridge_extra = "drain_timeout = 5s\n",
      .sink_extra = "circuit.failures = 2\ncircuit.open_for = 10m\n",
      .route_extra = "order_by = subject\nretry.schedule = 0s 0s 1h\n"};
  CHECK_INT(ceb_test_webhook_conf(text, sizeof text, dir, &o), 0);
  ceb_test_bridge br;
  CHECK_INT(ceb_test_bridge_run(&br, dir, text, 30000), 0);
  pid_t pid = br.pid;
  int in = br.in_port, admin = br.admin_port;

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
  if (ceb_test_failures) ceb_test_bridge_log_dump(&br);
  rx_stop(rx);
  free(dir);
  return ceb_test_done("integration_http_out_dest");
}
