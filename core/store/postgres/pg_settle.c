/* Attempt outcomes on PostgreSQL: every settle of a committer group in ONE
 * statement (the events' outcomes as arrays, as pg_ingest.c does for
 * ingests), with the fencing token checked per row and one result row per
 * outcome: applied, already applied (a resend after a lost connection), or
 * refused (the lease was lost: nothing changes for that row, the others
 * still apply). Per outcome, the statement was 43 % of PostgreSQL's time
 * under load (bench/store/RESULTS.md).
 *
 * One statement may hold one outcome per journal row (seq) only: the
 * journal settle count and the callback are per seq and an UPDATE changes
 * a row once per statement. A group with two outcomes of one seq (two
 * routes of an event, or one row settled twice) sends them in rounds, one
 * statement each, in their order (cebpg_settle_rounds). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "store/postgres/pg_internal.h"

/* i: the outcomes, in order (ord). u: each outcome applied only while its
 * row is in progress under the claim's token; a refund gives the attempt
 * back. A dead letter gets its DLQ id from the sequence in the same update,
 * so that the DLQ row and the link are one statement. pr: a settled keyed
 * row hands the head to its key's oldest other unsettled row (the keys are
 * locked: pg_keylock.c); rows this statement settles are not candidates
 * (each row is updated once per statement), nor are unkeyed rows.
 *
 * The statement is planned with enable_seqscan off (cebpg_sql_noseqscan,
 * sent before it in the group's transaction): each connection's generic
 * plan is made at its sixth settle and kept as the table grows, and u must
 * join delivery to i, so the planner weighs one scan of delivery against
 * ten primary key lookups (its guess for unnest of a parameter). On the
 * bench's fresh table, a few dozen pages at that moment, the scan won and
 * each group then read the whole table (bench/store/RESULTS.md,
 * 2026-12-06); neither seq = ANY($1) (one scan against a bitmap of the
 * array) nor a join by ctid changed that choice. */
const char cebpg_sql_settle[] =
    "WITH i AS (SELECT * FROM unnest($1::bigint[], $2::text[],"
    " $3::smallint[], $4::bigint[], $5::integer[], $6::text[], $7::text[],"
    " $8::boolean[], $9::bigint[], $10::bigint[], $11::text[], $12::text[],"
    " $13::text[], $14::text[], $15::integer[], $16::bigint[])"
    " WITH ORDINALITY AS x(seq, route, state, next_at, status, reason,"
    " error, refund, fence, now, sink, dead_reason, dead_json, response, n,"
    " started_at, ord)),"
    " u AS (UPDATE delivery d SET state = i.state, next_at = i.next_at,"
    " last_status = CASE WHEN i.refund THEN d.last_status ELSE i.status END,"
    " last_reason = CASE WHEN i.refund THEN d.last_reason ELSE i.reason END,"
    " last_error = CASE WHEN i.refund THEN d.last_error ELSE i.error END,"
    " first_at = CASE WHEN i.refund AND d.attempts = 1 THEN NULL"
    " ELSE d.first_at END,"
    " attempts = d.attempts - CASE WHEN i.refund THEN 1 ELSE 0 END,"
    /* what the peer answered, for the client's job status: kept from the
     * attempt that delivered */
    " response = CASE WHEN i.refund THEN d.response ELSE i.response END,"
    " lease_owner = NULL, lease_until = NULL,"
    " dlq_id = CASE WHEN i.state = 4 THEN nextval('dlq_id_seq')"
    " ELSE d.dlq_id END"
    " FROM i WHERE d.seq = i.seq AND d.route = i.route AND d.state = 1"
    " AND d.fence = i.fence"
    " RETURNING i.ord, d.seq, d.route, d.attempts, d.first_at, d.last_at,"
    " d.dlq_id, d.order_key, i.state AS nstate, i.now AS at),"
    " pr AS (UPDATE delivery d SET head = true FROM (SELECT DISTINCT h.seq,"
    " u.route FROM u CROSS JOIN LATERAL (SELECT p.seq FROM delivery p"
    " WHERE p.route = u.route AND p.order_key = u.order_key AND p.open"
    " AND NOT EXISTS (SELECT 1 FROM u w WHERE w.seq = p.seq"
    " AND w.route = p.route) ORDER BY p.seq LIMIT 1) h"
    " WHERE u.nstate IN (3, 4) AND u.order_key IS NOT NULL) nh"
    " WHERE d.route = nh.route"
    " AND d.seq = nh.seq),"
    /* the client's callback (X-Callback): when a settle makes the status
     * final (the last open route), its delivery is queued here, in the
     * same statement; the journal row stays open for it. lk locks the
     * settle rows of events with a callback not queued yet (in seq order:
     * two groups never wait on each other in a circle) and reads their
     * newest version, so of two routes settling at once on two connections
     * the later one sees the count the earlier left. Only those: a row
     * lock is a WAL record, and js's update reads the newest version by
     * itself. */
    " lk AS (SELECT s.seq, s.open_routes FROM journal_settle s WHERE s.seq"
    " IN (SELECT u.seq FROM u JOIN callback c ON c.seq = u.seq"
    " WHERE u.nstate IN (3, 4) AND c.queued_at IS NULL) ORDER BY s.seq"
    " FOR UPDATE OF s),"
    " cb AS (UPDATE callback c SET queued_at = u.at FROM lk JOIN u"
    " ON u.seq = lk.seq WHERE c.seq = lk.seq AND c.queued_at IS NULL"
    " AND lk.open_routes <= 1 RETURNING c.seq, c.route, u.at),"
    " cbd AS (INSERT INTO delivery (seq, route, state, next_at, order_key,"
    " head) SELECT seq, route, 0, at, NULL, false FROM cb),"
    " js AS (UPDATE journal_settle s SET open_routes = s.open_routes - 1"
    " + (SELECT count(*) FROM cb WHERE cb.seq = s.seq)::integer,"
    " settled_at = CASE WHEN s.open_routes - 1 <= 0 AND NOT EXISTS (SELECT 1"
    " FROM cb WHERE cb.seq = s.seq) THEN u.at END"
    " FROM u WHERE s.seq = u.seq AND u.nstate IN (3, 4)),"
    " q AS (INSERT INTO dlq (id, seq, route, sink, reason, last_reason,"
    " status, attempts, first_at, last_at, error, event, event_id, source,"
    " type, created_at) SELECT u.dlq_id, u.seq, u.route, i.sink,"
    " i.dead_reason, i.reason, i.status, u.attempts, u.first_at, u.last_at,"
    " i.error, i.dead_json, j.id, j.source, j.type, u.at FROM u"
    " JOIN i ON i.ord = u.ord JOIN journal j ON j.seq = u.seq"
    " WHERE u.nstate = 4),"
    /* a failed attempt into the history (ceb_store_attempts_of) */
    " a AS (INSERT INTO attempt (seq, route, n, started_at, at, status,"
    " reason, dead) SELECT u.seq, u.route, i.n, i.started_at, u.at,"
    " i.status, i.reason, u.nstate = 4 FROM u JOIN i ON i.ord = u.ord"
    " WHERE u.nstate IN (2, 4) ORDER BY u.ord),"
    /* the key's last success or failure (key_status), outliving its rows;
     * one row per key (ON CONFLICT changes a row once per statement);
     * GREATEST skips NULLs */
    " k AS (INSERT INTO key_status (route, order_key, last_success_at,"
    " last_failure_at, last_at) SELECT u.route, u.order_key,"
    " max(CASE WHEN u.nstate = 3 THEN u.at END),"
    " max(CASE WHEN u.nstate IN (2, 4) THEN u.at END), max(u.at)"
    " FROM u WHERE u.order_key IS NOT NULL AND u.nstate IN (2, 3, 4)"
    " GROUP BY u.route, u.order_key"
    " ON CONFLICT (route, order_key) DO UPDATE SET last_success_at ="
    " GREATEST(key_status.last_success_at, EXCLUDED.last_success_at),"
    " last_failure_at = GREATEST(key_status.last_failure_at,"
    " EXCLUDED.last_failure_at),"
    " last_at = GREATEST(key_status.last_at, EXCLUDED.last_at))"
    /* one row per outcome. Not applied: a resend after a lost connection
     * whose first sending committed finds its own outcome (the same fence,
     * the state and next_at it wrote; a claim bumps the fence, a recovery
     * or a lost claim's release resets the state without setting next_at
     * to ours), read only then (CASE); else the lease was lost. */
    " SELECT i.ord, u.ord IS NOT NULL, CASE WHEN i.state = 4 THEN u.dlq_id"
    " END, CASE WHEN u.ord IS NULL THEN (SELECT CASE WHEN i.state = 4"
    " THEN coalesce(p.dlq_id, 0) ELSE 0 END FROM delivery p"
    " WHERE p.seq = i.seq AND p.route = i.route AND p.fence = i.fence"
    " AND p.state = i.state AND p.next_at = i.next_at"
    " AND p.lease_owner IS NULL) END, CASE WHEN u.ord IS NOT NULL"
    " THEN (SELECT cb.route FROM cb WHERE cb.seq = i.seq) END"
    " FROM i LEFT JOIN u ON u.ord = i.ord ORDER BY i.ord";

const char cebpg_sql_noseqscan[] =
    "SELECT set_config('enable_seqscan', 'off', true)";

/* The same for a group of outcomes alone, none a dead letter (its DLQ id
 * comes from a sequence, and is forwarded at once: a crash could hand the
 * same id out again to another letter), whose COMMIT then returns
 * before its WAL is flushed: as in the SQLite engine, an outcome is done
 * once committed, not once durable, since losing one (a crash of the
 * server in the next moments) leaves its row in progress under the
 * claim's lease, delivered again when the lease ends (at least once, in
 * its key's order), never a lost event. Every later synchronous COMMIT
 * (the next ingest's) flushes the WAL up to itself, these records
 * included, and the WAL writer flushes them within wal_writer_delay. Such
 * a group thus ends without waiting for a flush (about 1 ms here), and so
 * do the key locks it holds (bench/store/RESULTS.md, session 15). Not a
 * claim: a claim lost that way would let another bridge claim the row
 * again with the same claim count in its fence, and only the tokens
 * (counted per process) would then tell the two claims apart. */
const char cebpg_sql_noseqscan_async[] =
    "SELECT set_config('enable_seqscan', 'off', true),"
    " set_config('synchronous_commit', 'off', true)";

typedef struct seq_at {
  int64_t seq;
  size_t at;
} seq_at;

static int seq_at_cmp(const void *x, const void *y) {
  const seq_at *a = x, *b = y;
  if (a->seq != b->seq) return (a->seq > b->seq) - (a->seq < b->seq);
  return (a->at > b->at) - (a->at < b->at);
}

size_t cebpg_settle_rounds(cebpg_op **set, size_t n, size_t *start) {
  start[0] = 0;
  if (n == 0) return 0;
  seq_at *by = malloc(n * sizeof *by);
  size_t *occ = malloc(n * sizeof *occ);
  cebpg_op **copy = malloc(n * sizeof *copy);
  if (!by || !occ || !copy) {
    free(by);
    free(occ);
    free(copy);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    by[i].seq = ((ceb_attempt_result *)set[i]->arg)->seq;
    by[i].at = i;
    copy[i] = set[i];
  }
  /* the k-th outcome of a seq (in group order) goes to round k */
  qsort(by, n, sizeof *by, seq_at_cmp);
  size_t rounds = 1;
  for (size_t k = 0; k < n; k++) {
    occ[by[k].at] =
        k > 0 && by[k - 1].seq == by[k].seq ? occ[by[k - 1].at] + 1 : 0;
    if (occ[by[k].at] + 1 > rounds) rounds = occ[by[k].at] + 1;
  }
  size_t o = 0;
  for (size_t r = 0; r < rounds; r++) {
    for (size_t i = 0; i < n; i++)
      if (occ[i] == r) set[o++] = copy[i];
    start[r + 1] = o;
  }
  free(by);
  free(occ);
  free(copy);
  return rounds;
}

enum { NARR = 16 };

static void num(cebpg_buf *b, int64_t v, int first) {
  char t[32];
  int n = snprintf(t, sizeof t, "%s%lld", first ? "" : ",", (long long)v);
  cebpg_buf_add(b, t, (size_t)n);
}

static void null_elem(cebpg_buf *b, int first) {
  cebpg_buf_elem(b, NULL, 0, first);
}

static void text(cebpg_buf *b, const char *s, int first) {
  cebpg_buf_elem(b, s, s ? strlen(s) : 0, first);
}

int cebpg_settle_send(PGconn *c, cebpg_op **ops, size_t n) {
  if (n == 0) return 0;
  cebpg_buf x[NARR];
  memset(x, 0, sizeof x);
  for (int k = 0; k < NARR; k++)
    cebpg_buf_add(&x[k], "{", 1);
  char err[CEBPG_ERROR_MAX + 1];
  for (size_t o = 0; o < n; o++) {
    const ceb_attempt_result *r = ops[o]->arg;
    int f = o == 0;
    int again = r->state == CEB_DS_RETRYING || r->state == CEB_DS_PENDING;
    int refund = r->refund && r->state == CEB_DS_PENDING;
    num(&x[0], r->seq, f);
    text(&x[1], r->route, f);
    num(&x[2], r->state, f);
    num(&x[3], again ? r->next_at : r->now, f);
    if (r->status_code)
      num(&x[4], r->status_code, f);
    else
      null_elem(&x[4], f);
    text(&x[5], r->reason, f);
    text(&x[6], cebpg_cut_error(r->error, err), f);
    cebpg_buf_add(&x[7], f ? (refund ? "t" : "f") : (refund ? ",t" : ",f"),
                  f ? 1 : 2);
    num(&x[8], r->fence, f);
    num(&x[9], r->now, f);
    text(&x[10], r->sink ? r->sink : "", f);
    text(&x[11], r->dead_reason ? r->dead_reason : "rejected", f);
    text(&x[12], r->dead_json ? r->dead_json : "{}", f);
    text(&x[13], r->state == CEB_DS_DONE ? r->response : NULL, f);
    num(&x[14], (int64_t)r->attempt, f);
    if (r->started_at > 0)
      num(&x[15], r->started_at, f);
    else
      null_elem(&x[15], f);
  }
  const char *vals[NARR];
  int oom = 0;
  for (int k = 0; k < NARR; k++) {
    cebpg_buf_add(&x[k], "}", 1);
    oom |= x[k].oom;
    vals[k] = x[k].p;
  }
  int rc = -1;
  if (!oom)
    rc = PQsendQueryPrepared(c, "ceb_settle", NARR, vals, NULL, NULL, 0) == 1
             ? 1
             : -1;
  for (int k = 0; k < NARR; k++)
    cebpg_buf_free(&x[k]);
  return rc;
}

int cebpg_settle_recv(PGresult *res, cebpg_op **ops, size_t n) {
  if ((size_t)PQntuples(res) != n) return CEB_EINTERNAL;
  for (int row = 0; row < (int)n; row++) {
    int64_t ord = cebpg_int(res, row, 0);
    if (ord < 1 || (size_t)ord > n) return CEB_EINTERNAL;
    cebpg_op *op = ops[ord - 1];
    ceb_attempt_result *r = op->arg;
    r->callback_queued[0] = '\0';
    if (PQgetvalue(res, row, 1)[0] != 't') {
      if (!PQgetisnull(res, row, 3)) {
        /* already applied: this outcome, sent before the connection was
         * lost, committed; not a lost lease */
        if (r->state == CEB_DS_DEAD) r->dlq_id = cebpg_int(res, row, 3);
        op->status = CEB_OK;
      } else {
        op->status = CEB_ECONFLICT; /* not in progress under this token */
      }
      continue;
    }
    if (r->state == CEB_DS_DEAD) r->dlq_id = cebpg_int(res, row, 2);
    if (!PQgetisnull(res, row, 4))
      snprintf(r->callback_queued, sizeof r->callback_queued, "%s",
               PQgetvalue(res, row, 4));
    op->status = CEB_OK;
  }
  return CEB_OK;
}

int cebpg_settle(ceb_store_impl *s, ceb_attempt_result *r,
                 ceb_store_done_fn done, void *arg) {
  cebpg_op *op = calloc(1, sizeof *op);
  if (!op) return CEB_ENOMEM;
  op->kind = CEBPG_OP_SETTLE;
  op->arg = r;
  op->done = done;
  op->done_arg = arg;
  int rc = cebpg_submit(s, op);
  if (rc != CEB_OK) free(op);
  return rc;
}
