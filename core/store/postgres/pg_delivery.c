/* Deliveries on PostgreSQL: claims with leases and fencing tokens (FIFO per
 * order key across instances; the outcomes checked against the token are
 * pg_settle.c's), recovery of this instance's claims, and the counts and
 * status reads. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_internal.h"

extern const char cebpg_sql_ingest[];
extern const char cebpg_sql_keylock[];
extern const char cebpg_sql_settle[];

/* Due rows of the route: pending or retrying rows, and rows in progress
 * under a lease that ended (its holder is taken to be gone), that have no
 * key or are heads of their key (delivery.head: no older row of the
 * (route, key) is unsettled, whoever holds it; a key whose head another
 * instance holds has no head to claim). delivery_due holds only those and
 * the rows in progress (schema 10: a claim leaves every indexed column as
 * it is, so that it is a HOT update), so a claim never reads the rows
 * queued behind heads; the live leases it passes over are at most the
 * engine's in-flight rows. Oldest due first. FOR UPDATE SKIP LOCKED:
 * instances claiming at once take different rows. The fence counts the
 * row's claims and carries this statement's token ($6: CEBPG_TOKEN_BITS),
 * which is how a release of this claim after its answer was lost finds
 * its rows and no other's (pg_commit.c). A claimed row's next_at is its
 * lease's end (schema 13): the rows in progress sort after the due ones,
 * so the scan reads none of them, and one whose lease ended is due. */
static const char SQL_CLAIM[] =
    "WITH c AS (SELECT seq FROM delivery WHERE route = $1 AND open"
    " AND (order_key IS NULL OR head) AND next_at <= $2"
    " AND (state <> 1 OR lease_until <= $2)"
    " ORDER BY next_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED)"
    " UPDATE delivery d SET state = 1, attempts = d.attempts + 1,"
    " last_at = $2, first_at = COALESCE(d.first_at, $2), lease_owner = $4,"
    " lease_until = $5, next_at = $5,"
    " fence = (((d.fence >> 32) + 1) << 32) | $6::bigint"
    " FROM c, journal j"
    " WHERE d.route = $1 AND d.seq = c.seq AND j.seq = d.seq"
    " RETURNING d.seq, d.attempts, d.order_key, j.event, j.received_at,"
    " d.first_at, d.replays, d.fence, d.lease_until, d.next_at,"
    " j.replay_of";

static const char SQL_FORWARDED[] =
    "UPDATE dlq SET forwarded_at = $2 WHERE id = $1";

int cebpg_prepare_all(ceb_store_impl *s, PGconn *c) {
  static const struct {
    const char *name, *sql;
  } stmts[] = {{"ceb_ingest", cebpg_sql_ingest},
               {"ceb_claim", SQL_CLAIM},
               {"ceb_settle", cebpg_sql_settle},
               {"ceb_forwarded", SQL_FORWARDED},
               {"ceb_keylock", cebpg_sql_keylock},
               {"ceb_noseqscan", cebpg_sql_noseqscan},
               {"ceb_noseqscan_async", cebpg_sql_noseqscan_async}};
  for (size_t i = 0; i < sizeof stmts / sizeof stmts[0]; i++) {
    PGresult *r = PQprepare(c, stmts[i].name, stmts[i].sql, 0, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
      char msg[400];
      cebpg_scrub(s->pool, PQresultErrorMessage(r), msg, sizeof msg);
      if (!cebpg_pool_failed(s->pool, c, r, "preparing statements"))
        ceb_log_error("store: preparing %s: %s", stmts[i].name, msg);
      PQclear(r);
      return CEB_EIO;
    }
    PQclear(r);
  }
  return CEB_OK;
}

/* ---- claim ---- */

int64_t cebpg_claim_token(ceb_store_impl *s) {
  return (int64_t)(atomic_fetch_add(&s->tokens, 1) & CEBPG_TOKEN_MASK);
}

int cebpg_claim_send(ceb_store_impl *s, PGconn *c, cebpg_op *op) {
  cebpg_claim_args *a = op->arg;
  a->token = cebpg_claim_token(s);
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, a->route);
  cebpg_p_int(&p, a->now);
  cebpg_p_int(&p, (int64_t)a->max);
  cebpg_p_text(&p, s->instance);
  cebpg_p_int(&p, a->lease_until);
  cebpg_p_int(&p, a->token);
  return PQsendQueryPrepared(c, "ceb_claim", p.n, p.v, NULL, NULL, 0) == 1 ? 1
                                                                           : -1;
}

static int claim_cmp(const void *x, const void *y) {
  const ceb_claim *a = x, *b = y;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

int cebpg_claim_recv(PGresult *r, cebpg_op *op) {
  cebpg_claim_args *a = op->arg;
  int n = PQntuples(r);
  a->count = 0;
  a->out = n ? calloc((size_t)n, sizeof *a->out) : NULL;
  if (n && !a->out) return CEB_ENOMEM;
  for (int i = 0; i < n; i++) {
    ceb_claim *c = &a->out[a->count++];
    c->seq = cebpg_int(r, i, 0);
    c->attempt = (uint32_t)cebpg_int(r, i, 1);
    c->order_key = cebpg_dup(r, i, 2);
    c->event_json = cebpg_dup(r, i, 3);
    c->received_at = cebpg_int(r, i, 4);
    c->first_at = PQgetisnull(r, i, 5) ? a->now : cebpg_int(r, i, 5);
    c->replays = (uint32_t)cebpg_int(r, i, 6);
    c->fence = cebpg_int(r, i, 7);
    c->lease_until = cebpg_int(r, i, 8);
    c->replay_of = PQgetisnull(r, i, 10) ? 0 : cebpg_int(r, i, 10);
    if (!c->event_json) return CEB_ENOMEM;
  }
  /* UPDATE ... RETURNING has no order; oldest first, as the engine expects
   * within a key (each key gives at most one row anyway) */
  if (a->count > 1) qsort(a->out, a->count, sizeof *a->out, claim_cmp);
  return CEB_OK;
}

int cebpg_claim(ceb_store_impl *s, const char *route, int64_t now, size_t max,
                int64_t lease_ms, ceb_claim **out, size_t *count) {
  *out = NULL;
  *count = 0;
  if (!route || max == 0) return CEB_EINVAL;
  int64_t lease = lease_ms > s->lease_ms ? lease_ms : s->lease_ms;
  cebpg_claim_args a = {
      .route = route, .now = now, .lease_until = now + lease, .max = max};
  int rc = cebpg_call(s, CEBPG_OP_CLAIM, &a);
  if (rc != CEB_OK) {
    ceb_claims_free(a.out, a.count);
    return rc;
  }
  *out = a.out;
  *count = a.count;
  return CEB_OK;
}

/* ---- DLQ forwarded (async, on the committer) ---- */

int cebpg_fwd_send(PGconn *c, cebpg_op *op) {
  cebpg_fwd_args *a = op->arg;
  cebpg_params p = {.n = 0};
  cebpg_p_int(&p, a->id);
  cebpg_p_int(&p, a->now);
  return PQsendQueryPrepared(c, "ceb_forwarded", p.n, p.v, NULL, NULL, 0) == 1
             ? 1
             : -1;
}

int cebpg_fwd_recv(PGresult *r, cebpg_op *op) {
  op->status = atoi(PQcmdTuples(r)) > 0 ? CEB_OK : CEB_ENOTFOUND;
  return CEB_OK;
}

/* The committer owns the op's arg only while it runs: the id and time are
 * copied into a block freed by this done, which then calls the caller's. */
typedef struct fwd_op {
  cebpg_fwd_args a;
  ceb_store_done_fn done;
  void *arg;
} fwd_op;

static void fwd_done(void *arg, int status) {
  fwd_op *f = arg;
  if (f->done) f->done(f->arg, status);
  free(f);
}

int cebpg_dlq_forwarded(ceb_store_impl *s, int64_t id, int64_t now,
                        ceb_store_done_fn done, void *arg) {
  fwd_op *f = calloc(1, sizeof *f);
  cebpg_op *op = calloc(1, sizeof *op);
  if (!f || !op) {
    free(f);
    free(op);
    return CEB_ENOMEM;
  }
  f->a = (cebpg_fwd_args){id, now};
  f->done = done;
  f->arg = arg;
  op->kind = CEBPG_OP_FORWARDED;
  op->arg = &f->a;
  op->done = fwd_done;
  op->done_arg = f;
  int rc = cebpg_submit(s, op);
  if (rc != CEB_OK) {
    free(f);
    free(op);
  }
  return rc;
}

/* ---- recovery ---- */

int cebpg_recover(ceb_store_impl *s, int64_t now) {
  /* this instance's claims of an earlier run (same [bridge] instance), and
   * any claim whose lease ended: never a live claim of another instance */
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, s->instance);
  cebpg_p_int(&p, now);
  PGresult *r = cebpg_query(
      s, "recover",
      "UPDATE delivery SET state = 0, lease_owner = NULL, lease_until = NULL,"
      " next_at = LEAST(next_at, $2)"
      " WHERE open AND state = 1 AND (lease_owner = $1 OR lease_until <= $2)",
      &p);
  if (!r) return CEB_EIO;
  int n = atoi(PQcmdTuples(r));
  PQclear(r);
  return n;
}

/* ---- reads ---- */

/* name: a prepared statement's (cebpg_query_prepared), or NULL */
static int64_t read_int(ceb_store_impl *s, const char *what, const char *name,
                        const char *sql, const cebpg_params *p, int64_t dflt) {
  PGresult *r = name ? cebpg_query_prepared(s, what, name, sql, p)
                     : cebpg_query(s, what, sql, p);
  if (!r) return CEB_EIO;
  int64_t v =
      PQntuples(r) > 0 && !PQgetisnull(r, 0, 0) ? cebpg_int(r, 0, 0) : dflt;
  PQclear(r);
  return v;
}

int64_t cebpg_next_due(ceb_store_impl *s, const char *route, int64_t after) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, route);
  cebpg_p_int(&p, after);
  /* pending or retrying heads, and the end of a lease (a takeover): a row
   * in progress is due at its lease's end, its next_at (schema 13), so
   * one ordered read of delivery_due (its first entry after $2) */
  int64_t v =
      read_int(s, "next due", "ceb_next_due",
               "SELECT MIN(next_at) FROM delivery WHERE route = $1"
               " AND open AND (order_key IS NULL OR head) AND next_at > $2",
               &p, INT64_MAX);
  return v < 0 ? INT64_MAX : v;
}

int64_t cebpg_count_open(ceb_store_impl *s, const char *route) {
  cebpg_params p = {.n = 0};
  if (route) {
    cebpg_p_text(&p, route);
    return read_int(s, "count open", NULL,
                    "SELECT count(*) FROM delivery WHERE route = $1 AND"
                    " open",
                    &p, 0);
  }
  return read_int(s, "count open", NULL,
                  "SELECT count(*) FROM delivery WHERE open", NULL, 0);
}

int64_t cebpg_count_open_key(ceb_store_impl *s, const char *route,
                             const char *key, int64_t cap) {
  /* delivery_open (route, order_key, seq) WHERE open; no further
   * than cap rows */
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, route);
  cebpg_p_text(&p, key);
  cebpg_p_int(&p, cap > 0 ? cap : INT64_MAX);
  return read_int(s, "count open of a key", NULL,
                  "SELECT count(*) FROM (SELECT 1 FROM delivery WHERE"
                  " route = $1 AND order_key = $2 AND open LIMIT $3) x",
                  &p, CEB_EIO);
}

json_t *cebpg_key_stats(ceb_store_impl *s, const char *route, size_t limit) {
  /* the keys the settles noted (key_status) and those with open rows */
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, route);
  cebpg_p_int(&p, (int64_t)limit);
  PGresult *r =
      cebpg_query(s, "key stats",
                  "SELECT k, sum(o), max(ls), max(lf) FROM ("
                  " SELECT order_key AS k, 0 AS o, last_success_at AS ls,"
                  " last_failure_at AS lf FROM key_status WHERE route = $1"
                  " UNION ALL SELECT order_key, 1, NULL, NULL FROM delivery"
                  " WHERE route = $1 AND open AND order_key IS NOT NULL) x"
                  " GROUP BY k ORDER BY k LIMIT $2",
                  &p);
  if (!r) return NULL;
  json_t *arr = json_array();
  static const char *const names[] = {"key", "open", "last_success_at",
                                      "last_failure_at"};
  for (int i = 0; i < PQntuples(r); i++) {
    json_t *o = json_object();
    for (int k = 0; k < 4; k++)
      cebpg_json_col(o, names[k], r, i, k);
    json_array_append_new(arr, o);
  }
  PQclear(r);
  return arr;
}

int64_t cebpg_oldest_open(ceb_store_impl *s, const char *route) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, route);
  /* a route's oldest open row is a head, unkeyed, or a replayed dead
   * letter waiting behind a newer row of its key in progress (pg_dlq.c):
   * delivery_open_seq (schema 12) holds only those, and this predicate is
   * the index's, so that the planner may use it */
  return read_int(s, "oldest open", NULL,
                  "SELECT received_at FROM journal WHERE seq = (SELECT"
                  " min(seq) FROM delivery WHERE route = $1 AND open"
                  " AND (order_key IS NULL OR head OR replays > 0))",
                  &p, 0);
}

/* LIMIT $n of a query: max, or NULL (LIMIT ALL) for 0. */
static void p_limit(cebpg_params *p, size_t max) {
  if (max)
    cebpg_p_int(p, (int64_t)max);
  else
    cebpg_p_text(p, NULL);
}

json_t *cebpg_event_status(ceb_store_impl *s, const char *id,
                           const char *source, size_t max) {
  if (!id) return NULL;
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, id);
  cebpg_p_text(&p, source);
  p_limit(&p, max);
  PGresult *r = cebpg_query(
      s, "status",
      "SELECT j.seq, j.client, j.source, j.id, j.type, j.received_at,"
      " j.unrouted, s.settled_at, d.route, d.state, d.attempts, d.next_at,"
      " d.first_at, d.last_at, d.last_status, d.last_reason, d.last_error,"
      " d.order_key, d.dlq_id, d.response FROM (SELECT * FROM journal"
      " WHERE id = $1 AND ($2::text IS NULL OR source = $2)"
      " ORDER BY seq DESC LIMIT $3::bigint) j"
      " LEFT JOIN journal_settle s ON s.seq = j.seq"
      " LEFT JOIN delivery d ON d.seq = j.seq"
      " ORDER BY j.seq, d.route",
      &p);
  if (!r) return NULL;
  json_t *arr = json_array();
  json_t *cur = NULL, *routes = NULL;
  int64_t cur_seq = -1;
  static const char *const cols[] = {"seq", "client",    "source",
                                     "id",  "type",      "received_at",
                                     NULL,  "settled_at"};
  for (int i = 0; i < PQntuples(r); i++) {
    int64_t seq = cebpg_int(r, i, 0);
    if (seq != cur_seq) {
      cur = json_object();
      for (int c = 0; c < 8; c++)
        if (cols[c]) cebpg_json_col(cur, cols[c], r, i, c);
      json_object_set_new(cur, "unrouted",
                          json_boolean(PQgetvalue(r, i, 6)[0] == 't'));
      routes = json_array();
      json_object_set_new(cur, "routes", routes);
      json_array_append_new(arr, cur);
      cur_seq = seq;
    }
    if (PQgetisnull(r, i, 8)) continue; /* unrouted: no delivery rows */
    json_t *o = json_object();
    int state = (int)cebpg_int(r, i, 9);
    cebpg_json_col(o, "route", r, i, 8);
    json_object_set_new(o, "state", json_string(ceb_dstate_name(state)));
    cebpg_json_col(o, "attempts", r, i, 10);
    if (state == CEB_DS_PENDING || state == CEB_DS_RETRYING)
      cebpg_json_col(o, "next_attempt_at", r, i, 11);
    else
      json_object_set_new(o, "next_attempt_at", json_null());
    cebpg_json_col(o, "first_attempt_at", r, i, 12);
    cebpg_json_col(o, "last_attempt_at", r, i, 13);
    cebpg_json_col(o, "last_status", r, i, 14);
    cebpg_json_col(o, "last_reason", r, i, 15);
    cebpg_json_col(o, "last_error", r, i, 16);
    cebpg_json_col(o, "order_key", r, i, 17);
    cebpg_json_col(o, "dlq_id", r, i, 18);
    if (PQgetisnull(r, i, 19)) {
      json_object_set_new(o, "response", json_null());
    } else {
      json_t *v =
          json_stringn(PQgetvalue(r, i, 19), (size_t)PQgetlength(r, i, 19));
      json_object_set_new(o, "response", v ? v : json_null());
    }
    json_array_append_new(routes, o);
  }
  PQclear(r);
  return arr;
}

json_t *cebpg_attempts_of(ceb_store_impl *s, int64_t seq, size_t max) {
  cebpg_params p = {.n = 0};
  cebpg_p_int(&p, seq);
  p_limit(&p, max);
  /* the newest max, read back oldest first */
  PGresult *r = cebpg_query(s, "attempts of seq",
                            "SELECT route, n, started_at, at, status, reason,"
                            " dead FROM (SELECT * FROM attempt WHERE seq = $1"
                            " ORDER BY id DESC LIMIT $2::bigint) a ORDER BY id",
                            &p);
  if (!r) return NULL;
  static const char *const cols[] = {"route",  "n",      "started_at", "at",
                                     "status", "reason", NULL};
  json_t *arr = json_array();
  for (int i = 0; i < PQntuples(r); i++) {
    json_t *o = json_object();
    for (int c = 0; cols[c]; c++)
      cebpg_json_col(o, cols[c], r, i, c);
    json_object_set_new(
        o, "outcome",
        json_string(PQgetvalue(r, i, 6)[0] == 't' ? "dead" : "retrying"));
    json_array_append_new(arr, o);
  }
  PQclear(r);
  return arr;
}

/* ---- callbacks ---- */

char *cebpg_callback_url(ceb_store_impl *s, int64_t seq, int *status) {
  cebpg_params p = {.n = 0};
  cebpg_p_int(&p, seq);
  PGresult *r = cebpg_query(s, "callback url",
                            "SELECT url FROM callback WHERE seq = $1", &p);
  if (!r) {
    *status = CEB_EIO;
    return NULL;
  }
  char *url = NULL;
  *status = CEB_ENOTFOUND;
  if (PQntuples(r) > 0) {
    url = cebpg_dup(r, 0, 0);
    *status = url ? CEB_OK : CEB_ENOMEM;
  }
  PQclear(r);
  return url;
}
