/* Delivery rows: claiming due work (FIFO per order key) under a lease,
 * recording attempt outcomes (fenced), crash recovery and the counts the
 * engine and status need. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

#define ERROR_MAX 512

/* A row is due when no older row of the same key on the route is unsettled:
 * that is what keeps FIFO per key across retries and restarts. Exactly
 * those rows (heads, and unordered rows) are kept in delivery_ready
 * (store_ready.c) at the time they become claimable, so the claim reads
 * only the rows it returns: pending or retrying ones that are due, and
 * ones in progress whose lease ended (their holder is taken to be gone;
 * a row in progress is its key's head, so taking it over keeps FIFO). */
static const char SQL_CLAIM_SELECT[] =
    "SELECT r.seq, d.attempts, d.order_key, j.event, j.received_at,"
    " d.first_at, d.replays, d.fence, d.state, j.replay_of"
    " FROM delivery_ready r"
    " CROSS JOIN delivery d CROSS JOIN journal j"
    " WHERE r.route = ?1 AND r.next_at <= ?2 AND d.seq = r.seq"
    " AND d.route = r.route AND j.seq = r.seq"
    " ORDER BY r.next_at, r.seq LIMIT ?3";
static const char SQL_OWNER_KEEP[] =
    "INSERT OR IGNORE INTO lease_owner (id, instance) VALUES (?1, ?2)";
/* In progress, next_at is the lease end (schema 12 says why). */
static const char SQL_CLAIM_UPDATE[] =
    "UPDATE delivery SET state = 1, attempts = attempts + 1, last_at = ?3,"
    " first_at = COALESCE(first_at, ?3), holder = ?4,"
    " next_at = ?5, fence = fence + 1 WHERE seq = ?1 AND route = ?2";

typedef struct claim_args {
  cebs_store *st;
  const char *route;
  int64_t owner; /* lease_owner.id of this handle's instance */
  int64_t now, lease_until;
  size_t max;
  ceb_claim *out;
  size_t count;
  size_t expired; /* rows taken over from ended leases */
} claim_args;

/* Reads the rows of s (bound to route, now, limit) into a->out. */
static int claim_read(sqlite3 *db, sqlite3_stmt *s, claim_args *a) {
  sqlite3_bind_text(s, 1, a->route, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 2, a->now);
  sqlite3_bind_int64(s, 3, (sqlite3_int64)(a->max - a->count));
  int rc = SQLITE_DONE;
  while (a->count < a->max && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    ceb_claim *c = &a->out[a->count++];
    c->seq = sqlite3_column_int64(s, 0);
    c->attempt = (uint32_t)sqlite3_column_int64(s, 1) + 1;
    c->order_key = cebs_col_dup(s, 2);
    c->event_json = cebs_col_dup(s, 3);
    c->received_at = sqlite3_column_int64(s, 4);
    c->first_at = sqlite3_column_type(s, 5) == SQLITE_NULL
                      ? a->now
                      : sqlite3_column_int64(s, 5);
    c->replays = (uint32_t)sqlite3_column_int64(s, 6);
    /* one writer (the committer): the update below makes it this */
    c->fence = sqlite3_column_int64(s, 7) + 1;
    if (sqlite3_column_int(s, 8) == CEB_DS_INFLIGHT) a->expired++;
    c->replay_of = sqlite3_column_int64(s, 9); /* NULL reads as 0 */
    c->lease_until = a->lease_until;
    if (!c->event_json) {
      sqlite3_reset(s);
      return CEB_ENOMEM;
    }
  }
  if (a->count == a->max) rc = SQLITE_DONE;
  sqlite3_reset(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
    ceb_log_error("store: claim: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  return CEB_OK;
}

static int claim_run(sqlite3 *db, void *arg) {
  claim_args *a = arg;
  sqlite3_stmt *s = cebs_stmt(db, SQL_CLAIM_SELECT);
  sqlite3_stmt *u = cebs_stmt(db, SQL_CLAIM_UPDATE);
  if (!s || !u) return CEB_EIO;
  a->out = calloc(a->max, sizeof *a->out);
  if (!a->out) return CEB_ENOMEM;
  int rc = claim_read(db, s, a);
  if (rc != CEB_OK) return rc;
  if (a->count && (rc = cebs_owner_ensure(a->st, db)) != CEB_OK) return rc;
  a->owner = a->st->owner_id;
  for (size_t i = 0; i < a->count; i++) {
    sqlite3_reset(u);
    sqlite3_bind_int64(u, 1, a->out[i].seq);
    sqlite3_bind_text(u, 2, a->route, -1, SQLITE_STATIC);
    sqlite3_bind_int64(u, 3, a->now);
    sqlite3_bind_int64(u, 4, a->owner);
    sqlite3_bind_int64(u, 5, a->lease_until);
    if (sqlite3_step(u) != SQLITE_DONE) {
      ceb_log_error("store: claim update: %s", sqlite3_errmsg(db));
      return CEB_EIO;
    }
    int rrc = cebs_ready_leased(db, a->route, a->out[i].seq, a->lease_until);
    if (rrc != CEB_OK) return rrc;
  }
  sqlite3_reset(u);
  return CEB_OK;
}

/* the holder's number: registered at this handle's first claim (a tool
 * that never claims registers nothing), and put back when another
 * handle's registration dropped it meanwhile */
int cebs_owner_ensure(cebs_store *st, sqlite3 *db) {
  if (!st->owner_id)
    return cebs_owner_register(db, st->instance, &st->owner_id);
  sqlite3_stmt *o = cebs_stmt(db, SQL_OWNER_KEEP);
  if (!o) return CEB_EIO;
  sqlite3_bind_int64(o, 1, st->owner_id);
  sqlite3_bind_text(o, 2, st->instance, -1, SQLITE_STATIC);
  int orc = sqlite3_step(o);
  sqlite3_reset(o);
  return orc == SQLITE_DONE ? CEB_OK : CEB_EIO;
}

int cebs_owner_register(sqlite3 *db, const char *instance, int64_t *id) {
  /* owners no row in progress names any more go (one per bridge start);
   * a handle whose row went puts it back at its next claim (claim_run) */
  /* (rows in progress are all in delivery_ready: no scan of delivery) */
  if (cebs_exec(db, "DELETE FROM lease_owner WHERE id NOT IN (SELECT"
                    " d.holder FROM delivery_ready r CROSS JOIN"
                    " delivery d WHERE d.seq = r.seq AND d.route = r.route"
                    " AND d.state = 1 AND d.holder IS NOT NULL)") != CEB_OK)
    return CEB_EIO;
  sqlite3_stmt *s = NULL;
  int rc = CEB_EIO;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO lease_owner (instance) VALUES (?1)"
                         " ON CONFLICT (instance) DO UPDATE SET"
                         " instance = excluded.instance RETURNING id",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, instance, -1, SQLITE_STATIC);
    if (sqlite3_step(s) == SQLITE_ROW) {
      *id = sqlite3_column_int64(s, 0);
      rc = CEB_OK;
    }
  }
  if (rc != CEB_OK)
    ceb_log_error("store: registering instance %s: %s", instance,
                  sqlite3_errmsg(db));
  sqlite3_finalize(s);
  return rc;
}

int cebs_claim(cebs_store *st, const char *route, int64_t now, size_t max,
               int64_t lease_ms, ceb_claim **out, size_t *count) {
  *out = NULL;
  *count = 0;
  if (!route || max == 0) return CEB_EINVAL;
  if (lease_ms < st->lease_ms) lease_ms = st->lease_ms;
  claim_args a = {.st = st,
                  .route = route,
                  .now = now,
                  .lease_until = now + lease_ms,
                  .max = max};
  int rc = cebs_call_nosync(st, claim_run, &a); /* see CEBS_NOSYNC */
  if (rc != CEB_OK) {
    ceb_claims_free(a.out, a.count);
    return rc;
  }
  if (a.expired)
    ceb_log_warn("store: route %s: took over %zu deliver%s whose lease had "
                 "ended (the holder stopped or stalled): attempted again",
                 route, a.expired, a.expired == 1 ? "y" : "ies");
  if (a.count == 0) {
    free(a.out);
    a.out = NULL;
  }
  *out = a.out;
  *count = a.count;
  return CEB_OK;
}

static int64_t read_int(cebs_store *st, const char *sql, const char *route,
                        int64_t arg, int64_t dflt) {
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  int64_t v = dflt;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK) {
    if (route) sqlite3_bind_text(s, 1, route, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, arg);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
      v = sqlite3_column_int64(s, 0);
    else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      v = CEB_EIO;
  } else {
    ceb_log_error("store: %s", sqlite3_errmsg(db));
    v = CEB_EIO;
  }
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return v;
}

int64_t cebs_next_due(cebs_store *st, const char *route, int64_t after) {
  /* a lease end too: the set holds rows in progress at it */
  static const char sql[] = "SELECT MIN(next_at) FROM delivery_ready WHERE"
                            " route = ?1 AND next_at > ?2";
  sqlite3 *db = cebs_read_begin(st);
  int i = 0;
  while (i < CEB_STORE_READERS - 1 && st->readers[i] != db)
    i++;
  /* prepared once per reader: parsing it cost more than the read */
  if (!st->rdue[i]) st->rdue[i] = cebs_prepare(db, sql);
  sqlite3_stmt *s = st->rdue[i];
  int64_t v = INT64_MAX;
  if (s) {
    sqlite3_bind_text(s, 1, route, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, after);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
      v = sqlite3_column_int64(s, 0);
    else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
      ceb_log_error("store: next due: %s", sqlite3_errmsg(db));
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
  }
  cebs_read_end(st, db);
  return v;
}

int64_t cebs_count_open(cebs_store *st, const char *route) {
  if (route)
    return read_int(st,
                    "SELECT COUNT(*) FROM delivery WHERE route = ?1 AND"
                    " state < 3 AND ?2 = ?2",
                    route, 0, 0);
  return read_int(st, "SELECT COUNT(*) FROM delivery WHERE state < ?2", NULL, 3,
                  0);
}

int64_t cebs_count_open_key(cebs_store *st, const char *route, const char *key,
                            int64_t cap) {
  /* through delivery_open (route, order_key, seq) WHERE state < 3, read
   * no further than cap rows: the caller only compares with its limit */
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  int64_t v = CEB_EIO;
  if (sqlite3_prepare_v2(db,
                         "SELECT COUNT(*) FROM (SELECT 1 FROM delivery"
                         " WHERE route = ?1 AND order_key = ?2 AND"
                         " state < 3 LIMIT ?3)",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, route, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 3, cap > 0 ? cap : INT64_MAX);
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
  }
  if (v < 0)
    ceb_log_error("store: count open of a key: %s", sqlite3_errmsg(db));
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return v;
}

json_t *cebs_key_stats(cebs_store *st, const char *route, size_t limit) {
  /* the keys the outcomes noted (key_status) and those with open rows
   * (delivery_open): an operator's read, not on any hot path */
  static const char SQL[] =
      "SELECT k, SUM(o), MAX(ls), MAX(lf) FROM ("
      " SELECT order_key AS k, 0 AS o, last_success_at AS ls,"
      " last_failure_at AS lf FROM key_status WHERE route = ?1"
      " UNION ALL SELECT order_key, 1, NULL, NULL FROM delivery"
      " WHERE route = ?1 AND state < 3 AND order_key IS NOT NULL)"
      " GROUP BY k ORDER BY k LIMIT ?2";
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  json_t *arr = NULL;
  if (sqlite3_prepare_v2(db, SQL, -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, route, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, (sqlite3_int64)limit);
    arr = json_array();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      json_t *o = json_object();
      cebs_json_col(o, "key", s, 0);
      cebs_json_col(o, "open", s, 1);
      cebs_json_col(o, "last_success_at", s, 2);
      cebs_json_col(o, "last_failure_at", s, 3);
      json_array_append_new(arr, o);
    }
    if (rc != SQLITE_DONE) {
      json_decref(arr);
      arr = NULL;
    }
  }
  if (!arr) ceb_log_error("store: key stats: %s", sqlite3_errmsg(db));
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return arr;
}

int64_t cebs_oldest_open(cebs_store *st, const char *route) {
  /* seq grows with received_at: the oldest is the smallest open seq */
  return read_int(st,
                  "SELECT received_at FROM journal WHERE seq = (SELECT"
                  " MIN(seq) FROM delivery WHERE route = ?1 AND state < 3"
                  " AND ?2 = ?2)",
                  route, 0, 0);
}

/* ---- attempt outcomes ---- */

/* Applies only under the claim's fence (?9): a row taken over after its
 * lease ended carries a newer one, and the late outcome changes nothing. */
static const char SQL_ATTEMPT[] =
    "UPDATE delivery SET state = ?3, next_at = ?4,"
    /* a refund (?8 = 1) undoes the claim's attempt and leaves the record of
     * the last real attempt as it was */
    " last_status = CASE WHEN ?8 THEN last_status ELSE ?5 END,"
    " last_reason = CASE WHEN ?8 THEN last_reason ELSE ?6 END,"
    " last_error = CASE WHEN ?8 THEN last_error ELSE ?7 END,"
    " first_at = CASE WHEN ?8 AND attempts = 1 THEN NULL ELSE first_at END,"
    " attempts = attempts - ?8,"
    /* what the peer answered, for the client's job status: kept from the
     * attempt that delivered; a failed attempt has none */
    " response = CASE WHEN ?8 THEN response ELSE ?10 END"
    " WHERE seq = ?1 AND route = ?2 AND state = 1 AND fence = ?9";
static const char SQL_SETTLE_JOURNAL[] =
    "UPDATE journal_settle SET open_routes = open_routes - 1,"
    " settled_at = CASE WHEN open_routes - 1 <= 0 THEN ?2 END WHERE seq = ?1";
static const char SQL_DLQ_INSERT[] =
    "INSERT INTO dlq (seq, route, sink, reason, last_reason, status, attempts,"
    " first_at, last_at, error, event, event_id, source, type, created_at)"
    " SELECT d.seq, d.route, ?3, ?4, ?5, ?6, d.attempts, d.first_at,"
    " d.last_at, ?7, ?8, j.id, j.source, j.type, ?9"
    " FROM delivery d JOIN journal j ON j.seq = d.seq"
    " WHERE d.seq = ?1 AND d.route = ?2";
static const char SQL_DLQ_LINK[] =
    "UPDATE delivery SET dlq_id = ?3 WHERE seq = ?1 AND route = ?2";

/* Error text is kept to ERROR_MAX bytes, cut on a UTF-8 boundary. */
static void bind_error(sqlite3_stmt *s, int i, const char *err) {
  if (!err) {
    sqlite3_bind_null(s, i);
    return;
  }
  size_t n = strlen(err);
  if (n > ERROR_MAX) {
    n = ERROR_MAX;
    while (n > 0 && ((unsigned char)err[n] & 0xC0) == 0x80)
      n--;
  }
  sqlite3_bind_text(s, i, err, (int)n, SQLITE_TRANSIENT);
}

/* The key's last success or failure (key_status, schema 18), from the row
 * just updated: one statement on pages the update touched, in the
 * outcome's transaction. MAX() of SQLite is NULL when either side is:
 * COALESCE keeps the known one. */
static const char SQL_KEY_STATUS[] =
    "INSERT INTO key_status (route, order_key, last_success_at,"
    " last_failure_at, last_at, at_bucket)"
    " SELECT route, order_key, CASE WHEN ?3 THEN ?4 END,"
    " CASE WHEN ?3 THEN NULL ELSE ?4 END, ?4, ?4 >> 22 FROM delivery"
    " WHERE seq = ?1 AND route = ?2 AND order_key IS NOT NULL"
    " ON CONFLICT (route, order_key) DO UPDATE SET"
    " last_success_at = COALESCE(MAX(excluded.last_success_at,"
    " last_success_at), excluded.last_success_at, last_success_at),"
    " last_failure_at = COALESCE(MAX(excluded.last_failure_at,"
    " last_failure_at), excluded.last_failure_at, last_failure_at),"
    " last_at = MAX(excluded.last_at, last_at)"
    /* at_bucket is left out of the update: set in a statement of its own
     * only when it changes, its index (the sweep's) is not rewritten at
     * every outcome of the key (schema 21) */
    " RETURNING order_key, at_bucket";
static const char SQL_KEY_BUCKET[] =
    "UPDATE key_status SET at_bucket = ?3 WHERE route = ?1"
    " AND order_key = ?2";

static int note_key(sqlite3 *db, const ceb_attempt_result *r) {
  sqlite3_stmt *s = cebs_stmt(db, SQL_KEY_STATUS);
  if (!s) return CEB_EIO;
  sqlite3_bind_int64(s, 1, r->seq);
  sqlite3_bind_text(s, 2, r->route, -1, SQLITE_STATIC);
  sqlite3_bind_int(s, 3, r->state == CEB_DS_DONE);
  sqlite3_bind_int64(s, 4, r->now);
  int64_t bucket = r->now >> 22;
  int rc = sqlite3_step(s);
  char *key = NULL;
  int stale = 0;
  if (rc == SQLITE_ROW) { /* a keyed row: its key's row as written */
    stale = sqlite3_column_type(s, 1) == SQLITE_NULL ||
            sqlite3_column_int64(s, 1) < bucket;
    if (stale && !(key = cebs_col_dup(s, 0))) {
      sqlite3_reset(s);
      return CEB_ENOMEM;
    }
    rc = sqlite3_step(s);
  }
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    free(key);
    ceb_log_error("store: key status: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  if (!stale) return CEB_OK;
  sqlite3_stmt *u = cebs_stmt(db, SQL_KEY_BUCKET);
  if (!u) {
    free(key);
    return CEB_EIO;
  }
  sqlite3_bind_text(u, 1, r->route, -1, SQLITE_STATIC);
  sqlite3_bind_text(u, 2, key, -1, SQLITE_STATIC);
  sqlite3_bind_int64(u, 3, bucket);
  rc = sqlite3_step(u);
  sqlite3_reset(u);
  sqlite3_clear_bindings(u);
  free(key);
  if (rc != SQLITE_DONE) {
    ceb_log_error("store: key status bucket: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  return CEB_OK;
}

static const char SQL_ATTEMPT_LOG[] =
    "INSERT INTO attempt (seq, route, n, started_at, at, status, reason,"
    " dead) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

/* A failed attempt into the history (ceb_store_attempts_of). */
static int log_failed(sqlite3 *db, const ceb_attempt_result *r) {
  sqlite3_stmt *s = cebs_stmt(db, SQL_ATTEMPT_LOG);
  if (!s) return CEB_EIO;
  sqlite3_bind_int64(s, 1, r->seq);
  sqlite3_bind_text(s, 2, r->route, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, r->attempt);
  if (r->started_at > 0) sqlite3_bind_int64(s, 4, r->started_at);
  sqlite3_bind_int64(s, 5, r->now);
  if (r->status_code) sqlite3_bind_int(s, 6, r->status_code);
  cebs_bind_text(s, 7, r->reason);
  sqlite3_bind_int(s, 8, r->state == CEB_DS_DEAD);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    ceb_log_error("store: attempt history: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  return CEB_OK;
}

json_t *cebs_attempts_of(cebs_store *st, int64_t seq, size_t max) {
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  json_t *arr = NULL;
  /* the newest max (LIMIT -1: all), read back oldest first */
  if (sqlite3_prepare_v2(db,
                         "SELECT route, n, started_at, at, status, reason,"
                         " dead FROM (SELECT rowid AS r, * FROM attempt"
                         " WHERE seq = ?1 ORDER BY rowid DESC LIMIT ?2)"
                         " ORDER BY r",
                         -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, seq);
    sqlite3_bind_int64(s, 2, max ? (sqlite3_int64)max : -1);
    arr = json_array();
    static const char *const cols[] = {"route",  "n",      "started_at", "at",
                                       "status", "reason", NULL};
    while (sqlite3_step(s) == SQLITE_ROW) {
      json_t *o = json_object();
      for (int i = 0; cols[i]; i++)
        cebs_json_col(o, cols[i], s, i);
      json_object_set_new(
          o, "outcome",
          json_string(sqlite3_column_int(s, 6) ? "dead" : "retrying"));
      json_array_append_new(arr, o);
    }
  } else {
    ceb_log_error("store: attempts of seq: %s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return arr;
}

int cebs_attempt_run(sqlite3 *db, void *arg) {
  ceb_attempt_result *r = arg;
  r->callback_queued[0] = '\0';
  sqlite3_stmt *u = cebs_stmt(db, SQL_ATTEMPT);
  if (!u) return CEB_EIO;
  sqlite3_bind_int64(u, 1, r->seq);
  sqlite3_bind_text(u, 2, r->route, -1, SQLITE_STATIC);
  sqlite3_bind_int(u, 3, r->state);
  int again = r->state == CEB_DS_RETRYING || r->state == CEB_DS_PENDING;
  sqlite3_bind_int64(u, 4, again ? r->next_at : r->now);
  if (r->status_code) sqlite3_bind_int(u, 5, r->status_code);
  cebs_bind_text(u, 6, r->reason);
  bind_error(u, 7, r->error);
  sqlite3_bind_int(u, 8, r->refund && r->state == CEB_DS_PENDING);
  sqlite3_bind_int64(u, 9, r->fence);
  if (r->state == CEB_DS_DONE && r->response)
    sqlite3_bind_text(u, 10, r->response, (int)r->response_len, SQLITE_STATIC);
  int rc = sqlite3_step(u);
  sqlite3_reset(u);
  if (rc != SQLITE_DONE) {
    ceb_log_error("store: attempt update: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  if (sqlite3_changes(db) == 0)
    return CEB_ECONFLICT; /* not in progress under this fence: nothing */
  if (r->state == CEB_DS_RETRYING || r->state == CEB_DS_DEAD) {
    rc = log_failed(db, r);
    if (rc != CEB_OK) return rc;
  }
  if (r->state != CEB_DS_PENDING) { /* PENDING: no attempt happened */
    rc = note_key(db, r);
    if (rc != CEB_OK) return rc;
  }
  /* retrying: claimable again at next_at; settled: the key's next row is */
  rc = cebs_ready_settled(db, r->route, r->seq);
  if (rc != CEB_OK || again) return rc;
  sqlite3_stmt *j = cebs_stmt(db, SQL_SETTLE_JOURNAL);
  if (!j) return CEB_EIO;
  sqlite3_bind_int64(j, 1, r->seq);
  sqlite3_bind_int64(j, 2, r->now);
  rc = sqlite3_step(j);
  sqlite3_reset(j);
  if (rc != SQLITE_DONE) return CEB_EIO;
  /* the status just became final: the client's callback is queued in this
   * same transaction */
  rc = cebs_callback_settled(db, r);
  if (rc != CEB_OK) return rc;
  if (r->state != CEB_DS_DEAD) return CEB_OK;
  sqlite3_stmt *q = cebs_stmt(db, SQL_DLQ_INSERT);
  sqlite3_stmt *l = cebs_stmt(db, SQL_DLQ_LINK);
  if (!q || !l) return CEB_EIO;
  sqlite3_bind_int64(q, 1, r->seq);
  sqlite3_bind_text(q, 2, r->route, -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 3, r->sink ? r->sink : "", -1, SQLITE_STATIC);
  sqlite3_bind_text(q, 4, r->dead_reason ? r->dead_reason : "rejected", -1,
                    SQLITE_STATIC);
  cebs_bind_text(q, 5, r->reason);
  if (r->status_code) sqlite3_bind_int(q, 6, r->status_code);
  bind_error(q, 7, r->error);
  sqlite3_bind_text(q, 8, r->dead_json ? r->dead_json : "{}", -1,
                    SQLITE_STATIC);
  sqlite3_bind_int64(q, 9, r->now);
  rc = sqlite3_step(q);
  sqlite3_reset(q);
  if (rc != SQLITE_DONE) {
    ceb_log_error("store: dlq insert: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  r->dlq_id = sqlite3_last_insert_rowid(db);
  sqlite3_bind_int64(l, 1, r->seq);
  sqlite3_bind_text(l, 2, r->route, -1, SQLITE_STATIC);
  sqlite3_bind_int64(l, 3, r->dlq_id);
  rc = sqlite3_step(l);
  sqlite3_reset(l);
  return rc == SQLITE_DONE ? CEB_OK : CEB_EIO;
}

/* In-progress rows were claimed as heads (or unordered): back to pending,
 * due at their claim time (last_at: next_at held the lease end), they are
 * claimable again unless a replay queued an older row meanwhile, which
 * cebs_ready_changed works out per row. */
static int recover_run(sqlite3 *db, void *arg) {
  int *n = arg;
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db, "SELECT seq, route FROM delivery WHERE state = 1",
                         -1, &s, NULL) != SQLITE_OK) {
    ceb_log_error("store: recover: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  json_t *rows = json_array();
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW)
    json_array_append_new(
        rows, json_pack("[Is]", (json_int_t)sqlite3_column_int64(s, 0),
                        (const char *)sqlite3_column_text(s, 1)));
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE || !rows ||
      cebs_exec(db, "UPDATE delivery SET state = 0, next_at ="
                    " COALESCE(last_at, next_at) WHERE state = 1") != CEB_OK) {
    json_decref(rows);
    return CEB_EIO;
  }
  *n = sqlite3_changes(db);
  size_t i;
  json_t *row;
  rc = CEB_OK;
  json_array_foreach(rows, i, row) {
    rc = cebs_ready_changed(db, json_string_value(json_array_get(row, 1)),
                            json_integer_value(json_array_get(row, 0)));
    if (rc != CEB_OK) break;
  }
  json_decref(rows);
  return rc;
}

/* A SQLite store serves one process at a time (it is a local file, never
 * shared between hosts): every row in progress is a claim of an earlier
 * run, whatever its lease says. */
int cebs_recover(cebs_store *st, int64_t now) {
  (void)now;
  int n = 0;
  int rc = cebs_call(st, recover_run, &n);
  return rc == CEB_OK ? n : rc;
}

/* ---- status ---- */

static int seq_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The journal rows that may carry id, ascending (malloc'd; *n of them),
 * from the dedupe map. NULL with *n = 0 when none; NULL with *n = 1 when
 * out of memory. */
static int64_t *id_candidates(cebs_store *st, const char *id, size_t *n) {
  int64_t idh = cebs_id_hash(id);
  *n = cebs_idmap_find(&st->ids, idh, NULL, 0);
  if (*n == 0) return NULL;
  int64_t *seqs = NULL;
  size_t got = *n;
  for (;;) { /* the committer may add one between the two looks */
    int64_t *grown = realloc(seqs, got * sizeof *seqs);
    if (!grown) {
      free(seqs);
      *n = 1;
      return NULL;
    }
    seqs = grown;
    size_t now = cebs_idmap_find(&st->ids, idh, seqs, got);
    if (now <= got) {
      got = now;
      break;
    }
    got = now;
  }
  qsort(seqs, got, sizeof *seqs, seq_cmp);
  *n = got;
  return seqs;
}

/* A kept response body (UTF-8 text: ceb_attempt_result.response) as a
 * JSON string; null when none. */
static json_t *response_json(sqlite3_stmt *d, int i) {
  if (sqlite3_column_type(d, i) == SQLITE_NULL) return json_null();
  const char *p = (const char *)sqlite3_column_text(d, i);
  json_t *v = json_stringn(p ? p : "", (size_t)sqlite3_column_bytes(d, i));
  return v ? v : json_null();
}

/* One journal row (j, stepped) with its deliveries, as the status API
 * shows it. */
static json_t *status_row(sqlite3_stmt *j, sqlite3_stmt *d) {
  json_t *o = json_object();
  static const char *const cols[] = {"seq", "client",    "source",
                                     "id",  "type",      "received_at",
                                     NULL,  "settled_at"};
  for (int i = 0; i < 8; i++)
    if (cols[i]) cebs_json_col(o, cols[i], j, i);
  json_object_set_new(o, "unrouted", json_boolean(sqlite3_column_int(j, 6)));
  json_t *routes = json_array();
  sqlite3_reset(d);
  sqlite3_bind_int64(d, 1, sqlite3_column_int64(j, 0));
  while (sqlite3_step(d) == SQLITE_ROW) {
    json_t *r = json_object();
    int state = sqlite3_column_int(d, 1);
    cebs_json_col(r, "route", d, 0);
    json_object_set_new(r, "state", json_string(ceb_dstate_name(state)));
    cebs_json_col(r, "attempts", d, 2);
    if (state == CEB_DS_PENDING || state == CEB_DS_RETRYING)
      cebs_json_col(r, "next_attempt_at", d, 3);
    else
      json_object_set_new(r, "next_attempt_at", json_null());
    cebs_json_col(r, "first_attempt_at", d, 4);
    cebs_json_col(r, "last_attempt_at", d, 5);
    cebs_json_col(r, "last_status", d, 6);
    cebs_json_col(r, "last_reason", d, 7);
    cebs_json_col(r, "last_error", d, 8);
    cebs_json_col(r, "order_key", d, 9);
    cebs_json_col(r, "dlq_id", d, 10);
    json_object_set_new(r, "response", response_json(d, 11));
    json_array_append_new(routes, r);
  }
  json_object_set_new(o, "routes", routes);
  return o;
}

json_t *cebs_event_status(cebs_store *st, const char *id, const char *source,
                          size_t max) {
  if (!id) return NULL;
  size_t ncand = 0;
  int64_t *cand = id_candidates(st, id, &ncand);
  if (!cand && ncand) return NULL; /* out of memory */
  sqlite3 *db = cebs_read_begin(st);
  json_t *arr = json_array();
  sqlite3_stmt *j = NULL, *d = NULL;
  int ok =
      sqlite3_prepare_v2(
          db,
          "SELECT j.seq, client, source, id, type, received_at, unrouted,"
          " s.settled_at FROM journal j LEFT JOIN journal_settle s"
          " ON s.seq = j.seq WHERE j.seq = ?3 AND id = ?1"
          " AND (?2 IS NULL OR source = ?2)",
          -1, &j, NULL) == SQLITE_OK &&
      sqlite3_prepare_v2(db,
                         "SELECT route, state, attempts, next_at, first_at,"
                         " last_at, last_status, last_reason, last_error,"
                         " order_key, dlq_id, response FROM delivery"
                         " WHERE seq = ?1"
                         " ORDER BY route",
                         -1, &d, NULL) == SQLITE_OK;
  if (ok) {
    sqlite3_bind_text(j, 1, id, -1, SQLITE_STATIC);
    cebs_bind_text(j, 2, source);
    /* newest first, at most max, then put oldest first */
    for (size_t c = ncand; c-- > 0 && (!max || json_array_size(arr) < max);) {
      sqlite3_reset(j);
      sqlite3_bind_int64(j, 3, cand[c]);
      if (sqlite3_step(j) == SQLITE_ROW)
        json_array_insert_new(arr, 0, status_row(j, d));
    }
  } else {
    ceb_log_error("store: status query: %s", sqlite3_errmsg(db));
    json_decref(arr);
    arr = NULL;
  }
  sqlite3_finalize(j);
  sqlite3_finalize(d);
  cebs_read_end(st, db);
  free(cand);
  return arr;
}
