/* The contract of journal ingest and deliveries: dedupe, FIFO per key
 * across holders, claim limits, leases and fences, settling, recovery,
 * counts and the status shape. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "contract_internal.h"

/* ---- ingest ---- */

typedef struct heard {
  atomic_int batches, inserted, done, heard_before_done;
  atomic_int status;
} heard;

static void on_ingested(void *arg, const ceb_ingest_batch *b) {
  heard *h = arg;
  atomic_fetch_add(&h->batches, 1);
  for (size_t i = 0; i < b->count; i++)
    atomic_fetch_add(&h->inserted, b->events[i].inserted);
}

static void on_done(void *arg, int status) {
  heard *h = arg;
  atomic_store(&h->heard_before_done, atomic_load(&h->batches) > 0);
  atomic_store(&h->status, status);
  atomic_store(&h->done, 1);
}

static int is_done(void *arg) {
  return atomic_load(&((heard *)arg)->done);
}

static ceb_ingest_event event(const char *client, const char *id,
                              const ceb_ingest_route *r, size_t nr) {
  static const char json[] = "{\"specversion\":\"1.0\"}";
  return (ceb_ingest_event){.client = client,
                            .source = "urn:sc",
                            .id = id,
                            .type = "nl.sc.t",
                            .json = json,
                            .json_len = sizeof json - 1,
                            .routes = r,
                            .nroutes = nr};
}

/* Dedupe on (client, source, id), a duplicate within one batch included;
 * the ingest listener hears of the batch before its done; done gets
 * CEB_OK once the rows are there to read; unrouted events are journaled
 * without deliveries. */
void sc_ingest(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "ingest");
  if (!st) return;
  heard h = {0};
  ceb_store_set_ingest_listener(st, on_ingested, &h);
  ceb_ingest_route r = {.route = "r", .first_at = 1000};
  ceb_ingest_event ev[5] = {event("c", "e1", &r, 1), event("c", "e1", &r, 1),
                            event("d", "e1", &r, 1), event(NULL, "e2", &r, 1),
                            event("", "e2", &r, 1)};
  ceb_ingest_batch b = {ev, 5, 1000};
  CHECK_INT(ceb_store_ingest_async(st, &b, on_done, &h), CEB_OK);
  CHECK(ceb_test_wait(is_done, &h, 30000));
  CHECK_INT(atomic_load(&h.status), CEB_OK);
  CHECK(atomic_load(&h.heard_before_done));
  CHECK_INT(atomic_load(&h.batches), 1);
  CHECK_INT(ev[0].inserted, 1);
  CHECK_INT(ev[1].inserted, 0); /* same batch, same (client, source, id) */
  CHECK_INT(ev[2].inserted, 1); /* another client */
  CHECK_INT(ev[3].inserted, 1);
  CHECK_INT(ev[4].inserted, 0); /* NULL client is "" */
  CHECK_INT(atomic_load(&h.inserted), 3);
  CHECK(ev[0].seq > 0 && ev[2].seq > ev[0].seq && ev[3].seq > ev[2].seq);
  CHECK_INT(ceb_store_count_open(st, "r"), 3);
  json_t *s = ceb_store_event_status(st, "e1", NULL);
  CHECK_INT(json_array_size(s), 2); /* clients c and d */
  json_decref(s);

  /* again later: nothing new, still heard */
  CHECK_INT(sc_ingest1(st, "c", "e1", "r", NULL, 2000), 0);
  CHECK_INT(atomic_load(&h.batches), 2);
  /* unrouted */
  CHECK(sc_ingest1(st, "c", "u1", NULL, NULL, 2000) > 0);
  s = ceb_store_event_status(st, "u1", "urn:sc");
  CHECK_INT(json_array_size(s), 1);
  CHECK(json_is_true(json_object_get(json_array_get(s, 0), "unrouted")));
  CHECK_INT(json_array_size(json_object_get(json_array_get(s, 0), "routes")),
            0);
  json_decref(s);
  CHECK_INT(ceb_store_count_open(st, NULL), 3);
  ceb_store_set_ingest_listener(st, NULL, NULL);

  /* a second bridge on a shared store dedupes against the first */
  ceb_store *b2 = ceb_store_shared(st) ? env->open(env->ctx, "b") : NULL;
  if (b2) {
    CHECK_INT(sc_ingest1(b2, "c", "e1", "r", NULL, 3000), 0);
    ceb_store_close(b2);
  }
  ceb_store_close(st);
}

/* ---- FIFO ---- */

/* A row is claimable only when no older unsettled row of its (route, key)
 * exists, whoever holds that one; keys and unordered rows run beside each
 * other; a retry keeps its key blocked. */
void sc_fifo(const ceb_store_contract_env *env) {
  ceb_store *a = sc_fresh(env, "fifo");
  if (!a) return;
  ceb_store *b = env->open(env->ctx, "b");
  CHECK(b != NULL);
  int64_t k1a = sc_ingest1(a, "", "k1a", "r", "k1", 1000);
  int64_t k1b = sc_ingest1(a, "", "k1b", "r", "k1", 1000);
  int64_t k2a = sc_ingest1(a, "", "k2a", "r", "k2", 1000);
  int64_t u1 = sc_ingest1(a, "", "u1", "r", NULL, 1000);
  int64_t o1 = sc_ingest1(a, "", "o1", "other", "k1", 1000);
  CHECK(k1a > 0 && k1b > k1a && k2a > k1b && u1 > k2a && o1 > u1);

  ceb_claim c[8];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(a, "r", 1000, 10, c, 8), 3);
  int64_t got[3] = {c[0].seq, c[1].seq, c[2].seq};
  int64_t fence_k1a = 0;
  for (int i = 0; i < 3; i++) {
    if (c[i].seq == k1a) fence_k1a = c[i].fence;
    CHECK(c[i].seq != k1b);
    ceb_claim_free(&c[i]);
  }
  CHECK((got[0] == k1a || got[1] == k1a || got[2] == k1a) &&
        (got[0] == k2a || got[1] == k2a || got[2] == k2a) &&
        (got[0] == u1 || got[1] == u1 || got[2] == u1));
  /* the other bridge finds nothing of r: k1's head is held by a */
  if (b) CHECK_INT(sc_claim(b, "r", 1000, 10, c, 8), 0);
  /* the same key on another route is its own queue */
  if (b) {
    CHECK_INT(sc_claim(b, "other", 1000, 10, c, 8), 1);
    CHECK_INT(c[0].seq, o1);
    ceb_claim_free(&c[0]);
  }
  /* k1a retries at 5000: k1b stays behind it */
  CHECK_INT(
      sc_settle1(a, "r", k1a, fence_k1a, CEB_DS_RETRYING, 1100, 5000, NULL),
      CEB_OK);
  if (b) CHECK_INT(sc_claim(b, "r", 4999, 10, c, 8), 0);
  CHECK_INT(ceb_store_next_due(a, "r", 1100), 5000);
  /* at 5000 the other bridge gets k1a again, attempt 2, then k1b once k1a
   * is done */
  ceb_store *h = b ? b : a;
  CHECK_INT(sc_claim(h, "r", 5000, 10, c, 8), 1);
  CHECK_INT(c[0].seq, k1a);
  CHECK_INT(c[0].attempt, 2);
  CHECK(c[0].fence > fence_k1a);
  int64_t f2 = c[0].fence;
  ceb_claim_free(&c[0]);
  CHECK_INT(sc_settle1(h, "r", k1a, f2, CEB_DS_DONE, 5100, 0, NULL), CEB_OK);
  CHECK_INT(sc_claim(a, "r", 5100, 10, c, 8), 1);
  CHECK_INT(c[0].seq, k1b);
  CHECK_INT(c[0].attempt, 1);
  ceb_claim_free(&c[0]);
  if (b) ceb_store_close(b);
  ceb_store_close(a);
}

/* ---- claims ---- */

/* A claim takes at most max rows, oldest due first; nothing before its
 * time; bad arguments are refused; counts, the oldest open row and the
 * next due time follow. */
void sc_claims(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "claims");
  if (!st) return;
  int64_t seq[5];
  for (int i = 0; i < 5; i++) {
    char id[8];
    snprintf(id, sizeof id, "c%d", i);
    seq[i] = sc_ingest1(st, "", id, "r", NULL, 1000 + i * 100);
  }
  CHECK_INT(ceb_store_count_open(st, "r"), 5);
  CHECK_INT(ceb_store_count_open(st, "nope"), 0);
  CHECK_INT(ceb_store_oldest_open(st, "r"), 1000);
  CHECK_INT(ceb_store_next_due(st, "r", 0), 1000);
  CHECK_INT(ceb_store_next_due(st, "r", 1000), 1100);
  CHECK_INT(ceb_store_next_due(st, "nope", 0), INT64_MAX);
  ceb_claim c[8];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(st, "r", 999, 10, c, 8), 0);
  CHECK_INT(sc_claim(st, "r", 1250, 2, c, 8), 2);
  CHECK_INT(c[0].seq, seq[0]);
  CHECK_INT(c[1].seq, seq[1]);
  CHECK_INT(c[0].attempt, 1);
  CHECK_INT(c[0].received_at, 1000);
  CHECK_INT(c[0].lease_until, 1250 + SC_LEASE_MS);
  CHECK(c[0].event_json && strstr(c[0].event_json, "\"c0\""));
  ceb_claim_free(&c[0]);
  ceb_claim_free(&c[1]);
  CHECK_INT(sc_claim(st, "r", 1250, 10, c, 8), 1); /* c2; c3, c4 later */
  CHECK_INT(c[0].seq, seq[2]);
  ceb_claim_free(&c[0]);
  CHECK_INT(ceb_store_count_open(st, "r"), 5); /* in progress is open */
  /* a claim asking for a longer lease gets it */
  ceb_claim *cl = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, "r", 1300, 1, 2 * SC_LEASE_MS, &cl, &n),
            CEB_OK);
  CHECK_INT(n, 1);
  if (n) CHECK_INT(cl[0].lease_until, 1300 + 2 * SC_LEASE_MS);
  ceb_claims_free(cl, n);
  CHECK_INT(ceb_store_claim(st, NULL, 0, 1, 0, &cl, &n), CEB_EINVAL);
  CHECK_INT(ceb_store_claim(st, "r", 0, 0, 0, &cl, &n), CEB_EINVAL);
  CHECK(ceb_store_writable(st, NULL, 0));
  ceb_store_close(st);
}

/* ---- leases and fences ---- */

/* A claim's lease keeps everyone else off the row until it ends; then any
 * instance claims it (an attempt more, a greater fence); the old holder's
 * settle is refused and changes nothing; the new holder's applies; a
 * settle with a made-up fence is refused too. */
void sc_leases(const ceb_store_contract_env *env) {
  ceb_store *a = sc_fresh(env, "leases");
  if (!a) return;
  ceb_store *b = env->open(env->ctx, "b");
  CHECK(b != NULL);
  if (!b) {
    ceb_store_close(a);
    return;
  }
  int64_t s1 = sc_ingest1(a, "", "l1", "r", "k", 1000);
  int64_t s2 = sc_ingest1(a, "", "l2", "r", "k", 1000);
  ceb_claim c[4];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(a, "r", 1000, 10, c, 4), 1);
  CHECK_INT(c[0].seq, s1);
  int64_t fa = c[0].fence, until = c[0].lease_until;
  CHECK_INT(until, 1000 + SC_LEASE_MS);
  ceb_claim_free(&c[0]);
  /* the lease end is a wake-up: the row is claimable then */
  CHECK_INT(ceb_store_next_due(b, "r", 1000), until);
  CHECK_INT(sc_claim(b, "r", until - 1, 10, c, 4), 0);
  CHECK_INT(sc_claim(b, "r", until, 10, c, 4), 1); /* s2 stays behind */
  CHECK_INT(c[0].seq, s1);
  CHECK_INT(c[0].attempt, 2);
  CHECK(c[0].fence > fa);
  int64_t fb = c[0].fence;
  ceb_claim_free(&c[0]);
  /* the old holder comes back: refused, nothing changes */
  CHECK_INT(sc_settle1(a, "r", s1, fa, CEB_DS_DONE, until + 10, 0, NULL),
            CEB_ECONFLICT);
  CHECK_INT(sc_settle1(a, "r", s1, fa, CEB_DS_DEAD, until + 10, 0, NULL),
            CEB_ECONFLICT);
  CHECK_INT(sc_settle1(b, "r", s1, fb + 1000, CEB_DS_DONE, until + 10, 0, NULL),
            CEB_ECONFLICT);
  CHECK_INT(ceb_store_count_open(a, "r"), 2);
  json_t *dl = ceb_store_dlq_list(a, NULL);
  CHECK_INT(json_array_size(dl), 0);
  json_decref(dl);
  CHECK_INT(sc_claim(a, "r", until + 10, 10, c, 4), 0); /* b holds k */
  /* the new holder's settle applies once */
  CHECK_INT(sc_settle1(b, "r", s1, fb, CEB_DS_DONE, until + 20, 0, NULL),
            CEB_OK);
  CHECK_INT(sc_settle1(b, "r", s1, fb, CEB_DS_DONE, until + 21, 0, NULL),
            CEB_ECONFLICT);
  char buf[32];
  const char *state = sc_state(a, "l1", "r", buf, sizeof buf);
  CHECK_STR(state, "done");
  CHECK_INT(sc_claim(a, "r", until + 20, 10, c, 4), 1);
  CHECK_INT(c[0].seq, s2);
  ceb_claim_free(&c[0]);
  ceb_store_close(b);
  ceb_store_close(a);
}

/* ---- settling ---- */

/* Outcomes: done settles the event, retrying makes it due again, dead
 * writes a DLQ row; a pending refund gives the attempt back. */
void sc_settle(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "settle");
  if (!st) return;
  int64_t sd = sc_ingest1(st, "", "sd", "r", NULL, 1000);
  int64_t sr = sc_ingest1(st, "", "sr", "r", NULL, 1000);
  int64_t sx = sc_ingest1(st, "", "sx", "r", NULL, 1000);
  int64_t sp = sc_ingest1(st, "", "sp", "r", NULL, 1000);
  ceb_claim c[4];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(st, "r", 1000, 4, c, 4), 4);
  int64_t f[4];
  const int64_t want[4] = {sd, sr, sx, sp};
  for (int i = 0; i < 4; i++) {
    f[i] = c[i].fence;
    CHECK_INT(c[i].seq, want[i]);
    ceb_claim_free(&c[i]);
  }
  int64_t dlq = 0;
  /* what the peer answered is kept with the delivery that succeeded (the
   * client's job status), as given (UTF-8 text) */
  static const char answer[] = "{\"code\":\"1234\",\"naam\":\"\xc3\xa9\"}";
  ceb_attempt_result done = {.seq = sd,
                             .route = "r",
                             .fence = f[0],
                             .state = CEB_DS_DONE,
                             .now = 1100,
                             .status_code = 200,
                             .reason = "http.200",
                             .response = answer,
                             .response_len = sizeof answer - 1};
  CHECK_INT(ceb_store_settle_wait(st, &done), CEB_OK);
  CHECK_INT(sc_settle1(st, "r", sr, f[1], CEB_DS_RETRYING, 1100, 3000, NULL),
            CEB_OK);
  CHECK_INT(sc_settle1(st, "r", sx, f[2], CEB_DS_DEAD, 1100, 0, &dlq), CEB_OK);
  CHECK(dlq > 0);
  ceb_attempt_result refund = {.seq = sp,
                               .route = "r",
                               .fence = f[3],
                               .state = CEB_DS_PENDING,
                               .next_at = 1200,
                               .refund = 1,
                               .now = 1100};
  CHECK_INT(ceb_store_settle_wait(st, &refund), CEB_OK);
  char buf[32];
  CHECK_STR(sc_state(st, "sd", "r", buf, sizeof buf), "done");
  CHECK_STR(sc_state(st, "sr", "r", buf, sizeof buf), "retrying");
  CHECK_STR(sc_state(st, "sx", "r", buf, sizeof buf), "dead");
  CHECK_STR(sc_state(st, "sp", "r", buf, sizeof buf), "pending");
  CHECK_INT(ceb_store_count_open(st, "r"), 2);
  json_t *s = ceb_store_event_status(st, "sd", NULL);
  CHECK_INT(
      json_integer_value(json_object_get(json_array_get(s, 0), "settled_at")),
      1100);
  json_t *rd =
      json_array_get(json_object_get(json_array_get(s, 0), "routes"), 0);
  CHECK_INT(json_integer_value(json_object_get(rd, "last_status")), 200);
  CHECK_STR(json_string_value(json_object_get(rd, "response")), answer);
  json_decref(s);
  s = ceb_store_event_status(st, "sx", NULL);
  json_t *r =
      json_array_get(json_object_get(json_array_get(s, 0), "routes"), 0);
  CHECK_INT(json_integer_value(json_object_get(r, "dlq_id")), dlq);
  CHECK_INT(json_integer_value(json_object_get(r, "last_status")), 503);
  CHECK_STR(json_string_value(json_object_get(r, "last_reason")), "http.503");
  CHECK(json_is_null(json_object_get(r, "response"))); /* failed: none */
  json_decref(s);
  json_t *one = ceb_store_dlq_show(st, dlq);
  CHECK_STR(json_string_value(json_object_get(one, "reason")), "rejected");
  CHECK_INT(json_integer_value(json_object_get(one, "attempts")), 1);
  json_decref(one);
  /* the refunded one comes back as attempt 1 at 1200, the retry at 3000 */
  CHECK_INT(sc_claim(st, "r", 1200, 10, c, 4), 1);
  CHECK_INT(c[0].seq, sp);
  CHECK_INT(c[0].attempt, 1);
  ceb_claim_free(&c[0]);
  CHECK_INT(sc_claim(st, "r", 3000, 10, c, 4), 1);
  CHECK_INT(c[0].seq, sr);
  CHECK_INT(c[0].attempt, 2);
  ceb_claim_free(&c[0]);
  ceb_store_close(st);
}

/* ---- recovery ---- */

/* recover at start puts this store's claims back to pending, attempts
 * kept, claimable at once. On a shared store it leaves another bridge's
 * live claims alone. */
void sc_recover(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "recover");
  if (!st) return;
  sc_ingest1(st, "", "r1", "r", "k", 1000);
  sc_ingest1(st, "", "r2", "r", "k", 1000);
  sc_ingest1(st, "", "r3", "r", NULL, 1000);
  ceb_claim c[4];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(st, "r", 1000, 10, c, 4), 2);
  ceb_claim_free(&c[0]);
  ceb_claim_free(&c[1]);
  ceb_store_close(st);
  st = env->open(env->ctx, "a");
  CHECK(st != NULL);
  if (!st) return;
  CHECK_INT(ceb_store_recover(st, 2000), 2);
  CHECK_INT(ceb_store_recover(st, 2000), 0);
  char buf[32];
  CHECK_STR(sc_state(st, "r1", "r", buf, sizeof buf), "pending");
  CHECK_INT(sc_claim(st, "r", 2000, 10, c, 4), 2); /* r1 (not r2), r3 */
  for (int i = 0; i < 2; i++) {
    CHECK_INT(c[i].attempt, 2);
    ceb_claim_free(&c[i]);
  }
  /* a's claims are live (until 2000 + the lease); on a shared store a
   * bridge b starting now must not take them: only its own and ended
   * ones */
  ceb_store *b = ceb_store_shared(st) ? env->open(env->ctx, "b") : NULL;
  if (b) {
    CHECK_INT(ceb_store_recover(b, 3000), 0);
    CHECK_INT(sc_claim(b, "r", 3000, 10, c, 4), 0);
    CHECK_INT(ceb_store_recover(b, 2000 + SC_LEASE_MS), 2); /* ended */
    ceb_store_close(b);
  }
  ceb_store_close(st);
}

/* ---- status ---- */

static int has_keys(json_t *o, const char *const *keys) {
  int ok = json_is_object(o);
  for (size_t i = 0; ok && keys[i]; i++)
    ok = json_object_get(o, keys[i]) != NULL;
  return ok;
}

/* The status of an event: every (source, id) match, oldest first, each
 * with its routes, in the shape ceb_store.h gives. */
void sc_status(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "status");
  if (!st) return;
  ceb_ingest_route rs[2] = {{.route = "r1", .order_key = "k", .first_at = 5},
                            {.route = "r2", .first_at = 5}};
  ceb_ingest_event e = event("c", "s1", rs, 2);
  e.source = "urn:other";
  ceb_ingest_batch b = {&e, 1, 5};
  CHECK_INT(ceb_store_ingest_wait(st, &b), CEB_OK);
  CHECK(sc_ingest1(st, "c", "s1", "r1", NULL, 6) > 0);
  json_t *s = ceb_store_event_status(st, "s1", NULL);
  CHECK_INT(json_array_size(s), 2);
  static const char *const ev_keys[] = {
      "seq",         "client",   "source",     "id",     "type",
      "received_at", "unrouted", "settled_at", "routes", NULL};
  static const char *const rt_keys[] = {"route",
                                        "state",
                                        "attempts",
                                        "next_attempt_at",
                                        "first_attempt_at",
                                        "last_attempt_at",
                                        "last_status",
                                        "last_reason",
                                        "last_error",
                                        "order_key",
                                        "dlq_id",
                                        "response",
                                        NULL};
  json_t *first = json_array_get(s, 0);
  CHECK(has_keys(first, ev_keys));
  CHECK_STR(json_string_value(json_object_get(first, "source")), "urn:other");
  CHECK_INT(json_integer_value(json_object_get(first, "received_at")), 5);
  CHECK(json_integer_value(json_object_get(json_array_get(s, 1), "seq")) >
        json_integer_value(json_object_get(first, "seq")));
  json_t *routes = json_object_get(first, "routes");
  CHECK_INT(json_array_size(routes), 2);
  json_t *r1 = json_array_get(routes, 0);
  CHECK(has_keys(r1, rt_keys));
  CHECK_STR(json_string_value(json_object_get(r1, "route")), "r1");
  CHECK_STR(json_string_value(json_object_get(r1, "state")), "pending");
  CHECK_STR(json_string_value(json_object_get(r1, "order_key")), "k");
  CHECK_INT(json_integer_value(json_object_get(r1, "next_attempt_at")), 5);
  CHECK_INT(json_integer_value(json_object_get(r1, "attempts")), 0);
  json_decref(s);
  s = ceb_store_event_status(st, "s1", "urn:sc");
  CHECK_INT(json_array_size(s), 1);
  json_decref(s);
  s = ceb_store_event_status(st, "none", NULL);
  CHECK(json_is_array(s) && json_array_size(s) == 0);
  json_decref(s);
  ceb_store_close(st);
}

/* ceb_store_count_open_key: a key's unsettled deliveries on a route,
 * counted no further than the cap (max_open_per_key reads it at ingest). */
void sc_open_key(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "open-key");
  if (!st) return;
  sc_ingest1(st, "", "k1", "r", "inst-a", 1000);
  sc_ingest1(st, "", "k2", "r", "inst-a", 1000);
  sc_ingest1(st, "", "k3", "r", "inst-a", 1000);
  sc_ingest1(st, "", "k4", "r", "inst-b", 1000);
  sc_ingest1(st, "", "k5", "r2", "inst-a", 1000);
  CHECK_INT(ceb_store_count_open_key(st, "r", "inst-a", 10), 3);
  CHECK_INT(ceb_store_count_open_key(st, "r", "inst-a", 2), 2); /* capped */
  CHECK_INT(ceb_store_count_open_key(st, "r", "inst-b", 10), 1);
  CHECK_INT(ceb_store_count_open_key(st, "r", "inst-c", 10), 0);
  CHECK_INT(ceb_store_count_open_key(st, "r2", "inst-a", 10), 1);
  CHECK_INT(ceb_store_count_open_key(st, "r", "inst-a", 0), CEB_EINVAL);
  /* the head settles: one fewer open */
  ceb_claim c[1];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(st, "r", 1000, 1, c, 1), 1);
  CHECK_INT(
      sc_settle1(st, "r", c[0].seq, c[0].fence, CEB_DS_DONE, 1000, 0, NULL),
      CEB_OK);
  ceb_claim_free(&c[0]);
  int64_t a = ceb_store_count_open_key(st, "r", "inst-a", 10);
  int64_t b = ceb_store_count_open_key(st, "r", "inst-b", 10);
  CHECK(a + b == 3 && (a == 2 || b == 0));
  /* the keys view: one settled (done at 1000), then a failure of the
   * next head of inst-a at 2000 */
  json_t *ks = ceb_store_key_stats(st, "r", 10);
  CHECK_INT(json_array_size(ks), 2);
  json_t *ka = json_array_get(ks, 0), *kb = json_array_get(ks, 1);
  CHECK_STR(json_string_value(json_object_get(ka, "key")), "inst-a");
  CHECK_STR(json_string_value(json_object_get(kb, "key")), "inst-b");
  CHECK_INT(json_integer_value(json_object_get(ka, "open")) +
                json_integer_value(json_object_get(kb, "open")),
            3);
  CHECK(json_integer_value(json_object_get(ka, "last_success_at")) == 1000 ||
        json_integer_value(json_object_get(kb, "last_success_at")) == 1000);
  CHECK(json_is_null(json_object_get(ka, "last_failure_at")));
  json_decref(ks);
  ceb_claim cl[4];
  memset(cl, 0, sizeof cl);
  int n = sc_claim(st, "r", 2000, 4, cl, 4);
  CHECK(n >= 1);
  for (int i = 0; i < n && i < 4; i++) {
    if (cl[i].order_key && strcmp(cl[i].order_key, "inst-a") == 0)
      CHECK_INT(sc_settle1(st, "r", cl[i].seq, cl[i].fence, CEB_DS_RETRYING,
                           2000, 9000, NULL),
                CEB_OK);
    ceb_claim_free(&cl[i]);
  }
  ks = ceb_store_key_stats(st, "r", 1);
  CHECK_INT(json_array_size(ks), 1); /* the limit */
  CHECK_INT(json_integer_value(
                json_object_get(json_array_get(ks, 0), "last_failure_at")),
            2000);
  json_decref(ks);
  ceb_store_close(st);
}
