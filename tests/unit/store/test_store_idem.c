/* Idempotency record states and the contract register states. */
#include <ceb/plugin.h>
#include <ceb/status.h>

#include "store_fixture.h"

static void res_free(ceb_idem_result *r) {
  free(r->content_type);
  free(r->body);
}

/* A reservation row as an abort leaves it when its write failed (a full
 * disk rolled the DELETE back): in flight, held by no request. */
static int stale_run(sqlite3 *db, void *arg) {
  (void)arg;
  return sqlite3_exec(db,
                      "INSERT INTO idempotency (client, key, fingerprint,"
                      " state, created_at) VALUES ('c3', 'k3', 'fp', 0, 1)",
                      NULL, NULL, NULL) == SQLITE_OK
             ? CEB_OK
             : CEB_EIO;
}

/* A reservation no request of this run holds is taken over by the next
 * begin, instead of answering "in flight" to every retry until a restart;
 * one that is held still answers "in flight". */
static void test_stale_reservation(ceb_store *st) {
  ceb_idem_result r;
  CHECK_INT(cebs_call(cebs_of(st), stale_run, NULL), 0);
  CHECK_INT(ceb_store_idem_begin(st, "c3", "k3", "fp", 5000, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_NEW);
  CHECK_INT(ceb_store_idem_begin(st, "c3", "k3", "fp", 5001, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_IN_FLIGHT);
  CHECK_INT(ceb_store_idem_finish(st, "c3", "k3", 202, NULL, "", 0, 5002, 1000),
            0);
  CHECK_INT(ceb_store_idem_begin(st, "c3", "k3", "fp", 5003, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_REPLAY);
  res_free(&r);
}

int main(void) {
  ceb_store *st = fixture_open("idem", NULL);
  ceb_idem_result r;
  const long long ttl = 7LL * 86400 * 1000;

  CHECK_INT(ceb_store_idem_begin(st, "c1", "k", "fp1", 1000, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_NEW);
  CHECK_INT(ceb_store_idem_begin(st, "c1", "k", "fp1", 1001, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_IN_FLIGHT);
  CHECK_INT(ceb_store_idem_begin(st, "c1", "k", "other", 1001, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_MISMATCH);
  /* keys are per client */
  CHECK_INT(ceb_store_idem_begin(st, "c2", "k", "fp9", 1001, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_NEW);

  CHECK_INT(ceb_store_idem_finish(st, "c1", "k", 202, "application/json",
                                  "{\"ok\":1}", 8, 2000, ttl),
            0);
  CHECK_INT(ceb_store_idem_begin(st, "c1", "k", "fp1", 3000, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_REPLAY);
  CHECK_INT(r.http_status, 202);
  CHECK_STR(r.content_type, "application/json");
  CHECK_INT(r.body_len, 8);
  CHECK(r.body && memcmp(r.body, "{\"ok\":1}", 8) == 0);
  res_free(&r);
  CHECK_INT(ceb_store_idem_begin(st, "c1", "k", "fpX", 3000, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_MISMATCH);
  /* finishing twice: no reservation held */
  CHECK_INT(ceb_store_idem_finish(st, "c1", "k", 500, NULL, NULL, 0, 3000, ttl),
            CEB_ENOTFOUND);
  /* expired: NEW again, then sweeping removes done records */
  CHECK_INT(ceb_store_idem_begin(st, "c1", "k", "fp2", 2000 + ttl, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_NEW);
  CHECK_INT(ceb_store_idem_abort(st, "c1", "k"), 0);
  CHECK_INT(ceb_store_idem_begin(st, "c1", "k", "fp3", 2000 + ttl, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_NEW);
  CHECK_INT(ceb_store_idem_finish(st, "c1", "k", 201, NULL, "", 0, 5000, 10),
            0);
  CHECK_INT(ceb_store_sweep(st, 5009, 1000000, 100), 0);
  CHECK_INT(ceb_store_sweep(st, 5010, 1000000, 100), 1);
  /* a crashed run's reservations are dropped at start */
  CHECK_INT(ceb_store_idem_reset_inflight(st), 0);
  CHECK_INT(ceb_store_idem_begin(st, "c2", "k", "fp9", 6000, &r), 0);
  CHECK_INT(r.state, CEB_IDEM_NEW);
  CHECK_INT(ceb_store_idem_begin(st, "c1", "", "fp", 1, &r), CEB_EINVAL);
  test_stale_reservation(st);

  /* Contract register. */
  const char *doc = "{\"asyncapi\":\"3.0.0\"}";
  CHECK_INT(ceb_store_contract_put(st, "duo", "1.0.0", doc, strlen(doc),
                                   "https://reg/duo", 100),
            0);
  CHECK_INT(ceb_store_contract_put(st, "duo", "1.0.0", doc, strlen(doc),
                                   "https://reg/duo", 200),
            CEB_EDUPLICATE);
  CHECK_INT(ceb_store_contract_put(st, "duo", "1.0.0", "{}", 2,
                                   "https://reg/duo", 300),
            CEB_ECONFLICT);
  size_t len = 0;
  char *held = ceb_store_contract_get(st, "duo", "1.0.0", &len);
  CHECK_STR(held, doc); /* never overwritten */
  free(held);
  json_t *l = ceb_store_contract_list(st, "duo");
  CHECK_INT(json_array_size(l), 1);
  json_t *c = json_array_get(l, 0);
  CHECK_INT(json_integer_value(json_object_get(c, "conflict")), 1);
  CHECK_INT(json_integer_value(json_object_get(c, "conflict_at")), 300);
  CHECK_INT(strlen(json_string_value(json_object_get(c, "sha256"))), 64);
  json_decref(l);
  CHECK_INT(ceb_store_contract_put(st, "duo", "1.1.0", "{}", 2, NULL, 400), 0);
  CHECK(ceb_store_contract_get(st, "duo", "9", NULL) == NULL);
  CHECK_INT(ceb_store_contract_put(st, "", "1", "{}", 2, NULL, 1), CEB_EINVAL);
  ceb_store_close(st);
  return ceb_test_done("unit_store_idem");
}
