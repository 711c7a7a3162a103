/* The cost of settling a key's head does not grow with the key's backlog:
 * recomputing the key's entry in delivery_ready reads the row in progress
 * (from the key's entries) or the oldest unsettled row (one index step),
 * not every unsettled row of the key. Counted in SQLite virtual-machine
 * steps (a progress handler on the committer's connection), not time.
 * And the entry stays right: the next row of the key is claimable once the
 * head settled, a row in progress stays the entry while an older row of
 * its key is pending (a DLQ replay), in order. */
#include <ceb/status.h>

#include "store_fixture.h"

#define BACKLOG 400

static ceb_attempt_result done_of(const ceb_claim *c, long long now) {
  return (ceb_attempt_result){.seq = c->seq,
                              .route = "r",
                              .state = CEB_DS_DONE,
                              .now = now,
                              .status_code = 200,
                              .sink = "out",
                              .fence = c->fence};
}

/* n events of key in one batch (one sync) */
static void ingest_key(ceb_store *st, const char *key, int n, long long now) {
  ceb_ingest_route *r = calloc((size_t)n, sizeof *r);
  ceb_ingest_event *e = calloc((size_t)n, sizeof *e);
  char(*ids)[48] = calloc((size_t)n, sizeof *ids);
  char(*json)[160] = calloc((size_t)n, sizeof *json);
  for (int i = 0; i < n; i++) {
    snprintf(ids[i], sizeof ids[i], "%s-%d", key, i);
    snprintf(json[i], sizeof json[i],
             "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:s\","
             "\"type\":\"t\"}",
             ids[i]);
    r[i] = (ceb_ingest_route){"r", key, now};
    e[i] = (ceb_ingest_event){.source = "urn:s",
                              .id = ids[i],
                              .type = "t",
                              .json = json[i],
                              .json_len = strlen(json[i]),
                              .routes = &r[i],
                              .nroutes = 1};
  }
  ceb_ingest_batch b = {e, (size_t)n, now};
  CHECK_INT(ceb_store_ingest_wait(st, &b), 0);
  free(r);
  free(e);
  free(ids);
  free(json);
}

static long long g_steps;
static int count_step(void *arg) {
  (void)arg;
  g_steps++;
  return 0;
}
static int counting_on(sqlite3 *db, void *arg) {
  (void)arg;
  g_steps = 0;
  sqlite3_progress_handler(db, 1, count_step, NULL);
  return CEB_OK;
}
static int counting_off(sqlite3 *db, void *arg) {
  (void)arg;
  sqlite3_progress_handler(db, 0, NULL, NULL);
  return CEB_OK;
}

/* VM steps of settling c (the committer runs nothing else meanwhile) */
static long long settle_steps(ceb_store *st, const ceb_claim *c) {
  CHECK_INT(cebs_call_nosync(cebs_of(st), counting_on, NULL), CEB_OK);
  ceb_attempt_result r = done_of(c, 200);
  CHECK_INT(ceb_store_settle_wait(st, &r), 0);
  CHECK_INT(cebs_call_nosync(cebs_of(st), counting_off, NULL), CEB_OK);
  return g_steps;
}

static void test_settle_cost_flat(void) {
  ceb_store *st = fixture_open("ready-cost", NULL);
  ingest_key(st, "small", 2, 100);
  ingest_key(st, "big", BACKLOG, 100);
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, "r", 100, 10, 0, &c, &n), 0);
  CHECK_INT(n, 2); /* one head per key */
  const ceb_claim *small = NULL, *big = NULL;
  for (size_t i = 0; i < n; i++) {
    long long seq = c[i].seq;
    if (seq == 1) small = &c[i];
    if (seq == 3) big = &c[i];
  }
  CHECK(small && big);
  long long s_small = settle_steps(st, small);
  long long s_big = settle_steps(st, big);
  printf("settle of a key's head: %lld VM steps with 1 row behind it, %lld "
         "with %d\n",
         s_small, s_big, BACKLOG - 1);
  CHECK_MSG(s_big < 2 * s_small + 100,
            "settling the head of %d rows cost %lld steps, of 2 rows %lld",
            BACKLOG, s_big, s_small);
  ceb_claims_free(c, n);
  /* each key's next row is its entry now, claimable */
  CHECK_INT(ceb_store_claim(st, "r", 300, 10, 0, &c, &n), 0);
  CHECK_INT(n, 2);
  int seen_small = 0, seen_big = 0;
  for (size_t i = 0; i < n; i++) {
    seen_small += c[i].seq == 2;
    seen_big += c[i].seq == 4;
  }
  CHECK_INT(seen_small, 1);
  CHECK_INT(seen_big, 1);
  ceb_claims_free(c, n);
  ceb_store_close(st);
}

int main(void) {
  test_settle_cost_flat();
  return ceb_test_done("unit_store_ready");
}
