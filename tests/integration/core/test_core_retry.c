/* Ordering per key under retries, the retry schedule with Retry-After,
 * exhaustion and deadline to the DLQ, REJECT to the DLQ with the dead
 * letter forwarded to a topic, and replay with the same event id. */
#include <stdatomic.h>

#include "harness.h"

/* Script: the first attempt of every event whose id starts with "fail"
 * is retried, everything else acks; events "never*" always retry; events
 * "bad*" are rejected; "later*" retry with Retry-After 60 s. */
static ceb_outcome script(void *arg, const ceb_delivery *d,
                          ceb_settle_info *info) {
  (void)arg;
  const char *id = ceb_event_get(d->event, "id");
  info->reason = "http.503";
  info->status_code = 503;
  info->detail = "unavailable";
  if (strncmp(id, "bad", 3) == 0) {
    info->reason = "http.400";
    info->status_code = 400;
    info->detail = "schema says no";
    return CEB_REJECT;
  }
  if (strncmp(id, "never", 5) == 0) return CEB_RETRY;
  if (strncmp(id, "later", 5) == 0 && d->attempt == 1) {
    info->retry_after_ms = 60000;
    return CEB_RETRY;
  }
  if (strncmp(id, "fail", 4) == 0 && d->attempt == 1) return CEB_RETRY;
  info->reason = "ok";
  info->status_code = 200;
  return CEB_ACK;
}

static const char *k_conf =
    "[source in]\nplugin = testsource\n"
    "[sink out]\nplugin = testsink\n"
    "[sink dlqsink]\nplugin = testsink\n"
    "[route ordered]\nfrom = in\nto = out\nmatch.type = nl.edu.ordered\n"
    "order_by = partitionkey\nretry.schedule = 0s 10s 20s\n"
    "[route short]\nfrom = in\nto = out\nmatch.type = nl.edu.short\n"
    "retry.schedule = 0s 10s 10s 10s\ndeadline = 15s\n"
    "[route topical]\nfrom = in\nto = out\nmatch.type = nl.edu.topical\n"
    "dlq = dlqsink:edu.dlq\n"
    "[route expo]\nfrom = in\nto = out\nmatch.type = nl.edu.expo\n"
    "retry.mode = exponential\nretry.base = 1s\nretry.max_delay = 4s\n"
    "retry.max_attempts = 4\nreceipts = dlqsink:receipts\n"
    "receipts.type_prefix = nl.test.receipt\n";

typedef struct fwd_arg {
  harness *h;
  int64_t id;
} fwd_arg;

static int forwarded(void *arg) {
  fwd_arg *a = arg;
  json_t *one = ceb_runtime_dlq_show(a->h->rt, a->id);
  int ok = json_integer_value(json_object_get(one, "forwarded_at")) > 0;
  json_decref(one);
  return ok;
}

static int ceb_test_wait_forwarded(harness *h, int64_t id) {
  fwd_arg a = {h, id};
  return ceb_test_wait(forwarded, &a, 10000);
}

static size_t index_of(testsink *s, const char *id, uint32_t attempt) {
  testsink_seen seen;
  for (size_t i = 0; testsink_get(s, i, &seen); i++)
    if (strcmp(seen.id, id) == 0 && seen.attempt == attempt) return i;
  return (size_t)-1;
}

int main(void) {
  harness h;
  if (harness_open(&h, "retry", NULL, k_conf) != 0)
    return ceb_test_done("integration_core_retry");
  testsink *out = harness_sink(&h, "out"), *dlq = harness_sink(&h, "dlqsink");
  testsink_script(out, script, NULL);
  char buf[32];

  /* --- FIFO per key under retries: fail-a1 blocks a2 and a3 of key A
   * until its retry succeeds; key B goes on meanwhile. */
  CHECK_INT(
      harness_submit(&h, "in", harness_event("fail-a1", "nl.edu.ordered", "A")),
      CEB_OK);
  CHECK_INT(
      harness_submit(&h, "in", harness_event("a2", "nl.edu.ordered", "A")),
      CEB_OK);
  CHECK_INT(
      harness_submit(&h, "in", harness_event("a3", "nl.edu.ordered", "A")),
      CEB_OK);
  CHECK_INT(
      harness_submit(&h, "in", harness_event("b1", "nl.edu.ordered", "B")),
      CEB_OK);
  CHECK(harness_wait_state(&h, "b1", "ordered", "done"));
  CHECK(harness_wait_state(&h, "fail-a1", "ordered", "retrying"));
  CHECK_INT(testsink_count_id(out, "a2"), 0);
  CHECK_STR(harness_state(&h, "a2", "ordered", buf, sizeof buf), "pending");
  /* the retry waits in the store: 10 s per the schedule */
  json_t *st = ceb_runtime_event_status(h.rt, "fail-a1", NULL);
  json_t *r0 =
      json_array_get(json_object_get(json_array_get(st, 0), "routes"), 0);
  CHECK_INT(json_integer_value(json_object_get(r0, "next_attempt_at")),
            HARNESS_T0 + 10000);
  CHECK_INT(json_integer_value(json_object_get(r0, "attempts")), 1);
  CHECK_STR(json_string_value(json_object_get(r0, "last_reason")), "http.503");
  json_decref(st);
  harness_advance(&h, 9999);
  CHECK_INT(testsink_count_id(out, "fail-a1"), 1);
  harness_advance(&h, 1);
  CHECK(harness_wait_state(&h, "a3", "ordered", "done"));
  size_t i1 = index_of(out, "fail-a1", 2), i2 = index_of(out, "a2", 1),
         i3 = index_of(out, "a3", 1);
  CHECK(i1 != (size_t)-1 && i1 < i2 && i2 < i3);
  /* same idempotency key across the retry */
  testsink_seen s1, s2;
  testsink_get(out, index_of(out, "fail-a1", 1), &s1);
  testsink_get(out, i1, &s2);
  CHECK_STR(s1.idem_key, s2.idem_key);

  /* --- Retry-After is a minimum wait: 60 s instead of the schedule's 10. */
  CHECK_INT(
      harness_submit(&h, "in", harness_event("later1", "nl.edu.ordered", "C")),
      CEB_OK);
  CHECK(harness_wait_state(&h, "later1", "ordered", "retrying"));
  st = ceb_runtime_event_status(h.rt, "later1", NULL);
  r0 = json_array_get(json_object_get(json_array_get(st, 0), "routes"), 0);
  CHECK_INT(json_integer_value(json_object_get(r0, "next_attempt_at")),
            harness_now(&h) + 60000);
  json_decref(st);
  harness_advance(&h, 60000);
  CHECK(harness_wait_state(&h, "later1", "ordered", "done"));

  /* --- Exhaustion: 3 attempts (0s 10s 20s), then the DLQ. */
  CHECK_INT(
      harness_submit(&h, "in", harness_event("never1", "nl.edu.ordered", "D")),
      CEB_OK);
  CHECK(harness_wait_state(&h, "never1", "ordered", "retrying"));
  harness_advance(&h, 10000);
  CHECK(harness_wait_id(out, "never1", 2));
  CHECK(harness_wait_state(&h, "never1", "ordered", "retrying"));
  harness_advance(&h, 20000);
  CHECK(harness_wait_state(&h, "never1", "ordered", "dead"));
  CHECK_INT(testsink_count_id(out, "never1"), 3);
  ceb_dlq_filter f = {.route = "ordered"};
  json_t *l = ceb_runtime_dlq_list(h.rt, &f);
  CHECK_INT(json_array_size(l), 1);
  json_t *row = json_array_get(l, 0);
  CHECK_STR(json_string_value(json_object_get(row, "reason")), "maxattempts");
  CHECK_STR(json_string_value(json_object_get(row, "last_reason")), "http.503");
  CHECK_INT(json_integer_value(json_object_get(row, "attempts")), 3);
  CHECK_INT(json_integer_value(json_object_get(row, "status")), 503);
  int64_t never_id = json_integer_value(json_object_get(row, "id"));
  json_decref(l);
  /* the dead letter: the original event plus dead* extensions */
  json_t *one = ceb_runtime_dlq_show(h.rt, never_id);
  json_t *ev = json_object_get(one, "event");
  CHECK_STR(json_string_value(json_object_get(ev, "id")), "never1");
  CHECK_STR(json_string_value(json_object_get(ev, "deadroute")), "ordered");
  CHECK_STR(json_string_value(json_object_get(ev, "deadsink")), "out");
  CHECK_STR(json_string_value(json_object_get(ev, "deadreason")),
            "maxattempts");
  CHECK_STR(json_string_value(json_object_get(ev, "deadcause")), "http.503");
  CHECK_INT(json_integer_value(json_object_get(ev, "deadattempts")), 3);
  CHECK_INT(json_integer_value(json_object_get(ev, "deadstatus")), 503);
  CHECK_STR(json_string_value(json_object_get(ev, "deaderror")), "unavailable");
  CHECK(json_object_get(ev, "deadfirstat") != NULL);
  CHECK(json_object_get(ev, "data") != NULL);
  json_decref(one);
  /* a dead event releases its key: the next of key D goes */
  CHECK_INT(
      harness_submit(&h, "in", harness_event("d2", "nl.edu.ordered", "D")),
      CEB_OK);
  CHECK(harness_wait_state(&h, "d2", "ordered", "done"));

  /* --- Deadline (15 s): attempt 2 at +10 s fails, attempt 3 would be at
   * +20 s, past the deadline: dead with reason deadline. */
  CHECK_INT(
      harness_submit(&h, "in", harness_event("never2", "nl.edu.short", NULL)),
      CEB_OK);
  CHECK(harness_wait_state(&h, "never2", "short", "retrying"));
  harness_advance(&h, 10000);
  CHECK(harness_wait_state(&h, "never2", "short", "dead"));
  f = (ceb_dlq_filter){.route = "short"};
  l = ceb_runtime_dlq_list(h.rt, &f);
  CHECK_STR(json_string_value(json_object_get(json_array_get(l, 0), "reason")),
            "deadline");
  json_decref(l);

  /* --- REJECT: dead at once; the dead letter is forwarded to the DLQ
   * topic of another sink, and stays listed in the store DLQ. */
  CHECK_INT(
      harness_submit(&h, "in", harness_event("bad1", "nl.edu.topical", NULL)),
      CEB_OK);
  CHECK(harness_wait_state(&h, "bad1", "topical", "dead"));
  CHECK(harness_wait_count(dlq, 1));
  testsink_seen dl;
  CHECK(testsink_get(dlq, 0, &dl));
  CHECK_STR(dl.id, "bad1");
  CHECK_STR(dl.topic, "edu.dlq");
  CHECK_STR(dl.deadreason, "rejected");
  CHECK_INT(testsink_count_id(out, "bad1"), 1);
  f = (ceb_dlq_filter){.route = "topical"};
  l = ceb_runtime_dlq_list(h.rt, &f);
  CHECK_INT(json_array_size(l), 1);
  int64_t bad_id =
      json_integer_value(json_object_get(json_array_get(l, 0), "id"));
  json_decref(l);
  CHECK(ceb_test_wait_forwarded(&h, bad_id));

  /* --- Replay: after the fix (the sink now accepts), the same event with
   * the same id goes out again as a fresh first attempt. */
  testsink_script(out, NULL, NULL); /* mode ack */
  size_t count = 0;
  f = (ceb_dlq_filter){.id = bad_id};
  CHECK_INT(ceb_runtime_dlq_replay(h.rt, &f, 1, &count, NULL), CEB_OK);
  CHECK_INT(count, 1);
  CHECK_INT(testsink_count_id(out, "bad1"), 1); /* dry run: nothing */
  CHECK_INT(ceb_runtime_dlq_replay(h.rt, &f, 0, &count, NULL), CEB_OK);
  CHECK_INT(count, 1);
  CHECK(harness_wait_state(&h, "bad1", "topical", "done"));
  CHECK_INT(testsink_count_id(out, "bad1"), 2);
  CHECK(index_of(out, "bad1", 1) != (size_t)-1);
  one = ceb_runtime_dlq_show(h.rt, bad_id);
  CHECK_INT(json_integer_value(json_object_get(one, "replays")), 1);
  CHECK(json_integer_value(json_object_get(one, "replayed_at")) > 0);
  json_decref(one);
  /* replay of a route that does not exist */
  f = (ceb_dlq_filter){.route = "nope"};
  CHECK_INT(ceb_runtime_dlq_replay(h.rt, &f, 0, &count, NULL), CEB_ENOTFOUND);
  /* purge by route with a dry run first */
  f = (ceb_dlq_filter){.route = "short"};
  CHECK_INT(ceb_runtime_dlq_purge(h.rt, &f, 1, &count), CEB_OK);
  CHECK_INT(count, 1);
  CHECK_INT(ceb_runtime_dlq_purge(h.rt, &f, 0, &count), CEB_OK);
  l = ceb_runtime_dlq_list(h.rt, &f);
  CHECK_INT(json_array_size(l), 0);
  json_decref(l);

  /* --- Exponential with full jitter: each wait within [0, min(4 s,
   * 1 s * 2^(n-1))]; 4 attempts, then dead; a .failed receipt goes out. */
  testsink_script(out, script, NULL);
  CHECK_INT(
      harness_submit(&h, "in", harness_event("never3", "nl.edu.expo", NULL)),
      CEB_OK);
  int64_t caps[] = {1000, 2000, 4000};
  for (int n = 0; n < 3; n++) {
    CHECK(harness_wait_id(out, "never3", (size_t)n + 1));
    CHECK(harness_wait_state(&h, "never3", "expo", "retrying"));
    st = ceb_runtime_event_status(h.rt, "never3", NULL);
    r0 = json_array_get(json_object_get(json_array_get(st, 0), "routes"), 0);
    int64_t wait = json_integer_value(json_object_get(r0, "next_attempt_at")) -
                   harness_now(&h);
    CHECK_MSG(wait >= 0 && wait <= caps[n], "wait %lld after attempt %d",
              (long long)wait, n + 1);
    json_decref(st);
    harness_advance(&h, caps[n]);
  }
  CHECK(harness_wait_state(&h, "never3", "expo", "dead"));
  CHECK_INT(testsink_count_id(out, "never3"), 4);
  /* dlqsink got the forward of bad1 earlier; the receipt is the second */
  CHECK(harness_wait_count(dlq, 2));
  testsink_seen receipt = {0};
  int found = 0;
  for (size_t i = 0; testsink_get(dlq, i, &receipt); i++)
    if (strcmp(receipt.topic, "receipts") == 0) {
      found = 1;
      break;
    }
  CHECK(found);
  CHECK(strstr(receipt.id, "expo.") == receipt.id);
  CHECK(strstr(receipt.id, ".failed") != NULL);

  const char *rl = "route=\"ordered\",reason=\"maxattempts\"";
  CHECK_INT(ceb_metrics_get(h.metrics, "cebridge_events_dead_total", rl), 1);
  harness_close(&h);
  return ceb_test_done("integration_core_retry");
}
