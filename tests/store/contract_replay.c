/* The contract of the archive: replay by time range (ceb_store_replay_range)
 * re-offers the settled events of a route received in [since, until) as
 * new deliveries queued behind their key's open ones, copies carrying
 * replay_of; open deliveries, other routes and earlier copies are left
 * alone; a dry run only counts. */
#include <stdio.h>
#include <string.h>

#include <ceb/status.h>

#include "contract_internal.h"

/* Claims the one due delivery of route at now and settles it with state. */
static int64_t deliver(ceb_store *st, const char *route, int64_t now,
                       int state) {
  ceb_claim c[1];
  memset(c, 0, sizeof c);
  int n = sc_claim(st, route, now, 1, c, 1);
  CHECK_INT(n, 1);
  if (n != 1) return -1;
  CHECK_INT(sc_settle1(st, route, c[0].seq, c[0].fence, state, now, 0, NULL),
            CEB_OK);
  int64_t seq = c[0].seq;
  ceb_claim_free(&c[0]);
  return seq;
}

void sc_replay(const ceb_store_contract_env *env) {
  ceb_store *st = sc_fresh(env, "replay");
  if (!st) return;
  /* route r, key k: a (t=1000), b (2000), c (3000, dead), d (4000); x on
   * route r2 at 2500; u on r without a key at 2600 */
  int64_t a = sc_ingest1(st, "", "a", "r", "k", 1000);
  CHECK_INT(deliver(st, "r", 1000, CEB_DS_DONE), a);
  int64_t b = sc_ingest1(st, "", "b", "r", "k", 2000);
  CHECK_INT(deliver(st, "r", 2000, CEB_DS_DONE), b);
  int64_t x = sc_ingest1(st, "", "x", "r2", "k", 2500);
  CHECK_INT(deliver(st, "r2", 2500, CEB_DS_DONE), x);
  int64_t u = sc_ingest1(st, "", "u", "r", NULL, 2600);
  CHECK_INT(deliver(st, "r", 2600, CEB_DS_DONE), u);
  int64_t c = sc_ingest1(st, "", "c", "r", "k", 3000);
  CHECK_INT(deliver(st, "r", 3000, CEB_DS_DEAD), c);
  int64_t d = sc_ingest1(st, "", "d", "r", "k", 4000);
  CHECK_INT(deliver(st, "r", 4000, CEB_DS_DONE), d);
  /* still open: e is not offered again (it is still to be delivered) */
  int64_t e = sc_ingest1(st, "", "e", "r", "k", 3500);
  CHECK(e > d);

  ceb_replay_filter f = {.route = "r", .since = 1500, .until = 4000};
  size_t n = 99;
  int exists = 0;
  /* bad ranges */
  ceb_replay_filter bad = {.route = "r", .since = 4000, .until = 4000};
  CHECK_INT(ceb_store_replay_range(st, &bad, 5000, 0, &n, &exists), CEB_EINVAL);
  bad = (ceb_replay_filter){.since = 1, .until = 2};
  CHECK_INT(ceb_store_replay_range(st, &bad, 5000, 0, &n, NULL), CEB_EINVAL);
  /* a route the store never held */
  ceb_replay_filter none = {.route = "nope", .since = 0, .until = 9000};
  exists = 1;
  CHECK_INT(ceb_store_replay_range(st, &none, 5000, 0, &n, &exists), CEB_OK);
  CHECK_INT(n, 0);
  CHECK_INT(exists, 0);

  /* dry run: b, u, c (received in [1500, 4000) and settled) */
  int64_t open_before = ceb_store_count_open(st, "r");
  CHECK_INT(ceb_store_replay_range(st, &f, 5000, 1, &n, &exists), CEB_OK);
  CHECK_INT(n, 3);
  CHECK_INT(exists, 1);
  CHECK_INT(ceb_store_count_open(st, "r"), open_before);
  /* by type: none of them is of type other.* */
  f.type = "other.*";
  CHECK_INT(ceb_store_replay_range(st, &f, 5000, 1, &n, NULL), CEB_OK);
  CHECK_INT(n, 0);
  f.type = "nl.sc.*";
  CHECK_INT(ceb_store_replay_range(st, &f, 5000, 1, &n, NULL), CEB_OK);
  CHECK_INT(n, 3);

  CHECK_INT(ceb_store_replay_range(st, &f, 5000, 0, &n, NULL), CEB_OK);
  CHECK_INT(n, 3);
  CHECK_INT(ceb_store_count_open(st, "r"), open_before + 3);
  CHECK_INT(ceb_store_count_open(st, "r2"), 0);

  /* FIFO per key: the open e is the head of k; the unkeyed copy of u is
   * claimable at once */
  ceb_claim cl[4];
  memset(cl, 0, sizeof cl);
  int got = sc_claim(st, "r", 5000, 4, cl, 4);
  CHECK_INT(got, 2);
  int64_t seen_e = 0, seen_u = 0;
  for (int i = 0; i < got && i < 4; i++) {
    if (cl[i].seq == e) {
      seen_e = 1;
      CHECK_INT(cl[i].replay_of, 0);
    } else {
      seen_u = 1;
      CHECK(cl[i].seq > e);
      CHECK_INT(cl[i].replay_of, u);
      CHECK_INT(cl[i].received_at, 5000);
      CHECK(strstr(cl[i].event_json, "\"id\":\"u\"") != NULL);
    }
    CHECK_INT(
        sc_settle1(st, "r", cl[i].seq, cl[i].fence, CEB_DS_DONE, 5000, 0, NULL),
        CEB_OK);
    ceb_claim_free(&cl[i]);
  }
  CHECK(seen_e && seen_u);
  /* then the copies of b and c, in that order, one at a time */
  const int64_t want[] = {b, c};
  for (int i = 0; i < 2; i++) {
    memset(cl, 0, sizeof cl);
    got = sc_claim(st, "r", 5001, 4, cl, 4);
    CHECK_INT(got, 1);
    if (got != 1) break;
    CHECK_INT(cl[0].replay_of, want[i]);
    CHECK(cl[0].seq > e);
    CHECK_INT(cl[0].attempt, 1);
    CHECK_INT(
        sc_settle1(st, "r", cl[0].seq, cl[0].fence, CEB_DS_DONE, 5001, 0, NULL),
        CEB_OK);
    ceb_claim_free(&cl[0]);
  }
  CHECK_INT(ceb_store_count_open(st, "r"), 0);

  /* the copies (received at 5000) are not offered by a later range; the
   * originals are, once more */
  f.type = NULL;
  f.until = 9000;
  CHECK_INT(ceb_store_replay_range(st, &f, 6000, 1, &n, NULL), CEB_OK);
  CHECK_INT(n, 5); /* b, u, c, e (settled now), d */
  ceb_store_close(st);
}
