/* The meemoo endpoint life cycle end to end, through the real cebridge
 * binary: a receiver answering 410 Gone disables the webhook sink (an ALERT
 * line, cebridge_sink_disabled 1, `cebridge sink list` says so); events
 * accepted meanwhile wait, none is dead-lettered; the admin API's POST
 * /v1/sinks/{name}/enable (token-protected) lets them flow, in order; a
 * second 410 and `cebridge sink enable` (the store, read by the running
 * bridge within store.poll_interval) do the same. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "ceb_test_bridge.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"

#define TOKEN "an-operator-token-for-the-gone-test"

static atomic_int g_gone = 1;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_ids[64][32]; /* ids of the POSTs answered 2xx, in order */
static size_t g_nids, g_n410;

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)index;
  const char *id = ceb_headers_get(&req->headers, "ce-id");
  pthread_mutex_lock(&g_lock);
  if (atomic_load(&g_gone)) {
    resp->status = 410;
    g_n410++;
  } else {
    resp->status = 204;
    if (g_nids < 64) snprintf(g_ids[g_nids++], 32, "%s", id ? id : "?");
  }
  pthread_mutex_unlock(&g_lock);
}

static size_t delivered(void) {
  pthread_mutex_lock(&g_lock);
  size_t n = g_nids;
  pthread_mutex_unlock(&g_lock);
  return n;
}

static ceb_test_bridge g_b;

static int post(int port, const char *id) {
  char url[128], h_id[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(h_id, sizeof h_id, "ce-id: %s", id);
  const char *const hdrs[] = {"ce-specversion: 1.0",
                              "ce-source: urn:nld:oin:00000001234567890000:"
                              "systeem:meemoo",
                              "ce-type: meemoo.sip.archived",
                              "ce-subject: sip-1",
                              h_id,
                              "Content-Type: application/json",
                              NULL};
  return ceb_test_http("POST", url, hdrs, "{}", 2, NULL);
}

typedef struct wait_arg {
  const char *needle;
  size_t n;
} wait_arg;
static int log_wait(void *arg) {
  return ceb_test_bridge_log_has(&g_b, ((wait_arg *)arg)->needle);
}
static int got(void *arg) {
  return delivered() >= ((wait_arg *)arg)->n;
}

static int gone_twice(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_lock);
  size_t n = g_n410;
  pthread_mutex_unlock(&g_lock);
  return n >= 2;
}

static int listed_disabled(void *arg) {
  (void)arg;
  char *out = NULL;
  int ok = ceb_test_bridge_cli(&g_b, "sink list", &out) == 0 && out &&
           strstr(out, " disabled ") != NULL;
  free(out);
  return ok;
}

int main(void) {
  rx_server *rx = rx_start(respond, NULL);
  CHECK(rx != NULL);
  char *dir = ceb_test_tmpdir("sink-gone");
  if (!rx) return ceb_test_done("integration_sink_gone");
  char text[2048];
  ceb_test_webhook_opts o = {.token = TOKEN,
                             .rx_port = rx_port(rx),
                             .bridge_extra = "store.poll_interval = 200ms\n",
                             .route_extra = "order_by = subject\n"
                                            "dlq = store\n"};
  CHECK_INT(ceb_test_webhook_conf(text, sizeof text, dir, &o), 0);
  CHECK_INT(ceb_test_bridge_run(&g_b, dir, text, 30000), 0);
  free(dir);
  int in = g_b.in_port, admin = g_b.admin_port;

  /* 410: disabled; what comes next waits */
  CHECK_INT(post(in, "m-1"), 202);
  wait_arg w = {"ALERT engine: sink partner disabled", 0};
  CHECK(ceb_test_wait(log_wait, &w, 30000));
  CHECK_INT(post(in, "m-2"), 202);
  CHECK_INT(post(in, "m-3"), 202);
  CHECK(ceb_test_bridge_metric(
            &g_b, "cebridge_sink_disabled{sink=\"partner\"} ") == 1);
  char *out = NULL;
  CHECK_INT(ceb_test_bridge_cli(&g_b, "sink list", &out), 0);
  CHECK_MSG(out && strstr(out, "partner") && strstr(out, "disabled") &&
                strstr(out, "410"),
            "sink list: %s", out ? out : "");
  free(out);
  CHECK_INT(ceb_test_bridge_cli(&g_b, "dlq list", &out),
            1); /* nothing dead-lettered */
  free(out);
  CHECK_INT(delivered(), 0);

  /* the admin API enables it (the token is needed) */
  atomic_store(&g_gone, 0);
  char url[160], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/sinks/partner/enable",
           admin);
  CHECK_INT(ceb_test_http("POST", url, NULL, "", 0, &body), 401);
  free(body);
  body = NULL;
  const char *const auth[] = {"Authorization: Bearer " TOKEN, NULL};
  CHECK_INT(ceb_test_http("POST", url, auth, "", 0, &body), 200);
  free(body);
  wait_arg three = {NULL, 3};
  CHECK(ceb_test_wait(got, &three, 30000));
  pthread_mutex_lock(&g_lock);
  CHECK_STR(g_ids[0], "m-1");
  CHECK_STR(g_ids[1], "m-2");
  CHECK_STR(g_ids[2], "m-3");
  pthread_mutex_unlock(&g_lock);
  CHECK(ceb_test_bridge_metric(
            &g_b, "cebridge_sink_disabled{sink=\"partner\"} ") == 0);

  /* a second 410, and the CLI enables it in the store */
  atomic_store(&g_gone, 1);
  CHECK_INT(post(in, "m-4"), 202);
  CHECK(ceb_test_wait(gone_twice, NULL, 30000));
  /* the disabling is stored (worker 0 writes it): `sink list` shows it */
  CHECK(ceb_test_wait(listed_disabled, NULL, 30000));
  atomic_store(&g_gone, 0);
  CHECK_INT(ceb_test_bridge_cli(&g_b, "sink enable partner", &out), 0);
  free(out);
  wait_arg four = {NULL, 4};
  CHECK(ceb_test_wait(got, &four, 30000));
  pthread_mutex_lock(&g_lock);
  CHECK_STR(g_ids[3], "m-4");
  pthread_mutex_unlock(&g_lock);

  CHECK_INT(ceb_test_pid_stop(g_b.pid, SIGTERM, 30000), 0);
  rx_stop(rx);
  return ceb_test_done("integration_sink_gone");
}
