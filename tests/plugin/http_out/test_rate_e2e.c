/* The handshake rate (issue 17 item 9) end to end, through the real
 * cebridge binary: the webhook sink (handshake = true, rate_limit 20/s)
 * validates its receiver with the CloudEvents webhook handshake (OPTIONS,
 * WebHook-Request-Origin); the receiver grants the origin and announces
 * WebHook-Allowed-Rate: 300 (requests a minute, spec 4.2: 5 a second),
 * lower than the sink's own. 40 events posted to the intermediary at once
 * all arrive, each once, and no window of one second (by the receiver's
 * own arrival times) holds more than 5 of them. Only that upper bound is
 * asserted (the pace can only make the run slower); the wait for the 40
 * is bounded generously. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "ceb_test_bridge.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"

#define TOKEN "an-operator-token-for-the-rate-test"
#define N_EVENTS 40
#define ALLOWED_PER_MINUTE "300"
#define MAX_PER_SECOND 5

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_arrivals[256]; /* ms, of the deliveries (POSTs) */
static size_t g_narrivals, g_noptions;
static char g_origin[128], g_requested[32];

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)index;
  if (strcmp(req->method, "OPTIONS") == 0) {
    const char *origin =
        ceb_headers_get(&req->headers, "WebHook-Request-Origin");
    const char *want = ceb_headers_get(&req->headers, "WebHook-Request-Rate");
    pthread_mutex_lock(&g_lock);
    g_noptions++;
    snprintf(g_origin, sizeof g_origin, "%s", origin ? origin : "");
    snprintf(g_requested, sizeof g_requested, "%s", want ? want : "");
    pthread_mutex_unlock(&g_lock);
    if (!origin) {
      resp->status = 400;
      return;
    }
    resp->status = 200;
    ceb_headers_add(&resp->headers, "WebHook-Allowed-Origin", origin,
                    strlen(origin));
    ceb_headers_add(&resp->headers, "WebHook-Allowed-Rate", ALLOWED_PER_MINUTE,
                    strlen(ALLOWED_PER_MINUTE));
    return;
  }
  int64_t now = ceb_test_now_ms();
  pthread_mutex_lock(&g_lock);
  if (g_narrivals < sizeof g_arrivals / sizeof *g_arrivals)
    g_arrivals[g_narrivals++] = now;
  pthread_mutex_unlock(&g_lock);
  resp->status = 204;
}

/* The most arrivals in any window [t, t + 1000 ms). */
static size_t max_per_second(void) {
  pthread_mutex_lock(&g_lock);
  size_t n = g_narrivals;
  int64_t t[256];
  memcpy(t, g_arrivals, n * sizeof *t);
  pthread_mutex_unlock(&g_lock);
  return ceb_test_max_in_window(t, n, 1000);
}

static int post(int port, const char *id) {
  char url[128], h_id[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(h_id, sizeof h_id, "ce-id: %s", id);
  const char *const hdrs[] = {"ce-specversion: 1.0",
                              "ce-source: urn:nld:oin:00000001234567890000:"
                              "systeem:meemoo",
                              "ce-type: meemoo.sip.archived",
                              "ce-time: 2026-12-05T08:00:00Z",
                              h_id,
                              "Content-Type: application/json",
                              NULL};
  return ceb_test_http("POST", url, hdrs, "{}", 2, NULL);
}

typedef struct all_wait {
  rx_server *rx;
} all_wait;

/* 1 once every event id arrived at least once. */
static int all_arrived(void *arg) {
  all_wait *w = arg;
  for (int i = 0; i < N_EVENTS; i++) {
    char id[32];
    snprintf(id, sizeof id, "rate-%02d", i);
    if (rx_count_event(w->rx, id) == 0) return 0;
  }
  return 1;
}

int main(void) {
  rx_server *rx = rx_start(respond, NULL);
  CHECK(rx != NULL);
  char *dir = ceb_test_tmpdir("handshake-rate");
  if (!rx) return ceb_test_done("integration_handshake_rate");
  char text[2048];
  ceb_test_webhook_opts o = {.token = TOKEN,
                             .rx_port = rx_port(rx),
                             .sink_extra = "handshake = true\n"
                                           "handshake.origin = "
                                           "bridge.example.nl\n"
                                           "rate_limit = 20/s\n"};
  CHECK_INT(ceb_test_webhook_conf(text, sizeof text, dir, &o), 0);
  ceb_test_bridge b;
  CHECK_INT(ceb_test_bridge_run(&b, dir, text, 30000), 0);
  free(dir);

  for (int i = 0; i < N_EVENTS; i++) {
    char id[32];
    snprintf(id, sizeof id, "rate-%02d", i);
    CHECK_INT(post(b.in_port, id), 202);
  }
  all_wait w = {rx};
  /* 40 at 5 a second is about 8 s; the bound leaves room for a loaded
   * machine, it asserts no speed */
  CHECK_MSG(ceb_test_wait(all_arrived, &w, 120000), "not all %d events arrived",
            N_EVENTS);
  CHECK(ceb_test_bridge_log_has(&b, "the receiver allows 300 requests a "
                                    "minute (WebHook-Allowed-Rate)"));
  double gauge = ceb_test_bridge_metric(
      &b, "cebridge_http_sink_allowed_rate{role=\"sink\",plugin=\"http\","
          "instance=\"partner\"} ");
  CHECK_MSG(gauge > 0 && gauge <= MAX_PER_SECOND, "allowed-rate gauge %f",
            gauge);
  /* stopped: nothing more can arrive, the counts are final */
  CHECK_INT(ceb_test_pid_stop(b.pid, SIGTERM, 30000), 0);

  size_t most = max_per_second();
  CHECK_MSG(most <= MAX_PER_SECOND,
            "%zu deliveries arrived within one second (allowed %d)", most,
            MAX_PER_SECOND);
  for (int i = 0; i < N_EVENTS; i++) {
    char id[32];
    snprintf(id, sizeof id, "rate-%02d", i);
    CHECK_MSG(rx_count_event(rx, id) == 1, "%s arrived %zu times", id,
              rx_count_event(rx, id));
  }
  pthread_mutex_lock(&g_lock);
  CHECK_INT((int)g_narrivals, N_EVENTS);
  CHECK_INT((int)g_noptions, 1); /* one handshake, before the first */
  CHECK_STR(g_origin, "bridge.example.nl");
  CHECK_STR(g_requested, "1200"); /* rate_limit 20/s, a minute's worth */
  pthread_mutex_unlock(&g_lock);
  if (ceb_test_failures) ceb_test_bridge_log_dump(&b);
  rx_stop(rx);
  return ceb_test_done("integration_handshake_rate");
}
