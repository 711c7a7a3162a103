/* The webhook sink honours the WebHook-Allowed-Rate a receiver returns in
 * the CloudEvents webhook handshake (requests per minute, spec 4.2):
 *  - a receiver allowing 300 a minute (5 a second) never receives more than
 *    5 deliveries in any 1 s window, counted from its own arrival times,
 *    over 20 events handed to the sink at once (the pace can only make the
 *    run slower: no lower bound is asserted);
 *  - the handshake asks for the configured rate_limit (WebHook-Request-Rate,
 *    per minute), and an announced rate at or above it sets no pace;
 *  - an announced value that is not a positive integer is ignored (logged)
 *    and delivery goes on. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "ceb_test_rx.h"
#include "metrics/ceb_metrics.h"
#include "sink_fixture.h"

#define N_EVENTS 20

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_arrivals[256];
static size_t g_narrivals;
static char g_requested_rate[32];

/* OPTIONS /rate/<value>: granted, WebHook-Allowed-Rate: <value>. */
static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)index;
  if (strcmp(req->method, "OPTIONS") == 0) {
    const char *origin =
        ceb_headers_get(&req->headers, "WebHook-Request-Origin");
    const char *want = ceb_headers_get(&req->headers, "WebHook-Request-Rate");
    const char *rate =
        strncmp(req->path, "/rate/", 6) == 0 ? req->path + 6 : NULL;
    pthread_mutex_lock(&g_lock);
    snprintf(g_requested_rate, sizeof g_requested_rate, "%s", want ? want : "");
    pthread_mutex_unlock(&g_lock);
    resp->status = origin ? 200 : 400;
    if (origin)
      ceb_headers_add(&resp->headers, "WebHook-Allowed-Origin", origin,
                      strlen(origin));
    if (rate)
      ceb_headers_add(&resp->headers, "WebHook-Allowed-Rate", rate,
                      strlen(rate));
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

static void reset(void) {
  pthread_mutex_lock(&g_lock);
  g_narrivals = 0;
  g_requested_rate[0] = '\0';
  pthread_mutex_unlock(&g_lock);
}

/* Delivers N_EVENTS at once to path with extra config kv2 (may be NULL);
 * all must be acknowledged. Returns the allowed-rate gauge. */
static double run(rx_server *rx, const char *path, const char *k,
                  const char *v) {
  reset();
  char url[160];
  const char *kv[] = {"url",
                      fx_url(url, sizeof url, rx_port(rx), path),
                      "allow_insecure_http",
                      "true",
                      "handshake",
                      "true",
                      "handshake.origin",
                      "bridge.example.nl",
                      k,
                      v,
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev[N_EVENTS];
  for (int i = 0; i < N_EVENTS; i++) {
    char id[32];
    snprintf(id, sizeof id, "evt-rate-%d", i);
    ev[i] = fx_event(id, "{}");
    fx_deliver(&fx, ev[i], 1, NULL);
  }
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, N_EVENTS - 1, &st, 60000));
  for (int i = 0; i < N_EVENTS; i++) {
    CHECK(ceb_fake_settle_get(fx.fake, (size_t)i, &st));
    CHECK_INT(st.info.outcome, CEB_ACK);
  }
  double gauge = ceb_metrics_get(fx.fake->metrics,
                                 "cebridge_http_sink_allowed_rate", NULL);
  fx_free(&fx);
  for (int i = 0; i < N_EVENTS; i++)
    ceb_event_unref(ev[i]);
  return gauge;
}

int main(void) {
  rx_server *rx = rx_start(respond, NULL);
  CHECK(rx != NULL);
  if (!rx) return ceb_test_done("plugin_http_out_rate");

  /* 300 a minute = 5 a second, rate_limit 10/s: the receiver's is lower */
  double gauge = run(rx, "/rate/300", "rate_limit", "10/s");
  size_t most = max_per_second();
  CHECK_MSG(most <= 5, "%zu deliveries arrived within one second", most);
  CHECK_INT(g_narrivals, N_EVENTS);
  CHECK_MSG(gauge > 0 && gauge <= 5.0, "allowed-rate gauge %f", gauge);
  CHECK_STR(g_requested_rate, "600"); /* rate_limit 10/s, a minute's worth */

  /* announced 6000 a minute, above rate_limit 10/s: no pace of its own */
  gauge = run(rx, "/rate/6000", "rate_limit", "10/s");
  CHECK_MSG(gauge == 0, "allowed-rate gauge %f", gauge);
  CHECK_INT(g_narrivals, N_EVENTS);

  /* not a number: ignored, delivered; no rate_limit, no request header */
  gauge = run(rx, "/rate/lots", NULL, NULL);
  CHECK_MSG(gauge == 0, "allowed-rate gauge %f", gauge);
  CHECK_INT(g_narrivals, N_EVENTS);
  CHECK_STR(g_requested_rate, "");

  rx_stop(rx);
  return ceb_test_done("plugin_http_out_rate");
}
