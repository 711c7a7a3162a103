/* The PostgreSQL engine's own behaviours, on a real PostgreSQL the test
 * starts (tests/common/ceb_test_pg.h), with two store handles on one
 * database standing for two bridge instances: dedupe across instances,
 * FIFO per key across instances, lease takeover and the stale fence,
 * exactly one of two concurrent Idempotency-Key begins, recovery that
 * never steals a live claim; group commit (done only once the rows are
 * committed, many ops per transaction); the database going away (writable
 * 0 with the reason, ingest refused, recovery by itself); schema versions
 * (a newer database refused, store.migrate off); passwords never in an
 * error; an outcome resent after its answer was lost (pg_drop_proxy.h)
 * reported applied, not as a lost lease; a claim whose answer was lost
 * given back without the live claim beside it; a group's outcomes in one
 * statement, each with its own answer; wake-ups notified only while
 * another bridge listens. The generic contract of a store is
 * tests/store/'s. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/plugin.h>
#include <ceb/status.h>

#include "ceb_test.h"
#include "ceb_test_pg.h"
#include "pg_drop_proxy.h"
#include "store/ceb_store.h"

static ceb_test_pg g_pg;

static ceb_store *open_store(const char *spec, const char *instance,
                             int64_t lease_ms) {
  ceb_store_opts o = {.spec = spec,
                      .synchronous_full = 1,
                      .group_max = 512,
                      .queue_max = 4096,
                      .instance = instance,
                      .lease_ms = lease_ms,
                      .pool_size = 4};
  ceb_store *st = NULL;
  char err[512] = "";
  int rc = ceb_store_open(&o, &st, err, sizeof err);
  CHECK_MSG(rc == CEB_OK, "open %s: %s", instance, err);
  return rc == CEB_OK ? st : NULL;
}

static int ingest1(ceb_store *st, const char *id, const char *route,
                   const char *key, int64_t now, int64_t *seq) {
  ceb_ingest_route r = {.route = route, .order_key = key, .first_at = now};
  ceb_ingest_event e = {.source = "urn:test",
                        .id = id,
                        .type = "t.created",
                        .json = "{\"specversion\":\"1.0\"}",
                        .json_len = strlen("{\"specversion\":\"1.0\"}"),
                        .routes = &r,
                        .nroutes = route ? 1 : 0};
  ceb_ingest_batch b = {.events = &e, .count = 1, .now = now};
  int rc = ceb_store_ingest_wait(st, &b);
  if (seq) *seq = e.seq;
  return rc == CEB_OK ? e.inserted : rc;
}

static int settle(ceb_store *st, const ceb_claim *c, const char *route,
                  int state, int64_t now) {
  ceb_attempt_result r = {.seq = c->seq,
                          .route = route,
                          .fence = c->fence,
                          .state = state,
                          .next_at = now + 1000,
                          .now = now,
                          .status_code = 200,
                          .reason = "ok"};
  return ceb_store_settle_wait(st, &r);
}

/* ---- two instances ---- */

static void test_dedupe_across(ceb_store *a, ceb_store *b) {
  CHECK_INT(ingest1(a, "d-1", "r", NULL, 1000, NULL), 1);
  CHECK_INT(ingest1(b, "d-1", "r", NULL, 1000, NULL), 0);
  /* within one batch: the first wins */
  ceb_ingest_event ev[2] = {{.source = "urn:test",
                             .id = "d-2",
                             .type = "t",
                             .json = "{}",
                             .json_len = 2},
                            {.source = "urn:test",
                             .id = "d-2",
                             .type = "t",
                             .json = "{}",
                             .json_len = 2}};
  ceb_ingest_batch bb = {.events = ev, .count = 2, .now = 1000};
  CHECK_INT(ceb_store_ingest_wait(b, &bb), CEB_OK);
  CHECK_INT(ev[0].inserted, 1);
  CHECK_INT(ev[1].inserted, 0);
  json_t *s = ceb_store_event_status(a, "d-1", NULL);
  CHECK_INT(json_array_size(s), 1);
  json_decref(s);
}

static void test_fifo_across(ceb_store *a, ceb_store *b) {
  int64_t s1, s2;
  CHECK_INT(ingest1(a, "f-1", "fifo", "k", 1000, &s1), 1);
  CHECK_INT(ingest1(b, "f-2", "fifo", "k", 1000, &s2), 1);
  ceb_claim *ca = NULL, *cb = NULL;
  size_t na = 0, nb = 0;
  CHECK_INT(ceb_store_claim(a, "fifo", 2000, 10, 0, &ca, &na), CEB_OK);
  CHECK_INT(na, 1);
  if (na == 1) CHECK_INT(ca[0].seq, s1);
  /* the key's head is held by A: B gets nothing of the key */
  CHECK_INT(ceb_store_claim(b, "fifo", 2000, 10, 0, &cb, &nb), CEB_OK);
  CHECK_INT(nb, 0);
  ceb_claims_free(cb, nb);
  if (na == 1) CHECK_INT(settle(a, &ca[0], "fifo", CEB_DS_DONE, 2100), CEB_OK);
  CHECK_INT(ceb_store_claim(b, "fifo", 2200, 10, 0, &cb, &nb), CEB_OK);
  CHECK_INT(nb, 1);
  if (nb == 1) {
    CHECK_INT(cb[0].seq, s2);
    CHECK_INT(settle(b, &cb[0], "fifo", CEB_DS_DONE, 2300), CEB_OK);
  }
  ceb_claims_free(ca, na);
  ceb_claims_free(cb, nb);
}

static void test_lease_takeover(ceb_store *a, ceb_store *b) {
  int64_t seq;
  CHECK_INT(ingest1(a, "l-1", "lease", "k", 1000, &seq), 1);
  ceb_claim *ca = NULL, *cb = NULL;
  size_t na = 0, nb = 0;
  /* A's lease: 1000 ms (the handles' lease) from 2000 */
  CHECK_INT(ceb_store_claim(a, "lease", 2000, 1, 0, &ca, &na), CEB_OK);
  CHECK_INT(na, 1);
  if (na != 1) return;
  CHECK_INT(ca[0].lease_until, 3000);
  CHECK_INT(ceb_store_next_due(b, "lease", 2000), 3000);
  /* live: B cannot take it; a recover of B leaves it */
  CHECK_INT(ceb_store_claim(b, "lease", 2999, 1, 0, &cb, &nb), CEB_OK);
  CHECK_INT(nb, 0);
  CHECK_INT(ceb_store_recover(b, 2999), 0);
  /* ended: B takes it over with a greater token */
  CHECK_INT(ceb_store_claim(b, "lease", 3000, 1, 0, &cb, &nb), CEB_OK);
  CHECK_INT(nb, 1);
  if (nb == 1) {
    CHECK(cb[0].fence > ca[0].fence);
    CHECK_INT(cb[0].attempt, 2);
    /* A's late settle changes nothing */
    CHECK_INT(settle(a, &ca[0], "lease", CEB_DS_DONE, 3100), CEB_ECONFLICT);
    json_t *s = ceb_store_event_status(b, "l-1", NULL);
    json_t *r0 =
        json_array_get(json_object_get(json_array_get(s, 0), "routes"), 0);
    CHECK_STR(json_string_value(json_object_get(r0, "state")), "in-progress");
    json_decref(s);
    CHECK_INT(settle(b, &cb[0], "lease", CEB_DS_DONE, 3200), CEB_OK);
    /* and settling twice is refused too */
    CHECK_INT(settle(b, &cb[0], "lease", CEB_DS_DONE, 3300), CEB_ECONFLICT);
  }
  ceb_claims_free(ca, na);
  ceb_claims_free(cb, nb);
}

static void test_recover_own(ceb_store *b) {
  int64_t seq;
  CHECK_INT(ingest1(b, "r-1", "rec", NULL, 1000, &seq), 1);
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(b, "rec", 2000, 1, 600000, &c, &n), CEB_OK);
  CHECK_INT(n, 1);
  ceb_claims_free(c, n);
  /* the same instance id restarted: its claims come back at once */
  ceb_store *b2 = open_store(g_pg.uri, "b", 1000);
  if (!b2) return;
  CHECK_INT(ceb_store_recover(b2, 2001), 1);
  CHECK_INT(ceb_store_claim(b2, "rec", 2002, 1, 0, &c, &n), CEB_OK);
  CHECK_INT(n, 1);
  ceb_claims_free(c, n);
  ceb_store_close(b2);
}

typedef struct idem_race {
  ceb_store *st;
  const char *key;
  pthread_barrier_t *go;
  int state;
  int rc;
} idem_race;

static void *idem_thread(void *arg) {
  idem_race *r = arg;
  ceb_idem_result res;
  pthread_barrier_wait(r->go);
  r->rc = ceb_store_idem_begin(r->st, "client", r->key, "fp", 1000, &res);
  r->state = res.state;
  free(res.body);
  free(res.content_type);
  return NULL;
}

static void test_idem_race(ceb_store *a, ceb_store *b) {
  int exactly_one = 0;
  for (int i = 0; i < 20; i++) {
    char key[32];
    snprintf(key, sizeof key, "race-%d", i);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, 2);
    idem_race ra = {.st = a, .key = key, .go = &go};
    idem_race rb = {.st = b, .key = key, .go = &go};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, idem_thread, &ra);
    pthread_create(&tb, NULL, idem_thread, &rb);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    pthread_barrier_destroy(&go);
    CHECK_INT(ra.rc, CEB_OK);
    CHECK_INT(rb.rc, CEB_OK);
    int news = (ra.state == CEB_IDEM_NEW) + (rb.state == CEB_IDEM_NEW);
    int inflight =
        (ra.state == CEB_IDEM_IN_FLIGHT) + (rb.state == CEB_IDEM_IN_FLIGHT);
    exactly_one += news == 1 && inflight == 1;
  }
  CHECK_INT(exactly_one, 20);
  /* the holder finishes: the other instance gets the replay */
  ceb_idem_result res;
  CHECK_INT(ceb_store_idem_begin(a, "client", "once", "fp", 1000, &res),
            CEB_OK);
  CHECK_INT(res.state, CEB_IDEM_NEW);
  CHECK_INT(ceb_store_idem_finish(a, "client", "once", 202, "application/json",
                                  "{\"ok\":1}", 8, 1000, 60000),
            CEB_OK);
  CHECK_INT(ceb_store_idem_begin(b, "client", "once", "fp", 2000, &res),
            CEB_OK);
  CHECK_INT(res.state, CEB_IDEM_REPLAY);
  CHECK_INT(res.http_status, 202);
  CHECK_STR(res.body, "{\"ok\":1}");
  free(res.body);
  free(res.content_type);
  /* B's restart drops B's reservations only */
  CHECK_INT(ceb_store_idem_begin(a, "client", "held-a", "fp", 1000, &res),
            CEB_OK);
  CHECK_INT(ceb_store_idem_reset_inflight(b), CEB_OK);
  CHECK_INT(ceb_store_idem_begin(b, "client", "held-a", "fp", 1000, &res),
            CEB_OK);
  CHECK_INT(res.state, CEB_IDEM_IN_FLIGHT);
}

/* A replayed dead letter is its key's head again: a newer row waits. */
static void test_replay_head(ceb_store *a, ceb_store *b) {
  int64_t s1, s2, s3;
  CHECK_INT(ingest1(a, "rh-1", "rh", "k", 1000, &s1), 1);
  CHECK_INT(ingest1(a, "rh-2", "rh", "k", 1000, &s2), 1);
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(a, "rh", 2000, 10, 0, &c, &n), CEB_OK);
  CHECK_INT(n, 1);
  if (n == 1) {
    ceb_attempt_result r = {.seq = c[0].seq,
                            .route = "rh",
                            .fence = c[0].fence,
                            .state = CEB_DS_DEAD,
                            .now = 2000,
                            .status_code = 400,
                            .reason = "rejected",
                            .dead_reason = "rejected",
                            .sink = "s",
                            .dead_json = "{}"};
    CHECK_INT(ceb_store_settle_wait(a, &r), CEB_OK);
    CHECK(r.dlq_id > 0);
  }
  ceb_claims_free(c, n);
  /* rh-2 is the head now; replaying rh-1 (on B) puts it first again */
  ceb_dlq_filter f = {.route = "rh"};
  size_t count = 0;
  CHECK_INT(ceb_store_dlq_replay(b, &f, 2100, 0, &count, NULL), CEB_OK);
  CHECK_INT(count, 1);
  CHECK_INT(ingest1(b, "rh-3", "rh", "k", 1000, &s3), 1);
  int64_t want[3] = {s1, s2, s3};
  for (int i = 0; i < 3; i++) {
    CHECK_INT(ceb_store_claim(b, "rh", 3000 + i, 10, 0, &c, &n), CEB_OK);
    CHECK_INT(n, 1);
    if (n == 1) {
      CHECK_INT(c[0].seq, want[i]);
      CHECK_INT(settle(b, &c[0], "rh", CEB_DS_DONE, 3000 + i), CEB_OK);
    }
    ceb_claims_free(c, n);
  }
}

/* Two instances ingesting into the same keys and delivering at once: a
 * key never has two rows in progress and its rows settle in seq order. */
enum { FK_KEYS = 5, FK_PER = 120 };

typedef struct fifo_run {
  ceb_store *st[2];
  pthread_mutex_t lock;
  int64_t inflight[FK_KEYS]; /* seq in progress per key, 0: none */
  int64_t last[FK_KEYS];     /* seq settled last per key */
  int delivered, violations;
  int ingested_done;
} fifo_run;

typedef struct fifo_arg {
  fifo_run *run;
  int no;
} fifo_arg;

static void *fifo_ingester(void *arg) {
  fifo_arg *fa = arg;
  for (int i = 0; i < FK_PER; i++) {
    char id[32], key[8];
    snprintf(id, sizeof id, "fk-%d-%d", fa->no, i);
    snprintf(key, sizeof key, "k%d", i % FK_KEYS);
    ingest1(fa->run->st[fa->no], id, "fk", key, 1000, NULL);
  }
  pthread_mutex_lock(&fa->run->lock);
  fa->run->ingested_done++;
  pthread_mutex_unlock(&fa->run->lock);
  return NULL;
}

static void *fifo_worker(void *arg) {
  fifo_arg *fa = arg;
  fifo_run *run = fa->run;
  int64_t end = ceb_test_now_ms() + 120000;
  for (int64_t now = 2000; ceb_test_now_ms() < end; now++) {
    pthread_mutex_lock(&run->lock);
    int finished = run->delivered >= 2 * FK_PER && run->ingested_done == 2;
    pthread_mutex_unlock(&run->lock);
    if (finished) break;
    ceb_claim *c = NULL;
    size_t n = 0;
    if (ceb_store_claim(run->st[fa->no], "fk", now, 8, 600000, &c, &n) !=
        CEB_OK)
      break;
    for (size_t i = 0; i < n; i++) {
      int k = c[i].order_key ? atoi(c[i].order_key + 1) : 0;
      pthread_mutex_lock(&run->lock);
      if (run->inflight[k] || c[i].seq < run->last[k]) run->violations++;
      run->inflight[k] = c[i].seq;
      pthread_mutex_unlock(&run->lock);
    }
    for (size_t i = 0; i < n; i++) {
      int k = c[i].order_key ? atoi(c[i].order_key + 1) : 0;
      pthread_mutex_lock(&run->lock);
      run->inflight[k] = 0;
      run->last[k] = c[i].seq;
      run->delivered++;
      pthread_mutex_unlock(&run->lock);
      settle(run->st[fa->no], &c[i], "fk", CEB_DS_DONE, now);
    }
    ceb_claims_free(c, n);
  }
  return NULL;
}

static void test_fifo_concurrent(ceb_store *a, ceb_store *b) {
  fifo_run run = {.st = {a, b}, .lock = PTHREAD_MUTEX_INITIALIZER};
  fifo_arg args[2] = {{&run, 0}, {&run, 1}};
  pthread_t ti[2], tw[2];
  for (int i = 0; i < 2; i++) {
    pthread_create(&ti[i], NULL, fifo_ingester, &args[i]);
    pthread_create(&tw[i], NULL, fifo_worker, &args[i]);
  }
  for (int i = 0; i < 2; i++) {
    pthread_join(ti[i], NULL);
    pthread_join(tw[i], NULL);
  }
  CHECK_INT(run.delivered, 2 * FK_PER);
  CHECK_INT(run.violations, 0);
  CHECK_INT(ceb_store_count_open(a, "fk"), 0);
}

/* The cluster parts wired into the engine (pg_cluster.h): one leader per
 * task, and a pull queue appended on one instance, read and committed on
 * the other; the other instance hears of the append (its pull listener:
 * the long polls of its consumers read again at once, not at their poll). */
static int pull_visit(void *arg, int64_t seq, const char *json, size_t len) {
  (void)seq;
  (void)len;
  CHECK_STR(json, "{\"q\":1}");
  (*(int *)arg)++;
  return 0;
}

static atomic_int g_appended = 0;
static void appended(void *arg, int status) {
  (void)arg;
  atomic_store(&g_appended, status == CEB_OK ? 1 : -1);
}
static int append_done(void *arg) {
  (void)arg;
  return atomic_load(&g_appended) != 0;
}

static pthread_mutex_t g_pulled_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_pulled[64];
static void pulled(void *arg, const char *queue) {
  (void)arg;
  pthread_mutex_lock(&g_pulled_lock);
  snprintf(g_pulled, sizeof g_pulled, "%s", queue ? queue : "(any)");
  pthread_mutex_unlock(&g_pulled_lock);
}
static int pulled_outbox(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_pulled_lock);
  int yes = strcmp(g_pulled, "outbox") == 0;
  pthread_mutex_unlock(&g_pulled_lock);
  return yes;
}

static void test_cluster_parts(ceb_store *a, ceb_store *b) {
  ceb_store_set_pull_listener(b, pulled, NULL);
  CHECK_INT(ceb_store_shared(a), 1);
  CHECK_INT(ceb_store_try_lead(a, "sweeper", 1000), 1);
  CHECK_INT(ceb_store_try_lead(b, "sweeper", 1000), 0);
  CHECK_INT(ceb_store_try_lead(a, "sweeper", 1001), 1);
  CHECK_INT(ceb_store_pull_append(a, "outbox", "k1", "{\"q\":1}", 7, 100,
                                  appended, NULL),
            CEB_OK);
  CHECK(ceb_test_wait(append_done, NULL, 30000));
  CHECK_INT(atomic_load(&g_appended), 1);
  CHECK(ceb_test_wait(pulled_outbox, NULL, 30000));
  ceb_store_set_pull_listener(b, NULL, NULL);
  int64_t depth = 0, last = 0, committed = 0;
  CHECK_INT(ceb_store_pull_stats(b, "outbox", &depth, &last, &committed),
            CEB_OK);
  CHECK_INT(depth, 1);
  int seen = 0;
  CHECK_INT(ceb_store_pull_fetch(b, "outbox", 0, 10, pull_visit, &seen, &last),
            CEB_OK);
  CHECK_INT(seen, 1);
  CHECK_INT(ceb_store_pull_commit(b, "outbox", last, &committed), CEB_OK);
  CHECK_INT(ceb_store_pull_stats(a, "outbox", &depth, NULL, &committed),
            CEB_OK);
  CHECK_INT(depth, 0);
  CHECK_INT(committed, last);
}

/* An event's timeline: the failed attempts, not the one that delivered. */
static void test_attempt_history(ceb_store *a) {
  int64_t seq;
  CHECK_INT(ingest1(a, "ah-1", "ah", NULL, 1000, &seq), 1);
  for (int i = 0; i < 2; i++) {
    ceb_claim *c = NULL;
    size_t n = 0;
    CHECK_INT(ceb_store_claim(a, "ah", 2000 + i * 2000, 1, 0, &c, &n), CEB_OK);
    CHECK_INT(n, 1);
    if (n != 1) return;
    ceb_attempt_result r = {.seq = c[0].seq,
                            .route = "ah",
                            .fence = c[0].fence,
                            .state = i == 0 ? CEB_DS_RETRYING : CEB_DS_DONE,
                            .next_at = 3000,
                            .now = 2100 + i * 2000,
                            .status_code = i == 0 ? 503 : 200,
                            .reason = i == 0 ? "http_503" : "ok",
                            .attempt = c[0].attempt,
                            .started_at = 2000 + i * 2000};
    CHECK_INT(ceb_store_settle_wait(a, &r), CEB_OK);
    ceb_claims_free(c, n);
  }
  json_t *h = ceb_store_attempts_of(a, seq);
  CHECK_INT(json_array_size(h), 1);
  json_t *e = json_array_get(h, 0);
  CHECK_INT(json_integer_value(json_object_get(e, "n")), 1);
  CHECK_INT(json_integer_value(json_object_get(e, "status")), 503);
  CHECK_INT(json_integer_value(json_object_get(e, "started_at")), 2000);
  CHECK_STR(json_string_value(json_object_get(e, "outcome")), "retrying");
  json_decref(h);
}

/* ---- group commit ---- */

typedef struct gc_op {
  ceb_ingest_batch b; /* first: done's arg is the batch */
  ceb_ingest_event e;
  char id[32];
  int status;
  int committed; /* the row was visible to another connection in done */
} gc_op;

static PGconn *g_peek;
static pthread_mutex_t g_gc_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_gc_done;

static void gc_done(void *arg, int status) {
  gc_op *op = arg;
  op->status = status;
  /* done runs after COMMIT: a connection of its own sees the row */
  pthread_mutex_lock(&g_gc_lock);
  const char *v[1] = {op->id};
  PGresult *r =
      PQexecParams(g_peek, "SELECT count(*) FROM journal WHERE id = $1", 1,
                   NULL, v, NULL, NULL, 0);
  op->committed = PQresultStatus(r) == PGRES_TUPLES_OK &&
                  strcmp(PQgetvalue(r, 0, 0), "1") == 0;
  PQclear(r);
  g_gc_done++;
  pthread_mutex_unlock(&g_gc_lock);
}

static int all_done(void *arg) {
  int want = *(int *)arg;
  pthread_mutex_lock(&g_gc_lock);
  int d = g_gc_done >= want;
  pthread_mutex_unlock(&g_gc_lock);
  return d;
}

typedef struct stats_want {
  ceb_store *st;
  uint64_t ops;
} stats_want;

static int stats_reached(void *arg) {
  stats_want *w = arg;
  uint64_t ops = 0;
  ceb_store_commit_stats(w->st, NULL, &ops);
  return ops >= w->ops;
}

static void test_group_commit(ceb_store *a) {
  g_peek = ceb_test_pg_connect(&g_pg);
  enum { N = 400 };
  gc_op *ops = calloc(N, sizeof *ops);
  uint64_t b0, o0, b1, o1;
  ceb_store_commit_stats(a, &b0, &o0);
  for (int i = 0; i < N; i++) {
    gc_op *op = &ops[i];
    snprintf(op->id, sizeof op->id, "gc-%d", i);
    op->e = (ceb_ingest_event){.source = "urn:test",
                               .id = op->id,
                               .type = "t",
                               .json = "{}",
                               .json_len = 2};
    op->b = (ceb_ingest_batch){.events = &op->e, .count = 1, .now = 1000};
    op->status = 1;
    CHECK_INT(ceb_store_ingest(a, &op->b, gc_done), CEB_OK);
  }
  int want = N;
  CHECK(ceb_test_wait(all_done, &want, 60000));
  int ok = 0, committed = 0;
  for (int i = 0; i < N; i++) {
    ok += ops[i].status == CEB_OK && ops[i].e.inserted;
    committed += ops[i].committed;
  }
  CHECK_INT(ok, N);
  CHECK_INT(committed, N);
  /* the committer counts a group after its callbacks ran */
  stats_want sw = {a, o0 + N};
  CHECK(ceb_test_wait(stats_reached, &sw, 10000));
  ceb_store_commit_stats(a, &b1, &o1);
  CHECK(o1 - o0 >= N);
  CHECK_MSG(b1 - b0 < N, "%llu transactions for %d ingests",
            (unsigned long long)(b1 - b0), N);
  free(ops);
  PQfinish(g_peek);
}

/* ---- a group's outcomes in one statement ---- */

/* Outcomes queued at once settle a group in one statement (pg_settle.c),
 * each with its own answer: done, retrying and dead (each dead letter its
 * own DLQ id) applied; a stale token refused (CEB_ECONFLICT) and its row
 * unchanged; the second route of an event settling its journal row; the
 * same outcome twice in one group (a later round) reported applied, one
 * with another time refused; a key's head handed on. */
enum { SG_N = 48 };
typedef struct sg_op {
  ceb_attempt_result r;
  int status;
  int want;
} sg_op;
static atomic_int g_sg_done = 0;
static void sg_done(void *arg, int status) {
  ((sg_op *)arg)->status = status;
  atomic_fetch_add(&g_sg_done, 1);
}
static int sg_all(void *arg) {
  return atomic_load(&g_sg_done) >= *(int *)arg;
}

static long long peek_int(PGconn *c, const char *sql, int64_t seq) {
  char v[32];
  snprintf(v, sizeof v, "%lld", (long long)seq);
  const char *p[1] = {v};
  PGresult *r = PQexecParams(c, sql, 1, NULL, p, NULL, NULL, 0);
  long long x = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                        !PQgetisnull(r, 0, 0)
                    ? atoll(PQgetvalue(r, 0, 0))
                    : -1;
  PQclear(r);
  return x;
}

static void test_settle_group(ceb_store *a) {
  PGconn *peek = ceb_test_pg_connect(&g_pg);
  for (int i = 0; i < SG_N; i++) {
    char id[32];
    snprintf(id, sizeof id, "sg-%d", i);
    ceb_ingest_route rt[2] = {{.route = "sg", .first_at = 1000},
                              {.route = "sg2", .first_at = 1000}};
    ceb_ingest_event e = {.source = "urn:test",
                          .id = id,
                          .type = "t",
                          .json = "{}",
                          .json_len = 2,
                          .routes = rt,
                          .nroutes = 2};
    ceb_ingest_batch b = {.events = &e, .count = 1, .now = 1000};
    CHECK_INT(ceb_store_ingest_wait(a, &b), CEB_OK);
  }
  CHECK_INT(ingest1(a, "sgk-1", "sgk", "k", 1000, NULL), 1);
  int64_t k2 = 0;
  CHECK_INT(ingest1(a, "sgk-2", "sgk", "k", 1000, &k2), 1);
  ceb_claim *c1 = NULL, *c2 = NULL, *ck = NULL;
  size_t n1 = 0, n2 = 0, nk = 0;
  CHECK_INT(ceb_store_claim(a, "sg", 2000, SG_N, 600000, &c1, &n1), CEB_OK);
  CHECK_INT(ceb_store_claim(a, "sg2", 2000, SG_N, 600000, &c2, &n2), CEB_OK);
  CHECK_INT(ceb_store_claim(a, "sgk", 2000, 10, 600000, &ck, &nk), CEB_OK);
  CHECK_INT(n1, SG_N);
  CHECK_INT(n2, SG_N);
  CHECK_INT(nk, 1);
  if (n1 != SG_N || n2 != SG_N || nk != 1) goto out;
  enum { NOPS = 2 * SG_N + 3 };
  sg_op *ops = calloc(NOPS, sizeof *ops);
  size_t n = 0;
  for (size_t i = 0; i < n1; i++) {
    static const int st[] = {CEB_DS_DONE, CEB_DS_RETRYING, CEB_DS_DEAD,
                             CEB_DS_DONE};
    sg_op *o = &ops[n++];
    o->r = (ceb_attempt_result){.seq = c1[i].seq,
                                .route = "sg",
                                .fence = c1[i].fence,
                                .state = st[i % 4],
                                .next_at = 9000,
                                .now = 3000,
                                .status_code = i % 4 == 2 ? 400 : 200,
                                .reason = "r",
                                .attempt = 1,
                                .sink = "s",
                                .dead_reason = "rejected",
                                .dead_json = "{}"};
    o->want = CEB_OK;
    if (i % 4 == 3) { /* a token another claim replaced */
      o->r.fence = c1[i].fence + 1;
      o->want = CEB_ECONFLICT;
    }
  }
  for (size_t i = 0; i < n2; i++) {
    sg_op *o = &ops[n++];
    o->r = (ceb_attempt_result){.seq = c2[i].seq,
                                .route = "sg2",
                                .fence = c2[i].fence,
                                .state = CEB_DS_DONE,
                                .now = 3000,
                                .status_code = 200,
                                .reason = "ok",
                                .attempt = 1};
    o->want = CEB_OK;
  }
  /* the same outcome again (applied already), then one with another time
   * (not in progress any more) */
  ops[n] = ops[n - 1];
  n++;
  ops[n] = ops[n - 1];
  ops[n].r.now = 3001;
  ops[n].want = CEB_ECONFLICT;
  n++;
  ops[n].r = (ceb_attempt_result){.seq = ck[0].seq,
                                  .route = "sgk",
                                  .fence = ck[0].fence,
                                  .state = CEB_DS_DONE,
                                  .now = 3000,
                                  .status_code = 200,
                                  .reason = "ok",
                                  .attempt = 1};
  ops[n].want = CEB_OK;
  n++;
  uint64_t b0, o0, b1, o1;
  ceb_store_commit_stats(a, &b0, &o0);
  atomic_store(&g_sg_done, 0);
  for (size_t i = 0; i < n; i++) {
    ops[i].status = 1;
    CHECK_INT(ceb_store_settle(a, &ops[i].r, sg_done, &ops[i]), CEB_OK);
  }
  int want = (int)n;
  CHECK(ceb_test_wait(sg_all, &want, 60000));
  stats_want sw = {a, o0 + n};
  CHECK(ceb_test_wait(stats_reached, &sw, 10000));
  ceb_store_commit_stats(a, &b1, &o1);
  CHECK_MSG(b1 - b0 < n, "%llu transactions for %zu settles",
            (unsigned long long)(b1 - b0), n);
  for (size_t i = 0; i < n; i++) {
    CHECK_MSG(ops[i].status == ops[i].want, "op %zu (seq %lld %s): %d, not %d",
              i, (long long)ops[i].r.seq, ops[i].r.route, ops[i].status,
              ops[i].want);
    if (i < n1 && i % 4 == 2) {
      CHECK(ops[i].r.dlq_id > 0);
      for (size_t j = 0; j < i; j++) /* each its own */
        CHECK(ops[j].r.dlq_id != ops[i].r.dlq_id || j % 4 != 2);
      json_t *d = ceb_store_dlq_show(a, ops[i].r.dlq_id);
      CHECK(d != NULL);
      json_decref(d);
    }
    if (i < n1 && i % 4 == 3) { /* refused: still in progress, untouched */
      CHECK_INT(peek_int(peek,
                         "SELECT state * 1000 + coalesce(last_status, 0)"
                         " FROM delivery WHERE seq = $1 AND route = 'sg'",
                         ops[i].r.seq),
                1000);
    }
    if (i < n1) { /* the journal row: settled when both routes are */
      long long open = peek_int(
          peek, "SELECT open_routes FROM journal_settle WHERE seq = $1",
          ops[i].r.seq);
      long long settled =
          peek_int(peek,
                   "SELECT count(*) FROM journal_settle WHERE seq = $1"
                   " AND settled_at IS NOT NULL",
                   ops[i].r.seq);
      int final = i % 4 == 0 || i % 4 == 2;
      CHECK_MSG(open == (final ? 0 : 1) && settled == final,
                "seq %lld: open %lld settled %lld", (long long)ops[i].r.seq,
                open, settled);
    }
  }
  CHECK_INT(ceb_store_count_open(a, "sg"), SG_N / 2);
  CHECK_INT(ceb_store_count_open(a, "sg2"), 0);
  /* the key's next row is its head now */
  ceb_claims_free(ck, nk);
  ck = NULL;
  CHECK_INT(ceb_store_claim(a, "sgk", 3100, 10, 600000, &ck, &nk), CEB_OK);
  CHECK_INT(nk, 1);
  if (nk == 1) CHECK_INT(ck[0].seq, k2);
  free(ops);
out:
  ceb_claims_free(c1, n1);
  ceb_claims_free(c2, n2);
  ceb_claims_free(ck, nk);
  PQfinish(peek);
}

/* ---- the database goes away ---- */

static int is_writable(void *arg) {
  return ceb_store_writable(arg, NULL, 0);
}
static int not_writable(void *arg) {
  return !ceb_store_writable(arg, NULL, 0);
}

static atomic_int g_settled = 0;
static void settled(void *arg, int status) {
  (void)arg;
  atomic_store(&g_settled, status == CEB_OK ? 1 : status);
}
static int settle_done(void *arg) {
  (void)arg;
  return atomic_load(&g_settled) != 0;
}

static void test_unreachable(ceb_store *a) {
  CHECK(ceb_store_writable(a, NULL, 0));
  /* a delivery in progress whose outcome comes while the database is away */
  int64_t seq = 0;
  CHECK_INT(ingest1(a, "down-0", "down", NULL, 1000, &seq), 1);
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(a, "down", 2000, 1, 600000, &c, &n), CEB_OK);
  CHECK_INT(n, 1);
  CHECK_INT(ceb_test_pg_stop(&g_pg, CEB_TEST_PG_FAST), 0);
  /* the first write learns it; later ones are refused at once */
  int rc = ingest1(a, "down-1", "r", NULL, 1000, NULL);
  CHECK_INT(rc, CEB_EIO);
  CHECK(ceb_test_wait(not_writable, a, 30000));
  char why[512] = "";
  CHECK(!ceb_store_writable(a, why, sizeof why));
  CHECK_MSG(strstr(why, "unreachable") != NULL, "why: %s", why);
  CHECK_MSG(strstr(why, g_pg.password) == NULL, "why: %s", why);
  ceb_ingest_event e = {.source = "urn:test",
                        .id = "down-2",
                        .type = "t",
                        .json = "{}",
                        .json_len = 2};
  ceb_ingest_batch b = {.events = &e, .count = 1, .now = 1000};
  CHECK_INT(ceb_store_ingest(a, &b, NULL), CEB_EIO);
  /* the outcome waits for the database instead of failing (which would
   * leave the delivery in progress until its lease ends) */
  ceb_attempt_result r = {.route = "down",
                          .state = CEB_DS_DONE,
                          .now = 2100,
                          .status_code = 204,
                          .reason = "ok"};
  if (n == 1) {
    r.seq = c[0].seq;
    r.fence = c[0].fence;
    CHECK_INT(ceb_store_settle(a, &r, settled, NULL), CEB_OK);
  }
  CHECK(!ceb_test_wait(settle_done, NULL, 300)); /* held, not failed */
  /* back by itself, without a write to tell it */
  CHECK_INT(ceb_test_pg_up(&g_pg), 0);
  CHECK(ceb_test_wait(is_writable, a, 60000));
  CHECK(ceb_test_wait(settle_done, NULL, 60000));
  CHECK_INT(atomic_load(&g_settled), 1);
  CHECK_INT(ceb_store_count_open(a, "down"), 0);
  ceb_claims_free(c, n);
  CHECK_INT(ingest1(a, "down-3", "r", NULL, 1000, NULL), 1);
}

/* A drop proxy (pg_drop_proxy.h) in front of the test's server, and the
 * URI of the database "ceb" through it into uri; NULL (checked) when it
 * did not start. */
static cebt_proxy *proxy_up(char *uri, size_t len) {
  cebt_proxy *px = cebt_proxy_start(g_pg.port);
  CHECK(px != NULL);
  if (px)
    snprintf(uri, len,
             "postgresql://ceb:%s@127.0.0.1:%d/ceb?connect_timeout=10",
             g_pg.password, cebt_proxy_port(px));
  return px;
}

/* ---- a resent outcome that had committed ---- */

/* The answer to a settle's COMMIT is lost after the server committed (the
 * proxy drops it): the engine holds the outcome and sends it again once
 * reconnected, finds no row in progress under its fence, and must report
 * the outcome applied (done CEB_OK, the DLQ id of a dead letter), not a
 * lost lease (CEB_ECONFLICT: the engine would skip receipt and metric). */
static void test_resend_applied(void) {
  char uri[1024];
  cebt_proxy *px = proxy_up(uri, sizeof uri);
  if (!px) return;
  ceb_store *st = open_store(uri, "resend", 600000);
  if (!st) {
    cebt_proxy_stop(px);
    return;
  }
  static const int states[] = {CEB_DS_DONE, CEB_DS_DEAD};
  for (int k = 0; k < 2; k++) {
    char id[32];
    snprintf(id, sizeof id, "resend-%d", k);
    CHECK_INT(ingest1(st, id, "resend", NULL, 1000, NULL), 1);
    ceb_claim *c = NULL;
    size_t n = 0;
    CHECK_INT(ceb_store_claim(st, "resend", 2000, 1, 600000, &c, &n), CEB_OK);
    CHECK_INT(n, 1);
    if (n != 1) break;
    ceb_attempt_result r = {.seq = c[0].seq,
                            .route = "resend",
                            .fence = c[0].fence,
                            .state = states[k],
                            .now = 2100,
                            .status_code = states[k] == CEB_DS_DONE ? 204 : 400,
                            .reason = states[k] == CEB_DS_DONE ? "ok" : "4xx",
                            .attempt = 1,
                            .sink = "s",
                            .dead_reason = "rejected",
                            .dead_json = "{}"};
    int dropped = cebt_proxy_dropped(px);
    cebt_proxy_arm(px);
    atomic_store(&g_settled, 0);
    CHECK_INT(ceb_store_settle(st, &r, settled, NULL), CEB_OK);
    CHECK(ceb_test_wait(settle_done, NULL, 60000));
    CHECK_INT(cebt_proxy_dropped(px), dropped + 1); /* the answer was lost */
    CHECK_MSG(atomic_load(&g_settled) == 1, "state %d: done %d", states[k],
              atomic_load(&g_settled));
    CHECK_INT(ceb_store_count_open(st, "resend"), 0);
    if (states[k] == CEB_DS_DEAD) {
      CHECK(r.dlq_id > 0);
      json_t *d = ceb_store_dlq_show(st, r.dlq_id);
      CHECK(d != NULL);
      json_decref(d);
    }
    ceb_claims_free(c, n);
  }
  ceb_store_close(st);
  cebt_proxy_stop(px);
}

/* ---- a lost claim's release ---- */

#define LOST_HOOK_NOW 5000

static int lost_reserve(void *arg, const ceb_ingest_route *rt, int64_t *now,
                        int64_t *lease_ms) {
  (void)arg;
  if (strcmp(rt->route, "lost-i") != 0) return 0;
  *now = LOST_HOOK_NOW;
  *lease_ms = 600000;
  return 1;
}

/* the claims at ingest the hook was given (committed), and those given
 * back */
static atomic_int g_lost_taken, g_lost_back;
static int64_t g_lost_seq, g_lost_fence;

static void lost_claimed(void *arg, const ceb_ingest_batch *b,
                         const ceb_ingest_claim *c, size_t n, int committed) {
  (void)arg;
  (void)b;
  if (!committed) {
    atomic_fetch_add(&g_lost_back, (int)n);
    return;
  }
  if (n && atomic_fetch_add(&g_lost_taken, (int)n) == 0) {
    g_lost_seq = c[0].event->seq;
    g_lost_fence = c[0].fence;
  }
}

/* Claims of one route by this instance at the same now with the same
 * lease: the first answered, the answer of the second lost after the
 * server committed (the proxy drops it). Once reconnected, the second's
 * row is given back (pending again, its attempt refunded) and the first's
 * live claim is not: the next claim takes only the released row, and the
 * first claim's settle applies. The same for claims at ingest, whose now
 * and lease come from the hook (the same for every reservation here). One
 * committer (a pool of 2): the release runs before its next op. */
static void test_lost_claim_release(void) {
  char uri[1024];
  cebt_proxy *px = proxy_up(uri, sizeof uri);
  if (!px) return;
  ceb_store_opts o = {.spec = uri,
                      .group_max = 512,
                      .queue_max = 4096,
                      .instance = "lost",
                      .lease_ms = 600000,
                      .pool_size = 2};
  ceb_store *st = NULL;
  char err[512] = "";
  CHECK_MSG(ceb_store_open(&o, &st, err, sizeof err) == CEB_OK, "%s", err);
  if (!st) {
    cebt_proxy_stop(px);
    return;
  }

  /* claims */
  int64_t s1 = 0, s2 = 0;
  CHECK_INT(ingest1(st, "lost-1", "lost", NULL, 1000, &s1), 1);
  CHECK_INT(ingest1(st, "lost-2", "lost", NULL, 1000, &s2), 1);
  ceb_claim *live = NULL, *gone = NULL, *again = NULL;
  size_t nlive = 0, ngone = 0, nagain = 0;
  CHECK_INT(ceb_store_claim(st, "lost", 2000, 1, 600000, &live, &nlive),
            CEB_OK);
  CHECK_INT(nlive, 1);
  int dropped = cebt_proxy_dropped(px);
  cebt_proxy_arm(px);
  CHECK_INT(ceb_store_claim(st, "lost", 2000, 1, 600000, &gone, &ngone),
            CEB_EIO);
  CHECK_INT(cebt_proxy_dropped(px), dropped + 1);
  CHECK(ceb_test_wait(is_writable, st, 60000));
  CHECK_INT(ceb_store_claim(st, "lost", 2000, 10, 600000, &again, &nagain),
            CEB_OK);
  CHECK_INT(nagain, 1);
  if (nagain == 1) {
    CHECK_INT(again[0].seq, s2);
    CHECK_INT(again[0].attempt, 1); /* the lost claim's attempt refunded */
    CHECK_INT(settle(st, &again[0], "lost", CEB_DS_DONE, 2100), CEB_OK);
  }
  if (nlive == 1) {
    CHECK_INT(live[0].seq, s1);
    CHECK_INT(settle(st, &live[0], "lost", CEB_DS_DONE, 2100), CEB_OK);
  }
  CHECK_INT(ceb_store_count_open(st, "lost"), 0);
  ceb_claims_free(live, nlive);
  ceb_claims_free(gone, ngone);
  ceb_claims_free(again, nagain);

  /* claims at ingest */
  ceb_store_claim_hook hook = {.reserve = lost_reserve,
                               .claimed = lost_claimed};
  ceb_store_set_claim_hook(st, &hook);
  int64_t i1 = 0;
  CHECK_INT(ingest1(st, "lost-i1", "lost-i", NULL, 1000, &i1), 1);
  CHECK_INT(atomic_load(&g_lost_taken), 1);
  CHECK_INT(g_lost_seq, i1);
  dropped = cebt_proxy_dropped(px);
  cebt_proxy_arm(px);
  CHECK_INT(ingest1(st, "lost-i2", "lost-i", NULL, 1000, NULL), CEB_EIO);
  CHECK_INT(cebt_proxy_dropped(px), dropped + 1);
  CHECK_INT(atomic_load(&g_lost_back), 1);
  CHECK(ceb_test_wait(is_writable, st, 60000));
  CHECK_INT(
      ceb_store_claim(st, "lost-i", LOST_HOOK_NOW, 10, 600000, &again, &nagain),
      CEB_OK);
  CHECK_INT(nagain, 1); /* lost-i2, committed and released */
  if (nagain == 1) {
    CHECK(again[0].seq > i1);
    CHECK_INT(again[0].attempt, 1);
  }
  ceb_claims_free(again, nagain);
  ceb_claim ci = {.seq = i1, .fence = g_lost_fence};
  CHECK_INT(settle(st, &ci, "lost-i", CEB_DS_DONE, LOST_HOOK_NOW + 100),
            CEB_OK);
  ceb_store_set_claim_hook(st, NULL);
  ceb_store_close(st);
  cebt_proxy_stop(px);
}

/* ---- schema and errors ---- */

/* Puts the delivery table back into schema 9's shape (indexes on state,
 * delivery_leased, no open column, fillfactor 100). */
#define DELIVERY_V9                                                            \
  " ALTER TABLE delivery DROP COLUMN open;"                                    \
  " ALTER TABLE delivery RESET (fillfactor);"                                  \
  " CREATE INDEX delivery_due ON delivery (route, next_at, seq)"               \
  " WHERE state IN (0, 2) AND (order_key IS NULL OR head);"                    \
  " CREATE INDEX delivery_open ON delivery (route, order_key, seq)"            \
  " WHERE state < 3;"                                                          \
  " CREATE INDEX delivery_open_seq ON delivery (route, seq)"                   \
  " WHERE state < 3;"                                                          \
  " CREATE INDEX delivery_leased ON delivery (route, lease_until)"             \
  " WHERE state = 1;"

/* Schema 11: a lookup of one key's open rows (the ingest's head test, the
 * settle's hand-off) can use no index but delivery_open, whatever the
 * statistics. Before, delivery_open_seq was eligible too, cost the same
 * on a small table, and a generic plan made then read every open row of
 * the route per lookup as the table grew. The table here is one page, so
 * a sequential scan is off: the plan shows which index is eligible.
 * Schema 12: replayed rows are in delivery_open_seq too, and the oldest
 * open row's read (cebpg_oldest_open's predicate) can still use it. */
static void test_key_lookup_plan(PGconn *c) {
  PQclear(PQexec(c, "SET plan_cache_mode = force_generic_plan;"
                    " SET enable_seqscan = off"));
  PQclear(PQexec(c, "PREPARE key_open(text, text) AS SELECT 1 FROM delivery"
                    " p WHERE p.route = $1 AND p.order_key = $2 AND p.open"
                    " ORDER BY p.seq LIMIT 1"));
  PGresult *r = PQexec(c, "EXPLAIN EXECUTE key_open('r9', 'k')");
  CHECK_INT(PQresultStatus(r), PGRES_TUPLES_OK);
  char plan[2048] = "";
  for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK && i < PQntuples(r);
       i++) {
    strncat(plan, PQgetvalue(r, i, 0), sizeof plan - strlen(plan) - 2);
    strcat(plan, "\n");
  }
  PQclear(r);
  CHECK_MSG(strstr(plan, "using delivery_open on delivery") != NULL, "%s",
            plan);
  PQclear(PQexec(c, "PREPARE oldest(text) AS SELECT min(seq) FROM delivery"
                    " WHERE route = $1 AND open AND (order_key IS NULL OR"
                    " head OR replays > 0)"));
  r = PQexec(c, "EXPLAIN EXECUTE oldest('r9')");
  CHECK_INT(PQresultStatus(r), PGRES_TUPLES_OK);
  plan[0] = '\0';
  for (int i = 0; PQresultStatus(r) == PGRES_TUPLES_OK && i < PQntuples(r);
       i++) {
    strncat(plan, PQgetvalue(r, i, 0), sizeof plan - strlen(plan) - 2);
    strcat(plan, "\n");
  }
  PQclear(r);
  CHECK_MSG(strstr(plan, "delivery_open_seq") != NULL, "%s", plan);
  PQclear(PQexec(c, "DEALLOCATE oldest"));
  PQclear(PQexec(c, "DEALLOCATE key_open; RESET plan_cache_mode;"
                    " RESET enable_seqscan"));
  r = PQexec(c, "SELECT indexdef FROM pg_indexes WHERE indexname ="
                " 'delivery_open_seq'");
  CHECK_INT(PQntuples(r), 1);
  if (PQntuples(r) == 1)
    CHECK_MSG(strstr(PQgetvalue(r, 0, 0), "head") != NULL &&
                  strstr(PQgetvalue(r, 0, 0), "replays > 0") != NULL,
              "%s", PQgetvalue(r, 0, 0));
  PQclear(r);
}

static void test_schema_and_errors(void) {
  char ci[1024];
  CHECK_INT(ceb_test_pg_createdb(&g_pg, "nomigrate", ci, sizeof ci), 0);
  ceb_store_opts o = {.spec = ci,
                      .group_max = 8,
                      .queue_max = 8,
                      .instance = "x",
                      .no_migrate = 1};
  ceb_store *st = NULL;
  char err[512] = "";
  CHECK(ceb_store_open(&o, &st, err, sizeof err) != CEB_OK);
  CHECK_MSG(strstr(err, "store migrate") != NULL, "%s", err);
  o.no_migrate = 0;
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), CEB_OK);
  ceb_store_close(st);
  PGconn *c = PQconnectdb(ci);

  /* a database made by schema version 8 (key_status_at, fillfactor 100,
   * a key's row in it) migrates to 9 (and on): the index dropped, room for
   * HOT updates, the row kept */
  PGresult *m = PQexec(c, "BEGIN; CREATE INDEX key_status_at ON key_status"
                          " (last_at); ALTER TABLE key_status RESET"
                          " (fillfactor); INSERT INTO key_status VALUES"
                          " ('r', 'k', 5, NULL, 5);" DELIVERY_V9
                          " UPDATE ceb_schema SET version = 8; COMMIT");
  CHECK_INT(PQresultStatus(m), PGRES_COMMAND_OK);
  PQclear(m);
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), CEB_OK);
  ceb_store_close(st);
  m = PQexec(c, "SELECT (SELECT version FROM ceb_schema),"
                " (SELECT count(*) FROM pg_indexes WHERE indexname ="
                " 'key_status_at'), (SELECT array_to_string(reloptions, ',')"
                " FROM pg_class WHERE relname = 'key_status'),"
                " (SELECT last_success_at FROM key_status WHERE route = 'r'"
                " AND order_key = 'k')");
  CHECK_INT(PQresultStatus(m), PGRES_TUPLES_OK);
  CHECK_STR(PQgetvalue(m, 0, 0), "13");
  CHECK_STR(PQgetvalue(m, 0, 1), "0");
  CHECK_STR(PQgetvalue(m, 0, 2), "fillfactor=50");
  CHECK_STR(PQgetvalue(m, 0, 3), "5");
  PQclear(m);

  /* a database made by schema version 9 (delivery's indexes on state,
   * delivery_leased; a pending row, a settled one, one in progress whose
   * lease ended) migrates to 10: open derived from state, the lease index
   * gone, and the claim takes the pending row and the ended lease */
  m = PQexec(c, "BEGIN;" DELIVERY_V9
                " INSERT INTO delivery (seq, route, state, next_at,"
                " lease_owner, lease_until, fence) VALUES"
                " (1, 'r9', 0, 5, NULL, NULL, 0), (2, 'r9', 3, 5, NULL, NULL,"
                " 1), (3, 'r9', 1, 5, 'gone', 6, 1);"
                " INSERT INTO journal (source, id, type, received_at, event,"
                " size) SELECT 's', 'e' || n, 't', 5, '{}', 2 FROM"
                " generate_series(1, 3) n;"
                " UPDATE ceb_schema SET version = 9; COMMIT");
  CHECK_INT(PQresultStatus(m), PGRES_COMMAND_OK);
  PQclear(m);
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), CEB_OK);
  m = PQexec(c, "SELECT (SELECT version FROM ceb_schema),"
                " (SELECT count(*) FROM pg_indexes WHERE indexname ="
                " 'delivery_leased'), (SELECT array_to_string(reloptions, ',')"
                " FROM pg_class WHERE relname = 'delivery'),"
                " (SELECT string_agg(seq || ':' || open, ',' ORDER BY seq)"
                " FROM delivery WHERE route = 'r9'),"
                " (SELECT count(*) FROM pg_indexes WHERE tablename ="
                " 'delivery' AND indexdef LIKE '%WHERE%open%')");
  CHECK_INT(PQresultStatus(m), PGRES_TUPLES_OK);
  CHECK_STR(PQgetvalue(m, 0, 0), "13");
  CHECK_STR(PQgetvalue(m, 0, 1), "0");
  CHECK_STR(PQgetvalue(m, 0, 2), "fillfactor=50");
  CHECK_STR(PQgetvalue(m, 0, 3), "1:true,2:false,3:true");
  CHECK_STR(PQgetvalue(m, 0, 4), "3");
  PQclear(m);
  ceb_claim *cl = NULL;
  size_t ncl = 0;
  CHECK_INT(ceb_store_claim(st, "r9", 100, 10, 0, &cl, &ncl), CEB_OK);
  CHECK_INT((int)ncl, 2);
  if (ncl == 2) {
    CHECK_INT((int)cl[0].seq, 1);
    CHECK_INT((int)cl[1].seq, 3);
    CHECK(cl[1].fence > 1); /* a row's claims only raise its fence */
  }
  ceb_claims_free(cl, ncl);
  ceb_store_close(st);
  test_key_lookup_plan(c);
  PQclear(PQexec(c, "UPDATE ceb_schema SET version = 99"));
  PQfinish(c);
  st = NULL;
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), CEB_EUNSUPPORTED);
  CHECK_MSG(strstr(err, "newer") != NULL, "%s", err);

  /* a wrong password: refused, and the one given is never shown */
  char bad[1024];
  snprintf(bad, sizeof bad, "postgresql://ceb:Sup3rSecretPw@127.0.0.1:%d/ceb",
           g_pg.port);
  o.spec = bad;
  err[0] = '\0';
  CHECK(ceb_store_open(&o, &st, err, sizeof err) != CEB_OK);
  CHECK_MSG(strstr(err, "Sup3rSecretPw") == NULL, "%s", err);
  CHECK_MSG(strstr(err, "password authentication failed") != NULL, "%s", err);
  snprintf(bad, sizeof bad,
           "host=127.0.0.1 port=%d dbname=ceb user=ceb password=Sup3rSecretPw "
           "bogus=1",
           g_pg.port);
  err[0] = '\0';
  CHECK(ceb_store_open(&o, &st, err, sizeof err) != CEB_OK);
  CHECK_MSG(strstr(err, "Sup3rSecretPw") == NULL, "%s", err);
  /* the password given apart (store.password) */
  snprintf(bad, sizeof bad, "postgresql://ceb@127.0.0.1:%d/ceb", g_pg.port);
  o.password = g_pg.password;
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), CEB_OK);
  ceb_store_close(st);
}

/* ---- notifications only to listeners ---- */

typedef struct notify_probe {
  ceb_store *st;
  PGconn *w;        /* the test's listening session */
  int bridge_pid;   /* the store's listener session */
  char seen[8][32]; /* payloads heard from it, in order */
  int nseen;
} notify_probe;

static int skipped_some(void *arg) {
  notify_probe *p = arg;
  uint64_t sent = 0, skipped = 0;
  ceb_store_notify_stats(p->st, &sent, &skipped);
  return skipped > 0;
}

static int store_listening(void *arg) {
  notify_probe *p = arg;
  int64_t pid = ceb_test_pg_int(
      p->w, "SELECT coalesce(max(pid), 0) FROM pg_stat_activity WHERE"
            " datname = current_database() AND application_name ="
            " 'cebridge-listen' AND pid <> pg_backend_pid()");
  p->bridge_pid = (int)pid;
  return pid > 0;
}

/* Reads what reached the test's session; 1 once the store's notification
 * naming "r2" came. */
static int heard_r2(void *arg) {
  notify_probe *p = arg;
  PQconsumeInput(p->w);
  PGnotify *n;
  int got = 0;
  while ((n = PQnotifies(p->w)) != NULL) {
    if (n->be_pid == p->bridge_pid && p->nseen < 8)
      snprintf(p->seen[p->nseen++], sizeof p->seen[0], "%s", n->extra);
    got |= n->be_pid == p->bridge_pid && strcmp(n->extra, "r2") == 0;
    PQfreemem(n);
  }
  for (int i = 0; i < p->nseen; i++)
    got |= strcmp(p->seen[i], "r2") == 0;
  return got;
}

/* A bridge alone on its database sends no NOTIFY (each is a transaction
 * with a commit flush and wakes every listening session): it counts the
 * others' listener sessions ("cebridge-listen"). A listener that starts
 * says hello (an empty notification), and from then on the bridge's work
 * is notified to it. A session that listens under another name is not a
 * bridge and is not counted. */
static void test_notify_listeners(void) {
  char ci[1024];
  CHECK_INT(ceb_test_pg_createdb(&g_pg, "notify", ci, sizeof ci), 0);
  notify_probe p = {.w = PQconnectdb(ci)};
  CHECK_INT(PQstatus(p.w), CONNECTION_OK);
  PQclear(PQexec(p.w, "LISTEN ceb_work"));
  p.st = open_store(ci, "solo", 1000);
  if (!p.st || PQstatus(p.w) != CONNECTION_OK) {
    ceb_store_close(p.st);
    PQfinish(p.w);
    return;
  }
  /* the store's hello reaches every listening session (here the test's) */
  CHECK(ceb_test_wait(store_listening, &p, 30000));
  /* alone: the ingest's wake-up is dropped, not sent */
  CHECK_INT(ingest1(p.st, "n-1", "r1", NULL, 1000, NULL), 1);
  CHECK(ceb_test_wait(skipped_some, &p, 30000));
  uint64_t sent = 1, skipped = 0;
  ceb_store_notify_stats(p.st, &sent, &skipped);
  CHECK_INT((int)sent, 0);
  /* the test's session becomes a bridge's listener and says hello */
  PGresult *r = PQexec(p.w, "SET application_name = 'cebridge-listen';"
                            " NOTIFY ceb_work");
  CHECK_INT(PQresultStatus(r), PGRES_COMMAND_OK);
  PQclear(r);
  /* from the hello on, the store's work is notified: r2 arrives (each
   * ingest of r2 queues one; the first after the hello is heard) */
  int heard = 0;
  for (int i = 0; i < 50 && !heard; i++) {
    char id[16];
    snprintf(id, sizeof id, "n-2-%d", i);
    CHECK_INT(ingest1(p.st, id, "r2", NULL, 1000, NULL), 1);
    heard = ceb_test_wait(heard_r2, &p, 200);
  }
  CHECK_MSG(heard, "the store never notified r2 after the hello");
  /* the hello came from the store (empty payload), r1 never did */
  CHECK(p.nseen >= 2);
  CHECK_STR(p.seen[0], "");
  for (int i = 0; i < p.nseen; i++)
    CHECK_MSG(strcmp(p.seen[i], "r1") != 0, "r1 notified while alone");
  ceb_store_notify_stats(p.st, &sent, &skipped);
  CHECK(sent >= 1);
  ceb_store_close(p.st);
  PQfinish(p.w);
}

int main(void) {
  ceb_test_pg_require();
  if (ceb_test_pg_start(&g_pg, "pg-store") != 0) {
    CHECK(0);
    return ceb_test_done("integration_pg_store");
  }
  ceb_store *a = open_store(g_pg.uri, "a", 1000);
  ceb_store *b = open_store(g_pg.uri, "b", 1000);
  if (a && b) {
    CHECK_STR(ceb_store_engine_name(a), "postgresql");
    test_dedupe_across(a, b);
    test_fifo_across(a, b);
    test_lease_takeover(a, b);
    test_recover_own(b);
    test_idem_race(a, b);
    test_replay_head(a, b);
    test_fifo_concurrent(a, b);
    test_cluster_parts(a, b);
    test_attempt_history(a);
    test_group_commit(a);
    test_settle_group(a);
    test_unreachable(a);
  }
  test_resend_applied();
  test_lost_claim_release();
  test_notify_listeners();
  ceb_store_close(a);
  ceb_store_close(b);
  test_schema_and_errors();
  ceb_test_pg_cleanup(&g_pg);
  return ceb_test_done("integration_pg_store");
}
