/* Idempotency records (HTTP Idempotency-Key), scoped per client. A key is
 * reserved (in flight) by begin, completed with the response by finish, or
 * dropped by abort. Reservations are durable so that two bridge threads
 * never both process one key; a crashed run's reservations are dropped at
 * start (cebs_idem_reset_inflight). The handle also remembers the
 * reservations it holds (st->idem_live): a reservation row it does not
 * hold is one whose abort or finish failed to write (a full disk rolled it
 * back), and is taken over by the next begin instead of answering "in
 * flight" to every retry until a restart. */
#include <stdlib.h>
#include <string.h>

#include <ceb/plugin.h>
#include <ceb/status.h>

#include "store/sqlite/store_internal.h"

typedef struct idem_args {
  cebs_store *st;
  const char *client, *key, *fingerprint;
  int64_t now, ttl_ms;
  int http_status;
  const char *content_type, *body;
  size_t body_len;
  ceb_idem_result *res;
  int added; /* begin_run put the key in st->idem_live */
} idem_args;

/* FNV-1a of client, NUL, key: the entry of st->idem_live. */
static int64_t live_hash(const char *client, const char *key) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = client;; p++) {
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
    if (!*p) break;
  }
  for (const char *p = key; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return (int64_t)h;
}

static int held(idem_args *a) {
  int64_t one;
  return cebs_idmap_find(&a->st->idem_live, live_hash(a->client, a->key), &one,
                         1) > 0;
}

/* Forgets a reservation of this handle whatever the write's outcome: once
 * finish or abort ran, no request holds the key. */
static void release(idem_args *a) {
  cebs_idmap_remove(&a->st->idem_live, live_hash(a->client, a->key), 1);
}

static int begin_run(sqlite3 *db, void *arg) {
  idem_args *a = arg;
  sqlite3_stmt *s = NULL;
  int rc = CEB_OK;
  if (sqlite3_prepare_v2(db,
                         "SELECT fingerprint, state, http_status,"
                         " content_type, body, expires_at FROM idempotency"
                         " WHERE client = ?1 AND key = ?2",
                         -1, &s, NULL) != SQLITE_OK)
    return CEB_EIO;
  sqlite3_bind_text(s, 1, a->client, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, a->key, -1, SQLITE_STATIC);
  int step = sqlite3_step(s);
  int found = step == SQLITE_ROW;
  if (found && sqlite3_column_int(s, 1) == CEB_IDEM_ROW_DONE &&
      sqlite3_column_type(s, 5) != SQLITE_NULL &&
      sqlite3_column_int64(s, 5) <= a->now)
    found = 0; /* expired: as if absent */
  if (found && sqlite3_column_int(s, 1) == CEB_IDEM_ROW_INFLIGHT && !held(a))
    found = 0; /* stale: no request of this run holds it */
  if (found) {
    const char *fp = (const char *)sqlite3_column_text(s, 0);
    ceb_idem_result *r = a->res;
    if (!fp || strcmp(fp, a->fingerprint) != 0) {
      r->state = CEB_IDEM_MISMATCH;
    } else if (sqlite3_column_int(s, 1) == CEB_IDEM_ROW_INFLIGHT) {
      r->state = CEB_IDEM_IN_FLIGHT;
    } else {
      r->state = CEB_IDEM_REPLAY;
      r->http_status = sqlite3_column_int(s, 2);
      r->content_type = cebs_col_dup(s, 3);
      int n = sqlite3_column_bytes(s, 4);
      const void *b = sqlite3_column_blob(s, 4);
      r->body = malloc((size_t)n + 1);
      if (r->body) {
        if (n) memcpy(r->body, b, (size_t)n);
        r->body[n] = '\0';
        r->body_len = (size_t)n;
      } else {
        rc = CEB_ENOMEM;
      }
    }
    sqlite3_finalize(s);
    return rc;
  }
  sqlite3_finalize(s);
  if (step != SQLITE_ROW && step != SQLITE_DONE) return CEB_EIO;
  if (sqlite3_prepare_v2(db,
                         "INSERT OR REPLACE INTO idempotency (client, key,"
                         " fingerprint, state, created_at) VALUES (?1, ?2, ?3,"
                         " 0, ?4)",
                         -1, &s, NULL) != SQLITE_OK)
    return CEB_EIO;
  sqlite3_bind_text(s, 1, a->client, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, a->key, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 3, a->fingerprint, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 4, a->now);
  rc = sqlite3_step(s) == SQLITE_DONE ? CEB_OK : CEB_EIO;
  sqlite3_finalize(s);
  a->res->state = CEB_IDEM_NEW;
  if (rc == CEB_OK) {
    if (cebs_idmap_add(&a->st->idem_live, live_hash(a->client, a->key), 1) ==
        CEB_OK)
      a->added = 1;
    else
      rc = CEB_ENOMEM;
  }
  return rc;
}

int cebs_idem_begin(cebs_store *st, const char *client, const char *key,
                    const char *fingerprint, int64_t now,
                    ceb_idem_result *res) {
  if (!key || !*key || !fingerprint || !res) return CEB_EINVAL;
  memset(res, 0, sizeof *res);
  idem_args a = {.st = st,
                 .client = client ? client : "",
                 .key = key,
                 .fingerprint = fingerprint,
                 .now = now,
                 .res = res};
  int rc = cebs_call(st, begin_run, &a);
  if (rc != CEB_OK) {
    /* not reserved (the caller will neither finish nor abort) */
    if (a.added) release(&a);
    free(res->content_type);
    free(res->body);
    memset(res, 0, sizeof *res);
  }
  return rc;
}

static int finish_run(sqlite3 *db, void *arg) {
  idem_args *a = arg;
  release(a);
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db,
                         "UPDATE idempotency SET state = 1, http_status = ?3,"
                         " content_type = ?4, body = ?5, expires_at = ?6"
                         " WHERE client = ?1 AND key = ?2 AND state = 0",
                         -1, &s, NULL) != SQLITE_OK)
    return CEB_EIO;
  sqlite3_bind_text(s, 1, a->client, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, a->key, -1, SQLITE_STATIC);
  sqlite3_bind_int(s, 3, a->http_status);
  cebs_bind_text(s, 4, a->content_type);
  sqlite3_bind_blob(s, 5, a->body ? a->body : "", (int)a->body_len,
                    SQLITE_STATIC);
  sqlite3_bind_int64(s, 6, a->now + a->ttl_ms);
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return CEB_EIO;
  return sqlite3_changes(db) ? CEB_OK : CEB_ENOTFOUND;
}

int cebs_idem_finish(cebs_store *st, const char *client, const char *key,
                     int http_status, const char *content_type,
                     const char *body, size_t body_len, int64_t now,
                     int64_t ttl_ms) {
  if (!key || (!body && body_len)) return CEB_EINVAL;
  idem_args a = {.st = st,
                 .client = client ? client : "",
                 .key = key,
                 .http_status = http_status,
                 .content_type = content_type,
                 .body = body,
                 .body_len = body_len,
                 .now = now,
                 .ttl_ms = ttl_ms};
  return cebs_call(st, finish_run, &a);
}

static int abort_run(sqlite3 *db, void *arg) {
  idem_args *a = arg;
  release(a);
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db,
                         "DELETE FROM idempotency WHERE client = ?1 AND"
                         " key = ?2 AND state = 0",
                         -1, &s, NULL) != SQLITE_OK)
    return CEB_EIO;
  sqlite3_bind_text(s, 1, a->client, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, a->key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  sqlite3_finalize(s);
  return rc == SQLITE_DONE ? CEB_OK : CEB_EIO;
}

int cebs_idem_abort(cebs_store *st, const char *client, const char *key) {
  if (!key) return CEB_EINVAL;
  idem_args a = {.st = st, .client = client ? client : "", .key = key};
  return cebs_call(st, abort_run, &a);
}

static int reset_run(sqlite3 *db, void *arg) {
  (void)arg;
  return cebs_exec(db, "DELETE FROM idempotency WHERE state = 0");
}

int cebs_idem_reset_inflight(cebs_store *st) {
  return cebs_call(st, reset_run, NULL);
}
