/* Bounded reads of an event's status (ceb_store_event_status_max,
 * ceb_store_attempts_of_max, ceb_store_dlq_of_seq_max): the newest max
 * items, oldest first, the rest not read; max 0 reads all. What keeps the
 * admin API's status and timeline and a client's job status bounded for
 * an id many events carry, a retry-forever route's attempts and an event
 * replayed and dead again. */
#include <jansson.h>
#include <string.h>

#include "contract_internal.h"

/* The "at" of each item, or -1 past n items. */
static int64_t at_of(json_t *arr, size_t i, const char *key) {
  json_t *v = json_object_get(json_array_get(arr, i), key);
  return v ? (int64_t)json_integer_value(v) : -1;
}

void sc_bounded(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "bounded");
  if (!st) return;
  /* five failed attempts at 1000 .. 5000 */
  int64_t seq = sc_ingest1(st, "c", "b1", "r", NULL, 0);
  CHECK(seq > 0);
  for (int k = 1; k <= 5; k++) {
    ceb_claim c[1];
    memset(c, 0, sizeof c);
    CHECK_INT(sc_claim(st, "r", (int64_t)k * 1000 - 1, 1, c, 1), 1);
    CHECK_INT(sc_settle1(st, "r", seq, c[0].fence, CEB_DS_RETRYING,
                         (int64_t)k * 1000, (int64_t)(k + 1) * 1000 - 1, NULL),
              0);
    ceb_claim_free(&c[0]);
  }
  json_t *h = ceb_store_attempts_of_max(st, seq, 3);
  if (h) { /* an engine with the history */
    CHECK_INT(json_array_size(h), 3);
    CHECK_INT(at_of(h, 0, "at"), 3000); /* the newest three, oldest first */
    CHECK_INT(at_of(h, 2, "at"), 5000);
    json_decref(h);
    h = ceb_store_attempts_of_max(st, seq, 0);
    CHECK_INT(json_array_size(h), 5);
    json_decref(h);
  }
  /* dead three times (replayed in between) */
  for (int k = 0; k < 3; k++) {
    ceb_claim c[1];
    memset(c, 0, sizeof c);
    CHECK_INT(sc_claim(st, "r", 10000 + k * 1000, 1, c, 1), 1);
    int64_t dlq_id = 0;
    CHECK_INT(sc_settle1(st, "r", seq, c[0].fence, CEB_DS_DEAD,
                         10000 + k * 1000 + 1, 0, &dlq_id),
              0);
    CHECK(dlq_id > 0);
    ceb_claim_free(&c[0]);
    ceb_dlq_filter f = {.id = dlq_id};
    size_t n = 0;
    if (k < 2)
      CHECK_INT(ceb_store_dlq_replay(st, &f, 10000 + k * 1000 + 2, 0, &n, NULL),
                0);
  }
  json_t *d = ceb_store_dlq_of_seq_max(st, seq, 2);
  CHECK_INT(json_array_size(d), 2);
  CHECK(at_of(d, 0, "id") < at_of(d, 1, "id"));
  CHECK_INT(at_of(d, 1, "created_at"), 12001); /* the last death */
  CHECK_INT(at_of(d, 0, "created_at"), 11001);
  json_decref(d);
  d = ceb_store_dlq_of_seq(st, seq);
  CHECK_INT(json_array_size(d), 3);
  json_decref(d);
  /* one id from three clients: the newest two, oldest first */
  int64_t s2 = sc_ingest1(st, "c2", "b1", "r", NULL, 20000);
  int64_t s3 = sc_ingest1(st, "c3", "b1", "r", NULL, 20000);
  CHECK(s2 > seq && s3 > s2);
  json_t *s = ceb_store_event_status_max(st, "b1", NULL, 2);
  CHECK_INT(json_array_size(s), 2);
  CHECK_INT(at_of(s, 0, "seq"), s2);
  CHECK_INT(at_of(s, 1, "seq"), s3);
  CHECK_INT(json_array_size(json_object_get(json_array_get(s, 1), "routes")),
            1);
  json_decref(s);
  s = ceb_store_event_status_max(st, "b1", NULL, 0);
  CHECK_INT(json_array_size(s), 3);
  json_decref(s);
  ceb_store_close(st);
}
