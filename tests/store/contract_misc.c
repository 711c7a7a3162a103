/* The contract of the contract register and the sweeper. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/plugin.h>
#include <ceb/status.h>

#include "contract_internal.h"

/* A version is stored once; the same document again is a duplicate; a
 * different document under a held version is a conflict, flagged and not
 * stored. */
void sc_contracts(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "contracts");
  if (!st) return;
  static const char d1[] = "{\"asyncapi\":\"3.0.0\",\"v\":1}";
  static const char d2[] = "{\"asyncapi\":\"3.0.0\",\"v\":2}";
  CHECK_INT(ceb_store_contract_put(st, "duo", "1.0.0", d1, sizeof d1 - 1,
                                   "https://reg/duo", 1000),
            CEB_OK);
  CHECK_INT(ceb_store_contract_put(st, "duo", "1.0.0", d1, sizeof d1 - 1,
                                   "https://reg/duo", 1100),
            CEB_EDUPLICATE);
  CHECK_INT(ceb_store_contract_put(st, "duo", "1.0.0", d2, sizeof d2 - 1,
                                   "https://reg/duo", 1200),
            CEB_ECONFLICT);
  CHECK_INT(ceb_store_contract_put(st, "duo", "1.1.0", d2, sizeof d2 - 1,
                                   "https://reg/duo", 1300),
            CEB_OK);
  CHECK_INT(ceb_store_contract_put(st, "rio", "2.0.0", d1, sizeof d1 - 1,
                                   "file:rio.json", 1400),
            CEB_OK);
  size_t len = 0;
  char *doc = ceb_store_contract_get(st, "duo", "1.0.0", &len);
  CHECK(doc && len == sizeof d1 - 1 && memcmp(doc, d1, len) == 0);
  free(doc);
  CHECK(ceb_store_contract_get(st, "duo", "9.9.9", &len) == NULL);
  json_t *l = ceb_store_contract_list(st, "duo");
  CHECK_INT(json_array_size(l), 2);
  static const char *const keys[] = {
      "name",     "version",         "sha256",      "provenance", "fetched_at",
      "conflict", "conflict_sha256", "conflict_at", NULL};
  size_t i;
  json_t *row;
  int flagged = 0;
  json_array_foreach(l, i, row) {
    for (size_t k = 0; keys[k]; k++)
      CHECK_MSG(json_object_get(row, keys[k]) != NULL, "contract row lacks %s",
                keys[k]);
    const char *v = json_string_value(json_object_get(row, "version"));
    if (v && strcmp(v, "1.0.0") == 0) {
      flagged = json_integer_value(json_object_get(row, "conflict")) == 1;
      CHECK_INT(json_integer_value(json_object_get(row, "fetched_at")), 1000);
      CHECK_INT(json_integer_value(json_object_get(row, "conflict_at")), 1200);
      CHECK_INT(json_string_length(json_object_get(row, "sha256")), 64);
    }
  }
  CHECK(flagged);
  json_decref(l);
  l = ceb_store_contract_list(st, NULL);
  CHECK_INT(json_array_size(l), 3);
  json_decref(l);
  ceb_store_close(st);
}

/* Settled journal rows go after the retention, except those a DLQ row
 * still needs; open ones stay; expired idempotency records go; at most
 * chunk rows of a kind per call. */
void sc_sweep(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "sweep");
  if (!st) return;
  int64_t ok = sc_ingest1(st, "", "ok", "r", NULL, 1000);
  int64_t dead = sc_ingest1(st, "", "dead", "r", NULL, 1000);
  sc_ingest1(st, "", "open", "r2", NULL, 1000);
  ceb_claim c[2];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(st, "r", 1000, 2, c, 2), 2);
  CHECK_INT(sc_settle1(st, "r", ok, c[0].fence, CEB_DS_DONE, 2000, 0, NULL),
            CEB_OK);
  CHECK_INT(sc_settle1(st, "r", dead, c[1].fence, CEB_DS_DEAD, 2000, 0, NULL),
            CEB_OK);
  ceb_claim_free(&c[0]);
  ceb_claim_free(&c[1]);
  CHECK_INT(ceb_store_sweep(st, 2999, 1000, 100), 0);
  CHECK_INT(ceb_store_sweep(st, 3000, 1000, 100), 1);
  json_t *s = ceb_store_event_status(st, "ok", NULL);
  CHECK_INT(json_array_size(s), 0);
  json_decref(s);
  s = ceb_store_event_status(st, "dead", NULL);
  CHECK_INT(json_array_size(s), 1); /* the DLQ keeps it for a replay */
  json_decref(s);
  s = ceb_store_event_status(st, "open", NULL);
  CHECK_INT(json_array_size(s), 1);
  json_decref(s);
  CHECK_INT(ceb_store_sweep(st, 1000000, 1000, 100), 0);

  /* chunks: unrouted events are settled when journaled */
  for (int i = 0; i < 25; i++) {
    char id[16];
    snprintf(id, sizeof id, "x%d", i);
    CHECK(sc_ingest1(st, "", id, NULL, NULL, 5000) > 0);
  }
  CHECK_INT(ceb_store_sweep(st, 10000, 1000, 10), 10);
  CHECK_INT(ceb_store_sweep(st, 10000, 1000, 10), 10);
  CHECK_INT(ceb_store_sweep(st, 10000, 1000, 10), 5);
  CHECK_INT(ceb_store_sweep(st, 10000, 1000, 10), 0);

  /* an expired idempotency record goes */
  ceb_idem_result r;
  memset(&r, 0, sizeof r);
  CHECK_INT(ceb_store_idem_begin(st, "c", "k", "fp", 20000, &r), CEB_OK);
  CHECK_INT(r.state, CEB_IDEM_NEW);
  CHECK_INT(ceb_store_idem_finish(st, "c", "k", 202, NULL, "", 0, 20000, 100),
            CEB_OK);
  CHECK_INT(ceb_store_sweep(st, 20099, 1000000, 100), 0);
  CHECK_INT(ceb_store_sweep(st, 20100, 1000000, 100), 1);
  ceb_store_close(st);
}
