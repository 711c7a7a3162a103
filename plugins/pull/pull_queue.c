#include "pull_queue.h"

#include <ceb/status.h>
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct append_op {
  struct append_op *next;
  char *idem;
  char *json;
  pull_append_cb cb;
  void *arg;
} append_op;

struct pull_queue {
  sqlite3 *wdb; /* writer thread only */
  sqlite3 *rdb; /* readers, under rlock */
  pthread_mutex_t rlock;
  pthread_mutex_t lock; /* everything below */
  pthread_cond_t work;  /* writer: ops queued or stopping */
  pthread_cond_t data;  /* readers: new events or stopping */
  append_op *head, *tail;
  size_t queued;
  size_t max_events;
  int64_t stored;       /* rows in the table */
  int64_t last_seq;     /* highest sequence ever appended */
  int64_t committed;
  int stopping;
  pthread_t writer;
};

static int exec(sqlite3 *db, const char *sql) {
  return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static int64_t scalar(sqlite3 *db, const char *sql) {
  sqlite3_stmt *s;
  int64_t v = 0;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
    return 0;
  if (sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

static void op_free(append_op *op) {
  free(op->idem);
  free(op->json);
  free(op);
}

/* One batch: insert every op in a transaction, then report. */
static void write_batch(pull_queue *q, append_op *ops) {
  int st = CEB_OK;
  int64_t added = 0;
  sqlite3_stmt *ins = NULL;
  if (exec(q->wdb, "BEGIN IMMEDIATE") != 0 ||
      sqlite3_prepare_v2(q->wdb,
                         "INSERT OR IGNORE INTO events(idem, event, "
                         "enqueued_at) VALUES (?, ?, ?)",
                         -1, &ins, NULL) != SQLITE_OK)
    st = CEB_EIO;
  for (append_op *op = ops; op && st == CEB_OK; op = op->next) {
    sqlite3_bind_text(ins, 1, op->idem, -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, 2, op->json, -1, SQLITE_STATIC);
    sqlite3_bind_int64(ins, 3, (sqlite3_int64)time(NULL));
    if (sqlite3_step(ins) != SQLITE_DONE)
      st = CEB_EIO;
    else
      added += sqlite3_changes(q->wdb);
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  if (st == CEB_OK && exec(q->wdb, "COMMIT") != 0)
    st = CEB_EIO;
  if (st != CEB_OK)
    exec(q->wdb, "ROLLBACK");
  int64_t last = st == CEB_OK ? scalar(q->wdb, "SELECT max(seq) FROM events")
                              : 0;
  pthread_mutex_lock(&q->lock);
  if (st == CEB_OK) {
    q->stored += added;
    if (last > q->last_seq)
      q->last_seq = last;
    pthread_cond_broadcast(&q->data);
  }
  pthread_mutex_unlock(&q->lock);
  for (append_op *op = ops, *n; op; op = n) {
    n = op->next;
    op->cb(op->arg, st);
    op_free(op);
  }
}

static void *writer_main(void *arg) {
  pull_queue *q = arg;
  pthread_mutex_lock(&q->lock);
  for (;;) {
    while (!q->head && !q->stopping)
      pthread_cond_wait(&q->work, &q->lock);
    if (!q->head)
      break;
    append_op *ops = q->head;
    q->head = q->tail = NULL;
    q->queued = 0;
    pthread_mutex_unlock(&q->lock);
    write_batch(q, ops);
    pthread_mutex_lock(&q->lock);
  }
  pthread_mutex_unlock(&q->lock);
  return NULL;
}

static sqlite3 *open_db(const char *path, char *err, size_t errlen) {
  sqlite3 *db;
  if (sqlite3_open_v2(path, &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                          SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    snprintf(err, errlen, "cannot open %s: %s", path, sqlite3_errmsg(db));
    sqlite3_close(db);
    return NULL;
  }
  sqlite3_busy_timeout(db, 5000);
  if (exec(db, "PRAGMA journal_mode=WAL") != 0 ||
      exec(db, "PRAGMA synchronous=FULL") != 0) {
    snprintf(err, errlen, "cannot set WAL on %s: %s", path, sqlite3_errmsg(db));
    sqlite3_close(db);
    return NULL;
  }
  return db;
}

pull_queue *pull_queue_open(const char *path, size_t max_events, char *err,
                            size_t errlen) {
  pull_queue *q = calloc(1, sizeof *q);
  if (!q) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  q->max_events = max_events;
  if (!(q->wdb = open_db(path, err, errlen)) ||
      exec(q->wdb, "CREATE TABLE IF NOT EXISTS events(seq INTEGER PRIMARY KEY "
                   "AUTOINCREMENT, idem TEXT UNIQUE, event TEXT NOT NULL, "
                   "enqueued_at INTEGER NOT NULL);"
                   "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, "
                   "v INTEGER NOT NULL);") != 0 ||
      !(q->rdb = open_db(path, err, errlen))) {
    if (q->wdb && !err[0])
      snprintf(err, errlen, "cannot create tables: %s",
               sqlite3_errmsg(q->wdb));
    sqlite3_close(q->wdb);
    free(q);
    return NULL;
  }
  q->stored = scalar(q->wdb, "SELECT count(*) FROM events");
  q->committed = scalar(q->wdb, "SELECT v FROM meta WHERE k='committed'");
  /* AUTOINCREMENT keeps sequences increasing even after deletes. */
  int64_t s = scalar(q->wdb, "SELECT seq FROM sqlite_sequence WHERE "
                             "name='events'");
  q->last_seq = s > q->committed ? s : q->committed;
  pthread_mutex_init(&q->lock, NULL);
  pthread_mutex_init(&q->rlock, NULL);
  pthread_cond_init(&q->work, NULL);
  pthread_cond_init(&q->data, NULL);
  if (pthread_create(&q->writer, NULL, writer_main, q) != 0) {
    snprintf(err, errlen, "cannot start the writer thread");
    sqlite3_close(q->wdb);
    sqlite3_close(q->rdb);
    free(q);
    return NULL;
  }
  pthread_setname_np(q->writer, "pull-writer");
  return q;
}

void pull_queue_close(pull_queue *q) {
  if (!q)
    return;
  pthread_mutex_lock(&q->lock);
  q->stopping = 1;
  pthread_cond_broadcast(&q->work);
  pthread_cond_broadcast(&q->data);
  pthread_mutex_unlock(&q->lock);
  pthread_join(q->writer, NULL);
  sqlite3_close(q->wdb);
  sqlite3_close(q->rdb);
  pthread_cond_destroy(&q->work);
  pthread_cond_destroy(&q->data);
  pthread_mutex_destroy(&q->lock);
  pthread_mutex_destroy(&q->rlock);
  free(q);
}

int pull_queue_append(pull_queue *q, const char *idem_key,
                      const char *event_json, pull_append_cb cb, void *arg) {
  append_op *op = calloc(1, sizeof *op);
  if (!op || !(op->idem = strdup(idem_key)) ||
      !(op->json = strdup(event_json))) {
    if (op)
      op_free(op);
    return CEB_ENOMEM;
  }
  op->cb = cb;
  op->arg = arg;
  pthread_mutex_lock(&q->lock);
  int st = CEB_OK;
  if (q->stopping)
    st = CEB_ESHUTDOWN;
  else if ((size_t)q->stored + q->queued >= q->max_events)
    st = CEB_EBUSY;
  if (st == CEB_OK) {
    if (q->tail)
      q->tail->next = op;
    else
      q->head = op;
    q->tail = op;
    q->queued++;
    pthread_cond_signal(&q->work);
  }
  pthread_mutex_unlock(&q->lock);
  if (st != CEB_OK)
    op_free(op);
  return st;
}

static void deadline_after(struct timespec *ts, int64_t ms) {
  clock_gettime(CLOCK_REALTIME, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (ms % 1000) * 1000000;
  if (ts->tv_nsec >= 1000000000) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000;
  }
}

json_t *pull_queue_read(pull_queue *q, int64_t after, size_t max,
                        int64_t wait_ms, int64_t *last) {
  pthread_mutex_lock(&q->lock);
  if (after < q->committed)
    after = q->committed;
  if (wait_ms > 0 && q->last_seq <= after && !q->stopping) {
    struct timespec dl;
    deadline_after(&dl, wait_ms);
    while (q->last_seq <= after && !q->stopping)
      if (pthread_cond_timedwait(&q->data, &q->lock, &dl) == ETIMEDOUT)
        break;
  }
  pthread_mutex_unlock(&q->lock);
  *last = after;
  json_t *arr = json_array();
  pthread_mutex_lock(&q->rlock);
  sqlite3_stmt *s;
  if (sqlite3_prepare_v2(q->rdb,
                         "SELECT seq, event FROM events WHERE seq > ? "
                         "ORDER BY seq LIMIT ?",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, after);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)max);
    while (sqlite3_step(s) == SQLITE_ROW) {
      const char *text = (const char *)sqlite3_column_text(s, 1);
      json_t *ev = text ? json_loads(text, 0, NULL) : NULL;
      if (ev)
        json_array_append_new(arr, ev);
      *last = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
  }
  pthread_mutex_unlock(&q->rlock);
  return arr;
}

int pull_queue_commit(pull_queue *q, int64_t cursor, int64_t *committed) {
  pthread_mutex_lock(&q->lock);
  int64_t last = q->last_seq, prev = q->committed;
  pthread_mutex_unlock(&q->lock);
  if (cursor > last || cursor < 0)
    return CEB_EINVAL;
  if (cursor <= prev) {
    *committed = prev;
    return CEB_OK;
  }
  /* The write goes through the read connection under its own lock: the
   * writer thread's connection is private to it, and SQLite serialises the
   * two writers with busy_timeout. */
  pthread_mutex_lock(&q->rlock);
  char sql[160];
  int ok = exec(q->rdb, "BEGIN IMMEDIATE") == 0;
  int64_t deleted = 0;
  if (ok) {
    snprintf(sql, sizeof sql, "DELETE FROM events WHERE seq <= %lld",
             (long long)cursor);
    ok = exec(q->rdb, sql) == 0;
    deleted = ok ? sqlite3_changes(q->rdb) : 0;
  }
  if (ok) {
    snprintf(sql, sizeof sql,
             "INSERT INTO meta(k, v) VALUES('committed', %lld) ON CONFLICT(k) "
             "DO UPDATE SET v = max(v, excluded.v)",
             (long long)cursor);
    ok = exec(q->rdb, sql) == 0 && exec(q->rdb, "COMMIT") == 0;
  }
  if (!ok)
    exec(q->rdb, "ROLLBACK");
  pthread_mutex_unlock(&q->rlock);
  if (!ok)
    return CEB_EIO;
  pthread_mutex_lock(&q->lock);
  if (cursor > q->committed)
    q->committed = cursor;
  q->stored -= deleted;
  *committed = q->committed;
  pthread_mutex_unlock(&q->lock);
  return CEB_OK;
}

int64_t pull_queue_depth(pull_queue *q) {
  pthread_mutex_lock(&q->lock);
  int64_t d = q->stored;
  pthread_mutex_unlock(&q->lock);
  return d;
}

void pull_queue_wake_all(pull_queue *q) {
  pthread_mutex_lock(&q->lock);
  q->stopping = 1;
  pthread_cond_broadcast(&q->data);
  pthread_mutex_unlock(&q->lock);
}
