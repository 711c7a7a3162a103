/* The schema and its ordered migrations. A migration is appended, never
 * edited: the store at user_version N runs migrations N+1.. in order, each
 * in its own transaction. */
#include <stdio.h>

#include "store/store_internal.h"

#include <ceb/status.h>

static const char *const k_migrations[] = {
    /* 1: journal, deliveries, DLQ, idempotency, contracts */
    "CREATE TABLE journal ("
    " seq INTEGER PRIMARY KEY,"
    " client TEXT NOT NULL DEFAULT '',"
    " source TEXT NOT NULL,"
    " id TEXT NOT NULL,"
    " type TEXT NOT NULL,"
    " received_at INTEGER NOT NULL,"
    " event TEXT NOT NULL,"
    " size INTEGER NOT NULL,"
    " open_routes INTEGER NOT NULL,"
    " unrouted INTEGER NOT NULL DEFAULT 0,"
    " settled_at INTEGER,"
    " idh INTEGER NOT NULL);"
    /* Dedupe and lookups by id go through a 64-bit hash of the id: an
     * 8-byte key keeps this index in the page cache at millions of rows,
     * where a text index on (id, source, client) spills and turns every
     * insert into random reads. Matches are verified on the columns. */
    "CREATE INDEX journal_idh ON journal(idh);"
    "CREATE INDEX journal_settled ON journal(settled_at)"
    " WHERE settled_at IS NOT NULL;"
    "CREATE TABLE delivery ("
    " seq INTEGER NOT NULL REFERENCES journal(seq),"
    " route TEXT NOT NULL,"
    " state INTEGER NOT NULL,"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " next_at INTEGER NOT NULL,"
    " first_at INTEGER,"
    " last_at INTEGER,"
    " last_status INTEGER,"
    " last_reason TEXT,"
    " last_error TEXT,"
    " order_key TEXT,"
    " dlq_id INTEGER,"
    " PRIMARY KEY (seq, route)) WITHOUT ROWID;"
    "CREATE INDEX delivery_due ON delivery(route, next_at, seq)"
    " WHERE state IN (0, 2);"
    "CREATE INDEX delivery_open ON delivery(route, order_key, seq)"
    " WHERE state < 3;"
    "CREATE TABLE dlq ("
    " id INTEGER PRIMARY KEY,"
    " seq INTEGER NOT NULL,"
    " route TEXT NOT NULL,"
    " sink TEXT NOT NULL,"
    " reason TEXT NOT NULL,"
    " last_reason TEXT,"
    " status INTEGER,"
    " attempts INTEGER NOT NULL,"
    " first_at INTEGER,"
    " last_at INTEGER,"
    " error TEXT,"
    " event TEXT NOT NULL,"
    " event_id TEXT NOT NULL,"
    " source TEXT NOT NULL,"
    " type TEXT NOT NULL,"
    " created_at INTEGER NOT NULL,"
    " replayed_at INTEGER,"
    " replays INTEGER NOT NULL DEFAULT 0,"
    " forwarded_at INTEGER);"
    "CREATE INDEX dlq_seq ON dlq(seq);"
    "CREATE INDEX dlq_route ON dlq(route, created_at);"
    "CREATE TABLE idempotency ("
    " client TEXT NOT NULL,"
    " key TEXT NOT NULL,"
    " fingerprint TEXT NOT NULL,"
    " state INTEGER NOT NULL,"
    " http_status INTEGER,"
    " content_type TEXT,"
    " body BLOB,"
    " created_at INTEGER NOT NULL,"
    " expires_at INTEGER,"
    " PRIMARY KEY (client, key));"
    "CREATE INDEX idempotency_expiry ON idempotency(expires_at)"
    " WHERE state = 1;"
    "CREATE TABLE contracts ("
    " name TEXT NOT NULL,"
    " version TEXT NOT NULL,"
    " sha256 TEXT NOT NULL,"
    " document TEXT NOT NULL,"
    " provenance TEXT,"
    " fetched_at INTEGER NOT NULL,"
    " conflict INTEGER NOT NULL DEFAULT 0,"
    " conflict_sha256 TEXT,"
    " conflict_provenance TEXT,"
    " conflict_at INTEGER,"
    " PRIMARY KEY (name, version));",
    /* 2: oldest open delivery per route in O(log n) (admin, gauges) */
    "CREATE INDEX delivery_open_seq ON delivery(route, seq) WHERE state < 3;",
};

_Static_assert(sizeof k_migrations / sizeof k_migrations[0] ==
                   CEB_STORE_SCHEMA_VERSION,
               "one migration per schema version");

int cebs_migrate(sqlite3 *db, char *err, size_t errlen) {
  sqlite3_stmt *s = NULL;
  int version = 0;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) !=
      SQLITE_OK) {
    snprintf(err, errlen, "store: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  if (sqlite3_step(s) == SQLITE_ROW) version = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  if (version > CEB_STORE_SCHEMA_VERSION) {
    snprintf(err, errlen,
             "store: schema version %d is newer than this build's %d; "
             "upgrade cebridge",
             version, CEB_STORE_SCHEMA_VERSION);
    return CEB_EUNSUPPORTED;
  }
  for (int v = version; v < CEB_STORE_SCHEMA_VERSION; v++) {
    char *msg = NULL;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", v + 1);
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db, k_migrations[v], NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
      snprintf(err, errlen, "store: migration to version %d failed: %s", v + 1,
               msg ? msg : sqlite3_errmsg(db));
      sqlite3_free(msg);
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      return CEB_EIO;
    }
  }
  return CEB_OK;
}
