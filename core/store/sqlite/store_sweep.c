/* Background expiry in small chunks: each chunk is one short op so that
 * ingest batches interleave with sweeping and never stall behind it. */
#include <stdlib.h>

#include <ceb/status.h>

#include "store/sqlite/store_internal.h"

typedef struct sweep_args {
  int64_t now, retention_ms;
  size_t chunk;
  int deleted;
  cebs_idmap_slot *gone; /* the deleted journal rows, for the dedupe map */
  size_t ngone;
} sweep_args;

/* Notes the (idh, seq) of the journal rows about to be deleted: their map
 * entries go once the delete is committed. */
static int note_gone(sqlite3 *db, sweep_args *a) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db,
                         "SELECT idh, seq FROM journal WHERE seq IN"
                         " (SELECT seq FROM sweep_seq)",
                         -1, &s, NULL) != SQLITE_OK)
    return CEB_EIO;
  int rc = CEB_OK, step;
  size_t cap = 0;
  a->ngone = 0;
  while (rc == CEB_OK && (step = sqlite3_step(s)) == SQLITE_ROW) {
    if (a->ngone == cap) {
      size_t ncap = cap ? cap * 2 : 64;
      cebs_idmap_slot *g = realloc(a->gone, ncap * sizeof *g);
      if (!g) {
        rc = CEB_ENOMEM;
        break;
      }
      a->gone = g;
      cap = ncap;
    }
    a->gone[a->ngone++] = (cebs_idmap_slot){sqlite3_column_int64(s, 0),
                                            sqlite3_column_int64(s, 1)};
  }
  if (rc == CEB_OK && step != SQLITE_DONE) rc = CEB_EIO;
  sqlite3_finalize(s);
  return rc;
}

static int sweep_run(sqlite3 *db, void *arg) {
  sweep_args *a = arg;
  sqlite3_stmt *s = NULL;
  int rc = CEB_OK;
  static const char *const sql[] = {
      "DELETE FROM idempotency WHERE rowid IN (SELECT rowid FROM idempotency"
      " WHERE state = 1 AND expires_at <= ?1 LIMIT ?2)",
      /* journal rows settled before the cut-off and not held by the DLQ */
      "CREATE TEMP TABLE IF NOT EXISTS sweep_seq (seq INTEGER PRIMARY KEY)",
      "DELETE FROM sweep_seq",
      "INSERT INTO sweep_seq SELECT seq FROM journal_settle s WHERE"
      " settled_at IS NOT NULL AND settled_at <= ?1 - ?3 AND NOT EXISTS"
      " (SELECT 1 FROM dlq q WHERE q.seq = s.seq) LIMIT ?2",
      "DELETE FROM delivery WHERE seq IN (SELECT seq FROM sweep_seq)",
      "DELETE FROM journal WHERE seq IN (SELECT seq FROM sweep_seq)",
      "DELETE FROM journal_settle WHERE seq IN (SELECT seq FROM sweep_seq)",
      "DELETE FROM attempt WHERE seq IN (SELECT seq FROM sweep_seq)",
      /* keys without an outcome for the retention and without open rows
       * (a hostile stream of distinct keys does not grow it for ever) */
      "DELETE FROM key_status WHERE (route, order_key) IN"
      " (SELECT route, order_key FROM key_status k WHERE"
      /* the bucket (schema 21) is indexed, last_at decides */
      " at_bucket <= ((?1 - ?3) >> 22) AND last_at <= ?1 - ?3"
      " AND NOT EXISTS (SELECT 1 FROM delivery d WHERE d.route = k.route"
      " AND d.order_key = k.order_key AND d.state < 3) LIMIT ?2)",
      "DELETE FROM callback WHERE seq IN (SELECT seq FROM sweep_seq)",
  };
  for (size_t i = 0; i < sizeof sql / sizeof sql[0] && rc == CEB_OK; i++) {
    if (sqlite3_prepare_v2(db, sql[i], -1, &s, NULL) != SQLITE_OK)
      return CEB_EIO;
    int np = sqlite3_bind_parameter_count(s);
    if (np >= 1) sqlite3_bind_int64(s, 1, a->now);
    if (np >= 2) sqlite3_bind_int64(s, 2, (sqlite3_int64)a->chunk);
    if (np >= 3) sqlite3_bind_int64(s, 3, a->retention_ms);
    if (sqlite3_step(s) != SQLITE_DONE)
      rc = CEB_EIO;
    else if (i == 0 || i == 5)
      a->deleted += sqlite3_changes(db);
    sqlite3_finalize(s);
    if (rc == CEB_OK && i == 3) rc = note_gone(db, a);
  }
  return rc;
}

int cebs_sweep(cebs_store *st, int64_t now, int64_t retention_ms,
               size_t chunk) {
  sweep_args a = {
      .now = now, .retention_ms = retention_ms, .chunk = chunk ? chunk : 500};
  int rc = cebs_call(st, sweep_run, &a);
  /* only now: a delete rolled back keeps its rows, so keeps their entries */
  for (size_t i = 0; rc == CEB_OK && i < a.ngone; i++)
    cebs_idmap_remove(&st->ids, a.gone[i].idh, a.gone[i].seq);
  free(a.gone);
  return rc == CEB_OK ? a.deleted : rc;
}
