/* Per-key serialisation of the head flag (delivery.head). Whether a keyed
 * row is its key's head is decided by the transaction that inserts it,
 * settles the head before it, or replays an older row; two of those for
 * one (route, key) at once (two instances) must not both decide on the
 * same snapshot, or a key gets two heads or none. Each takes a transaction
 * advisory lock per (route, key) it touches, in one statement before the
 * others (READ COMMITTED: the following statements see what the previous
 * holder committed), in ascending order, so that two groups locking
 * several keys never deadlock. */
#include <stdio.h>
#include <string.h>

#include <ceb/status.h>

#include "store/postgres/pg_internal.h"

/* $1, $2: route and key of every ingested delivery row; $3, $4: seq and
 * route of every settle (their keys are read here). The subquery's order
 * is the order the locks are taken in. The settles' keys are read by one
 * primary key lookup per settle (a lateral subquery that OFFSET 0 keeps
 * from being flattened into a join): as a join, the generic plan made on
 * a fresh, small table hashed a sequential scan of delivery and kept it
 * as the table grew (bench/store/RESULTS.md, 2026-12-06). */
const char cebpg_sql_keylock[] =
    "SELECT count(pg_advisory_xact_lock(h)) FROM (SELECT DISTINCT"
    " hashtextextended(k.route || chr(31) || k.order_key, 1128416) AS h"
    " FROM (SELECT a.route, a.order_key FROM unnest($1::text[], $2::text[])"
    " AS a(route, order_key) UNION ALL SELECT d.route, d.order_key FROM"
    " unnest($3::bigint[], $4::text[]) AS s(seq, route) CROSS JOIN LATERAL"
    " (SELECT p.route, p.order_key FROM delivery p WHERE p.seq = s.seq"
    " AND p.route = s.route OFFSET 0) d) k"
    " WHERE k.order_key IS NOT NULL ORDER BY 1) x";

int cebpg_keylock_send(PGconn *c, cebpg_op **ops, size_t n) {
  cebpg_buf a[4];
  memset(a, 0, sizeof a);
  for (int i = 0; i < 4; i++)
    cebpg_buf_add(&a[i], "{", 1);
  int nk = 0, ns = 0;
  for (size_t o = 0; o < n; o++) {
    if (ops[o]->kind == CEBPG_OP_INGEST) {
      ceb_ingest_batch *b = ops[o]->arg;
      for (size_t i = 0; i < b->count; i++)
        for (size_t r = 0; r < b->events[i].nroutes; r++) {
          const ceb_ingest_route *rt = &b->events[i].routes[r];
          if (!rt->order_key) continue;
          cebpg_buf_elem(&a[0], rt->route, strlen(rt->route), nk == 0);
          cebpg_buf_elem(&a[1], rt->order_key, strlen(rt->order_key), nk == 0);
          nk++;
        }
    } else if (ops[o]->kind == CEBPG_OP_SETTLE) {
      ceb_attempt_result *r = ops[o]->arg;
      char num[32];
      int len =
          snprintf(num, sizeof num, "%s%lld", ns ? "," : "", (long long)r->seq);
      cebpg_buf_add(&a[2], num, (size_t)len);
      cebpg_buf_elem(&a[3], r->route, strlen(r->route), ns == 0);
      ns++;
    }
  }
  int oom = 0;
  const char *vals[4];
  for (int i = 0; i < 4; i++) {
    cebpg_buf_add(&a[i], "}", 1);
    oom |= a[i].oom;
    vals[i] = a[i].p;
  }
  int rc = -1;
  if (nk == 0 && ns == 0)
    rc = 0;
  else if (!oom)
    rc = PQsendQueryPrepared(c, "ceb_keylock", 4, vals, NULL, NULL, 0) == 1
             ? 1
             : -1;
  for (int i = 0; i < 4; i++)
    cebpg_buf_free(&a[i]);
  return rc;
}
