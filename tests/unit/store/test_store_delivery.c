/* Claiming is FIFO per order key (also across retries), keys run in
 * parallel, outcomes settle the journal, dead letters get a DLQ row, crash
 * recovery puts in-progress rows back, failed attempts are kept as the
 * event's history, and the sweeper expires settled
 * events but keeps what the DLQ needs. */
#include <ceb/status.h>

#include "store_fixture.h"

static ceb_attempt_result outcome(long long seq, const char *route, int state,
                                  long long now) {
  return (ceb_attempt_result){.seq = seq,
                              .route = route,
                              .state = state,
                              .next_at = now + 1000,
                              .now = now,
                              .status_code = 503,
                              .reason = "http.503",
                              .error = "server said no",
                              .sink = "out",
                              .dead_reason = "rejected",
                              .dead_json = "{\"id\":\"x\"}"};
}

/* The next wake-up of a route is the earliest time something becomes
 * claimable: a row queued behind its key's head does not count on its own
 * time (the head's settling promotes it). */
static void test_next_due_claimable_only(void) {
  ceb_store *st = fixture_open("delivery-due", NULL);
  const char *routes[] = {"r", NULL};
  const char *ka[] = {"A"};
  long long h = fixture_ingest(st, "urn:s", "h", "t", routes, ka, 100);
  CHECK(fixture_ingest(st, "urn:s", "q", "t", routes, ka, 500) > h);
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, "r", 100, 10, 0, &c, &n), 0);
  CHECK_INT(n, 1);
  int64_t fence = c[0].fence;
  ceb_claims_free(c, n);
  ceb_attempt_result r = outcome(h, "r", CEB_DS_RETRYING, 200);
  r.fence = fence;
  r.next_at = 2000;
  CHECK_INT(ceb_store_settle_wait(st, &r), 0);
  CHECK_INT(ceb_store_next_due(st, "r", 300), 2000);
  ceb_store_close(st);
}

/* A claim holds a lease: while it runs nobody else gets the row; once it
 * ended the row is claimable again (an attempt more, a newer fence), the
 * old holder's settle is refused and changes nothing, the new one's
 * applies; the lease end is a wake-up time. */
static void test_lease_and_fence(void) {
  ceb_store *st = fixture_open_as("delivery-lease", "test-a");
  const char *routes[] = {"r", NULL};
  const char *ka[] = {"A"};
  long long h = fixture_ingest(st, "urn:s", "h", "t", routes, ka, 100);
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, "r", 100, 10, 5000, &c, &n), 0);
  CHECK_INT(n, 1);
  int64_t old = c[0].fence;
  CHECK_INT(c[0].lease_until, 100 + CEB_STORE_LEASE_DEFAULT_MS);
  ceb_claims_free(c, n);
  CHECK_INT(fixture_int(st, "SELECT o.instance = 'test-a' FROM delivery d"
                            " JOIN lease_owner o ON o.id = d.holder"),
            1);
  int64_t until = 100 + CEB_STORE_LEASE_DEFAULT_MS;
  CHECK_INT(ceb_store_next_due(st, "r", 100), until);
  CHECK_INT(ceb_store_claim(st, "r", until - 1, 10, 0, &c, &n), 0);
  CHECK_INT(n, 0);
  CHECK_INT(ceb_store_claim(st, "r", until, 10, 0, &c, &n), 0);
  CHECK_INT(n, 1);
  CHECK_INT(c[0].seq, h);
  CHECK_INT(c[0].attempt, 2);
  CHECK(c[0].fence > old);
  int64_t fresh = c[0].fence;
  ceb_claims_free(c, n);
  ceb_attempt_result late = outcome(h, "r", CEB_DS_DONE, until + 1);
  late.fence = old;
  CHECK_INT(ceb_store_settle_wait(st, &late), CEB_ECONFLICT);
  CHECK_INT(fixture_int(st, "SELECT state FROM delivery"), CEB_DS_INFLIGHT);
  CHECK_INT(fixture_int(st, "SELECT settled_at IS NULL FROM journal_settle"),
            1);
  ceb_attempt_result now = outcome(h, "r", CEB_DS_DONE, until + 2);
  now.fence = fresh;
  CHECK_INT(ceb_store_settle_wait(st, &now), CEB_OK);
  CHECK_INT(fixture_int(st, "SELECT state FROM delivery"), CEB_DS_DONE);
  /* a claim asking for more than the store's shortest lease gets it */
  long long u = fixture_ingest(st, "urn:s", "u", "t", routes, NULL, 100);
  CHECK_INT(ceb_store_claim(st, "r", 200000, 10, 90000, &c, &n), 0);
  CHECK_INT(n, 1);
  CHECK_INT(c[0].seq, u);
  CHECK_INT(c[0].lease_until, 290000);
  ceb_claims_free(c, n);
  ceb_store_close(st);
}

int main(void) {
  test_next_due_claimable_only();
  test_lease_and_fence();
  ceb_store *st = fixture_open("delivery", NULL);
  const char *routes[] = {"r", NULL};
  const char *ka[] = {"A"}, *kb[] = {"B"};
  long long a1 = fixture_ingest(st, "urn:s", "a1", "t", routes, ka, 100);
  long long a2 = fixture_ingest(st, "urn:s", "a2", "t", routes, ka, 100);
  long long b1 = fixture_ingest(st, "urn:s", "b1", "t", routes, kb, 100);
  long long u1 = fixture_ingest(st, "urn:s", "u1", "t", routes, NULL, 100);
  CHECK(a1 > 0 && a2 > a1 && b1 > a2 && u1 > b1);

  /* Nothing is due before its time. */
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, "r", 99, 10, 0, &c, &n), 0);
  CHECK_INT(n, 0);
  CHECK_INT(ceb_store_next_due(st, "r", 0), 100);

  /* At 100: a1 (head of A), b1 (head of B) and u1; a2 waits behind a1. */
  CHECK_INT(ceb_store_claim(st, "r", 100, 10, 0, &c, &n), 0);
  CHECK_INT(n, 3);
  CHECK_INT(c[0].seq, a1);
  CHECK_INT(c[1].seq, b1);
  CHECK_INT(c[2].seq, u1);
  CHECK_INT(c[0].attempt, 1);
  CHECK_STR(c[0].order_key, "A");
  CHECK(strstr(c[0].event_json, "\"a1\"") != NULL);
  int64_t fa1 = c[0].fence, fb1 = c[1].fence;
  CHECK(fa1 > 0 && fb1 > 0);
  CHECK_INT(c[0].lease_until, 100 + CEB_STORE_LEASE_DEFAULT_MS);
  ceb_claims_free(c, n);
  CHECK_INT(ceb_store_count_open(st, "r"), 4);
  CHECK_INT(ceb_store_count_open(st, NULL), 4);
  CHECK_INT(ceb_store_oldest_open(st, "r"), 100);

  /* a1 fails and retries at 1200: a2 still waits (FIFO across retries). */
  ceb_attempt_result r = outcome(a1, "r", CEB_DS_RETRYING, 200);
  r.fence = fa1;
  r.attempt = 1;
  r.started_at = 150;
  CHECK_INT(ceb_store_settle_wait(st, &r), 0);
  CHECK_INT(ceb_store_claim(st, "r", 300, 10, 0, &c, &n), 0);
  CHECK_INT(n, 0);
  CHECK_INT(ceb_store_next_due(st, "r", 300), 1200);
  /* settling a row that is not in progress is refused */
  CHECK_INT(ceb_store_settle_wait(st, &r), CEB_ECONFLICT);
  /* the failed attempt is in the history, once (the refused settle added
   * nothing) */
  json_t *h = ceb_store_attempts_of(st, a1);
  CHECK_INT(json_array_size(h), 1);
  json_t *h0 = json_array_get(h, 0);
  CHECK_INT(json_integer_value(json_object_get(h0, "n")), 1);
  CHECK_INT(json_integer_value(json_object_get(h0, "started_at")), 150);
  CHECK_INT(json_integer_value(json_object_get(h0, "at")), 200);
  CHECK_INT(json_integer_value(json_object_get(h0, "status")), 503);
  CHECK_STR(json_string_value(json_object_get(h0, "reason")), "http.503");
  CHECK_STR(json_string_value(json_object_get(h0, "outcome")), "retrying");
  json_decref(h);

  /* At 1200 a1 comes back as attempt 2. */
  CHECK_INT(ceb_store_claim(st, "r", 1200, 10, 0, &c, &n), 0);
  CHECK_INT(n, 1);
  CHECK_INT(c[0].seq, a1);
  CHECK_INT(c[0].attempt, 2);
  CHECK_INT(c[0].first_at, 100);
  CHECK(c[0].fence > fa1); /* a new claim, a new token */
  fa1 = c[0].fence;
  ceb_claims_free(c, n);
  r = outcome(a1, "r", CEB_DS_DONE, 1300);
  r.fence = fa1;
  r.attempt = 2;
  CHECK_INT(ceb_store_settle_wait(st, &r), 0);
  /* a delivered attempt adds nothing: the delivery row holds it */
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM attempt"), 1);
  CHECK_INT(fixture_int(st, "SELECT settled_at FROM journal_settle WHERE seq ="
                            " (SELECT seq FROM journal WHERE id='a1')"),
            1300);

  /* Now a2 is due. */
  CHECK_INT(ceb_store_claim(st, "r", 1300, 10, 0, &c, &n), 0);
  CHECK_INT(n, 1);
  CHECK_INT(c[0].seq, a2);
  ceb_claims_free(c, n);

  /* b1 dead: a DLQ row with the event's identity and the outcome. */
  r = outcome(b1, "r", CEB_DS_DEAD, 1400);
  r.fence = fb1;
  CHECK_INT(ceb_store_settle_wait(st, &r), 0);
  CHECK(r.dlq_id > 0);
  h = ceb_store_attempts_of(st, b1);
  CHECK_INT(json_array_size(h), 1);
  CHECK_STR(json_string_value(json_object_get(json_array_get(h, 0), "outcome")),
            "dead");
  json_decref(h);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM dlq WHERE event_id='b1' AND"
                            " reason='rejected' AND status=503 AND"
                            " attempts=1 AND sink='out'"),
            1);

  /* Status by id. */
  json_t *s = ceb_store_event_status(st, "b1", "urn:s");
  CHECK_INT(json_array_size(s), 1);
  json_t *rt =
      json_array_get(json_object_get(json_array_get(s, 0), "routes"), 0);
  CHECK_STR(json_string_value(json_object_get(rt, "state")), "dead");
  CHECK_INT(json_integer_value(json_object_get(rt, "dlq_id")), r.dlq_id);
  json_decref(s);
  s = ceb_store_event_status(st, "nope", NULL);
  CHECK_INT(json_array_size(s), 0);
  json_decref(s);

  /* Crash recovery: a2 and u1 are in progress; they go back to pending
   * with their attempt count kept. */
  CHECK_INT(ceb_store_recover(st, 0), 2);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM delivery WHERE state=1"), 0);
  CHECK_INT(fixture_ready_mismatch(st), 0);
  CHECK_INT(fixture_int(st, "SELECT attempts FROM delivery WHERE seq="
                            "4"),
            1);

  /* Sweep: a1 settled at 1300 goes after retention; b1 (dead, in the DLQ)
   * stays; pending ones stay. */
  CHECK_INT(ceb_store_sweep(st, 1300 + 999, 1000, 100), 0);
  CHECK_INT(ceb_store_sweep(st, 1300 + 1000, 1000, 100), 1);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal"), 3);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM delivery WHERE seq=1"), 0);
  /* its attempt history went with it; b1's stays with its dead letter */
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM attempt WHERE seq=1"), 0);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM attempt"), 1);
  CHECK_INT(ceb_store_sweep(st, 1000000, 1000, 100), 0);

  /* The sweeper works in chunks. */
  for (int i = 0; i < 25; i++) {
    char id[16];
    snprintf(id, sizeof id, "x%d", i);
    fixture_ingest(st, "urn:s", id, "t", NULL, NULL, 5000);
  }
  CHECK_INT(ceb_store_sweep(st, 10000, 1000, 10), 10);
  CHECK_INT(ceb_store_sweep(st, 10000, 1000, 10), 10);
  CHECK_INT(ceb_store_sweep(st, 10000, 1000, 10), 5);
  CHECK_INT(ceb_store_sweep(st, 10000, 1000, 10), 0);

  /* Bad input. */
  CHECK_INT(ceb_store_claim(st, NULL, 0, 1, 0, &c, &n), CEB_EINVAL);
  CHECK_INT(ceb_store_claim(st, "r", 0, 0, 0, &c, &n), CEB_EINVAL);
  ceb_store_close(st);
  return ceb_test_done("unit_store_delivery");
}
