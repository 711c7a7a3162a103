/* The committers of the PostgreSQL engine: a few threads, each with its
 * own connection, run the queued writes of the hot path (ingest, settle, claim,
 * DLQ forwarded) in groups: one transaction per group, sent in libpq
 * pipeline mode (BEGIN, the key locks, one multi-row statement for every
 * ingest of the group, one for every settle (pg_settle.c: one per round),
 * one statement per other op, COMMIT: one round trip), and calls
 * the ops' done only once COMMIT succeeded. Durability is the server's
 * synchronous_commit: with "on" (PostgreSQL's default) COMMIT returns once
 * the WAL is flushed; an operator who lowers it trades that (docs/
 * operator-guide.md).
 *
 * A group whose statements fail for a reason of their own (not the
 * connection) is run again op by op, so that one bad op fails alone. When
 * the connection is lost, every op of the group fails with CEB_EIO (a
 * COMMIT whose answer was lost may still have happened: the client's retry
 * is deduped), the pool marks the database unreachable, and the committer
 * reconnects with the pool's backoff while ingest answers CEB_EIO (503). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_internal.h"

#define PROBE_TICK_MS 100

static void deadline_in(struct timespec *ts, int64_t ms) {
  clock_gettime(CLOCK_REALTIME, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

static int release_lost(cebpg_committer *w, PGconn *c);

/* Gives up the ingest turn w holds: the next ingest group may run, and
 * queued ingests are takeable. s->lock held. */
static void turn_pass_locked(cebpg_committer *w) {
  ceb_store_impl *s = w->s;
  w->turn_held = 0;
  s->ingest_serving++;
  pthread_cond_broadcast(&s->turn_cond);
  pthread_cond_broadcast(&s->cond);
}

/* Gives up the ingest turn if w holds it. Called from w's thread only;
 * takes the store's lock. */
static void turn_pass(cebpg_committer *w) {
  if (!w->turn_held) return;
  pthread_mutex_lock(&w->s->lock);
  turn_pass_locked(w);
  pthread_mutex_unlock(&w->s->lock);
}

/* After w's group ended (committed, rolled back or lost): gives up the
 * ingest turn if COMMIT did not get it first (failures, retries), and
 * the group's keys, so that the ops left behind for them may go. */
static void group_end(cebpg_committer *w) {
  ceb_store_impl *s = w->s;
  pthread_mutex_lock(&s->lock);
  if (w->turn_held) turn_pass_locked(w);
  w->ngkeys = 0;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
}

/* The committer's connection, (re)made with its prepared statements; NULL
 * while the database is unreachable (the pool's backoff decides when the
 * next attempt happens). */
static PGconn *ensure_conn(cebpg_committer *w) {
  ceb_store_impl *s = w->s;
  uint64_t gen = cebpg_pool_generation(s->pool);
  if (w->conn && w->gen == gen) {
    /* claims noted lost while the connection stayed up (run_group: the
     * group committed, an answer was not read): given back before the
     * next group; on an error they stay for the next try */
    if (!w->lost || release_lost(w, w->conn) == CEB_OK) return w->conn;
    gen = cebpg_pool_generation(s->pool);
    if (w->gen == gen) return w->conn;
  }
  if (w->conn) {
    /* made before a connection failure: the server may have restarted
     * under it; a new one rather than a failed group to find out */
    cebpg_pool_discard(s->pool, w->conn);
    w->conn = NULL;
  }
  char err[400];
  PGconn *c = cebpg_pool_get(s->pool, CEBPG_POOL_WAIT_MS, err, sizeof err);
  if (!c) return NULL;
  if (cebpg_prepare_all(s, c) != CEB_OK || release_lost(w, c) != CEB_OK) {
    cebpg_pool_put(s->pool, c);
    return NULL;
  }
  w->conn = c;
  w->gen = gen;
  return c;
}

/* Gives back the rows of claims whose answer was lost (see
 * cebpg_lost_claim): in progress under this instance, claimed at that
 * claim's now with that lease and by that statement (the token in the
 * fence: another claim of this instance in the same ms with the same
 * lease, still live, is not touched), as a refund. Until it succeeds, the
 * next group or connection tries again; the lease ends them anyway. */
static int release_lost(cebpg_committer *w, PGconn *c) {
  ceb_store_impl *s = w->s;
  while (w->lost) {
    cebpg_lost_claim *l = w->lost;
    cebpg_params p = {.n = 0};
    cebpg_p_text(&p, l->route);
    cebpg_p_text(&p, s->instance);
    cebpg_p_int(&p, l->now);
    cebpg_p_int(&p, l->lease_until);
    cebpg_p_int(&p, l->token);
    PGresult *r = cebpg_query_on(
        s, c, "releasing a lost claim",
        "UPDATE delivery SET state = 0, attempts = attempts - 1,"
        " first_at = CASE WHEN attempts = 1 THEN NULL ELSE first_at END,"
        " next_at = LEAST(next_at, $3),"
        " lease_owner = NULL, lease_until = NULL WHERE route = $1 AND"
        " open AND state = 1 AND lease_owner = $2 AND last_at = $3 AND"
        " lease_until = $4 AND fence & 4294967295 = $5::bigint",
        &p);
    if (!r) return CEB_EIO;
    if (atoi(PQcmdTuples(r)) > 0)
      ceb_log_info("store: %s claim(s) on route %s whose answer the lost "
                   "connection took are pending again",
                   PQcmdTuples(r), l->route);
    PQclear(r);
    w->lost = l->next;
    free(l);
  }
  return CEB_OK;
}

static void note_lost_one(cebpg_committer *w, const char *route, int64_t now,
                          int64_t lease_until, int64_t token) {
  for (cebpg_lost_claim *l = w->lost; l; l = l->next)
    if (l->now == now && l->lease_until == lease_until && l->token == token &&
        strcmp(l->route, route) == 0)
      return;
  size_t len = strlen(route) + 1;
  cebpg_lost_claim *l = malloc(sizeof *l + len);
  if (!l) return; /* the lease ends it */
  l->now = now;
  l->lease_until = lease_until;
  l->token = token;
  memcpy(l->route, route, len);
  l->next = w->lost;
  w->lost = l;
}

/* The claims of a group that may have committed with rows no caller will
 * know of (its COMMIT's answer lost, or not every answer read), a claim's
 * or an ingest's claims at ingest (those the ingest reserved: the release
 * matches only rows written claimed, by their claim's now, lease and
 * token). Before the outputs are reset: an ingest's claims are still
 * held. */
static void note_lost(cebpg_committer *w, cebpg_op **ops, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (ops[i]->kind == CEBPG_OP_INGEST) {
      for (size_t k = 0; k < ops[i]->nclaims; k++) {
        const ceb_ingest_claim *c = &ops[i]->claims[k];
        note_lost_one(w, c->route->route, c->now, c->lease_until,
                      c->fence & CEBPG_TOKEN_MASK);
      }
      continue;
    }
    if (ops[i]->kind != CEBPG_OP_CLAIM) continue;
    cebpg_claim_args *a = ops[i]->arg;
    note_lost_one(w, a->route, a->now, a->lease_until, a->token);
  }
}

static void drop_conn(cebpg_committer *w) {
  cebpg_pool_put(w->s->pool, w->conn); /* closed: it is broken */
  w->conn = NULL;
}

/* Reads the result of one statement of the pipeline and the NULL that
 * ends it. NULL result: the connection is gone. */
static PGresult *next_result(PGconn *c) {
  PGresult *r = PQgetResult(c);
  if (!r) return NULL;
  ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_PIPELINE_SYNC) return r;
  PGresult *end;
  while ((end = PQgetResult(c)) != NULL)
    PQclear(end); /* nothing else comes before NULL; drain defensively */
  return r;
}

/* What each statement of the pipeline was: an op's index (>= 0), or one of
 * these; SLOT_SETTLE0 - r is the settle statement of round r. */
enum {
  SLOT_BEGIN = -1,
  SLOT_INGEST = -2,
  SLOT_COMMIT = -3,
  SLOT_LOCK = -4,
  SLOT_PLAN = -5, /* cebpg_sql_noseqscan */
  SLOT_SETTLE0 = -16
};

/* Runs ops[0..n) as one transaction in pipeline mode. Returns CEB_OK (each
 * op's status set), CEB_EIO when the connection was lost (reported to the
 * pool), or CEB_EINTERNAL when a statement failed (rolled back) or when an
 * answer could not be read (out of memory reading rows: the server's
 * work stands). *committed: the server answered COMMIT, whatever the
 * return (an answer not read, or the connection lost after it). Passes
 * w's ingest turn once every statement but COMMIT has answered well
 * (w->turn_early): the group's seqs are assigned and its keys' advisory
 * locks are held until it ends, so a next group that shares a key waits
 * for this COMMIT and one that does not can take no seq below ours.
 * The server sends a pipeline's answers when it reaches the Sync (its
 * output is flushed there, or per 8 KiB), so a flush request before
 * COMMIT (PQsendFlushRequest) brings them before COMMIT's WAL flush. On
 * its own that gained nothing (session 14: the next group shared a key and
 * waited for this COMMIT on its advisory lock); with groups that hold no
 * key of a running group (take_group) the next group runs meanwhile. */
static int run_pipeline(cebpg_committer *w, PGconn *c, cebpg_op **ops, size_t n,
                        int *committed) {
  ceb_store_impl *s = w->s;
  *committed = 0;
  cebpg_op **ing = malloc(n * sizeof *ing);
  cebpg_op **set = malloc(n * sizeof *set);
  size_t *round = malloc((n + 1) * sizeof *round);
  int *slots = malloc((n + 5) * sizeof *slots);
  size_t ni = 0, ns = 0, nslots = 0, nrounds = 0;
  if (ing && set && round && slots) {
    for (size_t i = 0; i < n; i++) {
      if (ops[i]->kind == CEBPG_OP_INGEST) ing[ni++] = ops[i];
      if (ops[i]->kind == CEBPG_OP_SETTLE) set[ns++] = ops[i];
    }
    /* the group's outcomes in as few statements as there are outcomes of
     * one seq (usually one: pg_settle.c) */
    nrounds = cebpg_settle_rounds(set, ns, round);
  }
  if (!ing || !set || !round || !slots || (ns && !nrounds)) {
    free(ing);
    free(set);
    free(round);
    free(slots);
    return CEB_ENOMEM;
  }
  int sent_ok = PQenterPipelineMode(c) == 1;
  if (sent_ok) {
    sent_ok = PQsendQueryParams(c, "BEGIN", 0, NULL, NULL, NULL, NULL, 0);
    slots[nslots++] = SLOT_BEGIN;
  }
  if (sent_ok) {
    int k = cebpg_keylock_send(c, ops, n);
    sent_ok = k >= 0;
    if (k > 0) slots[nslots++] = SLOT_LOCK;
  }
  if (sent_ok && ni) {
    int k = cebpg_ingest_send(s, c, ing, ni);
    sent_ok = k >= 0;
    if (k > 0) slots[nslots++] = SLOT_INGEST;
  }
  if (sent_ok && nrounds) {
    /* until the transaction ends: the settle's plan must not scan delivery
     * (pg_settle.c); what follows it (claims, forwards) reads by index.
     * A group of outcomes alone, none of them a dead letter, commits
     * without waiting for its WAL flush (cebpg_sql_noseqscan_async says
     * why) */
    int others = ns < n;
    for (size_t i = 0; i < ns; i++)
      others |= ((ceb_attempt_result *)set[i]->arg)->state == CEB_DS_DEAD;
    sent_ok =
        PQsendQueryPrepared(c, others ? "ceb_noseqscan" : "ceb_noseqscan_async",
                            0, NULL, NULL, NULL, 0);
    slots[nslots++] = SLOT_PLAN;
  }
  for (size_t r = 0; sent_ok && r < nrounds; r++) {
    int k = cebpg_settle_send(c, &set[round[r]], round[r + 1] - round[r]);
    sent_ok = k >= 0;
    if (k > 0) slots[nslots++] = SLOT_SETTLE0 - (int)r;
  }
  for (size_t i = 0; sent_ok && i < n; i++) {
    int k = 0;
    switch (ops[i]->kind) {
    case CEBPG_OP_CLAIM:
      k = cebpg_claim_send(s, c, ops[i]);
      break;
    case CEBPG_OP_FORWARDED:
      k = cebpg_fwd_send(c, ops[i]);
      break;
    default:
      continue;
    }
    sent_ok = k > 0;
    if (sent_ok) slots[nslots++] = (int)i;
  }
  /* the answers so far now, not at the Sync: the turn passes on them,
   * while COMMIT waits for its WAL flush */
  if (sent_ok && w->turn_held && !w->turn_keep)
    sent_ok = PQsendFlushRequest(c) == 1;
  if (sent_ok) {
    sent_ok = PQsendQueryParams(c, "COMMIT", 0, NULL, NULL, NULL, NULL, 0);
    slots[nslots++] = SLOT_COMMIT;
  }
  if (sent_ok) sent_ok = PQpipelineSync(c) == 1;
  int rc = CEB_OK;
  PGresult *bad = NULL;
  for (size_t k = 0; sent_ok && k < nslots; k++) {
    if (slots[k] == SLOT_COMMIT && rc == CEB_OK && w->turn_held &&
        !w->turn_keep) {
      w->turn_early = 1;
      turn_pass(w);
    }
    PGresult *r = next_result(c);
    if (!r) {
      sent_ok = 0;
      break;
    }
    ExecStatusType st = PQresultStatus(r);
    int ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    /* a failed statement aborts the rest of the pipeline (COMMIT too);
     * the tag tells a commit from the rollback of a failed transaction */
    if (slots[k] == SLOT_COMMIT && st == PGRES_COMMAND_OK &&
        strcmp(PQcmdStatus(r), "COMMIT") == 0)
      *committed = 1;
    if (ok && slots[k] == SLOT_INGEST) {
      ok = cebpg_ingest_recv(r, ing, ni) == CEB_OK;
    } else if (ok && slots[k] <= SLOT_SETTLE0) {
      size_t rd = (size_t)(SLOT_SETTLE0 - slots[k]);
      ok = cebpg_settle_recv(r, &set[round[rd]], round[rd + 1] - round[rd]) ==
           CEB_OK;
    } else if (ok && slots[k] >= 0) {
      cebpg_op *op = ops[slots[k]];
      int orc = op->kind == CEBPG_OP_CLAIM ? cebpg_claim_recv(r, op)
                                           : cebpg_fwd_recv(r, op);
      ok = orc == CEB_OK;
    }
    if (!ok && rc == CEB_OK) {
      rc = CEB_EINTERNAL;
      if (st != PGRES_PIPELINE_ABORTED && !bad) {
        bad = r;
        continue;
      }
    }
    PQclear(r);
  }
  if (sent_ok) {
    PGresult *r = PQgetResult(c); /* the sync */
    if (!r || PQresultStatus(r) != PGRES_PIPELINE_SYNC) sent_ok = 0;
    PQclear(r);
  }
  if (sent_ok) sent_ok = PQexitPipelineMode(c) == 1;
  if (!sent_ok || cebpg_conn_lost(c, bad)) {
    cebpg_pool_failed(s->pool, c, bad, "group commit");
    rc = CEB_EIO;
  } else if (rc != CEB_OK) {
    char msg[400];
    cebpg_scrub(s->pool, bad ? PQresultErrorMessage(bad) : "result not read",
                msg, sizeof msg);
    ceb_log_error("store: group commit of %zu ops failed: %s", n, msg);
    if (PQtransactionStatus(c) != PQTRANS_IDLE) PQclear(PQexec(c, "ROLLBACK"));
  } else {
    cebpg_pool_ok(s->pool);
  }
  PQclear(bad);
  free(ing);
  free(set);
  free(round);
  free(slots);
  return rc;
}

static void reset_outputs(ceb_store_impl *s, cebpg_op **ops, size_t n) {
  for (size_t i = 0; i < n; i++) {
    cebpg_op *op = ops[i];
    op->status = CEB_OK;
    if (op->kind == CEBPG_OP_INGEST) {
      ceb_ingest_batch *b = op->arg;
      if (CEBPG_CLAIMS_HELD(op)) cebpg_ingest_claims_end(s, op, 0);
      for (size_t e = 0; e < b->count; e++) {
        b->events[e].inserted = 0;
        b->events[e].seq = 0;
      }
    } else if (op->kind == CEBPG_OP_CLAIM) {
      cebpg_claim_args *a = op->arg;
      ceb_claims_free(a->out, a->count);
      a->out = NULL;
      a->count = 0;
    }
  }
}

static void fail_all(ceb_store_impl *s, cebpg_op **ops, size_t n, int status) {
  reset_outputs(s, ops, n);
  for (size_t i = 0; i < n; i++)
    ops[i]->status = status;
}

/* An op that waits for the connection instead of failing (op->status): an
 * outcome or a DLQ forward carries what identifies its row (the fencing
 * token, the id), so sending it again after a reconnect is safe whether
 * the lost attempt committed or not; failing it would leave the delivery
 * in progress until its lease ends, and then deliver it again. */
#define HOLD 1

static void fail_or_hold(ceb_store_impl *s, cebpg_op **ops, size_t n) {
  fail_all(s, ops, n, CEB_EIO);
  for (size_t i = 0; i < n; i++)
    if (ops[i]->kind == CEBPG_OP_SETTLE || ops[i]->kind == CEBPG_OP_FORWARDED)
      ops[i]->status = HOLD;
}

static void run_group(cebpg_committer *w, cebpg_op **ops, size_t n) {
  PGconn *c = ensure_conn(w);
  if (!c) {
    fail_or_hold(w->s, ops, n);
    return;
  }
  reset_outputs(w->s, ops, n);
  w->turn_early = 0;
  int committed = 0;
  int rc = run_pipeline(w, c, ops, n, &committed);
  if (rc == CEB_OK) return;
  if (rc == CEB_EIO || PQstatus(c) != CONNECTION_OK) {
    drop_conn(w);
    note_lost(w, ops, n);
    fail_or_hold(w->s, ops, n);
    return;
  }
  if (committed) {
    /* the group committed but an answer was not read (out of memory
     * reading a claim's or an ingest's rows): as when COMMIT's answer is
     * lost, its claims hold rows in progress under this instance's lease
     * that no caller knows of (released before the next group:
     * ensure_conn), and running the ops again would claim other rows and
     * report the ingests as duplicates; fail them (the client's retry is
     * deduped), resend the outcomes and forwards (they find their own) */
    note_lost(w, ops, n);
    fail_or_hold(w->s, ops, n);
    return;
  }
  if (n == 1) {
    fail_all(w->s, ops, n, rc == CEB_ENOMEM ? CEB_ENOMEM : CEB_EIO);
    return;
  }
  if (w->turn_early) {
    /* every statement succeeded and COMMIT failed: no op's own fault, and
     * the turn is gone, so running the ingests again one by one could
     * give them seqs after a later group's (FIFO per key): fail them (the
     * client retries, deduped), resend the outcomes and forwards */
    fail_or_hold(w->s, ops, n);
    return;
  }
  /* one op's own failure: each alone, so that the others still commit */
  /* the turn stays until every op ran again: an op passing it at its
   * COMMIT would let the next group take seqs before this group's
   * ingests not yet run again (FIFO per key) */
  w->turn_keep = 1;
  for (size_t i = 0; i < n; i++) {
    c = ensure_conn(w);
    if (!c) {
      fail_or_hold(w->s, &ops[i], 1);
      continue;
    }
    reset_outputs(w->s, &ops[i], 1);
    rc = run_pipeline(w, c, &ops[i], 1, &committed);
    if (rc == CEB_EIO || (rc != CEB_OK && committed)) {
      /* as the group's above */
      if (rc == CEB_EIO) drop_conn(w);
      note_lost(w, &ops[i], 1);
      fail_or_hold(w->s, &ops[i], 1);
    } else if (rc != CEB_OK) {
      fail_all(w->s, &ops[i], 1, rc == CEB_ENOMEM ? rc : CEB_EIO);
    }
  }
  w->turn_keep = 0; /* committer_main passes the turn after run_group */
}

/* After the group: the listener first (before any later write), then each
 * op's done; frees the ops. Returns the count of bounded ops. */
static size_t finish_group(ceb_store_impl *s, cebpg_op **ops, size_t n,
                           cebpg_op **held, size_t *nheld) {
  size_t bounded = 0;
  *nheld = 0;
  for (size_t i = 0; i < n; i++)
    if (ops[i]->kind == CEBPG_OP_INGEST && ops[i]->status == CEB_OK &&
        s->listener)
      s->listener(s->listener_arg, ops[i]->arg);
  /* after the listener (the engine counts the rows first), as the SQLite
   * engine does */
  for (size_t i = 0; i < n; i++)
    if (ops[i]->kind == CEBPG_OP_INGEST && CEBPG_CLAIMS_HELD(ops[i]))
      cebpg_ingest_claims_end(s, ops[i], ops[i]->status == CEB_OK);
  /* the other bridges hear of work this group made claimable */
  for (size_t i = 0; s->notify && i < n; i++) {
    cebpg_op *op = ops[i];
    if (op->status != CEB_OK) continue;
    if (op->kind == CEBPG_OP_INGEST) {
      ceb_ingest_batch *b = op->arg;
      for (size_t e = 0; e < b->count; e++)
        for (size_t r = 0; b->events[e].inserted && r < b->events[e].nroutes;
             r++)
          cebpg_notify_route(s->notify, b->events[e].routes[r].route);
    } else if (op->kind == CEBPG_OP_SETTLE) {
      ceb_attempt_result *r = op->arg;
      if (r->state == CEB_DS_DONE || r->state == CEB_DS_DEAD ||
          r->state == CEB_DS_PENDING)
        cebpg_notify_route(s->notify, r->route);
    }
  }
  for (size_t i = 0; i < n; i++) {
    cebpg_op *op = ops[i];
    if (op->status == HOLD) {
      held[(*nheld)++] = op;
      continue;
    }
    bounded += op->bounded;
    if (op->done) op->done(op->done_arg, op->status);
    cebpg_op_free(op);
  }
  return bounded;
}

/* Whether a committer may take a group now (s->lock held): ingests only
 * while no group holds the ingest turn, so that they wait in the queue,
 * where the next group takes them all at once, rather than in small groups
 * of their own each waiting for the turn; other ops at any time. */
static int takeable(const ceb_store_impl *s) {
  if (s->ingest_next == s->ingest_serving) return s->head != NULL;
  for (const cebpg_op *o = s->head; o; o = o->next)
    if (o->kind != CEBPG_OP_INGEST) return 1;
  return 0;
}

/* Moves up to group_max takeable ops (see takeable) from the queue into
 * w's group, in queue order, and records their keys as w's (pg_opkeys.c).
 * Left in the queue, in their order: ingests while the ingest turn is
 * held, and ops with a key a running group holds, or one an op left
 * behind has (a key's ops keep their order). s->lock held. */
#define PASSED_MAX 64
static size_t take_group(ceb_store_impl *s, cebpg_committer *w,
                         cebpg_op **group) {
  int ingests_ok = s->ingest_next == s->ingest_serving;
  uint64_t passed[PASSED_MAX];
  size_t npassed = 0, n = 0;
  w->ngkeys = 0;
  cebpg_op **link = &s->head, *last = NULL;
  while (*link && n < s->group_max) {
    cebpg_op *op = *link;
    int leave = op->kind == CEBPG_OP_INGEST && !ingests_ok;
    if (!leave && cebpg_keys_busy(s, w, op, passed, npassed)) {
      if (npassed + op->nkeys > PASSED_MAX) break; /* the next group */
      memcpy(passed + npassed, op->keys, op->nkeys * sizeof *op->keys);
      npassed += op->nkeys;
      leave = 1;
    }
    if (!leave && cebpg_group_keys_add(w, op) != 0) break;
    if (leave) {
      last = op;
      link = &op->next;
      continue;
    }
    *link = op->next; /* taken */
    op->next = NULL;
    group[n++] = op;
  }
  if (!*link) s->tail = last; /* walked to the end: the last one left */
  cebpg_group_keys_seal(w);
  return n;
}

static void *committer_main(void *arg) {
  cebpg_committer *w = arg;
  ceb_store_impl *s = w->s;
  cebpg_op **group = malloc(s->group_max * sizeof *group);
  cebpg_op **held = malloc(s->group_max * sizeof *held);
  if (!held) {
    free(group);
    group = NULL;
  }
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!takeable(s) && !s->stopping) {
      if (cebpg_pool_healthy(s->pool, NULL, 0) && w->conn) {
        pthread_cond_wait(&s->cond, &s->lock);
        continue;
      }
      /* unreachable (or never connected): probe by itself, with the
       * pool's backoff, so that writable comes back without traffic */
      if (cebpg_pool_probe_due(s->pool) || !w->conn) {
        pthread_mutex_unlock(&s->lock);
        ensure_conn(w);
        pthread_mutex_lock(&s->lock);
        if (s->head || s->stopping) break;
      }
      struct timespec ts;
      deadline_in(&ts, PROBE_TICK_MS);
      pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    if (!s->head && s->stopping) break;
    if (!takeable(s)) { /* stopping: the turn's holder wakes us */
      pthread_cond_wait(&s->cond, &s->lock);
      continue;
    }
    if (s->group_wait_ms > 0 && !s->stopping) {
      struct timespec ts;
      deadline_in(&ts, s->group_wait_ms);
      size_t have = 0;
      for (cebpg_op *o = s->head; o; o = o->next)
        have++;
      if (have < s->group_max) pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
    size_t n = group ? take_group(s, w, group) : 0;
    if (group && n == 0) {
      /* taken meanwhile (group_wait), or every op has a running group's
       * key: that group's end wakes us (group_end); timed, for the first
       * op's keys that found no memory (take_group) */
      struct timespec ts;
      deadline_in(&ts, PROBE_TICK_MS);
      pthread_cond_timedwait(&s->cond, &s->lock, &ts);
      continue;
    }
    int ingests = 0;
    for (size_t i = 0; i < n; i++)
      ingests |= group[i]->kind == CEBPG_OP_INGEST;
    /* ingest groups run in dequeue order (turn_cond in pg_internal.h);
     * claims and settles need no order among groups and run at once */
    uint64_t ticket = ingests ? s->ingest_next++ : 0;
    while (ingests && s->ingest_serving != ticket)
      pthread_cond_wait(&s->turn_cond, &s->lock);
    w->turn_held = ingests;
    pthread_mutex_unlock(&s->lock);
    if (!group) {
      turn_pass(w);
      break;
    }
    run_group(w, group, n);
    group_end(w);
    size_t nheld = 0;
    size_t bounded = finish_group(s, group, n, held, &nheld);
    pthread_mutex_lock(&s->lock);
    s->batches++;
    s->ops += n - nheld;
    s->queued_bounded -= bounded;
    if (nheld && s->stopping) {
      /* no database to wait for any more */
      pthread_mutex_unlock(&s->lock);
      for (size_t i = 0; i < nheld; i++) {
        if (held[i]->done) held[i]->done(held[i]->done_arg, CEB_EIO);
        cebpg_op_free(held[i]);
      }
      pthread_mutex_lock(&s->lock);
    } else if (nheld) {
      /* first in line again, in their order, once a connection is back */
      for (size_t i = nheld; i-- > 0;) {
        held[i]->next = s->head;
        s->head = held[i];
        if (!s->tail) s->tail = held[i];
      }
      struct timespec ts;
      deadline_in(&ts, PROBE_TICK_MS);
      pthread_cond_timedwait(&s->cond, &s->lock, &ts);
    }
  }
  /* out of memory for the group array: fail what is queued */
  while (s->head) {
    cebpg_op *op = s->head;
    s->head = op->next;
    s->queued_bounded -= (size_t)op->bounded;
    pthread_mutex_unlock(&s->lock);
    if (op->done) op->done(op->done_arg, CEB_ENOMEM);
    cebpg_op_free(op);
    pthread_mutex_lock(&s->lock);
  }
  s->tail = NULL;
  pthread_mutex_unlock(&s->lock);
  free(group);
  free(held);
  return NULL;
}

int cebpg_committer_start(ceb_store_impl *s, size_t n, char *err,
                          size_t errlen) {
  if (n < 1) n = 1;
  if (n > CEBPG_COMMITTERS_MAX) n = CEBPG_COMMITTERS_MAX;
  for (size_t i = 0; i < n; i++) {
    cebpg_committer *w = &s->committers[i];
    w->s = s;
    if (pthread_create(&w->thread, NULL, committer_main, w) != 0) {
      snprintf(err, errlen, "store: cannot start a committer thread");
      return CEB_EINTERNAL;
    }
    s->ncommitters = i + 1;
  }
  return CEB_OK;
}

void cebpg_committer_stop(ceb_store_impl *s) {
  if (!s->ncommitters) return;
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  for (size_t i = 0; i < s->ncommitters; i++) {
    cebpg_committer *w = &s->committers[i];
    pthread_join(w->thread, NULL);
    while (w->lost) {
      cebpg_lost_claim *l = w->lost;
      w->lost = l->next;
      free(l);
    }
    if (w->conn) {
      cebpg_pool_put(s->pool, w->conn);
      w->conn = NULL;
    }
  }
  /* once every committer stopped: each reads the others' keys */
  for (size_t i = 0; i < s->ncommitters; i++) {
    cebpg_committer *w = &s->committers[i];
    free(w->gkeys);
    w->gkeys = NULL;
    w->ngkeys = w->capgkeys = 0;
  }
  s->ncommitters = 0;
}

int cebpg_submit(ceb_store_impl *s, cebpg_op *op) {
  /* without its keys an op could pass one of them left in the queue */
  if (cebpg_op_keys(op) != CEB_OK) return CEB_ENOMEM;
  pthread_mutex_lock(&s->lock);
  int rc = CEB_OK;
  if (s->stopping)
    rc = CEB_ESHUTDOWN;
  else if (op->bounded && s->queued_bounded >= s->queue_max)
    rc = CEB_EBUSY;
  if (rc == CEB_OK) {
    op->next = NULL;
    if (s->tail)
      s->tail->next = op;
    else
      s->head = op;
    s->tail = op;
    s->queued_bounded += (size_t)op->bounded;
    pthread_cond_signal(&s->cond);
  }
  pthread_mutex_unlock(&s->lock);
  if (rc != CEB_OK && op->keys != op->kbuf) { /* the caller frees op */
    free(op->keys);
    op->keys = op->kbuf;
    op->nkeys = 0;
  }
  return rc;
}

typedef struct waiter {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int finished, status;
} waiter;

static void waiter_done(void *arg, int status) {
  waiter *w = arg;
  pthread_mutex_lock(&w->lock);
  w->status = status;
  w->finished = 1;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

int cebpg_call(ceb_store_impl *s, int kind, void *arg) {
  cebpg_op *op = calloc(1, sizeof *op);
  if (!op) return CEB_ENOMEM;
  waiter w = {.finished = 0};
  pthread_mutex_init(&w.lock, NULL);
  pthread_cond_init(&w.cond, NULL);
  op->kind = kind;
  op->arg = arg;
  op->done = waiter_done;
  op->done_arg = &w;
  int rc = cebpg_submit(s, op);
  if (rc != CEB_OK) {
    free(op);
  } else {
    pthread_mutex_lock(&w.lock);
    while (!w.finished)
      pthread_cond_wait(&w.cond, &w.lock);
    rc = w.status;
    pthread_mutex_unlock(&w.lock);
  }
  pthread_mutex_destroy(&w.lock);
  pthread_cond_destroy(&w.cond);
  return rc;
}
