/* The sinks' life-cycle rows on PostgreSQL (ceb_store_sink_state_*): one
 * per sink that was ever disabled or failing, shared by every bridge on
 * the database. */
#include <stdio.h>
#include <string.h>

#include <ceb/status.h>

#include "store/postgres/pg_internal.h"

int cebpg_sink_state_put(ceb_store_impl *s, const char *sink,
                         const ceb_sink_state *state) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, sink);
  cebpg_p_text(&p, state->disabled ? "t" : "f");
  cebpg_p_text(&p, state->reason);
  cebpg_p_int(&p, state->disabled_at);
  cebpg_p_int(&p, state->failing_since);
  PGresult *r = cebpg_query(
      s, "sink state",
      "INSERT INTO sink_state (sink, disabled, reason, disabled_at,"
      " failing_since) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (sink) DO"
      " UPDATE SET disabled = excluded.disabled, reason = excluded.reason,"
      " disabled_at = excluded.disabled_at,"
      " failing_since = excluded.failing_since",
      &p);
  if (!r) return CEB_EIO;
  PQclear(r);
  return CEB_OK;
}

int cebpg_sink_state_get(ceb_store_impl *s, const char *sink,
                         ceb_sink_state *out) {
  memset(out, 0, sizeof *out);
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, sink);
  PGresult *r = cebpg_query(s, "sink state",
                            "SELECT disabled, reason, disabled_at,"
                            " failing_since FROM sink_state WHERE sink = $1",
                            &p);
  if (!r) return CEB_EIO;
  int rc = CEB_ENOTFOUND;
  if (PQntuples(r) > 0) {
    out->disabled = PQgetvalue(r, 0, 0)[0] == 't';
    snprintf(out->reason, sizeof out->reason, "%s", PQgetvalue(r, 0, 1));
    out->disabled_at = cebpg_int(r, 0, 2);
    out->failing_since = cebpg_int(r, 0, 3);
    rc = CEB_OK;
  }
  PQclear(r);
  return rc;
}

json_t *cebpg_sink_states(ceb_store_impl *s) {
  PGresult *r = cebpg_query(s, "sink states",
                            "SELECT sink, disabled, reason, disabled_at,"
                            " failing_since FROM sink_state ORDER BY sink"
                            " COLLATE \"C\"",
                            NULL);
  if (!r) return NULL;
  static const char *const cols[] = {"sink", "disabled", "reason",
                                     "disabled_at", "failing_since"};
  json_t *arr = json_array();
  for (int i = 0; i < PQntuples(r); i++) {
    json_t *o = json_object();
    for (int c = 0; c < 5; c++)
      cebpg_json_col(o, cols[c], r, i, c);
    json_object_set_new(o, "disabled",
                        json_boolean(PQgetvalue(r, i, 1)[0] == 't'));
    json_array_append_new(arr, o);
  }
  PQclear(r);
  return arr;
}
