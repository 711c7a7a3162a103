/* The contract of claims at ingest (ceb_store_set_claim_hook), on every
 * engine that has them: a new unkeyed row, or a key's head, that the hook
 * takes is written in progress under this instance's lease (attempt 1,
 * lease from the hook's now, a fence the claim carries: 1 on SQLite, a
 * first claim's with a token on PostgreSQL), so no claim returns it and
 * its settle with that fence applies; a row queued behind its key's open head
 * (in an earlier ingest or earlier in the same one) is never written
 * claimed and is claimed as usual once the head settles; a row the hook
 * declines stays pending; a duplicate event claims nothing; and every
 * reservation the hook granted ends exactly once (claimed, or given back
 * with committed 0). */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <ceb/status.h>

#include "contract_internal.h"

#define HOOK_NOW 5000
#define HOOK_LEASE_MS 90000

typedef struct hook_state {
  atomic_int take; /* what reserve answers */
  atomic_int granted, claimed, returned;
  int64_t seqs[16]; /* claimed, in order */
  int64_t fence[16], lease_until[16];
} hook_state;

static int reserve(void *arg, const ceb_ingest_route *rt, int64_t *now,
                   int64_t *lease_ms) {
  hook_state *h = arg;
  (void)rt;
  if (!atomic_load(&h->take)) return 0;
  atomic_fetch_add(&h->granted, 1);
  *now = HOOK_NOW;
  *lease_ms = HOOK_LEASE_MS;
  return 1;
}

static void claimed(void *arg, const ceb_ingest_batch *b,
                    const ceb_ingest_claim *c, size_t n, int committed) {
  hook_state *h = arg;
  (void)b;
  if (!committed) {
    atomic_fetch_add(&h->returned, (int)n);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    int k = atomic_fetch_add(&h->claimed, 1);
    if (k < 16) {
      h->seqs[k] = c[i].event->seq;
      h->fence[k] = c[i].fence;
      h->lease_until[k] = c[i].lease_until;
    }
  }
}

/* Two events of one new key in one ingest: (id1, id2), key; seqs out. */
static void ingest_two(ceb_store *st, const char *id1, const char *id2,
                       const char *key, int64_t now, int64_t *seq) {
  char json[2][128];
  ceb_ingest_route r[2];
  ceb_ingest_event e[2];
  const char *ids[2] = {id1, id2};
  for (int i = 0; i < 2; i++) {
    snprintf(json[i], sizeof json[i],
             "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:sc\","
             "\"type\":\"nl.sc.t\"}",
             ids[i]);
    r[i] = (ceb_ingest_route){.route = "r", .order_key = key, .first_at = now};
    e[i] = (ceb_ingest_event){.client = "",
                              .source = "urn:sc",
                              .id = ids[i],
                              .type = "nl.sc.t",
                              .json = json[i],
                              .json_len = strlen(json[i]),
                              .routes = &r[i],
                              .nroutes = 1};
  }
  ceb_ingest_batch b = {e, 2, now};
  CHECK_INT(ceb_store_ingest_wait(st, &b), CEB_OK);
  seq[0] = e[0].inserted ? e[0].seq : 0;
  seq[1] = e[1].inserted ? e[1].seq : 0;
}

void sc_claim_ingest(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "claim_ingest");
  if (!st) return;
  static hook_state h; /* static: the hook may outlive a failed check */
  memset(&h, 0, sizeof h);
  atomic_store(&h.take, 1);
  ceb_store_claim_hook hook = {
      .reserve = reserve, .claimed = claimed, .arg = &h};
  ceb_store_set_claim_hook(st, &hook);
  char buf[32];
  ceb_claim c[4];
  memset(c, 0, sizeof c);

  /* unkeyed, taken: in progress under the hook's lease, with a fence */
  int64_t u1 = sc_ingest1(st, "", "u1", "r", NULL, 1000);
  CHECK_INT(atomic_load(&h.claimed), 1);
  CHECK_INT(h.seqs[0], u1);
  CHECK(h.fence[0] >= 1);
  CHECK_INT(h.lease_until[0], HOOK_NOW + HOOK_LEASE_MS);
  CHECK_STR(sc_state(st, "u1", "r", buf, sizeof buf), "in-progress");
  CHECK_INT(sc_claim(st, "r", 2000, 10, c, 4), 0);
  /* a duplicate claims nothing */
  CHECK_INT(sc_ingest1(st, "", "u1", "r", NULL, 1000), 0);
  CHECK_INT(atomic_load(&h.claimed), 1);
  CHECK_INT(sc_settle1(st, "r", u1, h.fence[0], CEB_DS_DONE, 2000, 0, NULL),
            CEB_OK);
  CHECK_STR(sc_state(st, "u1", "r", buf, sizeof buf), "done");

  /* a key's head is taken; the row behind it is not, and is claimed as
   * usual once the head settles */
  int64_t k1 = sc_ingest1(st, "", "k1", "r", "K", 1000);
  CHECK_INT(atomic_load(&h.claimed), 2);
  CHECK_INT(h.seqs[1], k1);
  int64_t k2 = sc_ingest1(st, "", "k2", "r", "K", 1000);
  CHECK_INT(atomic_load(&h.claimed), 2);
  CHECK_STR(sc_state(st, "k2", "r", buf, sizeof buf), "pending");
  CHECK_INT(sc_claim(st, "r", 2000, 10, c, 4), 0); /* k2 waits for k1 */
  CHECK_INT(sc_settle1(st, "r", k1, h.fence[1], CEB_DS_DONE, 2000, 0, NULL),
            CEB_OK);
  CHECK_INT(sc_claim(st, "r", 2000, 10, c, 4), 1);
  CHECK_INT(c[0].seq, k2);
  CHECK_INT(c[0].attempt, 1);
  CHECK_INT(sc_settle1(st, "r", k2, c[0].fence, CEB_DS_DONE, 2000, 0, NULL),
            CEB_OK);
  ceb_claim_free(&c[0]);

  /* two rows of a new key in one ingest: the first only */
  int64_t j[2];
  ingest_two(st, "j1", "j2", "J", 1000, j);
  CHECK(j[0] > 0 && j[1] > j[0]);
  CHECK_INT(atomic_load(&h.claimed), 3);
  CHECK_INT(h.seqs[2], j[0]);
  CHECK_STR(sc_state(st, "j2", "r", buf, sizeof buf), "pending");
  CHECK_INT(sc_settle1(st, "r", j[0], h.fence[2], CEB_DS_DONE, 2000, 0, NULL),
            CEB_OK);
  CHECK_INT(sc_claim(st, "r", 2000, 10, c, 4), 1);
  CHECK_INT(c[0].seq, j[1]);
  ceb_claim_free(&c[0]);

  /* declined: pending, claimed as usual */
  atomic_store(&h.take, 0);
  int64_t d1 = sc_ingest1(st, "", "d1", "r", NULL, 1000);
  CHECK_STR(sc_state(st, "d1", "r", buf, sizeof buf), "pending");
  CHECK_INT(sc_claim(st, "r", 2000, 10, c, 4), 1);
  CHECK_INT(c[0].seq, d1);
  ceb_claim_free(&c[0]);

  /* every reservation ended once */
  CHECK_INT(atomic_load(&h.granted),
            atomic_load(&h.claimed) + atomic_load(&h.returned));
  ceb_store_set_claim_hook(st, NULL);
  ceb_store_close(st);
}
