/* The contract of callbacks (X-Callback): an event ingested with a callback
 * keeps its URL; the settle that makes its status final (its last open
 * route done or dead) queues one delivery to the callback route in the same
 * transaction (r->callback_queued says so), claimable at once and durable
 * across a reopen; the journal row stays open until that delivery settles;
 * a later settle of the event (after a DLQ replay) queues no second one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "contract_internal.h"

static const char k_url[] = "https://client.example/cb/1?x=%20";

/* Journals id (client "c1") for routes r1 (and r2 when two), with a
 * callback to route "cb" when cb. */
static int64_t ingest_cb(ceb_store *st, const char *id, int two, int cb,
                         int64_t now) {
  char json[256];
  snprintf(json, sizeof json,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:sc\","
           "\"type\":\"nl.sc.t\"}",
           id);
  ceb_ingest_route r[2] = {{.route = "r1", .first_at = now},
                           {.route = "r2", .first_at = now, .index = 1}};
  ceb_ingest_event e = {.client = "c1",
                        .source = "urn:sc",
                        .id = id,
                        .type = "nl.sc.t",
                        .json = json,
                        .json_len = strlen(json),
                        .routes = r,
                        .nroutes = two ? 2 : 1,
                        .callback_route = cb ? "cb" : NULL,
                        .callback_url = cb ? k_url : NULL};
  ceb_ingest_batch b = {&e, 1, now};
  CHECK_INT(ceb_store_ingest_wait(st, &b), CEB_OK);
  CHECK_INT(e.inserted, 1);
  return e.seq;
}

/* Claims the one due delivery of route and settles it as state; *queued
 * gets the settle's callback_queued. Returns its seq (-1: none). */
static int64_t settle_one(ceb_store *st, const char *route, int64_t now,
                          int state, char *queued, size_t qsize) {
  ceb_claim c[1];
  memset(c, 0, sizeof c);
  int n = sc_claim(st, route, now, 1, c, 1);
  CHECK_INT(n, 1);
  if (n != 1) return -1;
  ceb_attempt_result r = {.seq = c[0].seq,
                          .route = route,
                          .fence = c[0].fence,
                          .state = state,
                          .now = now,
                          .status_code = state == CEB_DS_DONE ? 200 : 422,
                          .reason = state == CEB_DS_DONE ? "ok" : "http.422",
                          .dead_reason = "rejected",
                          .sink = "out",
                          .dead_json = "{\"id\":\"dead\"}"};
  memset(r.callback_queued, 'x', sizeof r.callback_queued - 1);
  CHECK_INT(ceb_store_settle_wait(st, &r), CEB_OK);
  snprintf(queued, qsize, "%s", r.callback_queued);
  int64_t seq = c[0].seq;
  ceb_claim_free(&c[0]);
  return seq;
}

/* settled_at of the event's newest journal row: 1 set, 0 null. */
static int settled(ceb_store *st, const char *id) {
  json_t *s = ceb_store_event_status(st, id, NULL);
  json_t *ev = json_array_get(s, json_array_size(s) - 1);
  int set = ev && json_is_integer(json_object_get(ev, "settled_at"));
  json_decref(s);
  return set;
}

static int claimable(ceb_store *st, const char *route, int64_t now) {
  ceb_claim *c = NULL;
  size_t n = 0;
  CHECK_INT(ceb_store_claim(st, route, now, 8, 0, &c, &n), CEB_OK);
  ceb_claims_free(c, n);
  return (int)n;
}

void sc_callback(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "callback");
  if (!st) return;
  char q[128], buf[32];
  int64_t a = ingest_cb(st, "a", 1, 1, 1000);
  int64_t p = ingest_cb(st, "p", 0, 0, 1000); /* no callback */
  int status = 0;
  char *url = ceb_store_callback_url(st, a, &status);
  CHECK_INT(status, CEB_OK);
  CHECK_STR(url ? url : "", k_url);
  free(url);
  CHECK(ceb_store_callback_url(st, p, &status) == NULL);
  CHECK_INT(status, CEB_ENOTFOUND);

  /* r1 done: r2 still open, nothing queued */
  CHECK_INT(settle_one(st, "r1", 2000, CEB_DS_DONE, q, sizeof q), a);
  CHECK_STR(q, "");
  CHECK_INT(settle_one(st, "r1", 2000, CEB_DS_DONE, q, sizeof q), p);
  CHECK_STR(q, ""); /* final, but p asked for no callback */
  CHECK_INT(claimable(st, "cb", 2000), 0);
  CHECK(settled(st, "p"));
  /* r2 dead: the status is final, the callback is queued with it */
  CHECK_INT(settle_one(st, "r2", 3000, CEB_DS_DEAD, q, sizeof q), a);
  CHECK_STR(q, "cb");
  CHECK(!settled(st, "a"));
  CHECK_STR(sc_state(st, "a", "cb", buf, sizeof buf) ? buf : "(none)",
            "pending");

  /* durable: a reopened handle finds it, due at the settle's now */
  ceb_store_close(st);
  st = env->open(env->ctx, "a");
  CHECK(st != NULL);
  if (!st) return;
  CHECK_INT(claimable(st, "cb", 2999), 0);
  ceb_store_recover(st, 3000);
  CHECK_INT(settle_one(st, "cb", 3000, CEB_DS_RETRYING, q, sizeof q), a);
  CHECK_STR(q, "");
  CHECK(!settled(st, "a"));
  /* its retry is delivered; the event is settled then, nothing queued */
  CHECK_INT(settle_one(st, "cb", 3000, CEB_DS_DONE, q, sizeof q), a);
  CHECK_STR(q, "");
  CHECK(settled(st, "a"));
  CHECK_INT(claimable(st, "cb", 9000), 0);

  /* once per event: the dead route replayed and delivered queues none */
  ceb_dlq_filter f = {.route = "r2"};
  size_t n = 0;
  CHECK_INT(ceb_store_dlq_replay(st, &f, 4000, 0, &n, NULL), CEB_OK);
  CHECK_INT((int)n, 1);
  CHECK_INT(settle_one(st, "r2", 4000, CEB_DS_DONE, q, sizeof q), a);
  CHECK_STR(q, "");
  CHECK_INT(claimable(st, "cb", 9000), 0);
  CHECK(settled(st, "a"));

  /* unrouted events get none (their status is final at ingest) */
  ceb_ingest_event e = {.client = "c1",
                        .source = "urn:sc",
                        .id = "u",
                        .type = "nl.sc.t",
                        .json = "{}",
                        .json_len = 2,
                        .callback_route = "cb",
                        .callback_url = k_url};
  ceb_ingest_batch b = {&e, 1, 5000};
  CHECK_INT(ceb_store_ingest_wait(st, &b), CEB_OK);
  CHECK(ceb_store_callback_url(st, e.seq, &status) == NULL);
  CHECK_INT(claimable(st, "cb", 9000), 0);
  ceb_store_close(st);
}
