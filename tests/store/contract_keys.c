/* The contract's per-key status: the last success and failure of each
 * ordering key (ceb_store_key_stats) are kept by the settles themselves,
 * so they outlive the key's swept delivery rows and a restart, and a key
 * without outcomes for the retention goes at sweep. */
#include <string.h>

#include <ceb/status.h>

#include "contract_internal.h"

static json_t *key_of(json_t *ks, const char *key) {
  size_t i;
  json_t *o;
  json_array_foreach(ks, i, o) {
    const char *k = json_string_value(json_object_get(o, "key"));
    if (k && strcmp(k, key) == 0) return o;
  }
  return NULL;
}

static json_int_t field(json_t *o, const char *name) {
  json_t *v = json_object_get(o, name);
  return json_is_integer(v) ? json_integer_value(v) : -1; /* -1: null */
}

/* inst-a: k1 fails at 2000 and succeeds at 4000, k3 succeeds at 7000;
 * inst-b: k2 succeeds at 2000. After a sweep at 8000 with a retention of
 * 3500, only k3's rows are left. */
static void check_after_sweep(ceb_store *st) {
  json_t *ks = ceb_store_key_stats(st, "r", 10);
  CHECK(ks != NULL);
  CHECK_INT(json_array_size(ks), 1); /* inst-b went with its rows */
  json_t *a = key_of(ks, "inst-a");
  CHECK(a != NULL);
  CHECK_INT(field(a, "open"), 0);
  CHECK_INT(field(a, "last_success_at"), 7000);
  /* the failed row and its history are swept: the key keeps the time */
  CHECK_INT(field(a, "last_failure_at"), 2000);
  json_decref(ks);
}

void sc_key_status(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "key-status");
  if (!st) return;
  int64_t k1 = sc_ingest1(st, "", "k1", "r", "inst-a", 1000);
  int64_t k2 = sc_ingest1(st, "", "k2", "r", "inst-b", 1000);
  int64_t k3 = sc_ingest1(st, "", "k3", "r", "inst-a", 1000);
  ceb_claim c[3];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(st, "r", 1000, 3, c, 3), 2); /* the two heads */
  for (int i = 0; i < 2; i++) {
    if (c[i].seq == k1)
      CHECK_INT(sc_settle1(st, "r", k1, c[i].fence, CEB_DS_RETRYING, 2000, 3000,
                           NULL),
                CEB_OK);
    else
      CHECK_INT(sc_settle1(st, "r", k2, c[i].fence, CEB_DS_DONE, 2000, 0, NULL),
                CEB_OK);
    ceb_claim_free(&c[i]);
  }
  /* inst-a failed once and still has both rows open */
  json_t *ks = ceb_store_key_stats(st, "r", 10);
  json_t *a = key_of(ks, "inst-a"), *b = key_of(ks, "inst-b");
  CHECK(a && b);
  CHECK_INT(field(a, "open"), 2);
  CHECK_INT(field(a, "last_success_at"), -1);
  CHECK_INT(field(a, "last_failure_at"), 2000);
  CHECK_INT(field(b, "open"), 0);
  CHECK_INT(field(b, "last_success_at"), 2000);
  CHECK_INT(field(b, "last_failure_at"), -1);
  json_decref(ks);
  CHECK_INT(sc_claim(st, "r", 3000, 3, c, 3), 1);
  CHECK(c[0].seq == k1);
  CHECK_INT(sc_settle1(st, "r", k1, c[0].fence, CEB_DS_DONE, 4000, 0, NULL),
            CEB_OK);
  ceb_claim_free(&c[0]);
  CHECK_INT(sc_claim(st, "r", 5000, 3, c, 3), 1);
  CHECK(c[0].seq == k3);
  CHECK_INT(sc_settle1(st, "r", k3, c[0].fence, CEB_DS_DONE, 7000, 0, NULL),
            CEB_OK);
  ceb_claim_free(&c[0]);
  /* k1 and k2 (settled at 4000 and 2000) go; k3 (7000) stays */
  CHECK_INT(ceb_store_sweep(st, 8000, 3500, 100), 2);
  check_after_sweep(st);
  /* a restart: a new handle on the same store reads the same */
  ceb_store_close(st);
  st = env->open(env->ctx, "a");
  CHECK(st != NULL);
  if (!st) return;
  check_after_sweep(st);
  /* past the retention without open rows: the key goes too */
  ceb_store_sweep(st, 20000, 3500, 100);
  ks = ceb_store_key_stats(st, "r", 10);
  CHECK_INT(json_array_size(ks), 0);
  json_decref(ks);
  ceb_store_close(st);
}
