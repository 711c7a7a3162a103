/* WAL checkpoints off the commit path. SQLite's automatic checkpoint runs
 * inside the committing transaction's thread: with synchronous=FULL it
 * copies pages and fsyncs the database while ingest waits. Here the
 * committer's WAL hook only signals; a separate connection runs PASSIVE
 * checkpoints (they never block the writer) in the background.
 *
 * A pass runs each time the WAL grew by CKPT_CHUNK frames, not after every
 * commit: a page that many commits rewrote in the meantime (the journal's
 * last page, the index pages) is copied once per chunk instead of once per
 * commit. Under sustained writes the WAL never runs dry, so it is only
 * reset when the committer forces a checkpoint at CKPT_INLINE_PAGES; that
 * copies at most the last chunk, and a quiet WAL resets after the timer's
 * pass. */
#include <stdio.h>
#include <time.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

int cebs_open_conn(const char *path, int readonly, int sync_full, sqlite3 **out,
                   char *err, size_t errlen);

#define CKPT_CHUNK 1000 /* frames (4 KiB pages) of WAL growth per pass */
#define CKPT_INLINE_PAGES (4 * CKPT_CHUNK) /* 16 MiB: reset the WAL */

static int wal_hook(void *arg, sqlite3 *db, const char *name, int pages) {
  (void)db;
  (void)name;
  cebs_store *st = arg;                         /* committer thread */
  if (pages < st->wal_pages) st->ckpt_next = 0; /* the WAL restarted */
  st->wal_pages = pages;
  if (pages >= st->ckpt_next + CKPT_CHUNK) {
    st->ckpt_next = pages;
    pthread_mutex_lock(&st->ckpt_lock);
    st->ckpt_pending = 1;
    pthread_cond_signal(&st->ckpt_cond);
    pthread_mutex_unlock(&st->ckpt_lock);
  }
  return SQLITE_OK;
}

void cebs_checkpoint_if_big(cebs_store *st) {
  if (st->wal_pages < CKPT_INLINE_PAGES) return;
  /* RESTART between transactions: backfills what the background left and
   * makes the next commit write the WAL from the top again. */
  pthread_mutex_lock(&st->ckpt_run); /* SQLite runs one at a time */
  int rc = sqlite3_wal_checkpoint_v2(st->wdb, NULL, SQLITE_CHECKPOINT_RESTART,
                                     NULL, NULL);
  pthread_mutex_unlock(&st->ckpt_run);
  if (rc != SQLITE_OK)
    ceb_log_warn("store: inline checkpoint: %s", sqlite3_errmsg(st->wdb));
  pthread_mutex_lock(&st->ckpt_lock);
  st->ckpt_forced++;
  pthread_mutex_unlock(&st->ckpt_lock);
  st->wal_pages = 0;
  st->ckpt_next = 0;
}

void cebs_checkpoint_stats(cebs_store *st, uint64_t *passes, uint64_t *forced) {
  pthread_mutex_lock(&st->ckpt_lock);
  *passes = st->ckpt_passes;
  *forced = st->ckpt_forced;
  pthread_mutex_unlock(&st->ckpt_lock);
}

static void *checkpointer_main(void *arg) {
  cebs_store *st = arg;
  pthread_mutex_lock(&st->ckpt_lock);
  while (!st->ckpt_stop) {
    if (!st->ckpt_pending) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += 1; /* also checkpoint a quiet WAL now and then */
      pthread_cond_timedwait(&st->ckpt_cond, &st->ckpt_lock, &ts);
      if (st->ckpt_stop) break;
    }
    st->ckpt_pending = 0;
    st->ckpt_passes++;
    pthread_mutex_unlock(&st->ckpt_lock);
    pthread_mutex_lock(&st->ckpt_run);
    int rc = sqlite3_wal_checkpoint_v2(st->cdb, NULL, SQLITE_CHECKPOINT_PASSIVE,
                                       NULL, NULL);
    pthread_mutex_unlock(&st->ckpt_run);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
      ceb_log_warn("store: background checkpoint: %s", sqlite3_errmsg(st->cdb));
    pthread_mutex_lock(&st->ckpt_lock);
  }
  pthread_mutex_unlock(&st->ckpt_lock);
  return NULL;
}

int cebs_checkpointer_start(cebs_store *st, const char *path, int sync_full,
                            char *err, size_t errlen) {
  pthread_mutex_init(&st->ckpt_lock, NULL);
  pthread_cond_init(&st->ckpt_cond, NULL);
  pthread_mutex_init(&st->ckpt_run, NULL);
  int rc = cebs_open_conn(path, 0, sync_full, &st->cdb, err, errlen);
  if (rc != CEB_OK) return rc;
  sqlite3_wal_hook(st->wdb, wal_hook, st); /* replaces auto-checkpoint */
  if (pthread_create(&st->checkpointer, NULL, checkpointer_main, st) != 0) {
    snprintf(err, errlen, "store: cannot start the checkpointer thread");
    sqlite3_wal_hook(st->wdb, NULL, NULL);
    sqlite3_wal_autocheckpoint(st->wdb, CKPT_CHUNK);
    return CEB_EINTERNAL;
  }
  pthread_setname_np(st->checkpointer, "store-ckpt");
  st->ckpt_started = 1;
  return CEB_OK;
}

void cebs_checkpointer_stop(cebs_store *st) {
  if (st->ckpt_started) {
    pthread_mutex_lock(&st->ckpt_lock);
    st->ckpt_stop = 1;
    pthread_cond_signal(&st->ckpt_cond);
    pthread_mutex_unlock(&st->ckpt_lock);
    pthread_join(st->checkpointer, NULL);
    st->ckpt_started = 0;
  }
  if (st->cdb) {
    sqlite3_close(st->cdb);
    st->cdb = NULL;
  }
  if (st->wdb) sqlite3_wal_hook(st->wdb, NULL, NULL);
}
