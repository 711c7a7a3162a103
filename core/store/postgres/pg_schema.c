/* The PostgreSQL schema and its ordered migrations. A migration is
 * appended, never edited: a database at version N runs N+1.. in order,
 * each in its own transaction, all under one advisory lock so that bridges
 * starting at once migrate once. The version lives in ceb_schema. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_internal.h"

/* pg_advisory_lock key of migrations: "cebmigr" as a number. */
#define MIGRATE_LOCK "7162306276045431154"

static const char *const k_migrations[] = {
    /* 1: journal, deliveries with leases, DLQ, idempotency, contracts.
     * Times are ms since the epoch (bigint), as in the SQLite engine. */
    "CREATE TABLE journal ("
    " seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"
    " client text NOT NULL DEFAULT '',"
    " source text NOT NULL,"
    " id text NOT NULL,"
    " type text NOT NULL,"
    " received_at bigint NOT NULL,"
    " event text NOT NULL,"
    " size integer NOT NULL,"
    " unrouted boolean NOT NULL DEFAULT false,"
    /* dedupe across instances: the database says which insert was first;
     * id leads so that status by id uses it too */
    " CONSTRAINT journal_event UNIQUE (id, source, client));"
    /* written once per route settle: narrow, so that the ~1 KiB journal
     * row is never rewritten (an UPDATE writes a whole new tuple) */
    "CREATE TABLE journal_settle ("
    " seq bigint PRIMARY KEY,"
    " open_routes integer NOT NULL,"
    " settled_at bigint);"
    "CREATE INDEX journal_settle_at ON journal_settle (settled_at)"
    " WHERE settled_at IS NOT NULL;"
    "CREATE TABLE delivery ("
    " seq bigint NOT NULL,"
    " route text NOT NULL,"
    " state smallint NOT NULL,"
    " attempts integer NOT NULL DEFAULT 0,"
    " next_at bigint NOT NULL,"
    " first_at bigint,"
    " last_at bigint,"
    " last_status integer,"
    " last_reason text,"
    " last_error text,"
    " order_key text,"
    " dlq_id bigint,"
    " replays integer NOT NULL DEFAULT 0,"
    /* the claim's lease: who holds it, until when, and the fencing token
     * a settle must carry (incremented by every claim) */
    " lease_owner text,"
    " lease_until bigint,"
    " fence bigint NOT NULL DEFAULT 0,"
    /* a keyed row that is its key's head (no older unsettled row of its
     * (route, key)): kept by ingest, settle and replay under the key's
     * advisory lock (pg_keylock.c), so that a claim reads only claimable
     * rows instead of testing every row queued behind a head */
    " head boolean NOT NULL DEFAULT false,"
    " PRIMARY KEY (seq, route));"
    "CREATE INDEX delivery_due ON delivery (route, next_at, seq)"
    " WHERE state IN (0, 2) AND (order_key IS NULL OR head);"
    /* the head-of-key test: an older unsettled row of the (route, key) */
    "CREATE INDEX delivery_open ON delivery (route, order_key, seq)"
    " WHERE state < 3;"
    "CREATE INDEX delivery_open_seq ON delivery (route, seq) WHERE state < 3;"
    "CREATE INDEX delivery_leased ON delivery (route, lease_until)"
    " WHERE state = 1;"
    "CREATE TABLE dlq ("
    " id bigserial PRIMARY KEY,"
    " seq bigint NOT NULL,"
    " route text NOT NULL,"
    " sink text NOT NULL,"
    " reason text NOT NULL,"
    " last_reason text,"
    " status integer,"
    " attempts integer NOT NULL,"
    " first_at bigint,"
    " last_at bigint,"
    " error text,"
    " event text NOT NULL,"
    " event_id text NOT NULL,"
    " source text NOT NULL,"
    " type text NOT NULL,"
    " created_at bigint NOT NULL,"
    " replayed_at bigint,"
    " replays integer NOT NULL DEFAULT 0,"
    " forwarded_at bigint);"
    "CREATE INDEX dlq_seq ON dlq (seq);"
    "CREATE INDEX dlq_route ON dlq (route, created_at);"
    "CREATE INDEX dlq_unforwarded ON dlq (route, id)"
    " WHERE forwarded_at IS NULL AND replayed_at IS NULL;"
    "CREATE TABLE idempotency ("
    " client text NOT NULL,"
    " key text NOT NULL,"
    " fingerprint text NOT NULL,"
    " state smallint NOT NULL,"
    " http_status integer,"
    " content_type text,"
    " body bytea,"
    " created_at bigint NOT NULL,"
    " expires_at bigint,"
    " owner text," /* the instance holding an in-flight reservation */
    " PRIMARY KEY (client, key));"
    "CREATE INDEX idempotency_expiry ON idempotency (expires_at)"
    " WHERE state = 1;"
    "CREATE TABLE contracts ("
    " name text NOT NULL,"
    " version text NOT NULL,"
    " sha256 text NOT NULL,"
    " document text NOT NULL,"
    " provenance text,"
    " fetched_at bigint NOT NULL,"
    " conflict integer NOT NULL DEFAULT 0,"
    " conflict_sha256 text,"
    " conflict_provenance text,"
    " conflict_at bigint,"
    " PRIMARY KEY (name, version));",
    /* 2: several bridges on one database (pg_cluster.h): pull queues,
     * instances with heartbeats, task leaders */
    "CREATE TABLE pull_event ("
    " queue text NOT NULL,"
    " seq bigint NOT NULL,"
    " idem text NOT NULL,"
    " event text NOT NULL,"
    " enqueued_at bigint NOT NULL,"
    " PRIMARY KEY (queue, seq));"
    "CREATE UNIQUE INDEX pull_event_idem ON pull_event (queue, idem);"
    "CREATE TABLE pull_queue ("
    " name text PRIMARY KEY,"
    " last_seq bigint NOT NULL,"
    " committed bigint NOT NULL,"
    " depth bigint NOT NULL);"
    "CREATE TABLE instances ("
    " id text PRIMARY KEY,"
    " hostname text NOT NULL,"
    " pid integer NOT NULL,"
    " version text NOT NULL,"
    " started_at bigint NOT NULL,"
    " heartbeat_at bigint NOT NULL);"
    "CREATE TABLE leaders ("
    " task text PRIMARY KEY,"
    " instance text NOT NULL,"
    " since bigint NOT NULL);",
    /* 3: the sinks' life cycle (an endpoint disabled after 410 Gone or a
     * long failure), shared by the bridges */
    "CREATE TABLE sink_state ("
    " sink text PRIMARY KEY,"
    " disabled boolean NOT NULL,"
    " reason text NOT NULL,"
    " disabled_at bigint NOT NULL,"
    " failing_since bigint NOT NULL);",
    /* 4: replay by time range (pg_replay.c) journals a copy of each event
     * it re-offers: replay_of names the original (a copy's
     * Idempotency-Key is its own, and a copy is not replayed by a later
     * range); copy_no numbers the copies (0: as received) so that dedupe on
     * (id, source, client) holds for received events while copies of one
     * event coexist. Both columns are metadata-only additions; the unique
     * index is rebuilt once, id still leading. */
    "ALTER TABLE journal ADD COLUMN replay_of bigint;"
    "ALTER TABLE journal ADD COLUMN copy_no bigint NOT NULL DEFAULT 0;"
    "CREATE SEQUENCE journal_copy_no;"
    "ALTER TABLE journal DROP CONSTRAINT journal_event;"
    "ALTER TABLE journal ADD CONSTRAINT journal_event"
    " UNIQUE (id, source, client, copy_no);",
    /* 5: what the peer answered the delivery that succeeded (a bounded
     * body excerpt), for the client's job status (GET /v1/events/{id} of
     * the http source) */
    "ALTER TABLE delivery ADD COLUMN response text;",
    /* 6: an event's timeline: the failed attempts of each delivery (only
     * failures: a first attempt that succeeds writes nothing more; swept
     * with the journal row) */
    "CREATE TABLE attempt ("
    " id bigserial PRIMARY KEY,"
    " seq bigint NOT NULL,"
    " route text NOT NULL,"
    " n integer NOT NULL,"
    " started_at bigint,"
    " at bigint NOT NULL,"
    " status integer,"
    " reason text,"
    " dead boolean NOT NULL);"
    "CREATE INDEX attempt_seq ON attempt (seq);",
    /* 7: per ordering key of a route, the last delivered and the last
     * failed attempt (GET /v1/routes/{route}/keys), written by the
     * settle statement itself (pg_settle.c), so that they outlive the
     * key's delivery rows; a key untouched for the retention goes at
     * sweep. Filled from the delivery rows the database holds. */
    "CREATE TABLE key_status ("
    " route text NOT NULL,"
    " order_key text NOT NULL,"
    " last_success_at bigint,"
    " last_failure_at bigint,"
    " last_at bigint NOT NULL,"
    " PRIMARY KEY (route, order_key));"
    "CREATE INDEX key_status_at ON key_status (last_at);"
    "INSERT INTO key_status (route, order_key, last_success_at,"
    " last_failure_at, last_at)"
    " SELECT route, order_key, max(last_at) FILTER (WHERE state = 3),"
    " max(last_at) FILTER (WHERE state IN (2, 4)), max(last_at)"
    " FROM delivery WHERE order_key IS NOT NULL AND state >= 2"
    " AND last_at IS NOT NULL GROUP BY route, order_key;",
    /* 8: the client's callback (X-Callback): its URL and the route that
     * sends it, kept from ingest; queued_at: when the final settle queued
     * its delivery (once per event) */
    "CREATE TABLE callback ("
    " seq bigint PRIMARY KEY,"
    " route text NOT NULL,"
    " url text NOT NULL,"
    " queued_at bigint);",
    /* 9: the settle's key_status upsert, once per key per group (nearly
     * once per event: bench/store/RESULTS.md 2026-12-05), becomes a HOT
     * update: no index holds last_at any more (an update that changes an
     * indexed column writes a new entry into every index, two here, with
     * their WAL), and pages keep room for the new version (fillfactor; new
     * pages only, old ones as they turn over). The sweep finds keys
     * untouched for the retention by reading key_status once per pass
     * (one row per key, at most one pass per sweep period) instead of by
     * key_status_at. */
    "DROP INDEX key_status_at;"
    "ALTER TABLE key_status SET (fillfactor = 50);",
    /* 10: the claim (and a recovery, a lost claim's release) becomes a HOT
     * update of the delivery row: no index holds a column it changes
     * (state, lease_until, ...), so it writes the row's new version and no
     * index entry (four before: bench/store/RESULTS.md 2026-12-06).
     * Indexes had state in their predicates; they now name open, a stored
     * column the database derives from state (state < 3: pending, in
     * progress, retrying), which a claim (0 or 2 -> 1) leaves as it is.
     * delivery_due keeps the rows in progress (its holder's lease is read
     * from the row: a claim skips live leases and takes ended ones; at most
     * the engine's in-flight rows, at the front of the index), and
     * delivery_leased, keyed on lease_until, goes. Pages keep room for the
     * claim's and the settle's versions (fillfactor). Adding a stored
     * column rewrites the table once, under its lock; the indexes are
     * dropped first so that the rewrite does not rebuild them. */
    "DROP INDEX delivery_due;"
    "DROP INDEX delivery_open;"
    "DROP INDEX delivery_open_seq;"
    "DROP INDEX delivery_leased;"
    "ALTER TABLE delivery SET (fillfactor = 50);"
    "ALTER TABLE delivery ADD COLUMN open boolean"
    " GENERATED ALWAYS AS (state < 3) STORED;"
    "CREATE INDEX delivery_due ON delivery (route, next_at, seq)"
    " WHERE open AND (order_key IS NULL OR head);"
    "CREATE INDEX delivery_open ON delivery (route, order_key, seq)"
    " WHERE open;"
    "CREATE INDEX delivery_open_seq ON delivery (route, seq) WHERE open;",
    /* 11: delivery_open_seq keeps only what a route-wide read needs: its
     * oldest open row is a head or unkeyed (a keyed row's head is its
     * key's oldest open row). With every open row in it, a generic plan
     * made while the table was small took it for a key's lookups too (the
     * ingest's head test, the settle's hand-off: route = $1 AND order_key
     * = $2 AND open; both indexes cost one page then) and kept it as the
     * table grew: every open row of the route read per event, a backlog's
     * worth during a sink outage. Now no key lookup's predicate implies
     * it, so they use delivery_open whatever the statistics. */
    "DROP INDEX delivery_open_seq;"
    "CREATE INDEX delivery_open_seq ON delivery (route, seq)"
    " WHERE open AND (order_key IS NULL OR head);",
    /* 12: 11's premise has an exception: a dead letter replayed while a
     * newer row of its key is in progress is pending and not its key's
     * head (pg_dlq.c: one delivery of a key at a time), so it can be the
     * route's oldest open row while 11's index left it out, and the
     * oldest-open gauge read a newer row. Replayed rows join the index
     * (few: an operator's replays); a key lookup's predicate still implies
     * none of it. replays changes only at a replay, never at a claim,
     * which stays a HOT update. */
    "DROP INDEX delivery_open_seq;"
    "CREATE INDEX delivery_open_seq ON delivery (route, seq)"
    " WHERE open AND (order_key IS NULL OR head OR replays > 0);",
    /* 13: a row in progress is due again when its lease ends, so its
     * next_at is its lease's end (a claim sets it; a release or a
     * recovery makes it due at once). In delivery_due's order the rows in
     * progress were at the front (next_at of their first due time), and
     * each claim and next-due read went over every one of them to find
     * the due rows behind (0.3-0.5 ms per claim with Kafka's thousands in
     * flight, bench/store/RESULTS.md 2026-12-06 session 14); now they sort
     * at their lease's end, past every due row. Data only: the rows in
     * progress now. */
    "UPDATE delivery SET next_at = lease_until WHERE open AND state = 1"
    " AND lease_until IS NOT NULL;",
};

_Static_assert(sizeof k_migrations / sizeof k_migrations[0] ==
                   CEBPG_SCHEMA_VERSION,
               "one migration per schema version");

static int exec_ok(PGconn *c, const char *sql, char *err, size_t errlen,
                   cebpg_pool *pool, const char *what) {
  PGresult *r = PQexec(c, sql);
  ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
    PQclear(r);
    return CEB_OK;
  }
  char msg[400];
  cebpg_scrub(pool, PQresultErrorMessage(r), msg, sizeof msg);
  snprintf(err, errlen, "store: %s on %s: %s", what, cebpg_pool_display(pool),
           msg);
  int lost = cebpg_pool_failed(pool, c, r, what);
  PQclear(r);
  return lost ? CEB_EIO : CEB_EINTERNAL;
}

/* The version row, or 0 without ceb_schema; refuses a database holding
 * other tables and no ceb_schema (not ours). */
static int read_version(PGconn *c, cebpg_pool *pool, char *err, size_t errlen) {
  PGresult *r = PQexec(c, "SELECT max(version) FROM ceb_schema");
  if (PQresultStatus(r) == PGRES_TUPLES_OK) {
    int v = PQgetisnull(r, 0, 0) ? 0 : atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
  }
  const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
  int missing = st && strcmp(st, "42P01") == 0; /* undefined_table */
  char msg[400];
  cebpg_scrub(pool, PQresultErrorMessage(r), msg, sizeof msg);
  int lost = cebpg_pool_failed(pool, c, r, "schema version");
  PQclear(r);
  if (missing) {
    r = PQexec(c, "SELECT count(*) FROM pg_tables WHERE schemaname ="
                  " current_schema() AND tablename IN ('journal', 'delivery',"
                  " 'dlq', 'idempotency', 'contracts')");
    int foreign =
        PQresultStatus(r) == PGRES_TUPLES_OK && atoi(PQgetvalue(r, 0, 0)) > 0;
    PQclear(r);
    if (foreign) {
      snprintf(err, errlen,
               "store: %s has tables named like cebridge's (journal, "
               "delivery, ...) but no ceb_schema: not a cebridge store; use "
               "another database or schema (options=-csearch_path=...)",
               cebpg_pool_display(pool));
      return CEB_ECONFLICT;
    }
    return 0;
  }
  snprintf(err, errlen, "store: reading the schema version of %s: %s",
           cebpg_pool_display(pool), msg);
  return lost ? CEB_EIO : CEB_EINTERNAL;
}

int cebpg_schema_version(cebpg_pool *pool, char *err, size_t errlen) {
  PGconn *c = cebpg_pool_get(pool, CEBPG_POOL_WAIT_MS, err, errlen);
  if (!c) return CEB_EIO;
  int v = read_version(c, pool, err, errlen);
  cebpg_pool_put(pool, c);
  return v;
}

static int migrate_locked(PGconn *c, cebpg_pool *pool, int migrate, char *err,
                          size_t errlen) {
  int v = read_version(c, pool, err, errlen);
  if (v < 0) return v;
  if (v > CEBPG_SCHEMA_VERSION) {
    snprintf(err, errlen,
             "store: %s has schema version %d, newer than this build's %d; "
             "upgrade cebridge",
             cebpg_pool_display(pool), v, CEBPG_SCHEMA_VERSION);
    return CEB_EUNSUPPORTED;
  }
  if (v < CEBPG_SCHEMA_VERSION && !migrate) {
    snprintf(err, errlen,
             "store: %s has schema version %d, this build needs %d, and "
             "store.migrate is off: run `cebridge store migrate -c DIR`",
             cebpg_pool_display(pool), v, CEBPG_SCHEMA_VERSION);
    return CEB_EUNSUPPORTED;
  }
  if (v == 0) {
    int rc = exec_ok(c,
                     "CREATE TABLE IF NOT EXISTS ceb_schema ("
                     " version integer NOT NULL);"
                     "INSERT INTO ceb_schema (version) SELECT 0 WHERE NOT"
                     " EXISTS (SELECT 1 FROM ceb_schema)",
                     err, errlen, pool, "creating ceb_schema");
    if (rc != CEB_OK) return rc;
  }
  for (int to = v + 1; to <= CEBPG_SCHEMA_VERSION; to++) {
    char bump[96];
    snprintf(bump, sizeof bump, "UPDATE ceb_schema SET version = %d", to);
    char what[64];
    snprintf(what, sizeof what, "migration to schema version %d", to);
    int rc = exec_ok(c, "BEGIN", err, errlen, pool, what);
    if (rc == CEB_OK)
      rc = exec_ok(c, k_migrations[to - 1], err, errlen, pool, what);
    if (rc == CEB_OK) rc = exec_ok(c, bump, err, errlen, pool, what);
    if (rc == CEB_OK) rc = exec_ok(c, "COMMIT", err, errlen, pool, what);
    if (rc != CEB_OK) {
      PQclear(PQexec(c, "ROLLBACK"));
      return rc;
    }
    ceb_log_info("store: %s migrated to schema version %d",
                 cebpg_pool_display(pool), to);
  }
  return CEB_OK;
}

int cebpg_migrate(cebpg_pool *pool, int migrate, char *err, size_t errlen) {
  PGconn *c = cebpg_pool_get(pool, CEBPG_POOL_WAIT_MS, err, errlen);
  if (!c) return CEB_EIO;
  int rc = exec_ok(c, "SELECT pg_advisory_lock(" MIGRATE_LOCK ")", err, errlen,
                   pool, "taking the migration lock");
  if (rc == CEB_OK) {
    rc = migrate_locked(c, pool, migrate, err, errlen);
    /* a session lock: released here, or by the server with the session */
    PQclear(PQexec(c, "SELECT pg_advisory_unlock(" MIGRATE_LOCK ")"));
  }
  cebpg_pool_put(pool, c);
  return rc;
}
