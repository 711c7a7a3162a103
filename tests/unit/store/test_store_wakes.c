/* The committer is woken only when its wait can end: not by an op queued
 * while the syncer runs an fdatasync (it would only wait for the syncer
 * again: below CEBS_OVERLAP_MIN it does not overlap a sync), not by the
 * end of a sync that leaves nothing queued; it is woken by the end of a
 * sync that leaves ops queued, and every op still commits, is synced and
 * finishes. Each needless wake-up cost a futex call and a context switch
 * per sync under ingest. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include <ceb/status.h>

#include "store/sqlite/store_internal.h"
#include "store_fixture.h"

#define LATER 5

typedef struct probe {
  ceb_store *st;
  uint64_t syncs_at_submit;
} probe;

static atomic_int g_done, g_unsynced;

static int noop_run(sqlite3 *db, void *arg) {
  (void)db;
  (void)arg;
  return CEB_OK;
}

static void probe_done(void *arg, int status) {
  probe *p = arg;
  if (status != CEB_OK || ceb_store_syncs(p->st) <= p->syncs_at_submit)
    atomic_fetch_add(&g_unsynced, 1);
  atomic_fetch_add(&g_done, 1);
}

static int done_reached(void *arg) {
  return atomic_load(&g_done) >= *(int *)arg;
}

/* the bounded count drops after the dones ran */
static int none_queued(void *arg) {
  return ceb_store_queued(arg) == 0;
}

/* The first fdatasync waits for the test to release it. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;
static int g_held, g_release, g_calls;
static int held_sync(int fd) {
  pthread_mutex_lock(&g_lock);
  if (g_calls++ == 0) {
    g_held = 1;
    pthread_cond_broadcast(&g_cond);
    while (!g_release)
      pthread_cond_wait(&g_cond, &g_lock);
  }
  pthread_mutex_unlock(&g_lock);
  return fdatasync(fd);
}
static int sync_held(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_lock);
  int h = g_held;
  pthread_mutex_unlock(&g_lock);
  return h;
}
static void release_sync(void) {
  pthread_mutex_lock(&g_lock);
  g_release = 1;
  pthread_cond_broadcast(&g_cond);
  pthread_mutex_unlock(&g_lock);
}

/* the committer is waiting (for an op or for the syncer), its queue as
 * given: after the group it committed last, nothing else runs on it */
typedef struct idle_at {
  cebs_store *st;
  size_t queued;
} idle_at;
static int committer_waits(void *arg) {
  idle_at *w = arg;
  pthread_mutex_lock(&w->st->lock);
  int ok = w->st->queued == w->queued && w->st->syncing;
  pthread_mutex_unlock(&w->st->lock);
  return ok;
}

static uint64_t wakes(cebs_store *st) {
  pthread_mutex_lock(&st->lock);
  uint64_t n = st->commit_wakes;
  pthread_mutex_unlock(&st->lock);
  return n;
}

static void reset(void) {
  atomic_store(&g_done, 0);
  atomic_store(&g_unsynced, 0);
  g_held = g_release = g_calls = 0;
}

static ceb_store *open_full(const char *tag) {
  char *path = NULL;
  ceb_store *st = fixture_open(tag, &path);
  ceb_store_close(st);
  ceb_store_opts o = {.spec = path, .synchronous_full = 1};
  char err[256] = "";
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), 0);
  free(path);
  return st;
}

static void submit(ceb_store *st, probe *p) {
  *p = (probe){st, ceb_store_syncs(st)};
  CHECK_INT(cebs_submit(cebs_of(st), noop_run, probe_done, p, CEBS_BOUNDED),
            CEB_OK);
}

/* Ops queued behind a running sync do not wake the committer; the sync's
 * end does, once, and they all finish after a sync of their own. */
static void test_queued_behind_sync(void) {
  reset();
  ceb_store *st = open_full("wakes-behind");
  cebs_store *s = cebs_of(st);
  cebs_fdatasync = held_sync;
  probe first, later[LATER];
  submit(st, &first);
  CHECK(ceb_test_wait(sync_held, NULL, 10000));
  idle_at empty = {s, 0};
  CHECK(ceb_test_wait(committer_waits, &empty, 10000));
  /* give a needless wake-up the time to happen: the committer is waiting
   * now, so it runs within a scheduler tick of the signal */
  uint64_t w0 = wakes(s);
  for (int i = 0; i < LATER; i++)
    submit(st, &later[i]);
  idle_at five = {s, LATER};
  CHECK(ceb_test_wait(committer_waits, &five, 10000));
  usleep(20000); /* not a timing assertion: room for a wrong wake only */
  CHECK_INT(wakes(s) - w0, 0);
  release_sync();
  int want = 1 + LATER;
  CHECK(ceb_test_wait(done_reached, &want, 10000));
  CHECK(wakes(s) - w0 >= 1); /* the sync's end woke it for the five */
  CHECK_INT(atomic_load(&g_unsynced), 0);
  CHECK(ceb_test_wait(none_queued, st, 10000));
  ceb_store_close(st);
  cebs_fdatasync = fdatasync;
}

/* The end of a sync that leaves nothing queued leaves the idle committer
 * asleep. */
static void test_idle_after_sync(void) {
  reset();
  ceb_store *st = open_full("wakes-idle");
  cebs_store *s = cebs_of(st);
  cebs_fdatasync = held_sync;
  probe only;
  submit(st, &only);
  CHECK(ceb_test_wait(sync_held, NULL, 10000));
  idle_at empty = {s, 0};
  CHECK(ceb_test_wait(committer_waits, &empty, 10000));
  usleep(20000); /* the committer reaches its wait */
  uint64_t w0 = wakes(s);
  release_sync();
  int want = 1;
  CHECK(ceb_test_wait(done_reached, &want, 10000));
  CHECK(ceb_test_wait(none_queued, st, 10000));
  usleep(20000); /* not a timing assertion: room for a wrong wake only */
  CHECK_INT(wakes(s) - w0, 0);
  CHECK_INT(atomic_load(&g_unsynced), 0);
  ceb_store_close(st);
  cebs_fdatasync = fdatasync;
}

int main(void) {
  test_queued_behind_sync();
  test_idle_after_sync();
  return ceb_test_done("unit_store_wakes");
}
