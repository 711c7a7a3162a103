/* The archive: replay by time range (ceb_store_replay_range). Settled
 * journal rows stay for [bridge] retention (store_sweep.c); a replay
 * journals a copy of each matching event with a new seq, so that the new
 * delivery queues behind every open one of its order key, exactly as if it
 * had been received now. */
#include <stdlib.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

/* Only events as received (replay_of IS NULL): a copy is not offered
 * again by a later range, so one window replayed twice gives each event
 * twice. No index on received_at: every ingest would write one more index
 * page for an operator's occasional command; the scan reads the route's
 * delivery rows once. */
static const char SQL_MATCH[] =
    "SELECT j.seq, d.order_key FROM delivery d CROSS JOIN journal j"
    " WHERE d.route = ?1 AND d.state >= 3 AND j.seq = d.seq"
    " AND j.received_at >= ?2 AND j.received_at < ?3"
    " AND j.replay_of IS NULL"
    " AND (?4 IS NULL OR j.type = ?4 OR (substr(?4, -1) = '*' AND"
    "  substr(j.type, 1, length(?4) - 1) = substr(?4, 1, length(?4) - 1)))"
    " ORDER BY j.seq";
static const char SQL_COPY[] =
    "INSERT INTO journal (client, source, id, type, received_at, event, size,"
    " unrouted, idh, replay_of) SELECT client, source, id, type, ?2, event,"
    " size, 0, idh, seq FROM journal WHERE seq = ?1 RETURNING seq, idh";
static const char SQL_SETTLE[] =
    "INSERT INTO journal_settle (seq, open_routes, settled_at, idh)"
    " VALUES (?1, 1, NULL, ?2)";
static const char SQL_DELIVERY[] =
    "INSERT INTO delivery (seq, route, state, next_at, order_key)"
    " VALUES (?1, ?2, 0, ?3, ?4)";

typedef struct replay_args {
  const ceb_replay_filter *f;
  int64_t now;
  int dry_run;
  size_t count;
  int exists;
} replay_args;

typedef struct match {
  int64_t seq;
  char *key;
} match;

static void matches_free(match *m, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(m[i].key);
  free(m);
}

/* Collects the matching rows first: rows are never inserted into the
 * journal under a running SELECT of it. */
static int collect(sqlite3 *db, const replay_args *a, match **out, size_t *n) {
  sqlite3_stmt *s = cebs_prepare(db, SQL_MATCH);
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, a->f->route, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, a->f->since);
  sqlite3_bind_int64(s, 3, a->f->until);
  cebs_bind_text(s, 4, a->f->type);
  size_t cap = 0;
  int rc = CEB_OK, step;
  while ((step = sqlite3_step(s)) == SQLITE_ROW) {
    if (*n == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      match *g = realloc(*out, ncap * sizeof *g);
      if (!g) {
        rc = CEB_ENOMEM;
        break;
      }
      *out = g;
      cap = ncap;
    }
    (*out)[*n].seq = sqlite3_column_int64(s, 0);
    (*out)[*n].key = cebs_col_dup(s, 1);
    (*n)++;
  }
  if (rc == CEB_OK && step != SQLITE_DONE) {
    ceb_log_error("store: replay: %s", sqlite3_errmsg(db));
    rc = CEB_EIO;
  }
  sqlite3_finalize(s);
  return rc;
}

static int route_exists(sqlite3 *db, const char *route, int *exists) {
  sqlite3_stmt *s =
      cebs_prepare(db, "SELECT 1 FROM delivery WHERE route = ?1 LIMIT 1");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, route, -1, SQLITE_STATIC);
  int step = sqlite3_step(s);
  *exists = step == SQLITE_ROW;
  sqlite3_finalize(s);
  return step == SQLITE_ROW || step == SQLITE_DONE ? CEB_OK : CEB_EIO;
}

/* One copy: journal row, its settle row, the pending delivery and its
 * place in the claimable set; the dedupe map learns the copy's seq (it
 * carries the same id, and may outlive the original). */
static int copy_one(sqlite3 *db, const replay_args *a, const match *m,
                    sqlite3_stmt *c, sqlite3_stmt *t, sqlite3_stmt *d) {
  sqlite3_reset(c);
  sqlite3_bind_int64(c, 1, m->seq);
  sqlite3_bind_int64(c, 2, a->now);
  if (sqlite3_step(c) != SQLITE_ROW) return CEB_EIO;
  int64_t seq = sqlite3_column_int64(c, 0), idh = sqlite3_column_int64(c, 1);
  if (sqlite3_step(c) != SQLITE_DONE) return CEB_EIO;
  sqlite3_reset(t);
  sqlite3_bind_int64(t, 1, seq);
  sqlite3_bind_int64(t, 2, idh);
  if (sqlite3_step(t) != SQLITE_DONE) return CEB_EIO;
  sqlite3_reset(d);
  sqlite3_bind_int64(d, 1, seq);
  sqlite3_bind_text(d, 2, a->f->route, -1, SQLITE_STATIC);
  sqlite3_bind_int64(d, 3, a->now);
  cebs_bind_text(d, 4, m->key);
  if (sqlite3_step(d) != SQLITE_DONE) return CEB_EIO;
  int rc = cebs_ready_added(db, a->f->route, seq, a->now, m->key);
  if (rc != CEB_OK) return rc;
  cebs_store *st = cebs_committer_store();
  return st ? cebs_idmap_add(&st->ids, idh, seq) : CEB_OK;
}

static int replay_run(sqlite3 *db, void *arg) {
  replay_args *a = arg;
  a->count = 0;
  int rc = route_exists(db, a->f->route, &a->exists);
  match *m = NULL;
  size_t n = 0;
  if (rc == CEB_OK && a->exists) rc = collect(db, a, &m, &n);
  if (rc != CEB_OK || a->dry_run || n == 0) {
    if (rc == CEB_OK) a->count = n;
    matches_free(m, n);
    return rc;
  }
  sqlite3_stmt *c = cebs_prepare(db, SQL_COPY);
  sqlite3_stmt *t = cebs_prepare(db, SQL_SETTLE);
  sqlite3_stmt *d = cebs_prepare(db, SQL_DELIVERY);
  rc = c && t && d ? CEB_OK : CEB_EIO;
  for (size_t i = 0; rc == CEB_OK && i < n; i++) {
    rc = copy_one(db, a, &m[i], c, t, d);
    if (rc == CEB_EIO) ceb_log_error("store: replay: %s", sqlite3_errmsg(db));
  }
  if (rc == CEB_OK) a->count = n;
  sqlite3_finalize(c);
  sqlite3_finalize(t);
  sqlite3_finalize(d);
  matches_free(m, n);
  return rc;
}

int cebs_replay_range(cebs_store *st, const ceb_replay_filter *f, int64_t now,
                      int dry_run, size_t *count, int *exists) {
  replay_args a = {.f = f, .now = now, .dry_run = dry_run};
  int rc = cebs_call(st, replay_run, &a);
  if (count) *count = rc == CEB_OK ? a.count : 0;
  if (exists) *exists = rc == CEB_OK ? a.exists : 0;
  return rc;
}
