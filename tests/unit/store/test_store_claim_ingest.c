/* Claims at ingest (ceb_store_set_claim_hook): a new delivery that is its
 * key's head (or unordered) is asked for, and when the hook takes it the
 * row is written in progress under this instance's lease (attempt 1,
 * fence 1, in the claimable set at its lease end), so a claim does not
 * return it and its settle with fence 1 applies; a row queued behind its
 * key's open head is never asked for; one the hook declines stays pending
 * and is claimed as usual; the claims of an ingest that fails are given
 * back (committed 0) and none of its rows exist. */
#include <ceb/status.h>
#include <stdatomic.h>
#include <string.h>

#include "store_fixture.h"

static atomic_int g_take = 1; /* what reserve answers */
static atomic_int g_asked, g_claimed, g_released;
static int64_t g_fence, g_lease_until, g_seq;

static int reserve(void *arg, const ceb_ingest_route *rt, int64_t *now,
                   int64_t *lease_ms) {
  (void)arg;
  (void)rt;
  atomic_fetch_add(&g_asked, 1);
  *now = 5000;
  *lease_ms = 60000;
  return atomic_load(&g_take);
}

static void claimed(void *arg, const ceb_ingest_batch *b,
                    const ceb_ingest_claim *c, size_t n, int committed) {
  (void)arg;
  (void)b;
  for (size_t i = 0; i < n; i++) {
    if (!committed) {
      atomic_fetch_add(&g_released, 1);
      continue;
    }
    atomic_fetch_add(&g_claimed, 1);
    g_fence = c[i].fence;
    g_lease_until = c[i].lease_until;
    g_seq = c[i].event->seq;
    CHECK(c[i].now == 5000);
  }
}

static long long row_int(ceb_store *st, const char *col, long long seq) {
  char sql[256];
  snprintf(sql, sizeof sql,
           "SELECT %s FROM delivery WHERE seq = %lld AND route = 'r'", col,
           seq);
  return fixture_int(st, sql);
}

static size_t claim_count(ceb_store *st, int64_t now, int64_t *seq) {
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, "r", now, 10, 0, &c, &n), CEB_OK);
  if (n && seq) *seq = c[0].seq;
  ceb_claims_free(c, n);
  return n;
}

int main(void) {
  ceb_store *st = fixture_open_as("claim_ingest", "me");
  ceb_store_claim_hook h = {.reserve = reserve, .claimed = claimed};
  ceb_store_set_claim_hook(st, &h);
  const char *routes[] = {"r", NULL};
  const char *keys[] = {"k", NULL};

  /* the key's head: claimed in the ingest's transaction */
  long long s1 = fixture_ingest(st, "s", "e1", "t", routes, keys, 4000);
  CHECK(s1 > 0);
  CHECK_INT(atomic_load(&g_asked), 1);
  CHECK_INT(atomic_load(&g_claimed), 1);
  CHECK(g_seq == s1);
  CHECK(g_fence == 1);
  CHECK(g_lease_until == 5000 + 60000);
  CHECK_INT(row_int(st, "state", s1), CEB_DS_INFLIGHT);
  CHECK_INT(row_int(st, "attempts", s1), 1);
  CHECK_INT(row_int(st, "fence", s1), 1);
  CHECK_INT(row_int(st, "next_at", s1), 65000);
  CHECK_INT(row_int(st, "first_at", s1), 5000);
  CHECK(row_int(st, "holder", s1) > 0);
  CHECK_INT(fixture_int(st, "SELECT count(*) FROM lease_owner"
                            " WHERE instance = 'me'"),
            1);
  CHECK_INT(fixture_ready_mismatch(st), 0);

  /* behind the open head: not asked, pending */
  long long s2 = fixture_ingest(st, "s", "e2", "t", routes, keys, 4000);
  CHECK(s2 > 0);
  CHECK_INT(atomic_load(&g_asked), 1);
  CHECK_INT(row_int(st, "state", s2), CEB_DS_PENDING);
  CHECK_INT(fixture_ready_mismatch(st), 0);
  /* the head is held: nothing to claim before its lease ends */
  CHECK_INT((long long)claim_count(st, 6000, NULL), 0);

  /* its settle carries the ingest's fence */
  ceb_attempt_result r = {.seq = s1,
                          .route = "r",
                          .fence = 1,
                          .state = CEB_DS_DONE,
                          .now = 7000,
                          .attempt = 1};
  CHECK_INT(ceb_store_settle_wait(st, &r), CEB_OK);
  CHECK_INT(row_int(st, "state", s1), CEB_DS_DONE);
  int64_t got = 0;
  CHECK_INT((long long)claim_count(st, 7000, &got), 1);
  CHECK(got == s2);
  CHECK_INT(fixture_ready_mismatch(st), 0);

  /* declined: pending, claimable as usual */
  atomic_store(&g_take, 0);
  long long s3 = fixture_ingest(st, "s", "e3", "t", routes, NULL, 4000);
  CHECK(s3 > 0);
  CHECK_INT(atomic_load(&g_asked), 2);
  CHECK_INT(atomic_load(&g_claimed), 1);
  CHECK_INT(row_int(st, "state", s3), CEB_DS_PENDING);
  CHECK_INT((long long)claim_count(st, 7000, &got), 1);
  CHECK(got == s3);

  /* an ingest that fails after a claim: given back, nothing written */
  atomic_store(&g_take, 1);
  ceb_ingest_route rt = {.route = "r", .first_at = 4000};
  ceb_ingest_event ev[2] = {{.source = "s",
                             .id = "e4",
                             .type = "t",
                             .json = "{}",
                             .json_len = 2,
                             .routes = &rt,
                             .nroutes = 1},
                            {.source = "s", .type = "t", .json = "{}"}};
  ceb_ingest_batch b = {ev, 2, 4000};
  CHECK(ceb_store_ingest_wait(st, &b) != CEB_OK);
  CHECK_INT(atomic_load(&g_asked), 3);
  CHECK_INT(atomic_load(&g_released), 1);
  CHECK_INT(atomic_load(&g_claimed), 1);
  CHECK_INT(fixture_int(st, "SELECT count(*) FROM journal WHERE id = 'e4'"), 0);
  CHECK_INT(fixture_ready_mismatch(st), 0);

  /* cleared: nothing asked */
  ceb_store_set_claim_hook(st, NULL);
  CHECK(fixture_ingest(st, "s", "e5", "t", routes, NULL, 4000) > 0);
  CHECK_INT(atomic_load(&g_asked), 3);

  ceb_store_close(st);
  return ceb_test_done("unit_store_claim_ingest");
}
