/* A webhook sink whose URL is a template per institution keeps a circuit per
 * destination (issue 16 B6): one institution's failing endpoint opens its
 * own circuit (what falls due for it fails at once, not sent, reason
 * circuit.open), the others are sent without waiting, and no outcome of a
 * templated sink may open the host's circuit of the whole sink (every
 * settle carries CEB_SETTLE_DESTINATION, never CEB_SETTLE_OPEN_CIRCUIT; a
 * 410 opens that destination's circuit). The half-open probe closes it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "http_out_circuit.h"
#include "ceb_test_rx.h"
#include "sink_fixture.h"

static atomic_int g_bad_status = 503;

/* /d/bad answers g_bad_status, /d/gone 410, any other path 200. */
static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)index;
  if (strcmp(req->path, "/d/bad") == 0)
    resp->status = atomic_load(&g_bad_status);
  else if (strcmp(req->path, "/d/gone") == 0)
    resp->status = 410;
  else
    resp->status = 200;
}

static size_t sent_to(rx_server *rx, const char *path) {
  size_t n = 0;
  for (size_t i = 0; i < rx_count(rx); i++) {
    const rx_request *r = rx_get(rx, i);
    if (r && strcmp(r->path, path) == 0) n++;
  }
  return n;
}

/* Delivers an event for institution `inst` and waits for settle #i. */
static int send(sink_fx *fx, const char *id, const char *inst, size_t i,
                ceb_fake_settle *st) {
  ceb_event *ev = fx_event(id, "{}");
  ceb_event_set(ev, "subject", inst);
  fx_deliver(fx, ev, 1, NULL);
  ceb_event_unref(ev);
  return fx_settle(fx, i, st, 8000);
}

static void test_one_failing_destination(void) {
  rx_server *rx = rx_start(respond, NULL);
  char url[128];
  const char *kv[] = {"url",
                      fx_url(url, sizeof(url), rx_port(rx), "/d/${subject}"),
                      "allow_insecure_http",
                      "true",
                      "circuit.failures",
                      "2",
                      "circuit.open_for",
                      "30s",
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_fake_settle st;
  size_t k = 0;
  /* two failures of "bad": its circuit opens */
  for (int i = 0; i < 2; i++) {
    char id[16];
    snprintf(id, sizeof id, "bad-%d", i);
    CHECK(send(&fx, id, "bad", k++, &st));
    CHECK_INT(st.info.outcome, CEB_RETRY);
    CHECK_STR(st.reason, "http.503");
    CHECK_INT(st.info.flags, CEB_SETTLE_DESTINATION);
  }
  /* "bad" is open: its next event fails at once and is not sent ... */
  CHECK(send(&fx, "bad-2", "bad", k++, &st));
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_STR(st.reason, "circuit.open");
  CHECK_INT(st.info.flags, CEB_SETTLE_DESTINATION);
  CHECK_INT(sent_to(rx, "/d/bad"), 2);
  /* ... and "good" is sent and delivered, without waiting */
  for (int i = 0; i < 3; i++) {
    char id[16];
    snprintf(id, sizeof id, "good-%d", i);
    CHECK(send(&fx, id, "good", k++, &st));
    CHECK_INT(st.info.outcome, CEB_ACK);
    CHECK_INT(st.info.flags, CEB_SETTLE_DESTINATION);
  }
  CHECK_INT(sent_to(rx, "/d/good"), 3);
  /* a 410 opens that destination's circuit, not the sink's */
  CHECK(send(&fx, "gone-0", "gone", k++, &st));
  CHECK_INT(st.info.outcome, CEB_REJECT);
  CHECK_INT(st.info.flags, CEB_SETTLE_DESTINATION);
  CHECK(send(&fx, "gone-1", "gone", k++, &st));
  CHECK_STR(st.reason, "circuit.open");
  CHECK_INT(sent_to(rx, "/d/gone"), 1);
  CHECK(send(&fx, "good-3", "good", k++, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);
  /* 30 s later "bad" gets one probe; it succeeds: closed */
  atomic_store(&g_bad_status, 200);
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  pthread_mutex_lock(&fx.fake->lock);
  fx.fake->clock_ms = (int64_t)wall.tv_sec * 1000 + 31000;
  pthread_mutex_unlock(&fx.fake->lock);
  CHECK(send(&fx, "bad-3", "bad", k++, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK(send(&fx, "bad-4", "bad", k++, &st));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK_INT(sent_to(rx, "/d/bad"), 4);
  fx_free(&fx);
  rx_stop(rx);
}

/* The table's rules on their own: threshold, open, half-open probe (one at a
 * time), re-open on a failed probe, cancel, close forgets. */
static void test_table(void) {
  http_dest_table *t = http_dest_new(2, 1000);
  int64_t until = 0;
  CHECK(http_dest_allow(t, "a", 0, &until));
  CHECK_INT(http_dest_failure(t, "a", 0), 0);
  CHECK_INT(http_dest_failure(t, "a", 10), 1);
  CHECK(!http_dest_allow(t, "a", 500, &until));
  CHECK_INT(until, 1010);
  CHECK(http_dest_allow(t, "b", 500, &until));   /* others untouched */
  CHECK(http_dest_allow(t, "a", 1010, &until));  /* the probe */
  CHECK(!http_dest_allow(t, "a", 1010, &until)); /* one at a time */
  http_dest_cancel(t, "a");                      /* not sent after all */
  CHECK(http_dest_allow(t, "a", 1011, &until));
  CHECK_INT(http_dest_failure(t, "a", 1020), 1); /* failed probe: open */
  CHECK(!http_dest_allow(t, "a", 1500, &until));
  CHECK(http_dest_allow(t, "a", 2020, &until));
  http_dest_success(t, "a");
  size_t open = 9;
  CHECK_INT(http_dest_count(t, &open), 0);
  CHECK_INT(open, 0);
  CHECK(http_dest_allow(t, "a", 2021, &until));
  http_dest_free(t);
}

int main(void) {
  test_table();
  test_one_failing_destination();
  return ceb_test_done("plugin_http_out_dest");
}
