/* The keys of the committers' ops: which (route, order key)s an op
 * writes, hashed, so that the groups running at once in this instance
 * hold none in common (pg_commit.c, take_group). Two groups sharing a key
 * serialise on its advisory lock in the server (pg_keylock.c): the later
 * one waits for the earlier one's COMMIT. Keeping them apart here makes
 * that wait a queue wait in the bridge instead, and lets the other keys'
 * ops run meanwhile. Only scheduling: the advisory locks still decide
 * the heads (another instance, a replay), so a collision costs a wait,
 * never a wrong head; but an ingest's keys also keep its key's ingests
 * in queue order (take_group), so an op whose keys find no memory is
 * refused (cebpg_submit). */
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "store/postgres/pg_internal.h"

/* FNV-1a 64 over route, US (0x1f, as the advisory lock's text), key. */
static uint64_t key_hash(const char *route, const char *key) {
  uint64_t h = 14695981039346656037ULL;
  for (const unsigned char *p = (const unsigned char *)route; *p; p++)
    h = (h ^ *p) * 1099511628211ULL;
  h = (h ^ 0x1f) * 1099511628211ULL;
  for (const unsigned char *p = (const unsigned char *)key; *p; p++)
    h = (h ^ *p) * 1099511628211ULL;
  return h;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int cebpg_op_keys(cebpg_op *op) {
  op->keys = op->kbuf;
  op->nkeys = 0;
  if (op->kind == CEBPG_OP_SETTLE) {
    const ceb_attempt_result *r = op->arg;
    if (r->order_key) op->kbuf[op->nkeys++] = key_hash(r->route, r->order_key);
    return CEB_OK;
  }
  if (op->kind != CEBPG_OP_INGEST) return CEB_OK;
  const ceb_ingest_batch *b = op->arg;
  size_t n = 0;
  for (size_t i = 0; i < b->count; i++)
    for (size_t r = 0; r < b->events[i].nroutes; r++)
      n += b->events[i].routes[r].order_key != NULL;
  if (n > sizeof op->kbuf / sizeof op->kbuf[0]) {
    op->keys = malloc(n * sizeof *op->keys);
    if (!op->keys) {
      op->keys = op->kbuf;
      return CEB_ENOMEM;
    }
  }
  for (size_t i = 0; i < b->count; i++)
    for (size_t r = 0; r < b->events[i].nroutes; r++) {
      const ceb_ingest_route *rt = &b->events[i].routes[r];
      if (rt->order_key)
        op->keys[op->nkeys++] = key_hash(rt->route, rt->order_key);
    }
  return CEB_OK;
}

void cebpg_op_free(cebpg_op *op) {
  if (!op) return;
  if (op->keys != op->kbuf) free(op->keys);
  free(op);
}

int cebpg_keys_busy(const ceb_store_impl *s, const cebpg_committer *w,
                    const cebpg_op *op, const uint64_t *passed,
                    size_t npassed) {
  for (size_t k = 0; k < op->nkeys; k++) {
    uint64_t h = op->keys[k];
    for (size_t i = 0; i < npassed; i++)
      if (passed[i] == h) return 1;
    for (size_t i = 0; i < CEBPG_COMMITTERS_MAX; i++) {
      const cebpg_committer *o = &s->committers[i];
      if (o != w && o->ngkeys &&
          bsearch(&h, o->gkeys, o->ngkeys, sizeof h, cmp_u64))
        return 1;
    }
  }
  return 0;
}

int cebpg_group_keys_add(cebpg_committer *w, const cebpg_op *op) {
  if (!op->nkeys) return 0;
  if (w->ngkeys + op->nkeys > w->capgkeys) {
    size_t cap = (w->ngkeys + op->nkeys) * 2 + 16;
    uint64_t *g = realloc(w->gkeys, cap * sizeof *g);
    if (!g) return -1;
    w->gkeys = g;
    w->capgkeys = cap;
  }
  memcpy(w->gkeys + w->ngkeys, op->keys, op->nkeys * sizeof *op->keys);
  w->ngkeys += op->nkeys;
  return 0;
}

void cebpg_group_keys_seal(cebpg_committer *w) {
  if (w->ngkeys > 1) qsort(w->gkeys, w->ngkeys, sizeof *w->gkeys, cmp_u64);
}
