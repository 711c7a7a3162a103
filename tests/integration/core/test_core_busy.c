/* Backpressure from a sink: a deliver() that returns CEB_EBUSY is not a
 * failed attempt. The delivery goes back to pending, the sink is paused
 * with a short backoff (not the route's retry schedule, here 5 minutes),
 * the attempt is given back, and FIFO per key holds. */
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

int main(void) {
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
