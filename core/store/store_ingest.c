/* Journal ingest: one op inserts a batch of events and their delivery rows,
 * deduping on (client, source, id). */
#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/store_internal.h"

/* The committer is the only writer, so check-then-insert is atomic. */
static const char SQL_DUP[] =
    "SELECT 1 FROM journal WHERE idh = ?1 AND id = ?2 AND source = ?3 AND"
    " client = ?4";
static const char SQL_JOURNAL[] =
    "INSERT INTO journal (client, source, id, type, received_at, event, size,"
    " open_routes, unrouted, settled_at, idh) VALUES (?1, ?2, ?3, ?4, ?5, ?6,"
    " ?7, ?8, ?9, ?10, ?11)";
static const char SQL_DELIVERY[] =
    "INSERT INTO delivery (seq, route, state, next_at, order_key)"
    " VALUES (?1, ?2, 0, ?3, ?4)";

int ceb_store_ingest_run(sqlite3 *db, void *arg) {
  ceb_ingest_batch *b = arg;
  sqlite3_stmt *j = cebs_stmt(db, SQL_JOURNAL);
  sqlite3_stmt *d = cebs_stmt(db, SQL_DELIVERY);
  sqlite3_stmt *q = cebs_stmt(db, SQL_DUP);
  if (!j || !d || !q) return CEB_EIO;
  for (size_t i = 0; i < b->count; i++) {
    ceb_ingest_event *e = &b->events[i];
    if (!e->source || !e->id || !e->json) return CEB_EINVAL;
    int64_t idh = cebs_id_hash(e->id);
    sqlite3_reset(q);
    sqlite3_bind_int64(q, 1, idh);
    sqlite3_bind_text(q, 2, e->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, e->source, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, e->client ? e->client : "", -1, SQLITE_STATIC);
    int qrc = sqlite3_step(q);
    sqlite3_reset(q);
    if (qrc == SQLITE_ROW) {
      e->inserted = 0;
      e->seq = 0;
      continue;
    }
    if (qrc != SQLITE_DONE) {
      ceb_log_error("store: dedupe lookup: %s", sqlite3_errmsg(db));
      return CEB_EIO;
    }
    sqlite3_reset(j);
    sqlite3_bind_text(j, 1, e->client ? e->client : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(j, 2, e->source, -1, SQLITE_STATIC);
    sqlite3_bind_text(j, 3, e->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(j, 4, e->type ? e->type : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(j, 5, b->now);
    sqlite3_bind_text(j, 6, e->json, (int)e->json_len, SQLITE_STATIC);
    sqlite3_bind_int64(j, 7, (sqlite3_int64)e->json_len);
    sqlite3_bind_int64(j, 8, (sqlite3_int64)e->nroutes);
    sqlite3_bind_int(j, 9, e->nroutes == 0);
    if (e->nroutes == 0)
      sqlite3_bind_int64(j, 10, b->now);
    else
      sqlite3_bind_null(j, 10);
    sqlite3_bind_int64(j, 11, idh);
    if (sqlite3_step(j) != SQLITE_DONE) {
      ceb_log_error("store: journal insert: %s", sqlite3_errmsg(db));
      return CEB_EIO;
    }
    e->inserted = 1;
    e->seq = sqlite3_last_insert_rowid(db);
    for (size_t r = 0; r < e->nroutes; r++) {
      const ceb_ingest_route *rt = &e->routes[r];
      sqlite3_reset(d);
      sqlite3_bind_int64(d, 1, e->seq);
      sqlite3_bind_text(d, 2, rt->route, -1, SQLITE_STATIC);
      sqlite3_bind_int64(d, 3, rt->first_at);
      cebs_bind_text(d, 4, rt->order_key);
      if (sqlite3_step(d) != SQLITE_DONE) {
        ceb_log_error("store: delivery insert: %s", sqlite3_errmsg(db));
        return CEB_EIO;
      }
      int rrc =
          cebs_ready_added(db, rt->route, e->seq, rt->first_at, rt->order_key);
      if (rrc != CEB_OK) return rrc;
    }
  }
  sqlite3_reset(j);
  sqlite3_reset(d);
  return CEB_OK;
}
