/* Pull queues in the store (cebs_store.h, "pull queues"): table pull_event
 * holds the events, pull_queue one row per queue with its last sequence,
 * committed cursor and depth, so an append finds its sequence and the
 * queue's fill in one row. Appends are ops of the committer: many appends
 * (from every route delivering to pull sinks) share one transaction and
 * one fsync, as ingests do. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ceb/status.h>

#include "store/sqlite/store_internal.h"

typedef struct pull_append_op {
  char *queue, *key, *json;
  size_t len, max;
  int64_t now;
  ceb_store_done_fn done;
  void *arg;
} pull_append_op;

static void append_free(pull_append_op *op) {
  free(op->queue);
  free(op->key);
  free(op->json);
  free(op);
}

static int append_run(sqlite3 *db, void *arg) {
  pull_append_op *op = arg;
  sqlite3_stmt *s = cebs_stmt(db, "SELECT 1 FROM pull_event WHERE queue = ?1"
                                  " AND idem = ?2");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, op->queue, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, op->key, -1, SQLITE_STATIC);
  int step = sqlite3_step(s);
  sqlite3_reset(s);
  if (step == SQLITE_ROW) return CEB_OK; /* held: durable already */
  if (step != SQLITE_DONE) return CEB_EIO;
  s = cebs_stmt(db, "SELECT last_seq, depth FROM pull_queue WHERE name = ?1");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, op->queue, -1, SQLITE_STATIC);
  int64_t last = 0, depth = 0;
  step = sqlite3_step(s);
  if (step == SQLITE_ROW) {
    last = sqlite3_column_int64(s, 0);
    depth = sqlite3_column_int64(s, 1);
  }
  sqlite3_reset(s);
  if (step != SQLITE_ROW && step != SQLITE_DONE) return CEB_EIO;
  if (depth >= 0 && (uint64_t)depth >= (uint64_t)op->max) return CEB_EBUSY;
  s = cebs_stmt(db, "INSERT INTO pull_event (queue, seq, idem, event,"
                    " enqueued_at) VALUES (?1, ?2, ?3, ?4, ?5)");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, op->queue, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, last + 1);
  sqlite3_bind_text(s, 3, op->key, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 4, op->json, (int)op->len, SQLITE_STATIC);
  sqlite3_bind_int64(s, 5, op->now);
  step = sqlite3_step(s);
  sqlite3_reset(s);
  if (step != SQLITE_DONE) return CEB_EIO;
  s = cebs_stmt(db, "INSERT INTO pull_queue (name, last_seq, committed, depth)"
                    " VALUES (?1, ?2, 0, 1) ON CONFLICT(name) DO UPDATE SET"
                    " last_seq = excluded.last_seq, depth = depth + 1");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, op->queue, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, last + 1);
  step = sqlite3_step(s);
  sqlite3_reset(s);
  return step == SQLITE_DONE ? CEB_OK : CEB_EIO;
}

static void append_done(void *arg, int status) {
  pull_append_op *op = arg;
  op->done(op->arg, status);
  append_free(op);
}

int cebs_pull_append(cebs_store *st, const char *queue, const char *key,
                     const char *json, size_t len, size_t max,
                     ceb_store_done_fn done, void *arg) {
  if (!st || !queue || !key || !json || !done || max < 1) return CEB_EINVAL;
  pull_append_op *op = calloc(1, sizeof *op);
  if (!op) return CEB_ENOMEM;
  op->queue = strdup(queue);
  op->key = strdup(key);
  op->json = malloc(len + 1);
  if (!op->queue || !op->key || !op->json) {
    append_free(op);
    return CEB_ENOMEM;
  }
  memcpy(op->json, json, len);
  op->json[len] = '\0';
  op->len = len;
  op->max = max;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  op->now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  op->done = done;
  op->arg = arg;
  /* synced: the sink acknowledges the delivery on done */
  int rc = cebs_submit(st, append_run, append_done, op, 0);
  if (rc != CEB_OK) append_free(op);
  return rc;
}

/* The queue's row; zeros when it has none. Read connection. */
static int queue_row(sqlite3 *db, const char *queue, int64_t *depth,
                     int64_t *last, int64_t *committed) {
  sqlite3_stmt *s = NULL;
  int64_t d = 0, l = 0, c = 0;
  if (sqlite3_prepare_v2(db,
                         "SELECT depth, last_seq, committed FROM pull_queue"
                         " WHERE name = ?1",
                         -1, &s, NULL) != SQLITE_OK)
    return CEB_EIO;
  sqlite3_bind_text(s, 1, queue, -1, SQLITE_STATIC);
  int step = sqlite3_step(s);
  if (step == SQLITE_ROW) {
    d = sqlite3_column_int64(s, 0);
    l = sqlite3_column_int64(s, 1);
    c = sqlite3_column_int64(s, 2);
  }
  sqlite3_finalize(s);
  if (step != SQLITE_ROW && step != SQLITE_DONE) return CEB_EIO;
  if (depth) *depth = d;
  if (last) *last = l;
  if (committed) *committed = c;
  return CEB_OK;
}

int cebs_pull_stats(cebs_store *st, const char *queue, int64_t *depth,
                    int64_t *last, int64_t *committed) {
  if (!st || !queue) return CEB_EINVAL;
  sqlite3 *db = cebs_read_begin(st);
  int rc = queue_row(db, queue, depth, last, committed);
  cebs_read_end(st, db);
  return rc;
}

int cebs_pull_fetch(cebs_store *st, const char *queue, int64_t after,
                    size_t max, ceb_store_pull_visit visit, void *arg,
                    int64_t *last) {
  if (!st || !queue || !visit || !last) return CEB_EINVAL;
  sqlite3 *db = cebs_read_begin(st);
  /* one read transaction: the cursor and the rows agree */
  int rc = cebs_exec(db, "BEGIN");
  int64_t committed = 0;
  if (rc == CEB_OK) rc = queue_row(db, queue, NULL, NULL, &committed);
  if (after < committed) after = committed;
  *last = after;
  sqlite3_stmt *s = NULL;
  if (rc == CEB_OK &&
      sqlite3_prepare_v2(db,
                         "SELECT seq, event FROM pull_event WHERE queue = ?1"
                         " AND seq > ?2 ORDER BY seq LIMIT ?3",
                         -1, &s, NULL) != SQLITE_OK)
    rc = CEB_EIO;
  if (rc == CEB_OK) {
    sqlite3_bind_text(s, 1, queue, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, after);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)max);
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
      int64_t seq = sqlite3_column_int64(s, 0);
      const char *json = (const char *)sqlite3_column_text(s, 1);
      size_t len = (size_t)sqlite3_column_bytes(s, 1);
      *last = seq;
      if (visit(arg, seq, json ? json : "", len)) break;
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE) rc = CEB_EIO;
  }
  sqlite3_finalize(s);
  cebs_exec(db, "COMMIT");
  cebs_read_end(st, db);
  return rc;
}

typedef struct pull_commit_args {
  const char *queue;
  int64_t cursor, committed;
} pull_commit_args;

static int commit_run(sqlite3 *db, void *arg) {
  pull_commit_args *a = arg;
  sqlite3_stmt *s = cebs_stmt(db, "SELECT last_seq, committed FROM pull_queue"
                                  " WHERE name = ?1");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, a->queue, -1, SQLITE_STATIC);
  int64_t last = 0, committed = 0;
  int step = sqlite3_step(s);
  if (step == SQLITE_ROW) {
    last = sqlite3_column_int64(s, 0);
    committed = sqlite3_column_int64(s, 1);
  }
  sqlite3_reset(s);
  if (step != SQLITE_ROW && step != SQLITE_DONE) return CEB_EIO;
  if (a->cursor > last) return CEB_EINVAL;
  a->committed = committed;
  if (a->cursor <= committed) return CEB_OK;
  s = cebs_stmt(db, "DELETE FROM pull_event WHERE queue = ?1 AND seq <= ?2");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, a->queue, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, a->cursor);
  step = sqlite3_step(s);
  sqlite3_reset(s);
  if (step != SQLITE_DONE) return CEB_EIO;
  int64_t gone = sqlite3_changes(db);
  s = cebs_stmt(db, "UPDATE pull_queue SET committed = ?2,"
                    " depth = max(depth - ?3, 0) WHERE name = ?1");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, a->queue, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, a->cursor);
  sqlite3_bind_int64(s, 3, gone);
  step = sqlite3_step(s);
  sqlite3_reset(s);
  if (step != SQLITE_DONE) return CEB_EIO;
  a->committed = a->cursor;
  return CEB_OK;
}

int cebs_pull_commit(cebs_store *st, const char *queue, int64_t cursor,
                     int64_t *committed) {
  if (!st || !queue || cursor < 0) return CEB_EINVAL;
  pull_commit_args a = {.queue = queue, .cursor = cursor};
  int rc = cebs_call(st, commit_run, &a);
  if (rc == CEB_OK && committed) *committed = a.committed;
  return rc;
}
