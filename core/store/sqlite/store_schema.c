/* The schema and its ordered migrations. A migration is appended, never
 * edited: the store at user_version N runs migrations N+1.. in order, each
 * in its own transaction. */
#include <stdio.h>

#include "store/sqlite/store_internal.h"

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
    /* 3: the claimable set, kept by triggers in the writing transaction so
     * that a claim reads only what it can take: a delivery is in
     * delivery_ready iff it is pending or retrying and, when it has an
     * order key, no older delivery of its (route, key) is unsettled (the
     * head of the key's FIFO). Without it the claim walked every due row
     * and tested each against its key's older rows: the whole backlog
     * whenever the window could not be filled. */
    /* derived data only: rebuilt from scratch if a partial copy exists */
    "DROP TRIGGER IF EXISTS delivery_fixed;"
    "DROP TRIGGER IF EXISTS delivery_ready_ins_nokey;"
    "DROP TRIGGER IF EXISTS delivery_ready_ins_key;"
    "DROP TRIGGER IF EXISTS delivery_ready_upd_nokey;"
    "DROP TRIGGER IF EXISTS delivery_ready_upd_key;"
    "DROP TRIGGER IF EXISTS delivery_ready_del;"
    "DROP TABLE IF EXISTS delivery_ready;"
    "CREATE TABLE delivery_ready ("
    " route TEXT NOT NULL,"
    " seq INTEGER NOT NULL,"
    " next_at INTEGER NOT NULL,"
    " order_key TEXT,"
    " PRIMARY KEY (route, seq)) WITHOUT ROWID;"
    "CREATE INDEX delivery_ready_due ON delivery_ready(route, next_at, seq);"
    "CREATE INDEX delivery_ready_key ON delivery_ready(route, order_key)"
    " WHERE order_key IS NOT NULL;"
    /* the triggers below rely on these never changing */
    "CREATE TRIGGER delivery_fixed BEFORE UPDATE OF seq, route, order_key"
    " ON delivery WHEN NEW.seq IS NOT OLD.seq OR NEW.route IS NOT OLD.route"
    " OR NEW.order_key IS NOT OLD.order_key BEGIN"
    " SELECT RAISE(ABORT, 'delivery seq, route and order_key are fixed');"
    " END;"
    "CREATE TRIGGER delivery_ready_ins_nokey AFTER INSERT ON delivery"
    " WHEN NEW.order_key IS NULL AND NEW.state IN (0, 2) BEGIN"
    " INSERT INTO delivery_ready (route, seq, next_at, order_key)"
    "  VALUES (NEW.route, NEW.seq, NEW.next_at, NULL);"
    " END;"
    /* a new open row is the key's head only when no older one is open; if
     * it is older than the current head (never on ingest: seq grows) that
     * head stops being claimable */
    "CREATE TRIGGER delivery_ready_ins_key AFTER INSERT ON delivery"
    " WHEN NEW.order_key IS NOT NULL AND NEW.state < 3 BEGIN"
    " DELETE FROM delivery_ready WHERE route = NEW.route"
    "  AND order_key = NEW.order_key AND seq > NEW.seq;"
    " INSERT OR IGNORE INTO delivery_ready (route, seq, next_at, order_key)"
    "  SELECT h.route, h.seq, h.next_at, h.order_key FROM (SELECT route,"
    "  seq, next_at, order_key, state FROM delivery WHERE route = NEW.route"
    "  AND order_key = NEW.order_key AND state < 3 ORDER BY seq LIMIT 1) h"
    "  WHERE h.state IN (0, 2);"
    " END;"
    /* claim (-> in progress), outcome (-> retrying/done/dead), recovery and
     * replay (-> pending): recompute the row, and for a keyed row its key's
     * head (settling a head promotes the next row of the key) */
    "CREATE TRIGGER delivery_ready_upd_nokey AFTER UPDATE OF state, next_at"
    " ON delivery WHEN NEW.order_key IS NULL BEGIN"
    " DELETE FROM delivery_ready WHERE route = NEW.route AND seq = NEW.seq;"
    " INSERT INTO delivery_ready (route, seq, next_at, order_key)"
    "  SELECT NEW.route, NEW.seq, NEW.next_at, NULL"
    "  WHERE NEW.state IN (0, 2);"
    " END;"
    "CREATE TRIGGER delivery_ready_upd_key AFTER UPDATE OF state, next_at"
    " ON delivery WHEN NEW.order_key IS NOT NULL BEGIN"
    " DELETE FROM delivery_ready WHERE route = NEW.route"
    "  AND order_key = NEW.order_key;"
    " INSERT INTO delivery_ready (route, seq, next_at, order_key)"
    "  SELECT h.route, h.seq, h.next_at, h.order_key FROM (SELECT route,"
    "  seq, next_at, order_key, state FROM delivery WHERE route = NEW.route"
    "  AND order_key = NEW.order_key AND state < 3 ORDER BY seq LIMIT 1) h"
    "  WHERE h.state IN (0, 2);"
    " END;"
    /* only open rows can be ready or block others (the sweep deletes
     * settled rows and skips this) */
    "CREATE TRIGGER delivery_ready_del AFTER DELETE ON delivery"
    " WHEN OLD.state < 3 BEGIN"
    " DELETE FROM delivery_ready WHERE route = OLD.route AND seq = OLD.seq;"
    " INSERT OR IGNORE INTO delivery_ready (route, seq, next_at, order_key)"
    "  SELECT h.route, h.seq, h.next_at, h.order_key FROM (SELECT route,"
    "  seq, next_at, order_key, state FROM delivery WHERE route = OLD.route"
    "  AND order_key = OLD.order_key AND state < 3 ORDER BY seq LIMIT 1) h"
    "  WHERE OLD.order_key IS NOT NULL AND h.state IN (0, 2);"
    " END;"
    "INSERT INTO delivery_ready (route, seq, next_at, order_key)"
    " SELECT route, seq, next_at, order_key FROM delivery d"
    " WHERE state IN (0, 2) AND (order_key IS NULL OR NOT EXISTS (SELECT 1"
    " FROM delivery p WHERE p.route = d.route AND p.order_key = d.order_key"
    " AND p.state < 3 AND p.seq < d.seq));",
    /* 4: delivery_ready is kept by the store's code (store_ready.c): the
     * triggers of 3 made every delivery write open a statement journal */
    "DROP TRIGGER IF EXISTS delivery_fixed;"
    "DROP TRIGGER IF EXISTS delivery_ready_ins_nokey;"
    "DROP TRIGGER IF EXISTS delivery_ready_ins_key;"
    "DROP TRIGGER IF EXISTS delivery_ready_upd_nokey;"
    "DROP TRIGGER IF EXISTS delivery_ready_upd_key;"
    "DROP TRIGGER IF EXISTS delivery_ready_del;"
    "DELETE FROM delivery_ready;"
    "INSERT INTO delivery_ready (route, seq, next_at, order_key)"
    " SELECT route, seq, next_at, order_key FROM delivery d"
    " WHERE state IN (0, 2) AND (order_key IS NULL OR NOT EXISTS (SELECT 1"
    " FROM delivery p WHERE p.route = d.route AND p.order_key = d.order_key"
    " AND p.state < 3 AND p.seq < d.seq));",
    /* 5: the next retry time comes from delivery_ready (the claimable set);
     * this index of every open row was written by each ingest, claim and
     * outcome and read by nothing else */
    "DROP INDEX IF EXISTS delivery_due;",
    /* 6: dead letters still to forward to a route's DLQ sink, found at
     * start-up without reading past the forwarded ones */
    "CREATE INDEX IF NOT EXISTS dlq_unforwarded ON dlq(route, id)"
    " WHERE forwarded_at IS NULL AND replayed_at IS NULL;",
    /* 7: dedupe by id moves to a map in memory (store_idmap.h says why);
     * the journal keeps (seq, idh) in an index that only appends, read
     * once at open */
    "DROP INDEX IF EXISTS journal_idh;"
    "CREATE INDEX IF NOT EXISTS journal_seq_idh ON journal(seq, idh);",
    /* 8: a journal row is written once. Its settle state changes once per
     * route and, in the journal, rewrote the whole ~1 KiB row: a third of
     * the WAL each event cost. It lives in a narrow table instead, a few
     * hundred rows a page. */
    "CREATE TABLE journal_settle ("
    " seq INTEGER PRIMARY KEY," /* journal.seq */
    " open_routes INTEGER NOT NULL,"
    " settled_at INTEGER);"
    "INSERT INTO journal_settle (seq, open_routes, settled_at)"
    " SELECT seq, open_routes, settled_at FROM journal;"
    "CREATE INDEX journal_settle_at ON journal_settle(settled_at)"
    " WHERE settled_at IS NOT NULL;"
    "DROP INDEX journal_settled;"
    "ALTER TABLE journal DROP COLUMN open_routes;"
    "ALTER TABLE journal DROP COLUMN settled_at;",
    /* 9: how often a delivery was replayed from the DLQ. The outbound
     * Idempotency-Key derives from it: a receiver following the annex
     * keeps a key's final (4xx) response for the key's lifetime, so a
     * replay sent with the old key would only get that answer again. */
    "ALTER TABLE delivery ADD COLUMN replays INTEGER NOT NULL DEFAULT 0;",
    /* 10: pull queues move from each pull sink's own file into the store,
     * where every bridge sharing it sees them (store_pull.c); the
     * instances sharing the store and the tasks they lead (store_cluster.c:
     * the cluster view) */
    "CREATE TABLE pull_event ("
    " queue TEXT NOT NULL,"
    " seq INTEGER NOT NULL,"
    " idem TEXT NOT NULL,"
    " event TEXT NOT NULL,"
    " enqueued_at INTEGER NOT NULL,"
    " PRIMARY KEY (queue, seq)) WITHOUT ROWID;"
    "CREATE UNIQUE INDEX pull_event_idem ON pull_event(queue, idem);"
    "CREATE TABLE pull_queue ("
    " name TEXT PRIMARY KEY,"
    " last_seq INTEGER NOT NULL,"
    " committed INTEGER NOT NULL,"
    " depth INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE instances ("
    " id TEXT PRIMARY KEY,"
    " hostname TEXT NOT NULL,"
    " pid INTEGER NOT NULL,"
    " version TEXT NOT NULL,"
    " started_at INTEGER NOT NULL,"
    " heartbeat_at INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE leaders ("
    " task TEXT PRIMARY KEY,"
    " instance TEXT NOT NULL,"
    " since INTEGER NOT NULL) WITHOUT ROWID;",
    /* 11: claims hold a lease (ceb_store_claim): the instance that holds
     * the row, until when, and a fencing token the settle must carry, one
     * more at each claim of the row. */
    "ALTER TABLE delivery ADD COLUMN lease_owner TEXT;"
    "ALTER TABLE delivery ADD COLUMN lease_until INTEGER;"
    "ALTER TABLE delivery ADD COLUMN fence INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX delivery_leased ON delivery(route, lease_until)"
    " WHERE state = 1;",
    /* 12: a claim must not grow its row nor keep an index of its own. The
     * holder's name in every claimed row grew it past its slot in pages
     * packed full (each claim split pages), and the index of rows in
     * progress cost WAL pages every group. Now the holder is a number
     * (lease_owner), the lease end lives in next_at while the row is in
     * progress (its due time is spent then; the settle writes the next
     * one), and a row in progress stays in delivery_ready at its lease
     * end (store_ready.c), where the claim finds leases that ended as it
     * finds due work. The columns lease_owner and lease_until of 11 stay,
     * unused: dropping a column rewrites the table. */
    "DROP INDEX IF EXISTS delivery_leased;"
    "CREATE TABLE lease_owner ("
    " id INTEGER PRIMARY KEY,"
    " instance TEXT NOT NULL UNIQUE);"
    "ALTER TABLE delivery ADD COLUMN holder INTEGER;"
    "UPDATE delivery SET next_at = COALESCE(lease_until, next_at)"
    " WHERE state = 1;"
    "INSERT OR IGNORE INTO delivery_ready (route, seq, next_at, order_key)"
    " SELECT route, seq, next_at, order_key FROM delivery d WHERE state = 1"
    " AND (order_key IS NULL OR NOT EXISTS (SELECT 1 FROM delivery p"
    " WHERE p.route = d.route AND p.order_key = d.order_key"
    " AND p.state < 3 AND p.seq < d.seq));",
    /* 13: the failed attempts of each delivery, for an event's timeline
     * (GET /v1/events/{id}/timeline): the delivery row keeps only the
     * first and last of a run. Only failures are written, so a first
     * attempt that succeeds costs nothing more; at most max_attempts rows
     * per delivery and run, swept with the journal row. */
    "CREATE TABLE attempt ("
    " seq INTEGER NOT NULL,"
    " route TEXT NOT NULL,"
    " n INTEGER NOT NULL,"
    " started_at INTEGER,"
    " at INTEGER NOT NULL,"
    " status INTEGER,"
    " reason TEXT,"
    " dead INTEGER NOT NULL);"
    "CREATE INDEX attempt_seq ON attempt(seq);",
    /* 14: the sinks' life cycle (store_sinks.c): disabled after 410 Gone
     * or a period of failures without a success, until enabled again */
    "CREATE TABLE sink_state ("
    " sink TEXT PRIMARY KEY,"
    " disabled INTEGER NOT NULL,"
    " reason TEXT NOT NULL,"
    " disabled_at INTEGER NOT NULL,"
    " failing_since INTEGER NOT NULL) WITHOUT ROWID;",
    /* 15: a holder's number is never given to another instance
     * (AUTOINCREMENT): numbers are registered at a handle's first claim
     * and those no claim names are dropped, so a number could come back
     * under another name while a handle that registered it still claims
     * (a second handle on the file, as `cebridge cluster` is) */
    "CREATE TABLE lease_owner_new ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " instance TEXT NOT NULL UNIQUE);"
    "INSERT INTO lease_owner_new (id, instance)"
    " SELECT id, instance FROM lease_owner;"
    "DROP TABLE lease_owner;"
    "ALTER TABLE lease_owner_new RENAME TO lease_owner;",
    /* 16: replay by time range (store_replay.c) journals a copy of each
     * event it re-offers; replay_of names the original, so that a copy
     * gets an Idempotency-Key of its own and is not itself replayed by a
     * later range. A column without a default: no table rewrite. */
    "ALTER TABLE journal ADD COLUMN replay_of INTEGER;",
    /* 17: what the peer answered the delivery that succeeded (a bounded
     * body excerpt), for the client's job status (GET /v1/events/{id} of
     * the http source) */
    "ALTER TABLE delivery ADD COLUMN response TEXT;",
    /* 18: per ordering key of a route, the last delivered and the last
     * failed attempt (GET /v1/routes/{route}/keys), written by the
     * outcome's own transaction (store_delivery.c), so that they outlive
     * the key's delivery rows; a key untouched for the retention goes at
     * sweep (at_idx: last_at is the later of the two). Filled from the
     * delivery rows the store holds. */
    "CREATE TABLE key_status ("
    " route TEXT NOT NULL,"
    " order_key TEXT NOT NULL,"
    " last_success_at INTEGER,"
    " last_failure_at INTEGER,"
    " last_at INTEGER NOT NULL,"
    " PRIMARY KEY (route, order_key)) WITHOUT ROWID;"
    "CREATE INDEX key_status_at ON key_status(last_at);"
    "INSERT INTO key_status (route, order_key, last_success_at,"
    " last_failure_at, last_at)"
    " SELECT route, order_key, MAX(CASE WHEN state = 3 THEN last_at END),"
    " MAX(CASE WHEN state IN (2, 4) THEN last_at END), MAX(last_at)"
    " FROM delivery WHERE order_key IS NOT NULL AND state >= 2"
    " AND last_at IS NOT NULL GROUP BY route, order_key;",
    /* 19: the client's callback (X-Callback, store_callback.c): its URL
     * and the route that sends it, kept from ingest; queued_at: when the
     * final settle queued its delivery (once per event) */
    "CREATE TABLE callback ("
    " seq INTEGER PRIMARY KEY," /* journal.seq */
    " route TEXT NOT NULL,"
    " url TEXT NOT NULL,"
    " queued_at INTEGER);",
    /* 20: the id hash moves from an index of the journal (journal_seq_idh,
     * of 7) into the settle row each ingest writes anyway: the index was
     * one more B-tree written per event (about one WAL page per group
     * commit) and read only at open, to rebuild the dedupe map, which now
     * reads journal_settle (as narrow, and 1:1 with the journal since 8) */
    "ALTER TABLE journal_settle ADD COLUMN idh INTEGER;"
    "UPDATE journal_settle SET idh = (SELECT j.idh FROM journal j"
    " WHERE j.seq = journal_settle.seq);"
    "DROP INDEX IF EXISTS journal_seq_idh;",
    /* 21: the sweep finds keys untouched for the retention through a
     * coarse bucket of last_at (last_at >> 22: about 70 minutes), which an
     * outcome writes only when the bucket changes; the index of last_at
     * itself (key_status_at, of 18) moved at every outcome of the key,
     * about two WAL pages per group commit under load, for the sweep
     * only */
    "ALTER TABLE key_status ADD COLUMN at_bucket INTEGER;"
    "UPDATE key_status SET at_bucket = last_at >> 22;"
    "CREATE INDEX key_status_bucket ON key_status(at_bucket);"
    "DROP INDEX IF EXISTS key_status_at;",
};

_Static_assert(sizeof k_migrations / sizeof k_migrations[0] ==
                   CEB_STORE_SCHEMA_VERSION,
               "one migration per schema version");

int cebs_migrate(sqlite3 *db, char *err, size_t errlen) {
  return cebs_migrate_to(db, CEB_STORE_SCHEMA_VERSION, err, errlen);
}

static int read_version(sqlite3 *db, int *version) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
    return -1;
  int rc = sqlite3_step(s) == SQLITE_ROW ? 0 : -1;
  if (rc == 0) *version = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  return rc;
}

int cebs_migrate_to(sqlite3 *db, int target, char *err, size_t errlen) {
  if (target < 1 || target > CEB_STORE_SCHEMA_VERSION) {
    snprintf(err, errlen, "store: no schema version %d", target);
    return CEB_EINVAL;
  }
  /* Each step reads the version inside its write transaction: another
   * process opening the same file at the same time (a `cebridge status`
   * beside a first start) may have run the step between our reads, and
   * running it again failed with "table ... already exists". */
  for (;;) {
    char *msg = NULL;
    int version = 0;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK ||
        read_version(db, &version) != 0) {
      snprintf(err, errlen, "store: %s", msg ? msg : sqlite3_errmsg(db));
      sqlite3_free(msg);
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      return CEB_EIO;
    }
    if (version > CEB_STORE_SCHEMA_VERSION) {
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      snprintf(err, errlen,
               "store: schema version %d is newer than this build's %d; "
               "upgrade cebridge",
               version, CEB_STORE_SCHEMA_VERSION);
      return CEB_EUNSUPPORTED;
    }
    if (version >= target) {
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      return CEB_OK;
    }
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA user_version = %d", version + 1);
    if (sqlite3_exec(db, k_migrations[version], NULL, NULL, &msg) !=
            SQLITE_OK ||
        sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK) {
      snprintf(err, errlen, "store: migration to version %d failed: %s",
               version + 1, msg ? msg : sqlite3_errmsg(db));
      sqlite3_free(msg);
      sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
      return CEB_EIO;
    }
  }
}
