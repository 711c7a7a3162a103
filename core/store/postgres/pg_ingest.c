/* Journal ingest on PostgreSQL: every ingest op of a committer group in
 * ONE statement. The events go as arrays (unnest ... WITH ORDINALITY keeps
 * their order); the journal insert dedupes on (id, source, client) with ON
 * CONFLICT DO NOTHING, which also drops a later duplicate within the same
 * statement (the first in order wins, as in the SQLite engine), and across
 * instances the unique constraint decides which insert was first (copy_no is
 * 0 for every event as received: pg_replay.c says why it exists). The
 * settle row and the delivery rows of the events actually inserted follow
 * in the same statement; it returns (seq, ordinal) of each inserted event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_internal.h"

const char cebpg_sql_ingest[] =
    "WITH src AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[],"
    " $4::text[], $5::text[], $6::int[], $7::bigint[], $12::text[],"
    " $13::text[]) WITH ORDINALITY AS s(client, source, id, type, event,"
    " nroutes, received_at, cb_route, cb_url, ord)),"
    " ins AS (INSERT INTO journal (client, source, id, type, received_at,"
    " event, size, unrouted) SELECT client, source, id, type, received_at,"
    " event, octet_length(event), nroutes = 0 FROM src ORDER BY ord"
    " ON CONFLICT (id, source, client, copy_no) DO NOTHING"
    " RETURNING seq, client, source, id),"
    " m AS (SELECT ins.seq, min(src.ord) AS ord FROM ins JOIN src"
    " ON src.id = ins.id AND src.source = ins.source"
    " AND src.client = ins.client GROUP BY ins.seq),"
    " st AS (INSERT INTO journal_settle (seq, open_routes, settled_at)"
    " SELECT m.seq, src.nroutes, CASE WHEN src.nroutes = 0"
    " THEN src.received_at END FROM m JOIN src ON src.ord = m.ord),"
    /* the client's callback (X-Callback): queued by the final settle */
    " cb AS (INSERT INTO callback (seq, route, url) SELECT m.seq,"
    " src.cb_route, src.cb_url FROM m JOIN src ON src.ord = m.ord"
    " WHERE src.cb_route IS NOT NULL AND src.cb_url IS NOT NULL"
    " AND src.nroutes > 0),"
    /* a keyed row is its key's head when it is the key's first row here
     * and no older row of the key is unsettled (the key is locked). A
     * head or unkeyed row the engine reserved a slot for ($14) is written
     * claimed, as the claim (pg_delivery.c) would write it: in progress,
     * attempt 1, under this instance's lease ($17) and due at its end,
     * the fence of a first claim with this statement's token ($18:
     * CEBPG_TOKEN_BITS) */
    " dl AS (INSERT INTO delivery (seq, route, state, next_at, order_key,"
    " head, attempts, first_at, last_at, lease_owner, lease_until, fence)"
    " SELECT seq, route, CASE WHEN c THEN 1 ELSE 0 END, CASE WHEN c THEN"
    " lease_until ELSE first_at END,"
    " order_key, head, CASE WHEN c THEN 1 ELSE 0 END, CASE WHEN c THEN now"
    " END, CASE WHEN c THEN now END, CASE WHEN c THEN $17 END, CASE WHEN c"
    " THEN lease_until END, CASE WHEN c THEN $18::bigint ELSE 0 END"
    " FROM (SELECT h.*,"
    " h.reserved AND (h.order_key IS NULL OR h.head) AS c FROM (SELECT"
    " m.seq, r.route, r.first_at, r.order_key, r.reserved, r.now,"
    " r.lease_until, r.order_key IS NOT NULL AND row_number() OVER"
    " (PARTITION BY r.route, r.order_key ORDER BY m.seq) = 1 AND NOT EXISTS"
    " (SELECT 1 FROM delivery p WHERE p.route = r.route AND p.order_key ="
    " r.order_key AND p.open) AS head FROM m JOIN unnest($8::bigint[],"
    " $9::text[], $10::bigint[], $11::text[], $14::boolean[],"
    " $15::bigint[], $16::bigint[]) AS r(ord, route, first_at, order_key,"
    " reserved, now, lease_until) ON r.ord = m.ord) h) x"
    " RETURNING seq, route, state)"
    /* per inserted event: the routes written claimed, joined by US */
    " SELECT m.seq, m.ord, string_agg(dl.route, chr(31)) FILTER (WHERE"
    " dl.state = 1) FROM m LEFT JOIN dl ON dl.seq = m.seq GROUP BY m.seq,"
    " m.ord";

#define NARRAYS 16 /* $1..$16; $17 the instance, $18 the fence */

typedef struct arrays {
  cebpg_buf a[NARRAYS];
} arrays;

static void open_all(arrays *x) {
  for (int i = 0; i < NARRAYS; i++)
    cebpg_buf_add(&x->a[i], "{", 1);
}

static void num(cebpg_buf *b, int64_t v, int first) {
  char t[32];
  int n = snprintf(t, sizeof t, "%s%lld", first ? "" : ",", (long long)v);
  cebpg_buf_add(b, t, (size_t)n);
}

static void text(cebpg_buf *b, const char *s, int first) {
  cebpg_buf_elem(b, s, s ? strlen(s) : 0, first);
}

/* Room for one more claim in op; 0 when out of memory (the delivery is
 * then claimed by the engine as usual). */
static int claim_room(cebpg_op *op) {
  /* the arrays are the op's from here (CEBPG_CLAIMS_HELD): freed by
   * cebpg_ingest_claims_end even when every reservation is refused */
  if (op->nclaims < op->capclaims) return 1;
  size_t cap = op->capclaims ? op->capclaims * 2 : 8;
  ceb_ingest_claim *c = realloc(op->claims, cap * sizeof *c);
  if (!c) return 0;
  op->claims = c;
  unsigned char *ok = realloc(op->claim_ok, cap);
  if (!ok) return 0;
  op->claim_ok = ok;
  op->capclaims = cap;
  return 1;
}

/* A slot of the engine for route rt of event e, when it may be its key's
 * head: no row of its (route, key) reserved before it in this statement
 * (only the first can be; the statement decides whether it is). */
static int try_reserve(ceb_store_impl *s, cebpg_op *op,
                       const ceb_ingest_event *e, const ceb_ingest_route *rt,
                       cebpg_op **ops, size_t nops, int64_t fence) {
  const ceb_store_claim_hook *h = &s->claim_hook;
  if (!h->reserve) return 0;
  if (rt->order_key)
    for (size_t o = 0; o < nops; o++)
      for (size_t i = 0; i < ops[o]->nclaims; i++) {
        const ceb_ingest_route *q = ops[o]->claims[i].route;
        if (q->order_key && strcmp(q->order_key, rt->order_key) == 0 &&
            strcmp(q->route, rt->route) == 0)
          return 0;
      }
  if (!claim_room(op)) return 0;
  int64_t now = 0, lease_ms = 0;
  if (!h->reserve(h->arg, rt, &now, &lease_ms)) return 0;
  if (lease_ms < s->lease_ms) lease_ms = s->lease_ms;
  op->claim_ok[op->nclaims] = 0;
  op->claims[op->nclaims++] = (ceb_ingest_claim){.event = e,
                                                 .route = rt,
                                                 .now = now,
                                                 .lease_until = now + lease_ms,
                                                 .fence = fence};
  return 1;
}

void cebpg_ingest_claims_end(ceb_store_impl *s, cebpg_op *op, int committed) {
  const ceb_store_claim_hook *h = &s->claim_hook;
  if (op->nclaims && h->claimed) {
    /* the claimed ones first, in their order, then the rest back */
    size_t k = 0;
    for (size_t i = 0; i < op->nclaims; i++)
      if (committed && op->claim_ok[i]) {
        ceb_ingest_claim t = op->claims[k];
        op->claims[k] = op->claims[i];
        op->claims[i] = t;
        op->claim_ok[i] = op->claim_ok[k];
        op->claim_ok[k++] = 1;
      }
    if (k) h->claimed(h->arg, op->arg, op->claims, k, 1);
    if (op->nclaims > k)
      h->claimed(h->arg, op->arg, op->claims + k, op->nclaims - k, 0);
  }
  free(op->claims);
  free(op->claim_ok);
  op->claims = NULL;
  op->claim_ok = NULL;
  op->nclaims = op->capclaims = 0;
}

int cebpg_ingest_send(ceb_store_impl *s, PGconn *c, cebpg_op **ops, size_t n) {
  arrays x;
  memset(&x, 0, sizeof x);
  open_all(&x);
  int64_t ord = 0, rord = 0;
  /* every claim at ingest of this statement: the first claim of its row
   * with the statement's token (a release after a lost answer matches it:
   * pg_commit.c) */
  int64_t token = cebpg_claim_token(s);
  int64_t fence = ((int64_t)1 << CEBPG_TOKEN_BITS) | token;
  for (size_t o = 0; o < n; o++) {
    ceb_ingest_batch *b = ops[o]->arg;
    if (CEBPG_CLAIMS_HELD(ops[o]))
      cebpg_ingest_claims_end(s, ops[o], 0); /* resent */
    for (size_t i = 0; i < b->count; i++) {
      ceb_ingest_event *e = &b->events[i];
      int first = ord == 0;
      ord++;
      text(&x.a[0], e->client ? e->client : "", first);
      text(&x.a[1], e->source ? e->source : "", first);
      text(&x.a[2], e->id ? e->id : "", first);
      text(&x.a[3], e->type ? e->type : "", first);
      cebpg_buf_elem(&x.a[4], e->json ? e->json : "{}",
                     e->json ? e->json_len : 2, first);
      num(&x.a[5], (int64_t)e->nroutes, first);
      num(&x.a[6], b->now, first);
      int cb = e->callback_route && e->callback_url;
      text(&x.a[11], cb ? e->callback_route : NULL, first);
      text(&x.a[12], cb ? e->callback_url : NULL, first);
      for (size_t r = 0; r < e->nroutes; r++) {
        const ceb_ingest_route *rt = &e->routes[r];
        int rfirst = rord == 0;
        rord++;
        num(&x.a[7], ord, rfirst);
        text(&x.a[8], rt->route, rfirst);
        num(&x.a[9], rt->first_at, rfirst);
        text(&x.a[10], rt->order_key, rfirst);
        int res = try_reserve(s, ops[o], e, rt, ops, o + 1, fence);
        cebpg_buf_add(&x.a[13],
                      rfirst ? (res ? "t" : "f") : (res ? ",t" : ",f"),
                      rfirst ? 1 : 2);
        num(&x.a[14], res ? ops[o]->claims[ops[o]->nclaims - 1].now : 0,
            rfirst);
        num(&x.a[15], res ? ops[o]->claims[ops[o]->nclaims - 1].lease_until : 0,
            rfirst);
      }
    }
  }
  const char *vals[NARRAYS + 2];
  int oom = 0;
  for (int i = 0; i < NARRAYS; i++) {
    cebpg_buf_add(&x.a[i], "}", 1);
    oom |= x.a[i].oom;
    vals[i] = x.a[i].p;
  }
  vals[NARRAYS] = s->instance;
  char fence_text[24];
  snprintf(fence_text, sizeof fence_text, "%lld", (long long)fence);
  vals[NARRAYS + 1] = fence_text;
  int rc = -1;
  if (ord == 0)
    rc = 0; /* empty batches: nothing to send */
  else if (!oom)
    rc = PQsendQueryPrepared(c, "ceb_ingest", NARRAYS + 2, vals, NULL, NULL,
                             0) == 1
             ? 1
             : -1;
  for (int i = 0; i < NARRAYS; i++)
    cebpg_buf_free(&x.a[i]);
  if (rc < 0) /* not sent: nothing is claimed */
    for (size_t o = 0; o < n; o++)
      if (CEBPG_CLAIMS_HELD(ops[o])) cebpg_ingest_claims_end(s, ops[o], 0);
  return rc;
}

int cebpg_ingest_recv(PGresult *r, cebpg_op **ops, size_t n) {
  /* ordinal -> event: the ops' events in the order they were sent */
  size_t total = 0;
  for (size_t o = 0; o < n; o++)
    total += ((ceb_ingest_batch *)ops[o]->arg)->count;
  ceb_ingest_event **by = malloc((total ? total : 1) * sizeof *by);
  cebpg_op **byop = malloc((total ? total : 1) * sizeof *byop);
  if (!by || !byop) {
    free(by);
    free(byop);
    return CEB_ENOMEM;
  }
  size_t k = 0;
  for (size_t o = 0; o < n; o++) {
    ceb_ingest_batch *b = ops[o]->arg;
    for (size_t i = 0; i < b->count; i++) {
      byop[k] = ops[o];
      by[k++] = &b->events[i];
    }
  }
  int rc = CEB_OK;
  for (int row = 0; row < PQntuples(r); row++) {
    int64_t seq = cebpg_int(r, row, 0), ord = cebpg_int(r, row, 1);
    if (ord < 1 || (size_t)ord > total) {
      rc = CEB_EINTERNAL;
      break;
    }
    ceb_ingest_event *e = by[ord - 1];
    e->inserted = 1;
    e->seq = seq;
    if (PQgetisnull(r, row, 2)) continue;
    /* the routes written claimed: their reservations are claims */
    cebpg_op *op = byop[ord - 1];
    const char *names = PQgetvalue(r, row, 2);
    while (*names) {
      size_t len = strcspn(names, "\x1f");
      for (size_t i = 0; i < op->nclaims; i++)
        if (op->claims[i].event == e &&
            strlen(op->claims[i].route->route) == len &&
            memcmp(op->claims[i].route->route, names, len) == 0)
          op->claim_ok[i] = 1;
      names += len;
      if (*names) names++;
    }
  }
  free(by);
  free(byop);
  return rc;
}

int cebpg_ingest(ceb_store_impl *s, ceb_ingest_batch *b, int bounded,
                 ceb_store_done_fn done, void *arg) {
  for (size_t i = 0; i < b->count; i++) {
    ceb_ingest_event *e = &b->events[i];
    if (!e->source || !e->id || !e->json) return CEB_EINVAL;
  }
  /* nothing can be made durable now: say so at once (503), queue nothing */
  if (!cebpg_pool_healthy(s->pool, NULL, 0)) return CEB_EIO;
  cebpg_op *op = calloc(1, sizeof *op);
  if (!op) return CEB_ENOMEM;
  op->kind = CEBPG_OP_INGEST;
  op->bounded = bounded ? 1 : 0;
  op->arg = b;
  op->done = done;
  op->done_arg = arg;
  int rc = cebpg_submit(s, op);
  if (rc != CEB_OK) free(op);
  return rc;
}
