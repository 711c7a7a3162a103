/* The sinks' life cycle (the meemoo webhook guide), on the runtime with the
 * injected clock:
 *  - a sink answering 410 Gone is disabled at once: its events wait in the
 *    store (pending, no dead letter), nothing more is sent, the
 *    cebridge_sink_disabled gauge is 1; the state survives a restart; an
 *    operator's enable sends the waiting events in order;
 *  - a sink failing without a single success is disabled once the failures
 *    have lasted disable_after (72 h by default): not after 71 h, at 72 h;
 *    a success ends a failing period. */
#include <stdatomic.h>

#include "harness.h"
#include "store/ceb_store.h"

#define H (3600LL * 1000)

static atomic_int g_mode; /* 0 ack, 1 gone, 2 fail */

static ceb_outcome script(void *arg, const ceb_delivery *d,
                          ceb_settle_info *info) {
  (void)arg;
  (void)d;
  int m = atomic_load(&g_mode);
  if (m == 1) {
    info->reason = "http.410";
    info->status_code = 410;
    info->flags = CEB_SETTLE_OPEN_CIRCUIT;
    return CEB_REJECT;
  }
  if (m == 2) {
    info->reason = "http.503";
    info->status_code = 503;
    return CEB_RETRY;
  }
  info->reason = "ok";
  info->status_code = 200;
  return CEB_ACK;
}

/* The sink's life-cycle entry (a new reference) or NULL. */
static json_t *sink_of(harness *h, const char *name) {
  json_t *all = ceb_runtime_sinks(h->rt), *found = NULL;
  size_t i;
  json_t *s;
  json_array_foreach(all, i, s) {
    if (strcmp(json_string_value(json_object_get(s, "sink")), name) == 0)
      found = json_incref(s);
  }
  json_decref(all);
  return found;
}

static int disabled(harness *h) {
  json_t *s = sink_of(h, "out");
  int d = json_is_true(json_object_get(s, "disabled"));
  json_decref(s);
  return d;
}

static int is_disabled(void *arg) {
  return disabled(arg);
}

typedef struct more_arg {
  testsink *s;
  size_t n;
} more_arg;
static int more_than(void *arg) {
  more_arg *m = arg;
  return testsink_count(m->s) > m->n;
}

static size_t dlq_count(harness *h) {
  ceb_dlq_filter f = {0};
  json_t *l = ceb_store_dlq_list(ceb_runtime_store(h->rt), &f);
  size_t n = json_array_size(l);
  json_decref(l);
  return n;
}

static const char *k_conf = "[source in]\nplugin = testsource\n"
                            "[sink out]\nplugin = testsink\n"
                            "[route r]\nfrom = in\nto = out\n"
                            "order_by = partitionkey\nmax_inflight = 1\n";

static void gone(void) {
  harness h;
  if (harness_open(&h, "lifecycle-gone", NULL, k_conf) != 0) return;
  testsink *out = harness_sink(&h, "out");
  testsink_script(out, script, NULL);
  atomic_store(&g_mode, 1);
  CHECK_INT(harness_submit(&h, "in", harness_event("g1", "nl.test.x", "k")), 0);
  CHECK(ceb_test_wait(is_disabled, &h, 10000));
  CHECK_INT(harness_submit(&h, "in", harness_event("g2", "nl.test.x", "k")), 0);
  CHECK_INT(harness_submit(&h, "in", harness_event("g3", "nl.test.x", "k")), 0);
  json_t *s = sink_of(&h, "out");
  CHECK_MSG(strstr(json_string_value(json_object_get(s, "reason")),
                   "http.410") != NULL,
            "reason %s", json_string_value(json_object_get(s, "reason")));
  json_decref(s);
  CHECK_INT(
      ceb_metrics_get(h.metrics, "cebridge_sink_disabled", "sink=\"out\""), 1);
  CHECK_INT(ceb_metrics_get(h.metrics, "cebridge_sink_disablements_total",
                            "sink=\"out\",reason=\"gone\""),
            1);
  /* the 410'd event waits, like the later ones: nothing is dead-lettered,
   * and nothing more is sent however far the clock moves */
  CHECK(harness_wait_state(&h, "g1", "r", "pending"));
  CHECK(harness_wait_queued(&h, "r", 3));
  size_t seen = testsink_count(out);
  CHECK_INT(seen, 1);
  harness_advance(&h, 100 * H);
  more_arg m = {out, seen};
  CHECK(!ceb_test_wait(more_than, &m, 1500));
  CHECK_INT(dlq_count(&h), 0);
  char buf[32];
  CHECK_STR(harness_state(&h, "g2", "r", buf, sizeof buf), "pending");

  /* a restart keeps it disabled */
  CHECK_INT(harness_restart(&h), 0);
  out = harness_sink(&h, "out");
  testsink_script(out, script, NULL);
  CHECK(disabled(&h));
  harness_advance(&h, H);
  m = (more_arg){out, 0};
  CHECK(!ceb_test_wait(more_than, &m, 1500));

  /* the operator enables it: the waiting events flow, in order */
  atomic_store(&g_mode, 0);
  CHECK_INT(ceb_runtime_sink_enable(h.rt, "nope"), CEB_ENOTFOUND);
  CHECK_INT(ceb_runtime_sink_enable(h.rt, "out"), CEB_OK);
  CHECK(!disabled(&h));
  CHECK(harness_wait_state(&h, "g3", "r", "done"));
  CHECK_INT(testsink_count(out), 3);
  static const char *const order[] = {"g1", "g2", "g3"};
  for (size_t i = 0; i < 3; i++) {
    testsink_seen seen_i;
    CHECK(testsink_get(out, i, &seen_i));
    CHECK_STR(seen_i.id, order[i]);
  }
  CHECK_INT(dlq_count(&h), 0);
  CHECK_INT(
      ceb_metrics_get(h.metrics, "cebridge_sink_disabled", "sink=\"out\""), 0);
  /* stored as enabled: a restart does not disable it again */
  CHECK_INT(harness_restart(&h), 0);
  CHECK(!disabled(&h));
  harness_close(&h);
}

static void failing(void) {
  harness h;
  /* attempts at +0, +71 h, +72 h, then hourly; a deadline far enough that
   * the event itself is not dead-lettered meanwhile */
  if (harness_open(&h, "lifecycle-failing", NULL,
                   "[source in]\nplugin = testsource\n"
                   "[sink out]\nplugin = testsink\n"
                   "[route r]\nfrom = in\nto = out\n"
                   "retry.schedule = 0s 71h 1h 1h 1h\ndeadline = 200h\n") != 0)
    return;
  testsink *out = harness_sink(&h, "out");
  testsink_script(out, script, NULL);
  atomic_store(&g_mode, 2);
  CHECK_INT(harness_submit(&h, "in", harness_event("f1", "nl.test.x", NULL)),
            0);
  /* each outcome is recorded (its next attempt scheduled) before the
   * clock moves on */
  CHECK(harness_wait_route_int(&h, "f1", "r", "next_attempt_at",
                               HARNESS_T0 + 71 * H));
  json_t *s = sink_of(&h, "out");
  CHECK_INT(json_integer_value(json_object_get(s, "failing_since")),
            HARNESS_T0);
  CHECK_INT(json_integer_value(json_object_get(s, "disable_after_ms")), 72 * H);
  json_decref(s);
  harness_advance(&h, 71 * H);
  CHECK(harness_wait_route_int(&h, "f1", "r", "next_attempt_at",
                               HARNESS_T0 + 72 * H));
  CHECK(!disabled(&h)); /* 71 h of failures: not yet */
  harness_advance(&h, 1 * H);
  CHECK(harness_wait_route_int(&h, "f1", "r", "next_attempt_at",
                               HARNESS_T0 + 73 * H));
  CHECK_INT(harness_route_int(&h, "f1", "r", "attempts"), 3);
  CHECK(ceb_test_wait(is_disabled, &h, 10000));
  s = sink_of(&h, "out");
  CHECK_MSG(strstr(json_string_value(json_object_get(s, "reason")),
                   "without a single success") != NULL,
            "reason %s", json_string_value(json_object_get(s, "reason")));
  json_decref(s);
  CHECK_INT(ceb_metrics_get(h.metrics, "cebridge_sink_disablements_total",
                            "sink=\"out\",reason=\"failing\""),
            1);
  /* disabled: the next due attempt is not made */
  harness_advance(&h, 2 * H);
  more_arg m = {out, 3};
  CHECK(!ceb_test_wait(more_than, &m, 1500));
  char buf[32];
  CHECK_STR(harness_state(&h, "f1", "r", buf, sizeof buf), "retrying");
  /* enabled and answering: delivered; the failing period ends */
  atomic_store(&g_mode, 0);
  CHECK_INT(ceb_runtime_sink_enable(h.rt, "out"), CEB_OK);
  CHECK(harness_wait_state(&h, "f1", "r", "done"));
  s = sink_of(&h, "out");
  CHECK_INT(json_integer_value(json_object_get(s, "failing_since")), 0);
  json_decref(s);
  harness_close(&h);
}

int main(void) {
  gone();
  failing();
  return ceb_test_done("integration_core_lifecycle");
}
