#include "pull_import.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Appends waiting for their callback, and the first failure. */
typedef struct import_wait {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  long pending;
  int status;
} import_wait;

static void imported_one(void *arg, int status) {
  import_wait *w = arg;
  pthread_mutex_lock(&w->lock);
  if (status != CEB_OK && w->status == CEB_OK) w->status = status;
  if (--w->pending == 0) pthread_cond_broadcast(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

int pull_import(const ceb_host *host, ceb_instance *inst,
                const char *data_dir) {
  char path[4200], done[4300];
  snprintf(path, sizeof path, "%s/queue.db", data_dir);
  snprintf(done, sizeof done, "%s.imported", path);
  struct stat sb;
  if (stat(path, &sb) != 0) return CEB_OK; /* nothing to move */
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
    host->log(inst, CEB_LOG_ERROR, "cannot open the earlier queue file %s: %s",
              path, db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return CEB_EIO;
  }
  sqlite3_busy_timeout(db, 5000);
  /* the committed rows were deleted by the commit that moved the cursor */
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(db, "SELECT idem, event FROM events ORDER BY seq",
                              -1, &s, NULL) == SQLITE_OK
               ? CEB_OK
               : CEB_EIO;
  import_wait w = {.status = CEB_OK};
  pthread_mutex_init(&w.lock, NULL);
  pthread_cond_init(&w.cond, NULL);
  long n = 0;
  int step = SQLITE_DONE;
  while (rc == CEB_OK && (step = sqlite3_step(s)) == SQLITE_ROW) {
    const char *key = (const char *)sqlite3_column_text(s, 0);
    const char *json = (const char *)sqlite3_column_text(s, 1);
    if (!key || !json) continue;
    pthread_mutex_lock(&w.lock);
    w.pending++;
    pthread_mutex_unlock(&w.lock);
    /* no limit: these were accepted already; the queue must hold them */
    rc = host->queue_append(inst, key, json, (size_t)sqlite3_column_bytes(s, 1),
                            SIZE_MAX, imported_one, &w);
    if (rc != CEB_OK) {
      pthread_mutex_lock(&w.lock);
      w.pending--;
      pthread_mutex_unlock(&w.lock);
    } else {
      n++;
    }
  }
  if (rc == CEB_OK && step != SQLITE_DONE) rc = CEB_EIO;
  sqlite3_finalize(s);
  pthread_mutex_lock(&w.lock);
  while (w.pending > 0)
    pthread_cond_wait(&w.cond, &w.lock);
  if (rc == CEB_OK) rc = w.status;
  pthread_mutex_unlock(&w.lock);
  pthread_cond_destroy(&w.cond);
  pthread_mutex_destroy(&w.lock);
  sqlite3_close(db); /* the last connection: the WAL goes into the file */
  if (rc != CEB_OK) {
    host->log(inst, CEB_LOG_ERROR,
              "moving the earlier queue file %s into the store failed (%s); "
              "it is kept and read again at the next start",
              path, ceb_strerror(rc));
    return rc;
  }
  if (rename(path, done) != 0) {
    host->log(inst, CEB_LOG_ERROR,
              "moved %ld events of %s into the store but cannot rename it to "
              "%s; remove it by hand (a second move stores none twice)",
              n, path, done);
    return CEB_EIO;
  }
  host->log(inst, CEB_LOG_WARN,
            "moved %ld uncommitted events of the earlier queue file %s into "
            "the store (numbered anew: consumers fetch from cursor 0); the "
            "file is now %s",
            n, path, done);
  return CEB_OK;
}
