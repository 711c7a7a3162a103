/* Expiry on PostgreSQL in chunks: each call deletes at most chunk rows of
 * each kind in one short transaction (one statement each), so that ingest
 * never stalls behind it. SKIP LOCKED: two instances sweeping at once take
 * different rows. */
#include <stdlib.h>

#include <ceb/status.h>

#include "store/postgres/pg_internal.h"

int cebpg_sweep(ceb_store_impl *s, int64_t now, int64_t retention_ms,
                size_t chunk) {
  if (!chunk) chunk = 500;
  cebpg_params p = {.n = 0};
  cebpg_p_int(&p, now);
  cebpg_p_int(&p, (int64_t)chunk);
  cebpg_p_int(&p, retention_ms);
  PGresult *r = cebpg_query(
      s, "sweep",
      "WITH i AS (DELETE FROM idempotency WHERE ctid IN (SELECT ctid FROM"
      " idempotency WHERE state = 1 AND expires_at <= $1 LIMIT $2"
      " FOR UPDATE SKIP LOCKED) RETURNING 1),"
      /* journal rows settled before the cut-off and not held by the DLQ
       * (replay needs the event) */
      " s AS (SELECT seq FROM journal_settle js WHERE settled_at IS NOT NULL"
      " AND settled_at <= $1 - $3 AND NOT EXISTS (SELECT 1 FROM dlq q WHERE"
      " q.seq = js.seq) LIMIT $2 FOR UPDATE SKIP LOCKED),"
      " d AS (DELETE FROM delivery WHERE seq IN (SELECT seq FROM s)),"
      " a AS (DELETE FROM attempt WHERE seq IN (SELECT seq FROM s)),"
      " c AS (DELETE FROM callback WHERE seq IN (SELECT seq FROM s)),"
      " t AS (DELETE FROM journal_settle WHERE seq IN (SELECT seq FROM s)),"
      " j AS (DELETE FROM journal WHERE seq IN (SELECT seq FROM s)"
      " RETURNING 1),"
      /* keys without an outcome for the retention and without open rows
       * (a hostile stream of distinct keys does not grow it for ever) */
      " k AS (DELETE FROM key_status WHERE (route, order_key) IN (SELECT"
      " route, order_key FROM key_status ks WHERE last_at <= $1 - $3 AND"
      " NOT EXISTS (SELECT 1 FROM delivery d WHERE d.route = ks.route AND"
      " d.order_key = ks.order_key AND d.open) LIMIT $2"
      " FOR UPDATE SKIP LOCKED))"
      " SELECT (SELECT count(*) FROM i) + (SELECT count(*) FROM j)",
      &p);
  if (!r) return CEB_EIO;
  int n = (int)cebpg_int(r, 0, 0);
  PQclear(r);
  return n;
}
