/* The sinks' life-cycle rows (ceb_store_sink_state_*): one per sink that was
 * ever disabled or failing, written through the committer (synced), read
 * on the read connections. */
#include <stdio.h>
#include <string.h>

#include <ceb/status.h>

#include "store/sqlite/store_internal.h"

typedef struct put_args {
  const char *sink;
  const ceb_sink_state *state;
} put_args;

static int put_run(sqlite3 *db, void *arg) {
  put_args *a = arg;
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db,
                         "INSERT OR REPLACE INTO sink_state (sink, disabled,"
                         " reason, disabled_at, failing_since)"
                         " VALUES (?1, ?2, ?3, ?4, ?5)",
                         -1, &s, NULL) != SQLITE_OK)
    return CEB_EIO;
  sqlite3_bind_text(s, 1, a->sink, -1, SQLITE_STATIC);
  sqlite3_bind_int(s, 2, a->state->disabled ? 1 : 0);
  sqlite3_bind_text(s, 3, a->state->reason, -1, SQLITE_STATIC);
  sqlite3_bind_int64(s, 4, a->state->disabled_at);
  sqlite3_bind_int64(s, 5, a->state->failing_since);
  int rc = sqlite3_step(s) == SQLITE_DONE ? CEB_OK : CEB_EIO;
  sqlite3_finalize(s);
  return rc;
}

int cebs_sink_state_put(cebs_store *st, const char *sink,
                        const ceb_sink_state *state) {
  put_args a = {sink, state};
  return cebs_call(st, put_run, &a);
}

int cebs_sink_state_get(cebs_store *st, const char *sink, ceb_sink_state *out) {
  memset(out, 0, sizeof *out);
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  int rc = CEB_EIO;
  if (db && sqlite3_prepare_v2(db,
                               "SELECT disabled, reason, disabled_at,"
                               " failing_since FROM sink_state WHERE sink = ?1",
                               -1, &s, NULL) == SQLITE_OK) {
    sqlite3_bind_text(s, 1, sink, -1, SQLITE_STATIC);
    int step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
      out->disabled = sqlite3_column_int(s, 0);
      snprintf(out->reason, sizeof out->reason, "%s",
               (const char *)sqlite3_column_text(s, 1));
      out->disabled_at = sqlite3_column_int64(s, 2);
      out->failing_since = sqlite3_column_int64(s, 3);
      rc = CEB_OK;
    } else if (step == SQLITE_DONE) {
      rc = CEB_ENOTFOUND;
    }
  }
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return rc;
}

json_t *cebs_sink_states(cebs_store *st) {
  sqlite3 *db = cebs_read_begin(st);
  sqlite3_stmt *s = NULL;
  json_t *arr = NULL;
  if (db && sqlite3_prepare_v2(db,
                               "SELECT sink, disabled, reason, disabled_at,"
                               " failing_since FROM sink_state ORDER BY sink",
                               -1, &s, NULL) == SQLITE_OK) {
    static const char *const cols[] = {"sink", "disabled", "reason",
                                       "disabled_at", "failing_since"};
    arr = json_array();
    while (sqlite3_step(s) == SQLITE_ROW) {
      json_t *o = json_object();
      for (int i = 0; i < 5; i++)
        cebs_json_col(o, cols[i], s, i);
      json_object_set_new(o, "disabled",
                          json_boolean(sqlite3_column_int(s, 1)));
      json_array_append_new(arr, o);
    }
  }
  sqlite3_finalize(s);
  cebs_read_end(st, db);
  return arr;
}
