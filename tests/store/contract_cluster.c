/* The contract of what bridges on one store share besides deliveries:
 * pull queues (appended on one bridge, fetched and committed on another),
 * task leadership, and the cluster view of who holds what. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <ceb/status.h>

#include "ceb_test_latch.h"

#include "contract_internal.h"

static int append(ceb_store *st, const char *q, const char *key,
                  const char *json, size_t max) {
  ceb_test_latch l;
  ceb_test_latch_init(&l, NULL, 0);
  return ceb_test_latch_await(
      &l,
      ceb_store_pull_append(st, q, key, json, strlen(json), max,
                            ceb_test_latch_on_status, &l),
      CEB_OK);
}

typedef struct seen {
  char text[256];
  int64_t first;
} seen;

static int visit(void *arg, int64_t seq, const char *json, size_t len) {
  seen *s = arg;
  size_t used = strlen(s->text);
  if (!used) s->first = seq;
  snprintf(s->text + used, sizeof s->text - used, "%s%.*s", used ? "," : "",
           (int)len, json);
  return 0;
}

static const char *fetch(ceb_store *st, const char *q, int64_t after,
                         int64_t *last, seen *s) {
  memset(s, 0, sizeof *s);
  CHECK_INT(ceb_store_pull_fetch(st, q, after, 10, visit, s, last), CEB_OK);
  return s->text;
}

/* A pull queue is one queue for every bridge on the store: numbered in
 * append order, a held key stored once, full at max, fetched after the
 * committed cursor wherever it was committed, the cursor never back. */
void sc_pull(const ceb_store_contract_env *env) {
  ceb_store *a = sc_fresh(env, "pull");
  if (!a) return;
  ceb_store *b = env->open(env->ctx, "b");
  CHECK(b != NULL);
  if (!b) {
    ceb_store_close(a);
    return;
  }
  seen s;
  int64_t last = -1, depth = -1, committed = -1;
  CHECK_STR(fetch(b, "q", 0, &last, &s), "");
  CHECK_INT(last, 0);
  CHECK_INT(append(a, "q", "k1", "1", 3), CEB_OK);
  CHECK_INT(append(b, "q", "k2", "2", 3), CEB_OK);
  CHECK_INT(append(b, "q", "k1", "1-again", 3), CEB_OK); /* held: once */
  CHECK_INT(append(a, "other", "k1", "o1", 3), CEB_OK);
  CHECK_INT(append(a, "q", "k3", "3", 3), CEB_OK);
  CHECK_INT(append(b, "q", "k4", "4", 3), CEB_EBUSY); /* full at 3 */
  CHECK_STR(fetch(b, "q", 0, &last, &s), "1,2,3");
  CHECK_INT(s.first, 1);
  CHECK_INT(last, 3);
  CHECK_STR(fetch(a, "q", 1, &last, &s), "2,3");
  CHECK_INT(ceb_store_pull_commit(b, "q", 4, &committed), CEB_EINVAL);
  CHECK_INT(ceb_store_pull_commit(b, "q", -1, &committed), CEB_EINVAL);
  CHECK_INT(ceb_store_pull_commit(b, "q", 2, &committed), CEB_OK);
  CHECK_INT(committed, 2);
  CHECK_INT(ceb_store_pull_commit(a, "q", 1, &committed), CEB_OK);
  CHECK_INT(committed, 2); /* never back */
  CHECK_STR(fetch(a, "q", 0, &last, &s), "3");
  CHECK_INT(ceb_store_pull_stats(a, "q", &depth, &last, &committed), CEB_OK);
  CHECK_INT(depth, 1);
  CHECK_INT(last, 3);
  CHECK_INT(committed, 2);
  CHECK_INT(append(a, "q", "k4", "4", 3), CEB_OK); /* room again */
  CHECK_STR(fetch(b, "q", 0, &last, &s), "3,4");
  CHECK_INT(last, 4);
  CHECK_STR(fetch(b, "other", 0, &last, &s), "o1");
  ceb_store_close(b);
  ceb_store_close(a);
}

/* A task has a leader: a bridge alone on the store leads; on a shared
 * store two bridges never lead one task at once. */
void sc_lead(const ceb_store_contract_env *env) {
  ceb_store *a = sc_fresh(env, "lead");
  if (!a) return;
  CHECK_INT(ceb_store_try_lead(a, "sweeper", 1000), 1);
  CHECK_INT(ceb_store_try_lead(a, "sweeper", 2000), 1); /* stays */
  CHECK_INT(ceb_store_try_lead(a, "", 2000), CEB_EINVAL);
  if (ceb_store_shared(a)) {
    ceb_store *b = env->open(env->ctx, "b");
    CHECK(b != NULL);
    if (b) {
      CHECK_INT(ceb_store_try_lead(b, "sweeper", 3000), 0);
      CHECK_INT(ceb_store_try_lead(b, "dlq-forward", 3000), 1);
      CHECK_INT(ceb_store_try_lead(a, "dlq-forward", 3000), 0);
      ceb_store_close(b);
    }
  }
  ceb_store_close(a);
}

static json_t *member(json_t *view, const char *id) {
  size_t i;
  json_t *m;
  json_array_foreach(json_object_get(view, "instances"), i, m) {
    const char *v = json_string_value(json_object_get(m, "id"));
    if (v && strcmp(v, id) == 0) return m;
  }
  return NULL;
}

/* The cluster view: each bridge that beats, with the deliveries it holds
 * per route under a lease that has not ended; those whose lease ended
 * apart; a bridge that left but still holds leases by its id, stale. */
void sc_cluster(const ceb_store_contract_env *env) {
  ceb_store *a = sc_fresh(env, "cluster");
  if (!a) return;
  ceb_store *b = env->open(env->ctx, "b");
  CHECK(b != NULL);
  if (!b) {
    ceb_store_close(a);
    return;
  }
  ceb_store_member m = {
      .hostname = "h", .pid = 1, .version = "0", .started_at = 1000};
  CHECK_INT(ceb_store_heartbeat(a, &m, 1000), CEB_OK);
  CHECK_INT(ceb_store_heartbeat(b, &m, 1000), CEB_OK);
  for (int i = 0; i < 3; i++) {
    char id[8];
    snprintf(id, sizeof id, "v%d", i);
    sc_ingest1(a, "", id, "r", NULL, 1000);
  }
  ceb_claim c[3];
  memset(c, 0, sizeof c);
  CHECK_INT(sc_claim(a, "r", 1000, 2, c, 3), 2);
  ceb_claim_free(&c[0]);
  ceb_claim_free(&c[1]);
  CHECK_INT(sc_claim(b, "r", 2000, 2, c, 3), 1);
  ceb_claim_free(&c[0]);
  json_t *v = ceb_store_cluster(a, 3000);
  CHECK(v != NULL);
  CHECK_STR(json_string_value(json_object_get(v, "instance")), "a");
  CHECK_INT(json_array_size(json_object_get(v, "instances")), 2);
  CHECK_INT(json_integer_value(json_object_get(
                json_object_get(member(v, "a"), "leases"), "r")),
            2);
  CHECK_INT(json_integer_value(json_object_get(
                json_object_get(member(v, "b"), "leases"), "r")),
            1);
  json_decref(v);
  /* a's leases end at 1000 + the lease, b's a second later */
  v = ceb_store_cluster(b, 1000 + SC_LEASE_MS);
  CHECK_INT(json_integer_value(
                json_object_get(json_object_get(v, "leases_expired"), "r")),
            2);
  CHECK_INT(json_integer_value(json_object_get(
                json_object_get(member(v, "b"), "leases"), "r")),
            1);
  json_decref(v);
  /* b leaves while it still holds a lease: listed by its id only, stale,
   * with what it holds; a is as it was */
  CHECK_INT(ceb_store_leave(b), CEB_OK);
  v = ceb_store_cluster(a, 3000);
  json_t *mb = member(v, "b");
  CHECK(mb != NULL);
  CHECK(json_is_true(json_object_get(mb, "stale")));
  CHECK(json_object_get(mb, "heartbeat_at") == NULL);
  CHECK_INT(
      json_integer_value(json_object_get(json_object_get(mb, "leases"), "r")),
      1);
  CHECK(json_is_false(json_object_get(member(v, "a"), "stale")));
  json_decref(v);
  ceb_store_close(b);
  ceb_store_close(a);
}
