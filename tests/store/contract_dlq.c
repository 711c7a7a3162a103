/* The contract of the DLQ: list with filters, show, replay (dry run,
 * once), purge (dry run), forwarding marks. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <ceb/status.h>

#include "contract_internal.h"

/* Journals id for route with type and lets it die at now; returns the DLQ
 * row id. */
static int64_t kill(ceb_store *st, const char *id, const char *type,
                    const char *route, int64_t now) {
  char json[256];
  snprintf(json, sizeof json,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"type\":\"%s\"}", id, type);
  ceb_ingest_route r = {.route = route, .first_at = now};
  ceb_ingest_event e = {.source = "urn:sc",
                        .id = id,
                        .type = type,
                        .json = json,
                        .json_len = strlen(json),
                        .routes = &r,
                        .nroutes = 1};
  ceb_ingest_batch b = {&e, 1, now};
  CHECK_INT(ceb_store_ingest_wait(st, &b), CEB_OK);
  ceb_claim c[1];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(st, route, now, 1, c, 1), 1);
  CHECK_INT(c[0].seq, e.seq);
  int64_t dlq = 0;
  CHECK_INT(sc_settle1(st, route, e.seq, c[0].fence, CEB_DS_DEAD, now, 0, &dlq),
            CEB_OK);
  ceb_claim_free(&c[0]);
  return dlq;
}

static size_t list_n(ceb_store *st, const ceb_dlq_filter *f) {
  json_t *l = ceb_store_dlq_list(st, f);
  CHECK(json_is_array(l));
  size_t n = json_array_size(l);
  json_decref(l);
  return n;
}

static atomic_int g_fwd_status = -100;
static void fwd_done(void *arg, int status) {
  (void)arg;
  atomic_store(&g_fwd_status, status);
}
static int fwd_finished(void *arg) {
  (void)arg;
  return atomic_load(&g_fwd_status) != -100;
}

void sc_dlq(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "dlq");
  if (!st) return;
  int64_t d1 = kill(st, "d1", "nl.a.x", "r", 1000);
  int64_t d2 = kill(st, "d2", "nl.a.y", "r", 2000);
  int64_t d3 = kill(st, "d3", "org.b", "r", 3000);
  int64_t d4 = kill(st, "d4", "nl.a.x", "r2", 4000);
  CHECK(d1 > 0 && d2 > d1 && d3 > d2 && d4 > d3);

  /* lists: newest first, filters, limit */
  json_t *l = ceb_store_dlq_list(st, NULL);
  CHECK_INT(json_array_size(l), 4);
  json_t *top = json_array_get(l, 0);
  CHECK_INT(json_integer_value(json_object_get(top, "id")), d4);
  static const char *const keys[] = {"id",
                                     "seq",
                                     "route",
                                     "sink",
                                     "reason",
                                     "last_reason",
                                     "status",
                                     "attempts",
                                     "first_attempt_at",
                                     "last_attempt_at",
                                     "created_at",
                                     "error",
                                     "event_id",
                                     "source",
                                     "type",
                                     "replayed_at",
                                     "replays",
                                     "forwarded_at",
                                     NULL};
  for (size_t i = 0; keys[i]; i++)
    CHECK_MSG(json_object_get(top, keys[i]) != NULL, "dlq row lacks %s",
              keys[i]);
  CHECK(json_object_get(top, "event") == NULL); /* no body in lists */
  json_decref(l);
  CHECK_INT(list_n(st, &(ceb_dlq_filter){.type = "nl.a.*"}), 3);
  CHECK_INT(list_n(st, &(ceb_dlq_filter){.type = "nl.a.x"}), 2);
  CHECK_INT(list_n(st, &(ceb_dlq_filter){.route = "r2"}), 1);
  CHECK_INT(list_n(st, &(ceb_dlq_filter){.source = "urn:sc"}), 4);
  CHECK_INT(list_n(st, &(ceb_dlq_filter){.reason = "rejected"}), 4);
  CHECK_INT(list_n(st, &(ceb_dlq_filter){.reason = "deadline"}), 0);
  CHECK_INT(list_n(st, &(ceb_dlq_filter){.since = 2000, .until = 4000}), 2);
  CHECK_INT(list_n(st, &(ceb_dlq_filter){.id = d2}), 1);
  CHECK_INT(list_n(st, &(ceb_dlq_filter){.limit = 1}), 1);

  /* show: with the dead-letter event */
  json_t *one = ceb_store_dlq_show(st, d2);
  CHECK(one != NULL);
  CHECK_STR(json_string_value(json_object_get(one, "event_id")), "d2");
  CHECK_STR(
      json_string_value(json_object_get(json_object_get(one, "event"), "id")),
      "dead");
  json_decref(one);
  CHECK(ceb_store_dlq_show(st, d4 + 1000) == NULL);

  /* replay: a dry run counts and changes nothing */
  size_t n = 0;
  json_t *which = json_array();
  ceb_dlq_filter fa = {.type = "nl.a.*", .route = "r"};
  CHECK_INT(ceb_store_dlq_replay(st, &fa, 5000, 1, &n, which), CEB_OK);
  CHECK_INT(n, 2);
  char buf[32];
  CHECK_STR(sc_state(st, "d1", "r", buf, sizeof buf), "dead");
  json_array_clear(which);
  /* for real: back to pending with attempts reset, the rows remember */
  CHECK_INT(ceb_store_dlq_replay(st, &fa, 5000, 0, &n, which), CEB_OK);
  CHECK_INT(n, 2);
  CHECK_INT(json_array_size(which), 2);
  json_t *w0 = json_array_get(which, 0);
  CHECK(json_integer_value(json_object_get(w0, "seq")) > 0);
  CHECK_STR(json_string_value(json_object_get(w0, "route")), "r");
  json_decref(which);
  CHECK_STR(sc_state(st, "d1", "r", buf, sizeof buf), "pending");
  CHECK_INT(ceb_store_count_open(st, "r"), 2);
  one = ceb_store_dlq_show(st, d1);
  CHECK_INT(json_integer_value(json_object_get(one, "replayed_at")), 5000);
  CHECK_INT(json_integer_value(json_object_get(one, "replays")), 1);
  json_decref(one);
  /* twice: nothing more is pending */
  CHECK_INT(ceb_store_dlq_replay(st, &fa, 6000, 0, &n, NULL), CEB_OK);
  CHECK_INT(n, 0);
  /* claimed as a first attempt of its first replay */
  ceb_claim c[4];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(st, "r", 5000, 10, c, 4), 2);
  CHECK_INT(c[0].attempt, 1);
  CHECK_INT(c[0].replays, 1);
  ceb_claim_free(&c[0]);
  ceb_claim_free(&c[1]);

  /* forwarding: what is still to forward (not forwarded, not replayed) */
  int64_t ids[8];
  size_t got = 0;
  CHECK_INT(ceb_store_dlq_unforwarded(st, "r", 0, 8, ids, &got), CEB_OK);
  CHECK_INT(got, 1);
  CHECK_INT(ids[0], d3);
  int status = 0;
  char *ev = ceb_store_dlq_forward_event(st, d3, &status);
  CHECK(ev && strstr(ev, "\"dead\""));
  free(ev);
  CHECK_INT(ceb_store_dlq_forwarded(st, d3, 7000), CEB_OK);
  CHECK(ceb_store_dlq_forward_event(st, d3, &status) == NULL);
  CHECK_INT(status, CEB_ENOTFOUND);
  CHECK_INT(ceb_store_dlq_unforwarded(st, "r", 0, 8, ids, &got), CEB_OK);
  CHECK_INT(got, 0);
  CHECK_INT(ceb_store_dlq_unforwarded(st, "r2", 0, 8, ids, &got), CEB_OK);
  CHECK_INT(got, 1);
  CHECK_INT(ceb_store_dlq_unforwarded(st, "r2", d4, 8, ids, &got), CEB_OK);
  CHECK_INT(got, 0);
  CHECK_INT(ceb_store_dlq_forwarded_async(st, d4, 7100, fwd_done, NULL),
            CEB_OK);
  CHECK(ceb_test_wait(fwd_finished, NULL, 30000));
  CHECK_INT(atomic_load(&g_fwd_status), CEB_OK);
  one = ceb_store_dlq_show(st, d4);
  CHECK_INT(json_integer_value(json_object_get(one, "forwarded_at")), 7100);
  json_decref(one);
  CHECK_INT(ceb_store_dlq_forwarded(st, d4 + 1000, 7000), CEB_ENOTFOUND);

  /* purge: a dry run counts, then the rows go */
  ceb_dlq_filter fx = {.type = "nl.a.x"};
  CHECK_INT(ceb_store_dlq_purge(st, &fx, 1, &n), CEB_OK);
  CHECK_INT(n, 2);
  CHECK_INT(list_n(st, NULL), 4);
  CHECK_INT(ceb_store_dlq_purge(st, &fx, 0, &n), CEB_OK);
  CHECK_INT(n, 2);
  CHECK_INT(list_n(st, NULL), 2);
  CHECK(ceb_store_dlq_show(st, d1) == NULL);
  ceb_store_close(st);
}

/* A replayed dead letter does not go out beside a newer row of its key that
 * is in progress (one delivery of a key at a time, whoever holds it): it
 * waits for that row to settle, then it is the key's head. Meanwhile it is
 * the route's oldest open row, not its key's head, and the oldest open
 * time is its. */
void sc_dlq_replay_key(const ceb_store_contract_env *env) {
  ceb_store *a = sc_fresh(env, "dlq-replay-key");
  if (!a) return;
  ceb_store *b = env->open(env->ctx, "b");
  CHECK(b != NULL);
  int64_t k1 = sc_ingest1(a, "", "k1", "r", "k", 1000);
  int64_t k2 = sc_ingest1(a, "", "k2", "r", "k", 1050);
  CHECK(k1 > 0 && k2 > k1);
  ceb_claim c[4];
  memset(c, 0, sizeof c);
  /* k1 dies; k2 is then the head and goes in progress at a */
  CHECK_INT(sc_claim(a, "r", 1000, 10, c, 4), 1);
  CHECK_INT(c[0].seq, k1);
  int64_t dlq = 0;
  CHECK_INT(sc_settle1(a, "r", k1, c[0].fence, CEB_DS_DEAD, 1000, 0, &dlq),
            CEB_OK);
  ceb_claim_free(&c[0]);
  CHECK(dlq > 0);
  CHECK_INT(sc_claim(a, "r", 1100, 10, c, 4), 1);
  CHECK_INT(c[0].seq, k2);
  int64_t fence_k2 = c[0].fence;
  ceb_claim_free(&c[0]);
  /* k1 replayed at 2000 (due at once) while k2 is in progress */
  size_t n = 0;
  CHECK_INT(
      ceb_store_dlq_replay(a, &(ceb_dlq_filter){.id = dlq}, 2000, 0, &n, NULL),
      CEB_OK);
  CHECK_INT(n, 1);
  CHECK_INT(ceb_store_oldest_open(a, "r"), 1000);
  /* nothing of the key to claim, for either instance, while k2 is held */
  if (b) CHECK_INT(sc_claim(b, "r", 3000, 10, c, 4), 0);
  CHECK_INT(sc_claim(a, "r", 3000, 10, c, 4), 0);
  /* k2 settles: the replayed k1 is the key's head and claimable */
  CHECK_INT(sc_settle1(a, "r", k2, fence_k2, CEB_DS_DONE, 3100, 0, NULL),
            CEB_OK);
  if (b) {
    CHECK_INT(sc_claim(b, "r", 3200, 10, c, 4), 1);
    CHECK_INT(c[0].seq, k1);
    CHECK_INT(c[0].replays, 1);
    ceb_claim_free(&c[0]);
    ceb_store_close(b);
  }
  ceb_store_close(a);
}
