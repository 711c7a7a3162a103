/* Callbacks (X-Callback, docs/integration-guide.md "Callbacks"): the
 * client's URL kept with the journal row at ingest, and the delivery to the
 * source's callback route queued by the settle that makes the event's
 * status final, in that settle's transaction, so a callback is journaled
 * like any delivery and survives a crash between settle and send. */
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

static const char SQL_ADD[] =
    "INSERT INTO callback (seq, route, url) VALUES (?1, ?2, ?3)";
/* the journal row was just settled (every route done or dead) and its
 * callback is not queued yet */
static const char SQL_DUE[] =
    "SELECT c.route FROM callback c JOIN journal_settle s ON s.seq = c.seq"
    " WHERE c.seq = ?1 AND c.queued_at IS NULL AND s.settled_at IS NOT NULL";
static const char SQL_QUEUED[] =
    "UPDATE callback SET queued_at = ?2 WHERE seq = ?1";
static const char SQL_DELIVERY[] =
    "INSERT INTO delivery (seq, route, state, next_at, order_key)"
    " VALUES (?1, ?2, 0, ?3, NULL)";
/* the callback is one more route to settle: the row stays in the journal
 * (and the event in the archive's retention) until it is sent or dead */
static const char SQL_REOPEN[] =
    "UPDATE journal_settle SET open_routes = 1, settled_at = NULL"
    " WHERE seq = ?1";

int cebs_callback_add(sqlite3 *db, int64_t seq, const char *route,
                      const char *url) {
  sqlite3_stmt *s = cebs_stmt(db, SQL_ADD);
  if (!s) return CEB_EIO;
  sqlite3_bind_int64(s, 1, seq);
  sqlite3_bind_text(s, 2, route, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 3, url, -1, SQLITE_STATIC);
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) {
    ceb_log_error("store: callback insert: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  return CEB_OK;
}

static int step_done(sqlite3 *db, sqlite3_stmt *s, const char *what) {
  int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc == SQLITE_DONE) return CEB_OK;
  ceb_log_error("store: callback %s: %s", what, sqlite3_errmsg(db));
  return CEB_EIO;
}

int cebs_callback_settled(sqlite3 *db, ceb_attempt_result *r) {
  r->callback_queued[0] = '\0';
  sqlite3_stmt *d = cebs_stmt(db, SQL_DUE);
  if (!d) return CEB_EIO;
  sqlite3_bind_int64(d, 1, r->seq);
  int rc = sqlite3_step(d);
  if (rc == SQLITE_DONE) {
    sqlite3_reset(d);
    return CEB_OK; /* none, or queued already */
  }
  if (rc != SQLITE_ROW) {
    sqlite3_reset(d);
    ceb_log_error("store: callback read: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  const char *t = (const char *)sqlite3_column_text(d, 0);
  char route[sizeof r->callback_queued];
  size_t n = t ? strlen(t) : 0;
  if (n >= sizeof route) n = sizeof route - 1;
  memcpy(route, t ? t : "", n);
  route[n] = '\0';
  sqlite3_reset(d);
  sqlite3_stmt *q = cebs_stmt(db, SQL_QUEUED);
  sqlite3_stmt *ins = cebs_stmt(db, SQL_DELIVERY);
  sqlite3_stmt *o = cebs_stmt(db, SQL_REOPEN);
  if (!q || !ins || !o) return CEB_EIO;
  sqlite3_bind_int64(q, 1, r->seq);
  sqlite3_bind_int64(q, 2, r->now);
  sqlite3_bind_int64(ins, 1, r->seq);
  sqlite3_bind_text(ins, 2, route, -1, SQLITE_STATIC);
  sqlite3_bind_int64(ins, 3, r->now);
  sqlite3_bind_int64(o, 1, r->seq);
  if ((rc = step_done(db, q, "queue")) != CEB_OK ||
      (rc = step_done(db, ins, "delivery")) != CEB_OK ||
      (rc = step_done(db, o, "reopen")) != CEB_OK)
    return rc;
  rc = cebs_ready_added(db, route, r->seq, r->now, NULL);
  if (rc == CEB_OK) memcpy(r->callback_queued, route, n + 1);
  return rc;
}

char *cebs_callback_url(cebs_store *st, int64_t seq, int *status) {
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  char *url = NULL;
  *status = CEB_EIO;
  if (sqlite3_prepare_v2(db, "SELECT url FROM callback WHERE seq = ?1", -1, &s,
                         NULL) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, seq);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
      const char *t = (const char *)sqlite3_column_text(s, 0);
      url = strdup(t ? t : "");
      *status = url ? CEB_OK : CEB_ENOMEM;
    } else if (rc == SQLITE_DONE) {
      *status = CEB_ENOTFOUND;
    }
  }
  if (*status == CEB_EIO)
    ceb_log_error("store: callback url: %s", sqlite3_errmsg(db));
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return url;
}
