/* The contract's helpers and its run (store_contract.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "contract_internal.h"

void ceb_store_contract_run(const ceb_store_contract_env *env) {
  void (*const parts[])(const ceb_store_contract_env *) = {
      sc_ingest,   sc_fifo,      sc_claims,         sc_leases,
      sc_settle,   sc_recover,   sc_status,         sc_dlq,
      sc_idem,     sc_idem_race, sc_contracts,      sc_sweep,
      sc_sinks,    sc_pull,      sc_lead,           sc_cluster,
      sc_replay,   sc_open_key,  sc_dlq_replay_key, sc_key_status,
      sc_callback, sc_bounded,   sc_claim_ingest};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
    int before = ceb_test_failures;
    parts[i](env);
    if (ceb_test_failures != before)
      fprintf(stderr, "store contract (%s): part %zu failed\n", env->engine,
              i + 1);
  }
}

ceb_store *sc_fresh(const ceb_store_contract_env *env, const char *tag) {
  int rc = env->fresh(env->ctx, tag);
  CHECK_MSG(rc == CEB_OK, "%s: cannot make an empty store for %s (%d)",
            env->engine, tag, rc);
  if (rc != CEB_OK) return NULL;
  ceb_store *st = env->open(env->ctx, "a");
  CHECK_MSG(st != NULL, "%s: cannot open the store for %s", env->engine, tag);
  return st;
}

int64_t sc_ingest1(ceb_store *st, const char *client, const char *id,
                   const char *route, const char *key, int64_t now) {
  char json[256];
  snprintf(json, sizeof json,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:sc\","
           "\"type\":\"nl.sc.t\"}",
           id);
  ceb_ingest_route r = {.route = route, .order_key = key, .first_at = now};
  ceb_ingest_event e = {.client = client,
                        .source = "urn:sc",
                        .id = id,
                        .type = "nl.sc.t",
                        .json = json,
                        .json_len = strlen(json),
                        .routes = route ? &r : NULL,
                        .nroutes = route ? 1 : 0};
  ceb_ingest_batch b = {&e, 1, now};
  int rc = ceb_store_ingest_wait(st, &b);
  CHECK_INT(rc, CEB_OK);
  if (rc != CEB_OK) return -1;
  return e.inserted ? e.seq : 0;
}

int sc_claim(ceb_store *st, const char *route, int64_t now, size_t max,
             ceb_claim *out, size_t cap) {
  ceb_claim *c = NULL;
  size_t n = 0;
  int rc = ceb_store_claim(st, route, now, max, 0, &c, &n);
  CHECK_INT(rc, CEB_OK);
  if (rc != CEB_OK) return -1;
  for (size_t i = 0; i < n; i++) {
    if (i < cap) {
      out[i] = c[i]; /* takes its strings */
      memset(&c[i], 0, sizeof c[i]);
    }
  }
  ceb_claims_free(c, n);
  return (int)n;
}

int sc_settle1(ceb_store *st, const char *route, int64_t seq, int64_t fence,
               int state, int64_t now, int64_t next_at, int64_t *dlq_id) {
  ceb_attempt_result r = {.seq = seq,
                          .route = route,
                          .fence = fence,
                          .state = state,
                          .next_at = next_at,
                          .now = now,
                          .status_code = 503,
                          .reason = "http.503",
                          .error = "unavailable",
                          .dead_reason = "rejected",
                          .sink = "out",
                          .dead_json = "{\"id\":\"dead\"}"};
  int rc = ceb_store_settle_wait(st, &r);
  if (dlq_id) *dlq_id = r.dlq_id;
  return rc;
}

const char *sc_state(ceb_store *st, const char *id, const char *route,
                     char *buf, size_t size) {
  json_t *s = ceb_store_event_status(st, id, NULL);
  const char *found = NULL;
  size_t i, j;
  json_t *ev, *r;
  json_array_foreach(s, i, ev) {
    json_array_foreach(json_object_get(ev, "routes"), j, r) {
      const char *name = json_string_value(json_object_get(r, "route"));
      if (name && strcmp(name, route) == 0) {
        snprintf(buf, size, "%s",
                 json_string_value(json_object_get(r, "state")));
        found = buf;
      }
    }
  }
  json_decref(s);
  return found;
}
