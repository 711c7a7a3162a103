/* The store DLQ: list, show, replay and purge dead letters. Every dead
 * letter has a row here, also when it was forwarded to a topic, so the
 * operations work alike for store and topic DLQs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

/* Parameters ?1..?6 and ?8 are always bound (NULL when unused) so that one
 * SQL text serves every filter combination; ?7 is the callers' LIMIT. */
void cebs_dlq_where(char *sql, size_t size, const ceb_dlq_filter *f) {
  (void)f;
  size_t n = strlen(sql);
  snprintf(sql + n, size - n,
           " WHERE (?1 IS NULL OR route = ?1)"
           " AND (?2 IS NULL OR type = ?2 OR (substr(?2, -1) = '*' AND"
           "  substr(type, 1, length(?2) - 1) = substr(?2, 1, length(?2) - 1)))"
           " AND (?3 IS NULL OR source = ?3)"
           " AND (?4 IS NULL OR reason = ?4)"
           " AND (?5 IS NULL OR created_at >= ?5)"
           " AND (?6 IS NULL OR id = ?6)"
           " AND (?8 IS NULL OR created_at < ?8)");
}

void cebs_dlq_bind(sqlite3_stmt *s, int first, const ceb_dlq_filter *f) {
  cebs_bind_text(s, first, f ? f->route : NULL);
  cebs_bind_text(s, first + 1, f ? f->type : NULL);
  cebs_bind_text(s, first + 2, f ? f->source : NULL);
  cebs_bind_text(s, first + 3, f ? f->reason : NULL);
  if (f && f->since > 0)
    sqlite3_bind_int64(s, first + 4, f->since);
  else
    sqlite3_bind_null(s, first + 4);
  if (f && f->id > 0)
    sqlite3_bind_int64(s, first + 5, f->id);
  else
    sqlite3_bind_null(s, first + 5);
  if (f && f->until > 0)
    sqlite3_bind_int64(s, first + 7, f->until);
  else
    sqlite3_bind_null(s, first + 7);
}

#define DLQ_COLS                                                               \
  "id, seq, route, sink, reason, last_reason, status, attempts, first_at,"     \
  " last_at, created_at, error, event_id, source, type, replayed_at,"          \
  " replays, forwarded_at"

static json_t *dlq_row(sqlite3_stmt *s) {
  json_t *o = json_object();
  for (int i = 0; i < CEB_DLQ_ROW_MEMBERS; i++)
    cebs_json_col(o, ceb_dlq_row_names[i], s, i);
  return o;
}

json_t *cebs_dlq_list(cebs_store *st, const ceb_dlq_filter *f) {
  char sql[1024] = "SELECT " DLQ_COLS " FROM dlq";
  cebs_dlq_where(sql, sizeof sql, f);
  strncat(sql, " ORDER BY id DESC LIMIT ?7", sizeof sql - strlen(sql) - 1);
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  json_t *arr = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK) {
    cebs_dlq_bind(s, 1, f);
    sqlite3_bind_int64(s, 7, f && f->limit ? (sqlite3_int64)f->limit : 100);
    arr = json_array();
    while (sqlite3_step(s) == SQLITE_ROW)
      json_array_append_new(arr, dlq_row(s));
  } else {
    ceb_log_error("store: dlq list: %s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return arr;
}

json_t *cebs_dlq_of_seq(cebs_store *st, int64_t seq, size_t max) {
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  json_t *arr = NULL;
  /* the newest max (LIMIT -1: all), read back oldest first */
  if (sqlite3_prepare_v2(db,
                         "SELECT " DLQ_COLS " FROM (SELECT * FROM dlq"
                         " WHERE seq = ?1 ORDER BY id DESC LIMIT ?2)"
                         " ORDER BY id",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, seq);
    sqlite3_bind_int64(s, 2, max ? (sqlite3_int64)max : -1);
    arr = json_array();
    while (sqlite3_step(s) == SQLITE_ROW)
      json_array_append_new(arr, dlq_row(s));
  } else {
    ceb_log_error("store: dlq of seq: %s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return arr;
}

json_t *cebs_dlq_show(cebs_store *st, int64_t id) {
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  json_t *o = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT " DLQ_COLS ", event FROM dlq WHERE id = ?1",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, id);
    if (sqlite3_step(s) == SQLITE_ROW) {
      o = dlq_row(s);
      const char *ev = (const char *)sqlite3_column_text(s, 18);
      json_t *e = ev ? json_loads(ev, 0, NULL) : NULL;
      json_object_set_new(o, "event", e ? e : json_null());
    }
  }
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return o;
}

/* ---- replay ---- */

typedef struct replay_args {
  const ceb_dlq_filter *f;
  int64_t now;
  int dry_run;
  size_t count;
  json_t *replayed;
} replay_args;

/* Only rows whose delivery is still dead (and still points at this DLQ
 * row) are replayed: replaying twice never duplicates a pending delivery. */
static int replay_run(sqlite3 *db, void *arg) {
  replay_args *a = arg;
  char sql[1200] = "SELECT id, seq, route FROM (SELECT * FROM dlq";
  cebs_dlq_where(sql, sizeof sql, a->f);
  strncat(sql,
          ") q WHERE EXISTS (SELECT 1 FROM delivery d WHERE d.seq = q.seq"
          " AND d.route = q.route AND d.state = 4 AND d.dlq_id = q.id)"
          " ORDER BY id LIMIT ?7",
          sizeof sql - strlen(sql) - 1);
  sqlite3_stmt *s = NULL, *d = NULL, *j = NULL, *q = NULL;
  int rc = CEB_OK;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(
          db,
          "UPDATE delivery SET state = 0, attempts = 0,"
          " next_at = ?3, first_at = NULL, last_at = NULL,"
          " replays = replays + 1 WHERE seq = ?1 AND route = ?2 AND state = 4",
          -1, &d, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(
          db,
          "UPDATE journal_settle SET open_routes = open_routes + 1,"
          " settled_at = NULL WHERE seq = ?1",
          -1, &j, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "UPDATE dlq SET replayed_at = ?2, replays ="
                         " replays + 1 WHERE id = ?1",
                         -1, &q, NULL) != SQLITE_OK) {
    ceb_log_error("store: dlq replay: %s", sqlite3_errmsg(db));
    rc = CEB_EIO;
    goto out;
  }
  cebs_dlq_bind(s, 1, a->f);
  sqlite3_bind_int64(
      s, 7, a->f && a->f->limit ? (sqlite3_int64)a->f->limit : INT64_MAX);
  /* Collect first, then update: never modify rows under a running SELECT. */
  json_t *rows = json_array();
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    json_array_append_new(
        rows, json_pack("{sI sI ss}", "dlq_id",
                        (json_int_t)sqlite3_column_int64(s, 0), "seq",
                        (json_int_t)sqlite3_column_int64(s, 1), "route",
                        (const char *)sqlite3_column_text(s, 2)));
  if (rc != SQLITE_DONE) {
    json_decref(rows);
    rc = CEB_EIO;
    goto out;
  }
  rc = CEB_OK;
  size_t i;
  json_t *row;
  json_array_foreach(rows, i, row) {
    int64_t id = json_integer_value(json_object_get(row, "dlq_id"));
    int64_t seq = json_integer_value(json_object_get(row, "seq"));
    const char *route = json_string_value(json_object_get(row, "route"));
    a->count++;
    if (a->replayed) json_array_append(a->replayed, row);
    if (a->dry_run) continue;
    sqlite3_reset(d);
    sqlite3_bind_int64(d, 1, seq);
    sqlite3_bind_text(d, 2, route, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(d, 3, a->now);
    sqlite3_reset(j);
    sqlite3_bind_int64(j, 1, seq);
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, a->now);
    if (sqlite3_step(d) != SQLITE_DONE || sqlite3_step(j) != SQLITE_DONE ||
        sqlite3_step(q) != SQLITE_DONE) {
      ceb_log_error("store: dlq replay: %s", sqlite3_errmsg(db));
      rc = CEB_EIO;
      break;
    }
    /* pending again: claimable, or the new head of its key */
    rc = cebs_ready_changed(db, route, seq);
    if (rc != CEB_OK) break;
  }
  json_decref(rows);
out:
  sqlite3_finalize(s);
  sqlite3_finalize(d);
  sqlite3_finalize(j);
  sqlite3_finalize(q);
  return rc;
}

int cebs_dlq_replay(cebs_store *st, const ceb_dlq_filter *f, int64_t now,
                    int dry_run, size_t *count, json_t *replayed) {
  replay_args a = {
      .f = f, .now = now, .dry_run = dry_run, .replayed = replayed};
  int rc = cebs_call(st, replay_run, &a);
  if (count) *count = rc == CEB_OK ? a.count : 0;
  return rc;
}

/* ---- purge ---- */

typedef struct purge_args {
  const ceb_dlq_filter *f;
  int dry_run;
  size_t count;
} purge_args;

static int purge_run(sqlite3 *db, void *arg) {
  purge_args *a = arg;
  char sql[1024];
  snprintf(sql, sizeof sql, "%s FROM dlq",
           a->dry_run ? "SELECT COUNT(*)" : "DELETE");
  cebs_dlq_where(sql, sizeof sql, a->f);
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
    ceb_log_error("store: dlq purge: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  cebs_dlq_bind(s, 1, a->f);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW)
    a->count = (size_t)sqlite3_column_int64(s, 0);
  else if (rc == SQLITE_DONE)
    a->count = (size_t)sqlite3_changes(db);
  sqlite3_finalize(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? CEB_OK : CEB_EIO;
}

int cebs_dlq_purge(cebs_store *st, const ceb_dlq_filter *f, int dry_run,
                   size_t *count) {
  purge_args a = {.f = f, .dry_run = dry_run};
  int rc = cebs_call(st, purge_run, &a);
  if (count) *count = rc == CEB_OK ? a.count : 0;
  return rc;
}

int cebs_dlq_forwarded_run(sqlite3 *db, void *arg) {
  cebs_dlq_forward *a = arg;
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db, "UPDATE dlq SET forwarded_at = ?2 WHERE id = ?1",
                         -1, &s, NULL) != SQLITE_OK)
    return CEB_EIO;
  sqlite3_bind_int64(s, 1, a->id);
  sqlite3_bind_int64(s, 2, a->now);
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return CEB_EIO;
  return sqlite3_changes(db) ? CEB_OK : CEB_ENOTFOUND;
}

/* The op's own copy of (id, now), and the caller's done. */
typedef struct forwarded_op {
  cebs_dlq_forward f;
  ceb_store_done_fn done;
  void *arg;
} forwarded_op;

static int forwarded_run(sqlite3 *db, void *arg) {
  return cebs_dlq_forwarded_run(db, &((forwarded_op *)arg)->f);
}

static void forwarded_done(void *arg, int status) {
  forwarded_op *op = arg;
  if (op->done) op->done(op->arg, status);
  free(op);
}

int cebs_dlq_forwarded(cebs_store *st, int64_t id, int64_t now,
                       ceb_store_done_fn done, void *arg) {
  forwarded_op *op = malloc(sizeof *op);
  if (!op) return CEB_ENOMEM;
  *op = (forwarded_op){.f = {id, now}, .done = done, .arg = arg};
  int rc = cebs_submit(st, forwarded_run, forwarded_done, op, 0);
  if (rc != CEB_OK) free(op);
  return rc;
}

/* ---- forwarding to topic DLQs ---- */

int cebs_dlq_unforwarded(cebs_store *st, const char *route, int64_t after,
                         size_t max, int64_t *ids, size_t *n) {
  *n = 0;
  if (!route || !ids || !max) return CEB_EINVAL;
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  int rc = CEB_EIO;
  if (sqlite3_prepare_v2(db,
                         "SELECT id FROM dlq WHERE route = ?1 AND id > ?2 AND"
                         " forwarded_at IS NULL AND replayed_at IS NULL"
                         " ORDER BY id LIMIT ?3",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, route, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, after);
    sqlite3_bind_int64(s, 3, (sqlite3_int64)max);
    int step;
    while ((step = sqlite3_step(s)) == SQLITE_ROW && *n < max)
      ids[(*n)++] = sqlite3_column_int64(s, 0);
    rc = step == SQLITE_DONE || step == SQLITE_ROW ? CEB_OK : CEB_EIO;
  }
  if (rc != CEB_OK)
    ceb_log_error("store: dlq unforwarded: %s", sqlite3_errmsg(db));
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return rc;
}

char *cebs_dlq_forward_event(cebs_store *st, int64_t id, int *status) {
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  char *out = NULL;
  *status = CEB_EIO;
  if (sqlite3_prepare_v2(db,
                         "SELECT event FROM dlq WHERE id = ?1 AND"
                         " forwarded_at IS NULL AND replayed_at IS NULL",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, id);
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
      const char *ev = (const char *)sqlite3_column_text(s, 0);
      out = ev ? strdup(ev) : NULL;
      *status = out ? CEB_OK : CEB_ENOMEM;
    } else if (step == SQLITE_DONE) {
      *status = CEB_ENOTFOUND;
    }
  }
  if (*status == CEB_EIO)
    ceb_log_error("store: dlq forward event %lld: %s", (long long)id,
                  sqlite3_errmsg(db));
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return out;
}
