/* The PostgreSQL committers' grouping rule (core/store/postgres/
 * pg_opkeys.c): an op's keys are the (route, order key)s it writes (an
 * ingest's keyed routes, a settle's claim key; none for unkeyed rows), and
 * an op may join a group only while no other committer's running group
 * holds one of them, nor an op left in the queue before it. */
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "ceb_test.h"
#include "store/postgres/pg_internal.h"

static cebpg_op *settle_op(ceb_attempt_result *r, const char *route,
                           const char *key) {
  *r = (ceb_attempt_result){.seq = 1, .route = route, .order_key = key};
  cebpg_op *op = calloc(1, sizeof *op);
  op->kind = CEBPG_OP_SETTLE;
  op->arg = r;
  CHECK_INT(cebpg_op_keys(op), CEB_OK);
  return op;
}

int main(void) {
  /* an ingest of four events: three keyed routes (more than the op's
   * inline room), one unkeyed */
  ceb_ingest_route rt[4] = {{.route = "r", .order_key = "k1"},
                            {.route = "r", .order_key = "k2"},
                            {.route = "r", .order_key = NULL},
                            {.route = "s", .order_key = "k1"}};
  ceb_ingest_event ev[4];
  for (int i = 0; i < 4; i++)
    ev[i] = (ceb_ingest_event){.routes = &rt[i], .nroutes = 1};
  ceb_ingest_batch b = {.events = ev, .count = 4};
  cebpg_op *ing = calloc(1, sizeof *ing);
  ing->kind = CEBPG_OP_INGEST;
  ing->arg = &b;
  CHECK_INT(cebpg_op_keys(ing), CEB_OK);
  CHECK_INT((int)ing->nkeys, 3);

  ceb_attempt_result r1, r2, r3, r4, r5, r6;
  cebpg_op *k1 = settle_op(&r1, "r", "k1");
  cebpg_op *k3 = settle_op(&r2, "r", "k3");
  cebpg_op *other_route = settle_op(&r3, "q", "k1");
  cebpg_op *unkeyed = settle_op(&r4, "r", NULL);
  /* the separator keeps ("r", "k1") from ("rk", "1") */
  cebpg_op *shifted = settle_op(&r5, "rk", "1");
  cebpg_op *s_k1 = settle_op(&r6, "s", "k1");
  CHECK_INT((int)k1->nkeys, 1);
  CHECK_INT((int)unkeyed->nkeys, 0);

  static ceb_store_impl s; /* only the committers are read */
  cebpg_committer *w0 = &s.committers[0], *w1 = &s.committers[1];
  w0->s = w1->s = &s;
  /* nothing running: nothing busy */
  CHECK_INT(cebpg_keys_busy(&s, w1, k1, NULL, 0), 0);

  /* w0 runs the ingest's group */
  CHECK_INT(cebpg_group_keys_add(w0, unkeyed), 0);
  CHECK_INT(cebpg_group_keys_add(w0, ing), 0);
  cebpg_group_keys_seal(w0);
  CHECK_INT((int)w0->ngkeys, 3);
  CHECK_INT(cebpg_keys_busy(&s, w1, k1, NULL, 0), 1);
  CHECK_INT(cebpg_keys_busy(&s, w1, s_k1, NULL, 0), 1);
  CHECK_INT(cebpg_keys_busy(&s, w1, k3, NULL, 0), 0);
  CHECK_INT(cebpg_keys_busy(&s, w1, other_route, NULL, 0), 0);
  CHECK_INT(cebpg_keys_busy(&s, w1, shifted, NULL, 0), 0);
  CHECK_INT(cebpg_keys_busy(&s, w1, unkeyed, NULL, 0), 0);
  /* a committer's own group never holds its ops back */
  CHECK_INT(cebpg_keys_busy(&s, w0, k1, NULL, 0), 0);
  /* a key an op left behind in the queue has: later ops of it stay too */
  CHECK_INT(cebpg_keys_busy(&s, w1, k3, k3->keys, k3->nkeys), 1);
  /* the group ended */
  w0->ngkeys = 0;
  CHECK_INT(cebpg_keys_busy(&s, w1, k1, NULL, 0), 0);
  /* a settle of k1 on w1 now holds the ingest back from w0 */
  CHECK_INT(cebpg_group_keys_add(w1, k1), 0);
  cebpg_group_keys_seal(w1);
  CHECK_INT(cebpg_keys_busy(&s, w0, ing, NULL, 0), 1);

  free(w0->gkeys);
  free(w1->gkeys);
  cebpg_op_free(ing);
  cebpg_op_free(k1);
  cebpg_op_free(k3);
  cebpg_op_free(other_route);
  cebpg_op_free(unkeyed);
  cebpg_op_free(shifted);
  cebpg_op_free(s_k1);
  return ceb_test_done("unit_store_pg_opkeys");
}
