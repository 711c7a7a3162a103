/* Migrations from an empty database, reopening, upgrading an old one, and
 * refusing a newer one. */
#include "store/sqlite/store_internal.h"
#include "store_fixture.h"

/* 1 when SQLite's plan for sql names index. */
static int plan_uses(ceb_store *st, const char *sql, const char *index) {
  char q[512];
  snprintf(q, sizeof q, "EXPLAIN QUERY PLAN %s", sql);
  sqlite3 *db = cebs_read_begin(cebs_of(st));
  sqlite3_stmt *s = NULL;
  int uses = 0;
  if (sqlite3_prepare_v2(db, q, -1, &s, NULL) == SQLITE_OK)
    while (sqlite3_step(s) == SQLITE_ROW)
      uses |= strstr((const char *)sqlite3_column_text(s, 3), index) != NULL;
  sqlite3_finalize(s);
  cebs_read_end(cebs_of(st), db);
  return uses;
}

int main(void) {
  char *path = NULL;
  ceb_store *st = fixture_open("schema", &path);
  CHECK(st != NULL);
  CHECK_INT(fixture_int(st, "PRAGMA user_version"), CEB_STORE_SCHEMA_VERSION);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM sqlite_master WHERE type ="
                            " 'table' AND name IN ('journal', 'delivery',"
                            " 'dlq', 'idempotency', 'contracts')"),
            5);
  sqlite3 *db = cebs_read_begin(cebs_of(st));
  sqlite3_stmt *s = NULL;
  sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL);
  CHECK(sqlite3_step(s) == SQLITE_ROW);
  CHECK_STR((const char *)sqlite3_column_text(s, 0), "wal");
  sqlite3_finalize(s);
  cebs_read_end(cebs_of(st), db);
  const char *routes[] = {"r1", NULL};
  CHECK(fixture_ingest(st, "urn:a", "1", "t", routes, NULL, 1000) > 0);
  ceb_store_close(st);

  /* Reopen: no migration re-run, data kept. */
  ceb_store_opts o = {.spec = path, .synchronous_full = 1, .group_max = 4};
  char err[256] = "";
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), 0);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal"), 1);
  ceb_store_close(st);

  /* Upgrade from version 1: a database made by migration 1 alone, with a
   * settled and an open event, reaches the current version with its
   * rows' settle state moved to journal_settle (8). */
  char sql[512];
  snprintf(sql, sizeof sql,
           "INSERT INTO journal (seq, source, id, type, received_at, event,"
           " size, open_routes, settled_at, idh) VALUES"
           " (1, 'urn:a', 'old1', 't', 1000, '{}', 2, 0, 1500, %lld),"
           " (2, 'urn:a', 'old2', 't', 1000, '{}', 2, 1, NULL, %lld);"
           " INSERT INTO delivery (seq, route, state, next_at) VALUES"
           " (1, 'r1', 3, 1000), (2, 'r1', 0, 1000)",
           (long long)cebs_id_hash("old1"), (long long)cebs_id_hash("old2"));
  st = fixture_open_old(path, ".v1", 1, sql);
  CHECK(st != NULL);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM sqlite_master WHERE name ="
                            " 'delivery_open_seq'"),
            1);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM pragma_table_info("
                            "'journal') WHERE name IN ('open_routes',"
                            " 'settled_at')"),
            0);
  CHECK_INT(fixture_int(st, "SELECT settled_at FROM journal_settle WHERE"
                            " seq = 1"),
            1500);
  CHECK_INT(fixture_int(st, "SELECT open_routes FROM journal_settle WHERE"
                            " seq = 2 AND settled_at IS NULL"),
            1);
  /* the sweeper finds the settled one through journal_settle */
  CHECK(plan_uses(st,
                  "SELECT seq FROM journal_settle WHERE settled_at IS NOT"
                  " NULL AND settled_at <= 5",
                  "journal_settle_at"));
  CHECK_INT(ceb_store_sweep(st, 1500 + 1000, 1000, 100), 1);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal_settle"), 1);
  CHECK_INT(fixture_ingest(st, "urn:a", "old2", "t", NULL, NULL, 3000), 0);
  CHECK(fixture_ingest(st, "urn:a", "old1", "t", NULL, NULL, 3000) > 0);
  ceb_store_close(st);
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), 0);
  /* The oldest-open query must not scan the journal. */
  CHECK(plan_uses(st,
                  "SELECT MIN(seq) FROM delivery WHERE route = 'r' AND"
                  " state < 3",
                  "delivery_open_seq"));
  /* Dead letters still to forward are found without a scan of the DLQ. */
  CHECK(plan_uses(st,
                  "SELECT id FROM dlq WHERE route = 'r' AND id > 0 AND"
                  " forwarded_at IS NULL AND replayed_at IS NULL ORDER BY id"
                  " LIMIT 5",
                  "dlq_unforwarded"));
  CHECK_INT(ceb_store_oldest_open(st, "r1"), 1000);
  ceb_store_close(st);

  /* Upgrade from version 11 (leases named in the row, an index of rows in
   * progress): a claim of route r1 holding until 9000 keeps its lease in
   * next_at and sits in the claimable set at it, so another claimer takes
   * it over at 9000, not before (12). */
  snprintf(sql, sizeof sql,
           "INSERT INTO journal (seq, source, id, type, received_at, event,"
           " size, idh) VALUES (1, 'urn:a', 'v11', 't', 1000, '{}', 2, %lld);"
           " INSERT INTO journal_settle (seq, open_routes) VALUES (1, 1);"
           " INSERT INTO delivery (seq, route, state, next_at, attempts,"
           " lease_owner, lease_until, fence) VALUES"
           " (1, 'r1', 1, 1000, 1, 'old-host-1-a', 9000, 4)",
           (long long)cebs_id_hash("v11"));
  st = fixture_open_old(path, ".v11", 11, sql);
  CHECK(st != NULL);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM sqlite_master WHERE name ="
                            " 'delivery_leased'"),
            0);
  CHECK_INT(fixture_int(st, "SELECT next_at FROM delivery_ready WHERE"
                            " seq = 1"),
            9000);
  CHECK_INT(fixture_ready_mismatch(st), 0);
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, "r1", 8999, 10, 0, &c, &n), 0);
  CHECK_INT(n, 0);
  CHECK_INT(ceb_store_claim(st, "r1", 9000, 10, 0, &c, &n), 0);
  CHECK_INT(n, 1);
  if (n) CHECK_INT(c[0].fence, 5);
  ceb_claims_free(c, n);
  ceb_store_close(st);

  /* Upgrade from version 20 (key_status_at, an index of last_at): the
   * keys get their bucket of last_at (21), the index goes, and the sweep
   * still drops a key only once it is past the retention. */
  snprintf(sql, sizeof sql,
           "INSERT INTO key_status (route, order_key, last_success_at,"
           " last_at) VALUES ('r1', 'old', 1000, 1000),"
           " ('r1', 'new', 90000000, 90000000)");
  st = fixture_open_old(path, ".v20", 20, sql);
  CHECK(st != NULL);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM sqlite_master WHERE name ="
                            " 'key_status_at'"),
            0);
  CHECK_INT(fixture_int(st, "SELECT at_bucket FROM key_status WHERE"
                            " order_key = 'new'"),
            90000000 >> 22);
  CHECK(ceb_store_sweep(st, 90000000, 3600000, 100) >= 0);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM key_status"), 1);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM key_status WHERE"
                            " order_key = 'new'"),
            1);
  ceb_store_close(st);

  /* A database from a newer build is refused with a clear reason. */
  sqlite3_open(path, &db);
  sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL);
  sqlite3_close(db);
  st = NULL;
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), -7 /* EUNSUPPORTED */);
  CHECK(st == NULL);
  CHECK(strstr(err, "newer") != NULL);

  /* Bad input. */
  ceb_store_opts bad = {.spec = ""};
  CHECK(ceb_store_open(&bad, &st, err, sizeof err) < 0);
  ceb_store_opts nodir = {.spec = "/nonexistent-dir/x/store.db"};
  CHECK(ceb_store_open(&nodir, &st, err, sizeof err) < 0);
  CHECK(strstr(err, "cannot open") != NULL);
  free(path);
  return ceb_test_done("unit_store_schema");
}
