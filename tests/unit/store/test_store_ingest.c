/* Group commit: 1000 submits from 8 threads all commit, land in few
 * transactions, and every callback reports success; dedupe on
 * (client, source, id); the bounded queue refuses with CEB_EBUSY. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <ceb/status.h>

#include "store/sqlite/store_internal.h"
#include "store_fixture.h"

#define THREADS 8
#define PER_THREAD 125

static ceb_store *g_st;
static atomic_int g_ok, g_fail, g_dup;

/* batch first: the run gets the same arg as done */
typedef struct job {
  ceb_ingest_batch batch;
  char id[32];
  char json[128];
  ceb_ingest_route route;
  ceb_ingest_event ev;
} job;

static void job_done(void *arg, int status) {
  job *j = arg;
  if (status == CEB_OK && j->ev.inserted)
    atomic_fetch_add(&g_ok, 1);
  else if (status == CEB_OK)
    atomic_fetch_add(&g_dup, 1);
  else
    atomic_fetch_add(&g_fail, 1);
  free(j);
}

static void *producer(void *arg) {
  int t = (int)(intptr_t)arg;
  for (int i = 0; i < PER_THREAD; i++) {
    job *j = calloc(1, sizeof *j);
    snprintf(j->id, sizeof j->id, "t%d-%d", t, i);
    snprintf(j->json, sizeof j->json, "{\"id\":\"%s\"}", j->id);
    j->route = (ceb_ingest_route){"r", NULL, 0};
    j->ev = (ceb_ingest_event){.client = "c",
                               .source = "urn:s",
                               .id = j->id,
                               .type = "t",
                               .json = j->json,
                               .json_len = strlen(j->json),
                               .routes = &j->route,
                               .nroutes = 1};
    j->batch = (ceb_ingest_batch){&j->ev, 1, 1000};
    int rc;
    while ((rc = ceb_store_ingest_async(g_st, &j->batch, job_done, j)) ==
           CEB_EBUSY)
      sched_yield();
    if (rc != CEB_OK) {
      atomic_fetch_add(&g_fail, 1);
      free(j);
    }
  }
  return NULL;
}

static int all_done(void *arg) {
  int want = *(int *)arg;
  return atomic_load(&g_ok) + atomic_load(&g_fail) + atomic_load(&g_dup) >=
         want;
}

/* An op that blocks the committer until the test releases it. */
static pthread_mutex_t g_gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_gate_cond = PTHREAD_COND_INITIALIZER;
static int g_gate_open, g_gate_entered;
static int gate_run(sqlite3 *db, void *arg) {
  (void)db;
  (void)arg;
  pthread_mutex_lock(&g_gate_lock);
  g_gate_entered = 1;
  pthread_cond_broadcast(&g_gate_cond);
  while (!g_gate_open)
    pthread_cond_wait(&g_gate_cond, &g_gate_lock);
  pthread_mutex_unlock(&g_gate_lock);
  return CEB_OK;
}
static int noop_run(sqlite3 *db, void *arg) {
  (void)db;
  (void)arg;
  return CEB_OK;
}
static atomic_int g_noop_done;
static void noop_done(void *arg, int status) {
  (void)arg;
  if (status == CEB_OK) atomic_fetch_add(&g_noop_done, 1);
}
static int noops_done(void *arg) {
  return atomic_load(&g_noop_done) >= *(int *)arg;
}

/* With synchronous=full an op's done runs only after a WAL fdatasync
 * that completed after the op was queued (the syncer); a NOSYNC op does
 * not wait for one; with synchronous=normal nothing is synced. */
typedef struct sync_count {
  atomic_int done, synced_first;
} sync_count;

typedef struct sync_probe {
  ceb_store *st;
  uint64_t syncs_at_submit;
  sync_count *count;
} sync_probe;

static void probe_done(void *arg, int status) {
  sync_probe *p = arg;
  if (status == CEB_OK && ceb_store_syncs(p->st) > p->syncs_at_submit)
    atomic_fetch_add(&p->count->synced_first, 1);
  atomic_fetch_add(&p->count->done, 1);
}

static int probes_done(void *arg) {
  sync_count *c = arg;
  return atomic_load(&c->done) == 20;
}

static void sync_probe_run(int full, int flags, int want_synced) {
  char *path = NULL;
  ceb_store *st = fixture_open(full ? "syncfull" : "syncnormal", &path);
  ceb_store_close(st);
  ceb_store_opts o = {.spec = path, .synchronous_full = full};
  char err[256];
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), 0);
  sync_count count = {0};
  sync_probe p[20];
  for (int i = 0; i < 20; i++) {
    p[i] = (sync_probe){st, ceb_store_syncs(st), &count};
    CHECK_INT(cebs_submit(cebs_of(st), noop_run, probe_done, &p[i], flags),
              CEB_OK);
  }
  CHECK(ceb_test_wait(probes_done, &count, 10000));
  if (want_synced) CHECK_INT(atomic_load(&count.synced_first), 20);
  if (!full) CHECK_INT(ceb_store_syncs(st), 0);
  ceb_store_close(st);
  free(path);
}

static int fail_sync(int fd) {
  (void)fd;
  errno = EIO;
  return -1;
}

static atomic_int g_eio_done;
static void eio_done(void *arg, int status) {
  (void)arg;
  if (status == CEB_EIO) atomic_fetch_add(&g_eio_done, 1);
}
static int one_eio(void *arg) {
  (void)arg;
  return atomic_load(&g_eio_done) == 1;
}

/* A failed fdatasync is final: the waiting op fails, later ops are refused
 * even once fdatasync works again (the kernel may have dropped the pages
 * as if written), NOSYNC work goes on. */
static void test_sync_failure_sticky(void) {
  char *path = NULL;
  ceb_store *st = fixture_open("syncfail", &path);
  ceb_store_close(st);
  ceb_store_opts o = {.spec = path, .synchronous_full = 1};
  char err[256];
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), 0);
  cebs_fdatasync = fail_sync;
  CHECK_INT(cebs_submit(cebs_of(st), noop_run, eio_done, NULL, CEBS_BOUNDED),
            CEB_OK);
  CHECK(ceb_test_wait(one_eio, NULL, 10000));
  cebs_fdatasync = fdatasync;
  CHECK_INT(cebs_submit(cebs_of(st), noop_run, eio_done, NULL, CEBS_BOUNDED),
            CEB_EIO);
  CHECK_INT(cebs_call(cebs_of(st), noop_run, NULL), CEB_EIO);
  CHECK_INT(cebs_call_nosync(cebs_of(st), noop_run, NULL), CEB_OK);
  ceb_store_close(st);
  free(path);
}

static void test_sync_before_done(void) {
  test_sync_failure_sticky();
  sync_probe_run(1, 0, 1);
  sync_probe_run(1, CEBS_BOUNDED, 1);
  sync_probe_run(1, CEBS_NOSYNC, 0);
  sync_probe_run(0, 0, 0);
}

int main(void) {
  /* synchronous=FULL and a short group wait, as in production */
  char *gpath = NULL;
  g_st = fixture_open("ingest", &gpath);
  ceb_store_close(g_st);
  ceb_store_opts go = {.spec = gpath,
                       .synchronous_full = 1,
                       .group_max = 512,
                       .group_wait_ms = 5,
                       .queue_max = 100000};
  char gerr[256] = "";
  CHECK_INT(ceb_store_open(&go, &g_st, gerr, sizeof gerr), 0);
  free(gpath);
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++)
    pthread_create(&th[t], NULL, producer, (void *)(intptr_t)t);
  for (int t = 0; t < THREADS; t++)
    pthread_join(th[t], NULL);
  int want = THREADS * PER_THREAD;
  CHECK(ceb_test_wait(all_done, &want, 30000));
  CHECK_INT(atomic_load(&g_ok), want);
  CHECK_INT(atomic_load(&g_fail), 0);
  CHECK_INT(fixture_int(g_st, "SELECT COUNT(*) FROM journal"), want);
  CHECK_INT(fixture_int(g_st, "SELECT COUNT(*) FROM delivery WHERE state = 0"),
            want);
  uint64_t batches = 0, ops = 0;
  ceb_store_commit_stats(g_st, &batches, &ops);
  CHECK((long long)ops >= want);
  CHECK_MSG(batches * 4 < ops, "%llu batches for %llu ops: no grouping",
            (unsigned long long)batches, (unsigned long long)ops);
  printf("group commit: %llu ops in %llu transactions\n",
         (unsigned long long)ops, (unsigned long long)batches);

  /* Dedupe: the same (client, source, id) again is a duplicate; another
   * client with the same source and id is a different event. */
  ceb_ingest_route r = {"r", NULL, 0};
  ceb_ingest_event two[2] = {{.client = "c",
                              .source = "urn:s",
                              .id = "t1-1",
                              .type = "t",
                              .json = "{}",
                              .json_len = 2,
                              .routes = &r,
                              .nroutes = 1},
                             {.client = "other",
                              .source = "urn:s",
                              .id = "t1-1",
                              .type = "t",
                              .json = "{}",
                              .json_len = 2,
                              .routes = &r,
                              .nroutes = 1}};
  ceb_ingest_batch b = {two, 2, 5};
  CHECK_INT(ceb_store_ingest_wait(g_st, &b), 0);
  CHECK_INT(two[0].inserted, 0);
  CHECK_INT(two[1].inserted, 1);
  CHECK_INT(fixture_int(g_st, "SELECT COUNT(*) FROM journal"), want + 1);

  /* Unrouted events are journaled, marked and settled at once. */
  CHECK(fixture_ingest(g_st, "urn:s", "lonely", "t", NULL, NULL, 7) > 0);
  CHECK_INT(fixture_int(g_st, "SELECT unrouted FROM journal WHERE id ="
                              " 'lonely'"),
            1);
  CHECK_INT(fixture_int(g_st, "SELECT settled_at FROM journal_settle WHERE"
                              " seq = (SELECT seq FROM journal WHERE id ="
                              " 'lonely')"),
            7);
  ceb_store_close(g_st);

  /* Backpressure: with the committer held, the bounded queue fills. */
  char *path = NULL;
  ceb_store *st = fixture_open("busy", &path);
  ceb_store_close(st);
  ceb_store_opts o = {.spec = path, .group_max = 1, .queue_max = 2};
  char err[256];
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), 0);
  CHECK_INT(cebs_submit(cebs_of(st), gate_run, NULL, NULL, 1), CEB_OK);
  pthread_mutex_lock(&g_gate_lock);
  while (!g_gate_entered)
    pthread_cond_wait(&g_gate_cond, &g_gate_lock);
  pthread_mutex_unlock(&g_gate_lock);
  CHECK_INT(cebs_submit(cebs_of(st), noop_run, noop_done, NULL, 1), CEB_OK);
  CHECK_INT(cebs_submit(cebs_of(st), noop_run, noop_done, NULL, 1), CEB_EBUSY);
  CHECK_INT(ceb_store_queued(st), 2);
  /* internal work is not refused */
  CHECK_INT(cebs_submit(cebs_of(st), noop_run, noop_done, NULL, 0), CEB_OK);
  pthread_mutex_lock(&g_gate_lock);
  g_gate_open = 1;
  pthread_cond_broadcast(&g_gate_cond);
  pthread_mutex_unlock(&g_gate_lock);
  int two_ops = 2;
  CHECK(ceb_test_wait(noops_done, &two_ops, 10000));
  CHECK_INT(cebs_submit(cebs_of(st), noop_run, noop_done, NULL, 1), CEB_OK);
  ceb_store_close(st);
  CHECK_INT(atomic_load(&g_noop_done), 3); /* close ran the queued op */
  free(path);
  test_sync_before_done();
  return ceb_test_done("unit_store_ingest");
}
