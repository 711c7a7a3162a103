/* The committer: the only thread writing to the database. It takes up to
 * group_max queued ops, runs them in one transaction (one fsync for the
 * group), then reports each op's status. A failing op must not undo the
 * others: each op runs in its own savepoint, except in a group made only
 * of ops that can run again (CEBS_OP_REDO: ingests and outcomes, the hot
 * path), which runs without them and, when one of its ops fails, is rolled
 * back whole and run again with them (run_group). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

static int submit(cebs_store *st, cebs_run_fn run, void *run_arg,
                  ceb_store_done_fn done, void *arg, int flags);

int cebs_submit(cebs_store *st, cebs_run_fn run, ceb_store_done_fn done,
                void *arg, int flags) {
  return submit(st, run, arg, done, arg, flags & ~CEBS_OP_INGEST);
}

int cebs_submit_op(cebs_store *st, cebs_run_fn run, void *run_arg,
                   ceb_store_done_fn done, void *arg, int flags) {
  return submit(st, run, run_arg, done, arg, flags & ~CEBS_OP_INGEST);
}

int cebs_ingest(cebs_store *st, ceb_ingest_batch *batch, int bounded,
                ceb_store_done_fn done, void *arg) {
  return submit(st, cebs_ingest_run, batch, done, arg,
                (bounded ? CEBS_BOUNDED : 0) | CEBS_OP_INGEST | CEBS_OP_REDO);
}

void cebs_set_ingest_listener(cebs_store *st, ceb_store_ingest_listener fn,
                              void *arg) {
  pthread_mutex_lock(&st->lock);
  st->ingested = fn;
  st->ingested_arg = arg;
  pthread_mutex_unlock(&st->lock);
}

void cebs_set_claim_hook(cebs_store *st, const ceb_store_claim_hook *hook) {
  pthread_mutex_lock(&st->lock);
  if (hook && hook->reserve && hook->claimed)
    st->claim_hook = *hook;
  else
    st->claim_hook = (ceb_store_claim_hook){0};
  pthread_mutex_unlock(&st->lock);
}

static int submit(cebs_store *st, cebs_run_fn run, void *run_arg,
                  ceb_store_done_fn done, void *arg, int flags) {
  if (!st || !run) return CEB_EINVAL;
  store_op *op = calloc(1, sizeof *op);
  if (!op) return CEB_ENOMEM;
  op->run = run;
  op->run_arg = run_arg;
  op->done = done;
  op->arg = arg;
  op->flags = flags;
  int bounded = flags & CEBS_BOUNDED;
  pthread_mutex_lock(&st->lock);
  if (st->stopping) {
    pthread_mutex_unlock(&st->lock);
    free(op);
    return CEB_ESHUTDOWN;
  }
  if (st->sync_failed && !(flags & CEBS_NOSYNC)) {
    pthread_mutex_unlock(&st->lock);
    free(op);
    return CEB_EIO; /* it could never be acknowledged */
  }
  if (bounded && st->queued_bounded >= st->queue_max) {
    pthread_mutex_unlock(&st->lock);
    free(op);
    return CEB_EBUSY;
  }
  if (bounded) st->queued_bounded++;
  if (st->tail)
    st->tail->next = op;
  else
    st->head = op;
  st->tail = op;
  /* Wake the committer only where its wait (cebs_committer_main) can end:
   * the first op (while no sync runs: the syncer wakes it when its sync
   * ends and ops are queued), a queue long enough to overlap the running
   * sync, a full group. A wake per op cost a futex call and a context
   * switch each while the committer waited for the syncer. */
  size_t n = ++st->queued;
  if ((n == 1 && !st->syncing) || n == CEBS_OVERLAP_MIN || n == st->group_max)
    pthread_cond_signal(&st->cond);
  pthread_mutex_unlock(&st->lock);
  return CEB_OK;
}

void cebs_stats(cebs_store *st, ceb_store_stats *out) {
  pthread_mutex_lock(&st->lock);
  out->queued = st->queued_bounded;
  out->batches = st->batches;
  out->ops = st->ops;
  out->syncs = st->syncs;
  pthread_mutex_unlock(&st->lock);
  out->dedupe_entries = cebs_idmap_count(&st->ids);
  out->dedupe_bytes = cebs_idmap_bytes(&st->ids);
}

/* ---- blocking call ---- */

typedef struct sync_call {
  cebs_run_fn run;
  void *arg;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int finished;
  int status;
} sync_call;

static int sync_run(sqlite3 *db, void *arg) {
  sync_call *c = arg;
  return c->run(db, c->arg);
}

static void sync_done(void *arg, int status) {
  sync_call *c = arg;
  pthread_mutex_lock(&c->lock);
  c->status = status;
  c->finished = 1;
  pthread_cond_signal(&c->cond);
  pthread_mutex_unlock(&c->lock);
}

static int call(cebs_store *st, cebs_run_fn run, void *arg, int flags) {
  sync_call c = {.run = run, .arg = arg};
  pthread_mutex_init(&c.lock, NULL);
  pthread_cond_init(&c.cond, NULL);
  int rc = cebs_submit(st, sync_run, sync_done, &c, flags);
  if (rc == CEB_OK) {
    pthread_mutex_lock(&c.lock);
    while (!c.finished)
      pthread_cond_wait(&c.cond, &c.lock);
    pthread_mutex_unlock(&c.lock);
    rc = c.status;
  }
  pthread_mutex_destroy(&c.lock);
  pthread_cond_destroy(&c.cond);
  return rc;
}

int cebs_call(cebs_store *st, cebs_run_fn run, void *arg) {
  return call(st, run, arg, 0);
}

int cebs_call_nosync(cebs_store *st, cebs_run_fn run, void *arg) {
  return call(st, run, arg, CEBS_NOSYNC);
}

/* ---- the committer thread ---- */

static void wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(cond, lock, &ts);
}

/* Transaction control statements, prepared once (cebs_stmt caches them):
 * at a few hundred ops per group, re-parsing them per op costs. */
static const char SQL_BEGIN[] = "BEGIN IMMEDIATE";
static const char SQL_COMMIT[] = "COMMIT";
static const char SQL_SAVEPOINT[] = "SAVEPOINT op";
static const char SQL_RELEASE[] = "RELEASE op";
static const char SQL_ROLLBACK_TO[] = "ROLLBACK TO op";

static int step_cached(sqlite3 *db, const char *sql) {
  sqlite3_stmt *s = cebs_stmt(db, sql);
  if (!s) return CEB_EIO;
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    ceb_log_error("store: %s: %s", sql, sqlite3_errmsg(db));
    return CEB_EIO;
  }
  return CEB_OK;
}

static _Thread_local store_op *t_op;

store_op *cebs_committer_op(void) {
  return t_op;
}

/* The op's claims at ingest go to the engine (committed) or back (not),
 * once. */
static void claims_end(const ceb_store_claim_hook *h, store_op *op,
                       int committed) {
  if (op->nclaims && h->claimed)
    h->claimed(h->arg, op->run_arg, op->claims, op->nclaims, committed);
  free(op->claims);
  op->claims = NULL;
  op->nclaims = op->capclaims = 0;
}

/* Runs the group's ops in the open transaction, but skip (which keeps its
 * status). savepoints: each op in its own, so that a failing op rolls
 * back alone; 1. Without: the pass stops at the first failing op and
 * returns 0 (the caller rolls the whole transaction back). *werr: the
 * first write error (run_group). */
static int run_ops(cebs_store *st, store_op *group, const store_op *skip,
                   int savepoints, int *werr) {
  for (store_op *op = group; op; op = op->next) {
    if (op == skip) continue;
    if (savepoints && step_cached(st->wdb, SQL_SAVEPOINT) != CEB_OK) {
      op->status = CEB_EIO;
      continue;
    }
    t_op = op;
    op->status = op->run(st->wdb, op->run_arg);
    t_op = NULL;
    if (op->status < 0) {
      if (!*werr) *werr = cebs_write_error_of(st->wdb);
      if (!savepoints) return 0;
      step_cached(st->wdb, SQL_ROLLBACK_TO);
      claims_end(&st->claim_hook, op, 0); /* rolled back */
    }
    if (savepoints) step_cached(st->wdb, SQL_RELEASE);
  }
  return 1;
}

/* After the whole transaction of a pass without savepoints rolled back:
 * what the ops up to and including stop did outside the database goes
 * too (an ingest's dedupe entries, its claims' reservations), so that
 * they can run again. */
static void undo_ops(cebs_store *st, store_op *group, store_op *stop) {
  for (store_op *op = group; op; op = op->next) {
    if (op->flags & CEBS_OP_INGEST) {
      cebs_ingest_undo(st, op->run_arg);
      claims_end(&st->claim_hook, op, 0);
    }
    if (op == stop) break;
  }
}

static void run_group(cebs_store *st, store_op *group) {
  cebs_checkpoint_if_big(st);
  int began = step_cached(st->wdb, SQL_BEGIN) == CEB_OK;
  /* the first error meaning "not written" (full disk, I/O, damage); a
   * busy lock (another process writing) is not one */
  int werr = began ? 0 : cebs_write_error_of(st->wdb);
  size_t n = 0;
  /* A SAVEPOINT and a RELEASE per op cost two statements and the
   * savepoint's allocations (its record and bitmap of journalled pages);
   * a group of ops that can all run again takes them only when one of
   * its ops fails. */
  int redo = 1;
  for (store_op *op = group; op; op = op->next) {
    n++;
    if (!(op->flags & CEBS_OP_REDO)) redo = 0;
  }
  if (!began) {
    for (store_op *op = group; op; op = op->next)
      op->status = CEB_EIO;
  } else if (!redo || !run_ops(st, group, NULL, 0, &werr)) {
    store_op *stop = NULL;
    if (redo) {
      /* an op failed: it keeps its status (its writes went with the
       * transaction, as with its savepoint), the others run again, each
       * alone */
      stop = group;
      while (stop->status >= 0)
        stop = stop->next;
      cebs_exec(st->wdb, "ROLLBACK");
      undo_ops(st, group, stop);
      began = step_cached(st->wdb, SQL_BEGIN) == CEB_OK;
      if (!began) {
        werr = cebs_write_error_of(st->wdb);
        for (store_op *op = group; op; op = op->next)
          op->status = CEB_EIO;
      }
    }
    if (began) run_ops(st, group, stop, 1, &werr);
  }
  int ok = began;
  if (began && step_cached(st->wdb, SQL_COMMIT) != CEB_OK) {
    int code = cebs_write_error_of(st->wdb);
    if (code) werr = code;
    ceb_log_error("store: group commit of %zu ops failed; every op fails", n);
    if (!sqlite3_get_autocommit(st->wdb)) cebs_exec(st->wdb, "ROLLBACK");
    for (store_op *op = group; op; op = op->next)
      op->status = CEB_EIO;
    ok = 0;
  }
  cebs_health_group(st, werr);
  pthread_mutex_lock(&st->lock);
  st->batches++;
  st->ops += n;
  ceb_store_ingest_listener ingested = st->ingested;
  void *ingested_arg = st->ingested_arg;
  pthread_mutex_unlock(&st->lock);
  /* Ops that must be on disk first go to the syncer, in order; the rest
   * (and everything when SQLite synced, or the commit failed) finish
   * here. */
  store_op *wait_head = NULL, *wait_tail = NULL;
  size_t bounded = 0;
  /* the engine counts the new deliveries before any later transaction (a
   * claim, an outcome) can touch them; read under the lock above, the
   * listener is set while no ingest is queued */
  for (store_op *op = group; ok && ingested && op; op = op->next)
    if ((op->flags & CEBS_OP_INGEST) && op->status >= 0)
      ingested(ingested_arg, op->run_arg);
  /* after the ingest listener (the engine counts the rows first); set
   * with it, so read without the lock as the listener is */
  for (store_op *op = group; op; op = op->next)
    /* the array too when every reservation was refused (nclaims 0) */
    if (op->claims) claims_end(&st->claim_hook, op, ok);
  for (store_op *op = group, *next; op; op = next) {
    next = op->next;
    op->next = NULL;
    if (st->syncer_started && ok && !(op->flags & CEBS_NOSYNC)) {
      if (wait_tail)
        wait_tail->next = op;
      else
        wait_head = op;
      wait_tail = op;
      continue;
    }
    bounded += cebs_op_finish(op);
  }
  if (bounded) {
    pthread_mutex_lock(&st->lock);
    st->queued_bounded -= bounded;
    pthread_mutex_unlock(&st->lock);
  }
  if (wait_head) cebs_syncer_push(st, wait_head, wait_tail);
}

static _Thread_local cebs_store *t_store;

cebs_store *cebs_committer_store(void) {
  return t_store;
}

void *cebs_committer_main(void *arg) {
  cebs_store *st = arg;
  t_store = st;
  pthread_mutex_lock(&st->lock);
  for (;;) {
    while (!st->head && !st->stopping) {
      if (!cebs_health_needs_probe(st)) {
        pthread_cond_wait(&st->cond, &st->lock);
        st->commit_wakes++;
        continue;
      }
      /* writes failed and nothing else writes: try one each second, so
       * that readiness comes back when the disk has room again */
      wait_ms(&st->cond, &st->lock, 1000);
      if (st->head || st->stopping) break;
      pthread_mutex_unlock(&st->lock);
      cebs_health_probe(st);
      pthread_mutex_lock(&st->lock);
    }
    if (!st->head && st->stopping) break;
    if (cebs_health_needs_probe(st) && !st->stopping) {
      /* busy with other writes (claims, outcomes): probe between groups,
       * at most once a second */
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      int64_t ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
      if (ms - st->probe_at >= 1000) {
        st->probe_at = ms;
        pthread_mutex_unlock(&st->lock);
        cebs_health_probe(st);
        pthread_mutex_lock(&st->lock);
      }
    }
    /* While the syncer is busy, a short queue waits for it: running ahead
     * with a few ops costs a commit each (smaller groups cost more CPU per
     * event) and gains nothing, as their acks wait for the next sync
     * anyway. A longer queue goes ahead and overlaps the sync. */
    while (st->syncing && !st->stopping && st->queued < CEBS_OVERLAP_MIN) {
      pthread_cond_wait(&st->cond, &st->lock);
      st->commit_wakes++;
    }
    if (st->group_wait_ms > 0 && !st->stopping && st->queued < st->group_max)
      wait_ms(&st->cond, &st->lock, st->group_wait_ms);
    store_op *group = st->head, *last = group;
    size_t taken = 1;
    for (; taken < st->group_max && last->next; taken++)
      last = last->next;
    st->head = last->next;
    if (!st->head) st->tail = NULL;
    st->queued -= taken;
    last->next = NULL;
    pthread_mutex_unlock(&st->lock);
    run_group(st, group);
    pthread_mutex_lock(&st->lock);
  }
  pthread_mutex_unlock(&st->lock);
  cebs_finalize_all(st->wdb);
  return NULL;
}
