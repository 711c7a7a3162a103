/* Shared helpers of the store unit tests: a fresh store in a temp dir. */
#ifndef STORE_FIXTURE_H
#define STORE_FIXTURE_H

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

#include "ceb_test.h"
#include "store/ceb_store.h"
#include "store/sqlite/store_internal.h"

static inline ceb_store *fixture_open_in(const char *tag, const char *instance,
                                         char **path_out) {
  char *dir = ceb_test_tmpdir(tag);
  char *path = malloc(strlen(dir) + 16);
  sprintf(path, "%s/store.db", dir);
  free(dir);
  ceb_store_opts o = {.spec = path,
                      .synchronous_full = 0,
                      .group_max = 512,
                      .queue_max = 100000,
                      .instance = instance};
  char err[256] = "";
  ceb_store *st = NULL;
  int rc = ceb_store_open(&o, &st, err, sizeof err);
  CHECK_MSG(rc == 0, "open: %s", err);
  if (path_out)
    *path_out = path;
  else
    free(path);
  return st;
}

static inline ceb_store *fixture_open(const char *tag, char **path_out) {
  return fixture_open_in(tag, NULL, path_out);
}

/* A fresh store claiming as instance. */
static inline ceb_store *fixture_open_as(const char *tag,
                                         const char *instance) {
  return fixture_open_in(tag, instance, NULL);
}

/* Reads one integer with a raw SQL query on a read connection. */
static inline long long fixture_int(ceb_store *st, const char *sql) {
  sqlite3 *db = cebs_read_begin(cebs_of(st));
  sqlite3_stmt *s = NULL;
  long long v = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK &&
      sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  cebs_read_end(cebs_of(st), db);
  return v;
}

/* A database of schema `version` next to path (path + suffix), made by
 * the migrations up to that version and filled by sql, then opened as a
 * store of this build: so upgraded. NULL (and a failed check) on error. */
static inline ceb_store *fixture_open_old(const char *path, const char *suffix,
                                          int version, const char *sql) {
  char old[1024], err[256] = "";
  snprintf(old, sizeof old, "%s%s", path, suffix);
  sqlite3 *db = NULL;
  CHECK_INT(sqlite3_open(old, &db), SQLITE_OK);
  CHECK_INT(cebs_migrate_to(db, version, err, sizeof err), 0);
  CHECK_INT(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
  ceb_store_opts o = {.spec = old, .synchronous_full = 1, .group_max = 64};
  ceb_store *st = NULL;
  int rc = ceb_store_open(&o, &st, err, sizeof err);
  CHECK_MSG(rc == 0, "upgrade from %d: %s", version, err);
  if (st)
    CHECK_INT(fixture_int(st, "PRAGMA user_version"), CEB_STORE_SCHEMA_VERSION);
  return st;
}

/* Rows by which the claimable set (delivery_ready) differs from its
 * definition: open (pending, retrying or in progress) deliveries with no
 * older open row of their (route, key), at their next_at (the lease end
 * while in progress). 0 when it is right. */
static inline long long fixture_ready_mismatch(ceb_store *st) {
  return fixture_int(
      st, "SELECT (SELECT COUNT(*) FROM (SELECT route, seq FROM delivery d"
          " WHERE state < 3 AND (order_key IS NULL OR NOT EXISTS (SELECT 1"
          " FROM delivery p WHERE p.route = d.route AND p.order_key ="
          " d.order_key AND p.state < 3 AND p.seq < d.seq))"
          " EXCEPT SELECT route, seq FROM delivery_ready))"
          " + (SELECT COUNT(*) FROM delivery_ready r WHERE NOT EXISTS (SELECT 1"
          " FROM delivery d WHERE d.seq = r.seq AND d.route = r.route"
          " AND d.next_at = r.next_at AND d.state < 3))");
}

/* Ingests one event synchronously with the given routes (NULL-terminated
 * names, all unordered unless keys given). Returns its seq, 0 duplicate. */
static inline long long fixture_ingest(ceb_store *st, const char *source,
                                       const char *id, const char *type,
                                       const char *const *routes,
                                       const char *const *keys, long long now) {
  ceb_ingest_route r[8];
  size_t n = 0;
  for (; routes && routes[n]; n++)
    r[n] = (ceb_ingest_route){routes[n], keys ? keys[n] : NULL, now};
  char json[256];
  snprintf(json, sizeof json,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"%s\","
           "\"type\":\"%s\"}",
           id, source, type);
  ceb_ingest_event e = {.source = source,
                        .id = id,
                        .type = type,
                        .json = json,
                        .json_len = strlen(json),
                        .routes = r,
                        .nroutes = n};
  ceb_ingest_batch b = {&e, 1, now};
  int rc = ceb_store_ingest_wait(st, &b);
  CHECK_INT(rc, 0);
  return e.inserted ? e.seq : 0;
}

#endif
