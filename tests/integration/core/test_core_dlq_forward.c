/* Dead letters reach the route's DLQ sink at least once: a forward the sink
 * fails is tried again with backoff (1 s doubling), one pending when the
 * bridge stops is sent after the restart (the work list is the store's dlq
 * table), CEB_EBUSY waits for the sink's pause without counting a try, and
 * at most FWD_WINDOW (4) forwards per sink are in flight, one the sink
 * never settles fails after 30 s, and a purge or replay ends a waiting
 * forward. Every try carries the same Idempotency-Key, and forwarded_at is
 * set once the sink took it. */
#include <stdio.h>
#include <string.h>

#include "harness.h"

static const char *k_conf =
    "[source in]\nplugin = testsource\n"
    "[sink out]\nplugin = testsink\nmode = reject\n"
    "[sink dlqsink]\nplugin = testsink\n"
    "[route r]\nfrom = in\nto = out\ndlq = dlqsink:edu.dlq\n";

#define SINK_LABEL "sink=\"dlqsink\""

static double forwards(harness *h, const char *result) {
  char labels[96];
  snprintf(labels, sizeof labels, SINK_LABEL ",result=\"%s\"", result);
  return ceb_metrics_get(h->metrics, "cebridge_dlq_forwards_total", labels);
}

/* The DLQ row id of event id on route r; 0 when absent. */
static int64_t dlq_id_of(harness *h, const char *id) {
  ceb_dlq_filter f = {.route = "r", .limit = 1000};
  json_t *l = ceb_runtime_dlq_list(h->rt, &f);
  int64_t found = 0;
  size_t i;
  json_t *row;
  json_array_foreach(l, i, row) {
    if (strcmp(json_string_value(json_object_get(row, "event_id")), id) == 0)
      found = json_integer_value(json_object_get(row, "id"));
  }
  json_decref(l);
  return found;
}

static int64_t forwarded_at(harness *h, int64_t dlq_id) {
  json_t *one = ceb_runtime_dlq_show(h->rt, dlq_id);
  int64_t v = json_integer_value(json_object_get(one, "forwarded_at"));
  json_decref(one);
  return v;
}

typedef struct fwd_arg {
  harness *h;
  int64_t id;
} fwd_arg;

static int is_forwarded(void *arg) {
  fwd_arg *a = arg;
  return forwarded_at(a->h, a->id) > 0;
}

static int wait_forwarded(harness *h, int64_t dlq_id) {
  fwd_arg a = {h, dlq_id};
  return ceb_test_wait(is_forwarded, &a, 10000);
}

typedef struct gauge_arg {
  harness *h;
  double want;
} gauge_arg;

static int gauge_is(void *arg) {
  gauge_arg *a = arg;
  return ceb_metrics_get(a->h->metrics, "cebridge_dlq_forward_pending",
                         SINK_LABEL) == a->want;
}

static int wait_pending(harness *h, double want) {
  gauge_arg a = {h, want};
  return ceb_test_wait(gauge_is, &a, 10000);
}

typedef struct tick_arg {
  harness *h;
  testsink *s;
  size_t want;
  int64_t step;
} tick_arg;

/* Moves the clock `step` ms per poll until the sink has seen `want`. */
static int seen_ticking(void *arg) {
  tick_arg *a = arg;
  if (testsink_count(a->s) >= a->want) return 1;
  harness_advance(a->h, a->step);
  return 0;
}

static _Atomic int fails_left;
static ceb_outcome fail_then_ack(void *arg, const ceb_delivery *d,
                                 ceb_settle_info *info) {
  (void)arg;
  (void)d;
  if (atomic_fetch_sub(&fails_left, 1) > 0) {
    info->reason = "kafka.transport";
    info->detail = "broker down";
    return CEB_RETRY;
  }
  return CEB_ACK;
}

/* (1) The DLQ sink fails the first two forwards, then takes the third. */
static void test_failed_forward_retried(void) {
  harness h;
  if (harness_open(&h, "dlqfwd-retry", NULL, k_conf) != 0) return;
  testsink *out = harness_sink(&h, "out"), *dlq = harness_sink(&h, "dlqsink");
  atomic_store(&fails_left, 2);
  testsink_script(dlq, fail_then_ack, NULL);
  int64_t t0 = harness_now(&h);
  CHECK_INT(harness_submit(&h, "in", harness_event("d1", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_state(&h, "d1", "r", "dead"));
  int64_t id = dlq_id_of(&h, "d1");
  CHECK(id > 0);
  CHECK(harness_wait_count(dlq, 1)); /* the first forward, at once */
  tick_arg a = {&h, dlq, 3, 250};
  CHECK_MSG(ceb_test_wait(seen_ticking, &a, 20000),
            "the failed forward was not tried again (%zu forwards)",
            testsink_count(dlq));
  CHECK(wait_forwarded(&h, id));
  /* backoff: 1 s after the first failure, 2 s after the second */
  int64_t took = harness_now(&h) - t0;
  CHECK_MSG(took >= 3000, "third forward after %lld ms", (long long)took);
  testsink_seen route_seen = {0}, s0 = {0};
  CHECK(testsink_get(out, 0, &route_seen));
  CHECK(testsink_get(dlq, 0, &s0));
  CHECK(s0.idem_key[0] != '\0');
  CHECK(strcmp(s0.idem_key, route_seen.idem_key) != 0);
  for (size_t i = 0; i < 3; i++) {
    testsink_seen s = {0};
    CHECK(testsink_get(dlq, i, &s));
    CHECK_STR(s.id, "d1");
    CHECK_STR(s.topic, "edu.dlq");
    CHECK_STR(s.deadreason, "rejected");
    CHECK_STR(s.idem_key, s0.idem_key); /* the consumer dedupes on it */
  }
  CHECK(forwards(&h, "failed") == 2);
  CHECK(forwards(&h, "ok") == 1);
  CHECK(wait_pending(&h, 0));
  /* forwarded for good: later letters go, d1 is not sent again */
  harness_advance(&h, 600000);
  CHECK_INT(harness_submit(&h, "in", harness_event("d2", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_id(dlq, "d2", 1));
  CHECK(wait_forwarded(&h, dlq_id_of(&h, "d2")));
  CHECK_INT(testsink_count_id(dlq, "d1"), 3);
  harness_close(&h);
}

/* (2) A forward the sink holds when the bridge stops is sent after the
 * restart, from the store, with the same key. */
static void test_pending_across_restart(void) {
  harness h;
  if (harness_open(&h, "dlqfwd-restart", NULL, k_conf) != 0) return;
  testsink_hold(harness_sink(&h, "dlqsink"), 1);
  CHECK_INT(harness_submit(&h, "in", harness_event("s1", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_state(&h, "s1", "r", "dead"));
  testsink *dlq = harness_sink(&h, "dlqsink");
  CHECK(harness_wait_count(dlq, 1));
  testsink_seen before = {0};
  CHECK(testsink_get(dlq, 0, &before));
  int64_t id = dlq_id_of(&h, "s1");
  CHECK(id > 0);
  CHECK_INT(forwarded_at(&h, id), 0);
  /* the stop settles the held forward as a retry: it stays pending */
  if (harness_restart(&h) != 0) return;
  dlq = harness_sink(&h, "dlqsink");
  CHECK_MSG(harness_wait_count(dlq, 1),
            "the pending forward was not sent after the restart");
  CHECK(wait_forwarded(&h, id));
  testsink_seen after = {0};
  CHECK(testsink_get(dlq, 0, &after));
  CHECK_STR(after.id, "s1");
  CHECK_STR(after.topic, "edu.dlq");
  CHECK_STR(after.idem_key, before.idem_key);
  CHECK(wait_pending(&h, 0));
  /* a restart with nothing pending sends nothing */
  if (harness_restart(&h) != 0) return;
  CHECK_INT(harness_submit(&h, "in", harness_event("s2", "nl.edu.t", NULL)),
            CEB_OK);
  dlq = harness_sink(&h, "dlqsink");
  CHECK(harness_wait_id(dlq, "s2", 1));
  CHECK_INT(testsink_count_id(dlq, "s1"), 0);
  harness_close(&h);
}

/* (3) CEB_EBUSY from the DLQ sink: retried after the sink's pause (20, 40,
 * 80 ms), not counted as a failed try, not lost. */
static void test_busy_sink(void) {
  harness h;
  if (harness_open(&h, "dlqfwd-busy", NULL, k_conf) != 0) return;
  testsink *dlq = harness_sink(&h, "dlqsink");
  testsink_busy(dlq, 3);
  CHECK_INT(harness_submit(&h, "in", harness_event("b1", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_state(&h, "b1", "r", "dead"));
  tick_arg a = {&h, dlq, 1, 20};
  CHECK_MSG(ceb_test_wait(seen_ticking, &a, 20000),
            "the forward refused busy was lost (%zu busy answers)",
            testsink_busy_count(dlq));
  CHECK_INT(testsink_busy_count(dlq), 3);
  CHECK(wait_forwarded(&h, dlq_id_of(&h, "b1")));
  CHECK(forwards(&h, "busy") == 3);
  CHECK(forwards(&h, "failed") == 0);
  CHECK(forwards(&h, "ok") == 1);
  testsink_seen s = {0};
  CHECK(testsink_get(dlq, 0, &s));
  CHECK_STR(s.id, "b1");
  harness_close(&h);
}

/* (4) Ten letters die while the DLQ sink holds: never more than four
 * forwards in flight; each arrives once as the sink takes them. */
static void test_window(void) {
  harness h;
  if (harness_open(&h, "dlqfwd-window", NULL, k_conf) != 0) return;
  testsink *dlq = harness_sink(&h, "dlqsink");
  testsink_hold(dlq, 1);
  char id[16];
  for (int i = 0; i < 10; i++) {
    snprintf(id, sizeof id, "w%d", i);
    CHECK_INT(harness_submit(&h, "in", harness_event(id, "nl.edu.t", NULL)),
              CEB_OK);
  }
  for (int i = 0; i < 10; i++) {
    snprintf(id, sizeof id, "w%d", i);
    CHECK(harness_wait_state(&h, id, "r", "dead"));
  }
  CHECK(wait_pending(&h, 10));
  CHECK(harness_wait_count(dlq, 4));
  size_t max_held = 0, released = 0;
  for (int round = 0; round < 100 && released < 10; round++) {
    size_t held = testsink_held(dlq);
    if (held > max_held) max_held = held;
    if (held && testsink_settle_held(dlq, CEB_ACK, "ok")) {
      released++;
      /* the next one goes once the settle freed room */
      if (released <= 6) CHECK(harness_wait_count(dlq, released + 4));
    }
  }
  CHECK_INT(released, 10);
  CHECK_MSG(max_held == 4, "%zu forwards were in flight at once", max_held);
  CHECK_INT(testsink_count(dlq), 10);
  for (int i = 0; i < 10; i++) {
    snprintf(id, sizeof id, "w%d", i);
    CHECK_INT(testsink_count_id(dlq, id), 1);
    CHECK(wait_forwarded(&h, dlq_id_of(&h, id)));
  }
  CHECK(wait_pending(&h, 0));
  harness_close(&h);
}

static ceb_outcome always_fail(void *arg, const ceb_delivery *d,
                               ceb_settle_info *info) {
  (void)arg;
  (void)d;
  info->reason = "kafka.transport";
  return CEB_RETRY;
}

static ceb_outcome ack_all(void *arg, const ceb_delivery *d,
                           ceb_settle_info *info) {
  (void)arg;
  (void)d;
  (void)info;
  return CEB_ACK;
}

typedef struct drop_arg {
  harness *h;
} drop_arg;

static int pending_zero_ticking(void *arg) {
  drop_arg *a = arg;
  if (ceb_metrics_get(a->h->metrics, "cebridge_dlq_forward_pending",
                      SINK_LABEL) == 0)
    return 1;
  harness_advance(a->h, 250);
  return 0;
}

/* (5) A letter purged or replayed while its forward waits is dropped,
 * not sent. */
static void test_purged_or_replayed(void) {
  harness h;
  if (harness_open(&h, "dlqfwd-purge", NULL, k_conf) != 0) return;
  testsink *dlq = harness_sink(&h, "dlqsink");
  testsink_script(dlq, always_fail, NULL);
  CHECK_INT(harness_submit(&h, "in", harness_event("p1", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_state(&h, "p1", "r", "dead"));
  CHECK(harness_wait_count(dlq, 1));
  CHECK(wait_pending(&h, 1));
  ceb_dlq_filter f = {.id = dlq_id_of(&h, "p1")};
  size_t purged = 0;
  CHECK_INT(ceb_runtime_dlq_purge(h.rt, &f, 0, &purged), CEB_OK);
  CHECK_INT(purged, 1);
  drop_arg a = {&h};
  CHECK(ceb_test_wait(pending_zero_ticking, &a, 20000));
  CHECK_INT(testsink_count_id(dlq, "p1"), 1);
  /* a replay resolves the letter: its waiting forward ends too */
  CHECK_INT(harness_submit(&h, "in", harness_event("q1", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_state(&h, "q1", "r", "dead"));
  CHECK(harness_wait_id(dlq, "q1", 1));
  CHECK(wait_pending(&h, 1));
  testsink_script(harness_sink(&h, "out"), ack_all, NULL);
  f = (ceb_dlq_filter){.id = dlq_id_of(&h, "q1")};
  size_t replayed = 0;
  CHECK_INT(ceb_runtime_dlq_replay(h.rt, &f, 0, &replayed, NULL), CEB_OK);
  CHECK_INT(replayed, 1);
  CHECK(harness_wait_state(&h, "q1", "r", "done"));
  CHECK(ceb_test_wait(pending_zero_ticking, &a, 20000));
  CHECK_INT(testsink_count_id(dlq, "q1"), 1);
  CHECK_INT(forwarded_at(&h, f.id), 0);
  harness_close(&h);
}

/* (6) More letters than one page of the start-up load (256) wait across a
 * restart: every one is forwarded once after it. */
static void test_many_across_restart(void) {
  enum { N = 300 };
  harness h;
  if (harness_open(&h, "dlqfwd-many", NULL, k_conf) != 0) return;
  testsink_hold(harness_sink(&h, "dlqsink"), 1);
  char id[16];
  for (int i = 0; i < N; i++) {
    snprintf(id, sizeof id, "m%d", i);
    CHECK_INT(harness_submit(&h, "in", harness_event(id, "nl.edu.t", NULL)),
              CEB_OK);
  }
  CHECK(wait_pending(&h, N));
  if (harness_restart(&h) != 0) return;
  testsink *dlq = harness_sink(&h, "dlqsink");
  CHECK(harness_wait_count(dlq, N));
  CHECK(wait_pending(&h, 0));
  CHECK_INT(testsink_count(dlq), N);
  for (int i = 0; i < N; i++) {
    snprintf(id, sizeof id, "m%d", i);
    CHECK_INT(testsink_count_id(dlq, id), 1);
  }
  ceb_dlq_filter f = {.route = "r", .limit = 1000};
  json_t *l = ceb_runtime_dlq_list(h.rt, &f);
  CHECK_INT(json_array_size(l), N);
  size_t i;
  json_t *row;
  json_array_foreach(l, i, row) {
    CHECK(json_integer_value(json_object_get(row, "forwarded_at")) > 0);
  }
  json_decref(l);
  harness_close(&h);
}

typedef struct metric_arg {
  harness *h;
  const char *result;
  double want;
} metric_arg;

static int forwards_reached(void *arg) {
  metric_arg *a = arg;
  return forwards(a->h, a->result) >= a->want;
}

/* (7) A forward the sink never settles fails after 30 s and is sent again;
 * the sink's late settle of the first one changes nothing. */
static void test_unsettled_forward_times_out(void) {
  harness h;
  if (harness_open(&h, "dlqfwd-timeout", NULL, k_conf) != 0) return;
  testsink *dlq = harness_sink(&h, "dlqsink");
  testsink_hold(dlq, 1);
  CHECK_INT(harness_submit(&h, "in", harness_event("t1", "nl.edu.t", NULL)),
            CEB_OK);
  CHECK(harness_wait_state(&h, "t1", "r", "dead"));
  CHECK(harness_wait_count(dlq, 1));
  int64_t id = dlq_id_of(&h, "t1");
  harness_advance(&h, 30000);
  metric_arg m = {&h, "failed", 1};
  CHECK_MSG(ceb_test_wait(forwards_reached, &m, 10000),
            "the unsettled forward did not time out");
  tick_arg a = {&h, dlq, 2, 250};
  CHECK(ceb_test_wait(seen_ticking, &a, 20000));
  CHECK_INT(testsink_held(dlq), 2);
  CHECK(testsink_settle_held(dlq, CEB_ACK, "late"));
  CHECK_INT(forwarded_at(&h, id), 0);
  CHECK(forwards(&h, "ok") == 0);
  CHECK(testsink_settle_held(dlq, CEB_ACK, "ok"));
  CHECK(wait_forwarded(&h, id));
  CHECK(forwards(&h, "ok") == 1);
  CHECK(forwards(&h, "failed") == 1);
  CHECK(wait_pending(&h, 0));
  harness_close(&h);
}

typedef struct all_arg {
  harness *h;
  testsink *s;
  int n;
} all_arg;

/* Moves the clock 250 ms per poll until every f<i> was seen. */
static int all_tried_ticking(void *arg) {
  all_arg *a = arg;
  char id[16];
  int tried = 0;
  for (int i = 0; i < a->n; i++) {
    snprintf(id, sizeof id, "f%d", i);
    tried += testsink_count_id(a->s, id) > 0;
  }
  if (tried == a->n) return 1;
  harness_advance(a->h, 250);
  return 0;
}

/* (8) A sink that fails everything: the letters that failed first do not
 * crowd out the others; every letter gets its tries in turn. */
static void test_round_robin(void) {
  harness h;
  if (harness_open(&h, "dlqfwd-fair", NULL, k_conf) != 0) return;
  testsink *dlq = harness_sink(&h, "dlqsink");
  testsink_script(dlq, always_fail, NULL);
  char id[16];
  for (int i = 0; i < 10; i++) {
    snprintf(id, sizeof id, "f%d", i);
    CHECK_INT(harness_submit(&h, "in", harness_event(id, "nl.edu.t", NULL)),
              CEB_OK);
  }
  CHECK(wait_pending(&h, 10));
  int64_t t0 = harness_now(&h);
  all_arg a = {&h, dlq, 10};
  CHECK_MSG(ceb_test_wait(all_tried_ticking, &a, 20000),
            "letters never tried after %zu forwards", testsink_count(dlq));
  /* the sink pauses after the first failure: the forwards sent as the
   * first letters died (1, or a few on a slow machine), then a window of 4
   * after each pause of 1, 2 and 4 s: ten letters took at least two
   * pauses and no more forwards than 1 + 3 windows */
  size_t sent = testsink_count(dlq);
  CHECK_MSG(sent >= 10 && sent <= 13, "%zu forwards", sent);
  int64_t took = harness_now(&h) - t0;
  CHECK_MSG(took >= 3000, "all tried after %lld ms", (long long)took);
  harness_close(&h);
}

int main(void) {
  test_round_robin();
  test_unsettled_forward_times_out();
  test_purged_or_replayed();
  test_many_across_restart();
  test_failed_forward_retried();
  test_pending_across_restart();
  test_busy_sink();
  test_window();
  return ceb_test_done("integration_core_dlq_forward");
}
