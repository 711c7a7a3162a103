/* Backpressure from a sink: a deliver() that returns CEB_EBUSY is not a
 * failed attempt. The delivery goes back to pending, the sink is paused
 * with a short backoff (not the route's retry schedule, here 5 minutes),
 * the attempt is given back, and FIFO per key holds. The rest of a claimed
 * batch is deferred without asking the sink again, and the pause doubles
 * once per pause, not once per deferred delivery. A half-open circuit's
 * probe that meets a busy sink is given back (else the sink would stall). */
#include <stdio.h>

#include "harness.h"

static const char *k_conf =
    "[source in]\nplugin = testsource\n"
    "[sink out]\nplugin = testsink\n"
    "[route r]\nfrom = in\nto = out\norder_by = partitionkey\n"
    "retry.schedule = 0s 5m\n";

typedef struct tick_arg {
  harness *h;
  testsink *s;
  size_t want;
} tick_arg;

/* Moves the clock 20 ms per poll until the sink has seen `want`. */
static int delivered_ticking(void *arg) {
  tick_arg *a = arg;
  if (testsink_count(a->s) >= a->want) return 1;
  harness_advance(a->h, 20);
  return 0;
}

typedef struct route_at_arg {
  harness *h;
  const char *id;
  int64_t t0;
} route_at_arg;

/* The delivery has a next attempt time again (no longer in progress). */
static int route_at_set(void *arg) {
  route_at_arg *a = arg;
  return harness_route_int(a->h, a->id, "r", "next_attempt_at") >= a->t0;
}

static int busy_answered(void *arg) {
  return testsink_busy_count(arg) >= 1;
}

static void test_batch_one_pause(void) {
  harness h;
  if (harness_open(&h, "busybatch", NULL, k_conf) != 0) return;
  testsink *out = harness_sink(&h, "out");
  testsink_busy(out, 1);
  int64_t t0 = harness_now(&h);
  char id[16], key[16];
  for (int i = 0; i < 21; i++) {
    snprintf(id, sizeof id, "e%d", i);
    snprintf(key, sizeof key, "K%d", i);
    CHECK_INT(harness_submit(&h, "in", harness_event(id, "nl.edu.t", key)),
              CEB_OK);
  }
  /* the clock stands still: the first delivery meets the busy sink, which
   * pauses 20 ms; the deferral is recorded at t0 + 20 */
  CHECK(ceb_test_wait(busy_answered, out, 10000));
  CHECK(harness_wait_route_int(&h, "e0", "r", "next_attempt_at", t0 + 20));
  /* one pause of 20 ms, not doubled per deferred delivery (that would put
   * the last ones up to 1 s out), and no attempt counted. Deliveries
   * claimed at their ingest are deferred one settle each, after e0's */
  for (int i = 0; i < 21; i++) {
    snprintf(id, sizeof id, "e%d", i);
    route_at_arg w = {&h, id, t0};
    CHECK(ceb_test_wait(route_at_set, &w, 10000));
    long long at = harness_route_int(&h, id, "r", "next_attempt_at");
    CHECK_MSG(at >= t0 && at <= t0 + 20, "%s: next attempt at t0 + %lld", id,
              at - t0);
    CHECK_INT(harness_route_int(&h, id, "r", "attempts"), 0);
  }
  tick_arg a = {&h, out, 21};
  CHECK(ceb_test_wait(delivered_ticking, &a, 20000));
  CHECK_INT(testsink_busy_count(out), 1); /* asked once, not per event */
  for (size_t i = 0; i < 21; i++) {
    testsink_seen seen = {0};
    CHECK(testsink_get(out, i, &seen) && seen.attempt == 1);
  }
  harness_close(&h);
}

static int probe_calls;
static ceb_outcome fail_first(void *arg, const ceb_delivery *d,
                              ceb_settle_info *info) {
  (void)arg;
  (void)d;
  (void)info;
  return probe_calls++ == 0 ? CEB_RETRY : CEB_ACK;
}

static void test_half_open_probe(void) {
  static const char *conf =
      "[source in]\nplugin = testsource\n"
      "[sink out]\nplugin = testsink\ncircuit.failures = 1\n"
      "circuit.open_for = 1s\n"
      "[route r]\nfrom = in\nto = out\n"
      "retry.schedule = 0s 1s 1s 1s 1s\n";
  harness h;
  if (harness_open(&h, "busyprobe", NULL, conf) != 0) return;
  testsink *out = harness_sink(&h, "out");
  testsink_script(out, fail_first, NULL);
  CHECK_INT(harness_submit(&h, "in", harness_event("p1", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_count(out, 1)); /* attempt 1 failed: circuit open */
  testsink_busy(out, 1);             /* the half-open probe meets it busy */
  tick_arg a = {&h, out, 2};
  CHECK_MSG(ceb_test_wait(delivered_ticking, &a, 20000),
            "no delivery after the busy probe (%zu busy)",
            testsink_busy_count(out));
  CHECK_INT(testsink_busy_count(out), 1);
  harness_close(&h);
}

int main(void) {
  test_batch_one_pause();
  test_half_open_probe();
  harness h;
  if (harness_open(&h, "busy", NULL, k_conf) != 0)
    return ceb_test_done("integration_core_busy");
  testsink *out = harness_sink(&h, "out");
  testsink_busy(out, 3);
  int64_t t0 = harness_now(&h);
  CHECK_INT(harness_submit(&h, "in", harness_event("k1", "nl.edu.t", "K")),
            CEB_OK);
  CHECK_INT(harness_submit(&h, "in", harness_event("k2", "nl.edu.t", "K")),
            CEB_OK);
  tick_arg a = {&h, out, 2};
  CHECK(ceb_test_wait(delivered_ticking, &a, 20000));
  CHECK_INT(testsink_busy_count(out), 3);
  /* in order, each on its first attempt */
  testsink_seen s0 = {0}, s1 = {0};
  CHECK(testsink_get(out, 0, &s0) && testsink_get(out, 1, &s1));
  CHECK_STR(s0.id, "k1");
  CHECK_STR(s1.id, "k2");
  CHECK_INT(s0.attempt, 1);
  CHECK_INT(s1.attempt, 1);
  /* three backoffs of 20, 40 and 80 ms, not the 5 minute retry */
  int64_t took = harness_now(&h) - t0;
  CHECK_MSG(took >= 140 && took < 60000, "delivered after %lld ms",
            (long long)took);
  CHECK(harness_wait_state(&h, "k2", "r", "done"));
  json_t *st = ceb_runtime_event_status(h.rt, "k1", NULL);
  json_t *r0 =
      json_array_get(json_object_get(json_array_get(st, 0), "routes"), 0);
  CHECK_INT(json_integer_value(json_object_get(r0, "attempts")), 1);
  json_decref(st);
  harness_close(&h);
  return ceb_test_done("integration_core_busy");
}
