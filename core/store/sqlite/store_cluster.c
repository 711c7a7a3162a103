/* The SQLite engine's side of several bridges on one store. A SQLite store
 * serves one bridge (one process writes it; tools beside it only read or
 * make small admin writes), so it is never shared and this bridge leads
 * every task. It still keeps the instances and leaders tables, so the
 * cluster view (`cebridge cluster`, /v1/cluster) reads the same on both
 * engines: the bridge, its heartbeat, what it leads and holds. */
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "store/sqlite/store_internal.h"

/* As on PostgreSQL (core/store/postgres/pg_cluster.c). */
#define STALE_DROP_MS 3600000

int cebs_shared(cebs_store *st) {
  (void)st;
  return 0;
}

typedef struct lead_args {
  const char *task, *instance;
  int64_t now;
} lead_args;

static int lead_run(sqlite3 *db, void *arg) {
  lead_args *a = arg;
  sqlite3_stmt *s = cebs_stmt(
      db, "INSERT INTO leaders (task, instance, since) VALUES (?1, ?2, ?3)"
          " ON CONFLICT(task) DO UPDATE SET instance = excluded.instance,"
          " since = excluded.since WHERE instance <> excluded.instance");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, a->task, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, a->instance, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, a->now);
  int step = sqlite3_step(s);
  sqlite3_reset(s);
  return step == SQLITE_DONE ? CEB_OK : CEB_EIO;
}

int cebs_try_lead(cebs_store *st, const char *task, int64_t now) {
  if (!st || !task || !*task) return CEB_EINVAL;
  /* recorded for the cluster view; the write changes nothing after the
   * first round, and its loss in a power cut is harmless (NOSYNC) */
  lead_args a = {task, st->instance, now};
  cebs_call_nosync(st, lead_run, &a);
  return 1;
}

typedef struct beat_args {
  const ceb_store_member *m;
  const char *instance;
  int64_t now;
} beat_args;

static int beat_run(sqlite3 *db, void *arg) {
  beat_args *a = arg;
  sqlite3_stmt *s =
      cebs_stmt(db, "DELETE FROM instances WHERE heartbeat_at < ?1 AND"
                    " id <> ?2");
  if (!s) return CEB_EIO;
  sqlite3_bind_int64(s, 1, a->now - STALE_DROP_MS);
  sqlite3_bind_text(s, 2, a->instance, -1, SQLITE_STATIC);
  int step = sqlite3_step(s);
  sqlite3_reset(s);
  if (step != SQLITE_DONE) return CEB_EIO;
  s = cebs_stmt(db, "INSERT INTO instances (id, hostname, pid, version,"
                    " started_at, heartbeat_at) VALUES (?1, ?2, ?3, ?4, ?5,"
                    " ?6) ON CONFLICT(id) DO UPDATE SET hostname ="
                    " excluded.hostname, pid = excluded.pid, version ="
                    " excluded.version, heartbeat_at = excluded.heartbeat_at");
  if (!s) return CEB_EIO;
  const ceb_store_member *m = a->m;
  sqlite3_bind_text(s, 1, a->instance, -1, SQLITE_STATIC);
  sqlite3_bind_text(s, 2, m && m->hostname ? m->hostname : "", -1,
                    SQLITE_STATIC);
  sqlite3_bind_int64(s, 3, m ? m->pid : 0);
  sqlite3_bind_text(s, 4, m && m->version ? m->version : "", -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 5, m && m->started_at ? m->started_at : a->now);
  sqlite3_bind_int64(s, 6, a->now);
  step = sqlite3_step(s);
  sqlite3_reset(s);
  return step == SQLITE_DONE ? CEB_OK : CEB_EIO;
}

int cebs_heartbeat(cebs_store *st, const ceb_store_member *m, int64_t now) {
  beat_args a = {m, st->instance, now};
  return cebs_call_nosync(st, beat_run, &a);
}

static int leave_run(sqlite3 *db, void *arg) {
  const char *instance = arg;
  sqlite3_stmt *s = cebs_stmt(db, "DELETE FROM instances WHERE id = ?1");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, instance, -1, SQLITE_STATIC);
  int step = sqlite3_step(s);
  sqlite3_reset(s);
  if (step != SQLITE_DONE) return CEB_EIO;
  s = cebs_stmt(db, "DELETE FROM leaders WHERE instance = ?1");
  if (!s) return CEB_EIO;
  sqlite3_bind_text(s, 1, instance, -1, SQLITE_STATIC);
  step = sqlite3_step(s);
  sqlite3_reset(s);
  return step == SQLITE_DONE ? CEB_OK : CEB_EIO;
}

int cebs_leave(cebs_store *st) {
  return cebs_call(st, leave_run, st->instance);
}

/* The instance object of id in arr, added (only its id) when absent: a
 * lease holder that never registered or left the table. */
static json_t *instance_of(json_t *arr, const char *id) {
  size_t i;
  json_t *o;
  json_array_foreach(arr, i, o) {
    if (strcmp(json_string_value(json_object_get(o, "id")), id) == 0) return o;
  }
  o = json_pack("{s:s, s:b, s:o, s:o}", "id", id, "stale", 1, "leads",
                json_array(), "leases", json_object());
  json_array_append_new(arr, o);
  return o;
}

json_t *cebs_cluster(cebs_store *st, int64_t now) {
  sqlite3 *db = cebs_read_begin(st);
  json_t *arr = json_array(), *expired = json_object();
  int ok = cebs_exec(db, "BEGIN") == CEB_OK;
  sqlite3_stmt *s = NULL;
  if (ok && sqlite3_prepare_v2(db,
                               "SELECT id, hostname, pid, version,"
                               " started_at, heartbeat_at FROM instances"
                               " ORDER BY started_at, id",
                               -1, &s, NULL) == SQLITE_OK) {
    static const char *const cols[] = {"id",      "hostname",   "pid",
                                       "version", "started_at", "heartbeat_at"};
    while (sqlite3_step(s) == SQLITE_ROW) {
      json_t *o = json_object();
      for (int k = 0; k < 6; k++)
        cebs_json_col(o, cols[k], s, k);
      json_object_set_new(
          o, "stale",
          json_boolean(sqlite3_column_int64(s, 5) < now - CEB_STORE_STALE_MS));
      json_object_set_new(o, "leads", json_array());
      json_object_set_new(o, "leases", json_object());
      json_array_append_new(arr, o);
    }
  } else {
    ok = 0;
  }
  sqlite3_finalize(s);
  s = NULL;
  if (ok && sqlite3_prepare_v2(db,
                               "SELECT task, instance FROM leaders"
                               " ORDER BY task",
                               -1, &s, NULL) == SQLITE_OK) {
    while (sqlite3_step(s) == SQLITE_ROW)
      json_array_append_new(
          json_object_get(
              instance_of(arr, (const char *)sqlite3_column_text(s, 1)),
              "leads"),
          json_string((const char *)sqlite3_column_text(s, 0)));
  } else {
    ok = 0;
  }
  sqlite3_finalize(s);
  s = NULL;
  if (ok && sqlite3_prepare_v2(db,
                               /* rows in progress sit in the claimable
                                * set at their lease end (store_ready.c):
                                * no scan of delivery */
                               "SELECT coalesce(o.instance, ''), d.route,"
                               " d.next_at > ?1, count(*)"
                               " FROM delivery_ready r CROSS JOIN delivery d"
                               " LEFT JOIN lease_owner o ON o.id = d.holder"
                               " WHERE d.seq = r.seq AND d.route = r.route"
                               " AND d.state = 1"
                               " GROUP BY 1, 2, 3 ORDER BY 2",
                               -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(s, 1, now);
    while (sqlite3_step(s) == SQLITE_ROW) {
      const char *owner = (const char *)sqlite3_column_text(s, 0);
      const char *route = (const char *)sqlite3_column_text(s, 1);
      json_t *into =
          sqlite3_column_int(s, 2)
              ? json_object_get(instance_of(arr, owner ? owner : ""), "leases")
              : expired;
      json_int_t had = json_integer_value(json_object_get(into, route));
      json_object_set_new(into, route,
                          json_integer(had + sqlite3_column_int64(s, 3)));
    }
  } else {
    ok = 0;
  }
  sqlite3_finalize(s);
  cebs_exec(db, "COMMIT");
  cebs_read_end(st, db);
  if (!ok) {
    json_decref(arr);
    json_decref(expired);
    return NULL;
  }
  return json_pack("{s:s, s:o, s:o}", "instance", st->instance, "instances",
                   arr, "leases_expired", expired);
}
