/* The claimable set (delivery_ready, schema 3): a delivery is in it iff it
 * is unsettled (pending, retrying, or in progress: schema 12) and, when it
 * has an order key, no older delivery of its (route, key) is unsettled; at
 * its delivery.next_at, which is the due time, or the lease end while in
 * progress. So one range read finds both what is due and the claims whose
 * lease ended, and the earliest next_at is the next wake-up either way.
 * The claim reads only this set; the writers below keep it in the
 * transaction that changes a delivery.
 *
 * Kept by code, not triggers: a trigger that writes makes every INSERT and
 * UPDATE of delivery open a statement journal, which copied each touched
 * page and cost more than the claim it saved (bench/README.md). */
#include <stdlib.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

static const char SQL_OLDER_OPEN[] =
    "SELECT 1 FROM delivery WHERE route = ?1 AND order_key = ?2"
    " AND state < 3 AND seq < ?3";
static const char SQL_INSERT[] =
    "INSERT OR IGNORE INTO delivery_ready (route, seq, next_at, order_key)"
    " VALUES (?1, ?2, ?3, ?4)";
static const char SQL_ROW[] = "SELECT order_key, state, next_at FROM delivery"
                              " WHERE seq = ?1 AND route = ?2";
static const char SQL_DEL_ROW[] =
    "DELETE FROM delivery_ready WHERE route = ?1 AND seq = ?2";
static const char SQL_LEASE[] =
    "UPDATE delivery_ready SET next_at = ?3 WHERE route = ?1 AND seq = ?2";
static const char SQL_DEL_KEY[] =
    "DELETE FROM delivery_ready WHERE route = ?1 AND order_key = ?2";
/* The key's entry: a row in progress first (one delivery of a key at a
 * time: an older row replayed from the DLQ waits until it settles; its
 * entry keeps the lease end), else the oldest unsettled row. Two indexed
 * steps rather than one query ordering the key's unsettled rows by state:
 * that read the delivery row of every unsettled row of the key (the index
 * has no state) at every settle, so a backlog of n rows per key cost n
 * lookups per delivery (16 % of the bridge's CPU in Kafka -> HTTP with 60
 * rows per key). A row in progress is always its key's entry in
 * delivery_ready (a claim takes its row from there and keeps the entry,
 * with the lease end, until the settle; this function keeps it first), so
 * the key's entries tell, before they are deleted. */
static const char SQL_KEY_CLAIMED[] =
    "SELECT MIN(d.seq), d.next_at FROM delivery_ready r CROSS JOIN delivery d"
    " WHERE r.route = ?1 AND r.order_key = ?2 AND d.seq = r.seq"
    " AND d.route = r.route AND d.state = 1";
static const char SQL_KEY_OLDEST[] =
    "SELECT seq, state, next_at FROM delivery WHERE route = ?1"
    " AND order_key = ?2 AND state < 3 ORDER BY seq LIMIT 1";

static int step_done(sqlite3 *db, sqlite3_stmt *s, const char *what) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc == SQLITE_DONE) return CEB_OK;
  ceb_log_error("store: ready %s: %s", what, sqlite3_errmsg(db));
  return CEB_EIO;
}

static int insert(sqlite3 *db, const char *route, int64_t seq, int64_t next_at,
                  const char *key) {
  sqlite3_stmt *s = cebs_stmt(db, SQL_INSERT);
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, route, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, seq);
  sqlite3_bind_int64(s, 3, next_at);
  cebs_bind_text(s, 4, key);
  int rc = step_done(db, s, "insert");
  sqlite3_clear_bindings(s);
  return rc;
}

int cebs_ready_is_head(sqlite3 *db, const char *route, int64_t seq,
                       const char *key, int *head) {
  *head = 1;
  if (!key) return CEB_OK;
  sqlite3_stmt *s = cebs_stmt(db, SQL_OLDER_OPEN);
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, route, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, seq);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (rc == SQLITE_ROW) *head = 0; /* queued behind an older one */
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    ceb_log_error("store: ready lookup: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  return CEB_OK;
}

int cebs_ready_insert(sqlite3 *db, const char *route, int64_t seq,
                      int64_t next_at, const char *key) {
  return insert(db, route, seq, next_at, key);
}

int cebs_ready_added(sqlite3 *db, const char *route, int64_t seq,
                     int64_t next_at, const char *key) {
  int head = 0;
  int rc = cebs_ready_is_head(db, route, seq, key, &head);
  if (rc != CEB_OK || !head) return rc;
  return insert(db, route, seq, next_at, key);
}

int cebs_ready_leased(sqlite3 *db, const char *route, int64_t seq,
                      int64_t lease_until) {
  sqlite3_stmt *s = cebs_stmt(db, SQL_LEASE);
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, route, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, seq);
  sqlite3_bind_int64(s, 3, lease_until);
  int rc = step_done(db, s, "lease");
  sqlite3_clear_bindings(s);
  return rc;
}

int cebs_ready_taken(sqlite3 *db, const char *route, int64_t seq) {
  sqlite3_stmt *s = cebs_stmt(db, SQL_DEL_ROW);
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, route, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, seq);
  int rc = step_done(db, s, "delete");
  sqlite3_clear_bindings(s);
  return rc;
}

/* The key's row in progress into *seq, *next_at (*state
 * CEB_DS_INFLIGHT), if it has one. */
static int key_claimed(sqlite3 *db, const char *route, const char *key,
                       int64_t *seq, int *state, int64_t *next_at) {
  sqlite3_stmt *c = cebs_stmt(db, SQL_KEY_CLAIMED);
  if (!c) return CEB_EIO;
  sqlite3_bind_text(c, 1, route, -1, SQLITE_STATIC);
  sqlite3_bind_text(c, 2, key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(c);
  /* an aggregate: one row, NULL when the key has no row in progress
   * (MIN's row gives next_at, SQLite's bare-column rule) */
  if (rc == SQLITE_ROW && sqlite3_column_type(c, 0) != SQLITE_NULL) {
    *seq = sqlite3_column_int64(c, 0);
    *state = CEB_DS_INFLIGHT;
    *next_at = sqlite3_column_int64(c, 1);
  }
  sqlite3_reset(c);
  sqlite3_clear_bindings(c);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    ceb_log_error("store: ready claimed: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  return CEB_OK;
}

/* The key's oldest unsettled row into *seq, *state, *next_at, if any. */
static int key_oldest(sqlite3 *db, const char *route, const char *key,
                      int64_t *seq, int *state, int64_t *next_at) {
  sqlite3_stmt *h = cebs_stmt(db, SQL_KEY_OLDEST);
  if (!h) return CEB_EIO;
  sqlite3_bind_text(h, 1, route, -1, SQLITE_STATIC);
  sqlite3_bind_text(h, 2, key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(h);
  if (rc == SQLITE_ROW) {
    *seq = sqlite3_column_int64(h, 0);
    *state = sqlite3_column_int(h, 1);
    *next_at = sqlite3_column_int64(h, 2);
  }
  sqlite3_reset(h);
  sqlite3_clear_bindings(h);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    ceb_log_error("store: ready head: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  return CEB_OK;
}

/* Reads the key's entry into *seq, *state, *next_at (state -1: none).
 * none_claimed: the caller knows no row of the key is in progress (it just
 * settled the one that was). */
static int key_head(sqlite3 *db, const char *route, const char *key,
                    int none_claimed, int64_t *seq, int *state,
                    int64_t *next_at) {
  *state = -1;
  if (!none_claimed) {
    int rc = key_claimed(db, route, key, seq, state, next_at);
    if (rc != CEB_OK || *state >= 0) return rc;
  }
  return key_oldest(db, route, key, seq, state, next_at);
}

/* Recomputes a key's entry: the row in progress, else its oldest
 * unsettled row (key_head). */
static int refresh_key(sqlite3 *db, const char *route, const char *key,
                       int none_claimed) {
  int64_t seq = 0, next_at = 0;
  int state = -1;
  int rc = key_head(db, route, key, none_claimed, &seq, &state, &next_at);
  if (rc != CEB_OK) return rc;
  sqlite3_stmt *d = cebs_stmt(db, SQL_DEL_KEY);
  if (!d) return CEB_EIO;
  sqlite3_bind_text(d, 1, route, -1, SQLITE_STATIC);
  sqlite3_bind_text(d, 2, key, -1, SQLITE_STATIC);
  rc = step_done(db, d, "delete key");
  sqlite3_clear_bindings(d);
  if (rc != CEB_OK) return rc;
  if (state >= 0 && state < CEB_DS_DONE)
    return insert(db, route, seq, next_at, key);
  return CEB_OK;
}

static int changed(sqlite3 *db, const char *route, int64_t seq,
                   int none_claimed) {
  sqlite3_stmt *s = cebs_stmt(db, SQL_ROW);
  if (!s) return CEB_EIO;
  sqlite3_bind_int64(s, 1, seq);
  sqlite3_bind_text(s, 2, route, -1, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  if (rc != SQLITE_ROW) {
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    if (rc == SQLITE_DONE) return cebs_ready_taken(db, route, seq);
    ceb_log_error("store: ready row: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  char *key = cebs_col_dup(s, 0);
  int state = sqlite3_column_int(s, 1);
  int64_t next_at = sqlite3_column_int64(s, 2);
  int has_key = sqlite3_column_type(s, 0) != SQLITE_NULL;
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  if (has_key && !key) return CEB_ENOMEM;
  if (has_key) {
    rc = refresh_key(db, route, key, none_claimed);
    free(key);
    return rc;
  }
  rc = cebs_ready_taken(db, route, seq);
  if (rc == CEB_OK && state < CEB_DS_DONE)
    rc = insert(db, route, seq, next_at, NULL);
  return rc;
}

int cebs_ready_changed(sqlite3 *db, const char *route, int64_t seq) {
  return changed(db, route, seq, 0);
}

int cebs_ready_settled(sqlite3 *db, const char *route, int64_t seq) {
  return changed(db, route, seq, 1);
}
