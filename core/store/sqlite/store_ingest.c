/* Journal ingest: one op inserts a batch of events and their delivery rows,
 * deduping on (client, source, id). */
#include <stdlib.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

/* The committer is the only writer, so check-then-insert is atomic. The
 * dedupe map (store_idmap.h) names the rows that may carry the id; a
 * candidate counts only if all three columns match. */
static const char SQL_SAME[] =
    "SELECT 1 FROM journal WHERE seq = ?1 AND id = ?2 AND source = ?3 AND"
    " client = ?4";
static const char SQL_JOURNAL[] =
    "INSERT INTO journal (client, source, id, type, received_at, event, size,"
    " unrouted, idh) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
/* an unrouted event is settled at once */
static const char SQL_SETTLE[] =
    "INSERT INTO journal_settle (seq, open_routes, settled_at, idh)"
    " VALUES (?1, ?2, ?3, ?4)";
static const char SQL_DELIVERY[] =
    "INSERT INTO delivery (seq, route, state, next_at, order_key)"
    " VALUES (?1, ?2, 0, ?3, ?4)";
/* claimed at ingest: what the claim's UPDATE (store_delivery.c) would
 * write into the pending row, written once (in progress, next_at the
 * lease end, first attempt, fence 1) */
static const char SQL_DELIVERY_CLAIMED[] =
    "INSERT INTO delivery (seq, route, state, next_at, order_key, attempts,"
    " first_at, last_at, holder, fence)"
    " VALUES (?1, ?2, 1, ?3, ?4, 1, ?5, ?5, ?6, 1)";

/* 1 when a journal row among the map's candidates for idh is this event,
 * 0 when none is, or a negative status. */
static int seen(sqlite3 *db, cebs_idmap *ids, int64_t idh,
                const ceb_ingest_event *e) {
  int64_t few[8], *seqs = few;
  size_t n = cebs_idmap_find(ids, idh, few, 8);
  if (n > 8) { /* one id under many sources or clients */
    seqs = malloc(n * sizeof *seqs);
    if (!seqs) return CEB_ENOMEM;
    n = cebs_idmap_find(ids, idh, seqs, n); /* committer: no new entries */
  }
  sqlite3_stmt *q = n ? cebs_stmt(db, SQL_SAME) : NULL;
  int found = n && !q ? CEB_EIO : 0;
  for (size_t i = 0; i < n && !found; i++) {
    sqlite3_bind_int64(q, 1, seqs[i]);
    sqlite3_bind_text(q, 2, e->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 3, e->source, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 4, e->client ? e->client : "", -1, SQLITE_STATIC);
    int qrc = sqlite3_step(q);
    sqlite3_reset(q);
    if (qrc == SQLITE_ROW)
      found = 1;
    else if (qrc != SQLITE_DONE) {
      ceb_log_error("store: dedupe lookup: %s", sqlite3_errmsg(db));
      found = CEB_EIO;
    }
  }
  if (seqs != few) free(seqs);
  return found;
}

/* The op failed and its savepoint is rolled back: its rows' entries go. */
static void forget(cebs_idmap *ids, ceb_ingest_batch *b) {
  for (size_t i = 0; i < b->count; i++) {
    ceb_ingest_event *e = &b->events[i];
    if (e->inserted) cebs_idmap_remove(ids, cebs_id_hash(e->id), e->seq);
    e->inserted = 0;
    e->seq = 0;
  }
}

static int ingest(sqlite3 *db, cebs_store *st, ceb_ingest_batch *b);

void cebs_ingest_undo(cebs_store *st, void *arg) {
  forget(&st->ids, arg);
}

int cebs_ingest_run(sqlite3 *db, void *arg) {
  ceb_ingest_batch *b = arg;
  cebs_store *st = cebs_committer_store();
  if (!st) return CEB_EINVAL; /* not on a committer */
  for (size_t i = 0; i < b->count; i++)
    b->events[i].inserted = 0;
  int rc = ingest(db, st, b);
  if (rc != CEB_OK) forget(&st->ids, b);
  return rc;
}

/* Claims at ingest (ceb_store_set_claim_hook): 1 when the engine takes
 * the new head rt of event e now, its claim recorded in the op (*c), 0
 * when it stays pending, or a negative status (the engine's reservation
 * is then recorded, so that the op's rollback gives it back). */
static int try_claim(sqlite3 *db, cebs_store *st, store_op *op,
                     const ceb_ingest_event *e, const ceb_ingest_route *rt,
                     ceb_ingest_claim **c) {
  const ceb_store_claim_hook *h = &st->claim_hook;
  if (!h->reserve || !op || !(op->flags & CEBS_OP_INGEST)) return 0;
  if (op->nclaims == op->capclaims) { /* room first: a reservation must fit */
    size_t cap = op->capclaims ? op->capclaims * 2 : 4;
    ceb_ingest_claim *n = realloc(op->claims, cap * sizeof *n);
    if (!n) return 0; /* claimed later by the engine as usual */
    op->claims = n;
    op->capclaims = cap;
  }
  int64_t now = 0, lease_ms = 0;
  if (!h->reserve(h->arg, rt, &now, &lease_ms)) return 0;
  if (lease_ms < st->lease_ms) lease_ms = st->lease_ms;
  *c = &op->claims[op->nclaims++];
  **c = (ceb_ingest_claim){.event = e,
                           .route = rt,
                           .now = now,
                           .lease_until = now + lease_ms,
                           .fence = 1};
  /* once per op: the holder's row (a claim transaction does the same) */
  if (op->nclaims == 1) {
    int rc = cebs_owner_ensure(st, db);
    if (rc != CEB_OK) return rc;
  }
  return 1;
}

static int ingest(sqlite3 *db, cebs_store *st, ceb_ingest_batch *b) {
  cebs_idmap *ids = &st->ids;
  store_op *op = cebs_committer_op();
  sqlite3_stmt *j = cebs_stmt(db, SQL_JOURNAL);
  sqlite3_stmt *d = cebs_stmt(db, SQL_DELIVERY);
  sqlite3_stmt *t = cebs_stmt(db, SQL_SETTLE);
  sqlite3_stmt *dc =
      st->claim_hook.reserve ? cebs_stmt(db, SQL_DELIVERY_CLAIMED) : NULL;
  if (!j || !d || !t || (st->claim_hook.reserve && !dc)) return CEB_EIO;
  for (size_t i = 0; i < b->count; i++) {
    ceb_ingest_event *e = &b->events[i];
    if (!e->source || !e->id || !e->json) return CEB_EINVAL;
    int64_t idh = cebs_id_hash(e->id);
    int dup = seen(db, ids, idh, e);
    if (dup < 0) return dup;
    if (dup) {
      e->inserted = 0;
      e->seq = 0;
      continue;
    }
    sqlite3_reset(j);
    sqlite3_bind_text(j, 1, e->client ? e->client : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(j, 2, e->source, -1, SQLITE_STATIC);
    sqlite3_bind_text(j, 3, e->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(j, 4, e->type ? e->type : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(j, 5, b->now);
    sqlite3_bind_text(j, 6, e->json, (int)e->json_len, SQLITE_STATIC);
    sqlite3_bind_int64(j, 7, (sqlite3_int64)e->json_len);
    sqlite3_bind_int(j, 8, e->nroutes == 0);
    sqlite3_bind_int64(j, 9, idh);
    if (sqlite3_step(j) != SQLITE_DONE) {
      ceb_log_error("store: journal insert: %s", sqlite3_errmsg(db));
      return CEB_EIO;
    }
    e->seq = sqlite3_last_insert_rowid(db);
    sqlite3_reset(t);
    sqlite3_bind_int64(t, 1, e->seq);
    sqlite3_bind_int64(t, 2, (sqlite3_int64)e->nroutes);
    if (e->nroutes == 0) sqlite3_bind_int64(t, 3, b->now);
    sqlite3_bind_int64(t, 4, idh); /* the dedupe map's source at open */
    if (sqlite3_step(t) != SQLITE_DONE) {
      ceb_log_error("store: journal insert: %s", sqlite3_errmsg(db));
      return CEB_EIO;
    }
    int arc = cebs_idmap_add(ids, idh, e->seq);
    if (arc != CEB_OK) return arc;
    if (e->callback_route && e->callback_url && e->nroutes > 0 &&
        (arc = cebs_callback_add(db, e->seq, e->callback_route,
                                 e->callback_url)) != CEB_OK)
      return arc;
    e->inserted = 1;
    for (size_t r = 0; r < e->nroutes; r++) {
      const ceb_ingest_route *rt = &e->routes[r];
      /* the row is its key's head (or unordered) as the claim reads it:
       * only such a row may be claimed at once */
      int head = 0;
      int rrc = cebs_ready_is_head(db, rt->route, e->seq, rt->order_key, &head);
      if (rrc != CEB_OK) return rrc;
      ceb_ingest_claim *c = NULL;
      int claimed = head ? try_claim(db, st, op, e, rt, &c) : 0;
      if (claimed < 0) return claimed;
      sqlite3_stmt *ins = claimed ? dc : d;
      sqlite3_reset(ins);
      sqlite3_bind_int64(ins, 1, e->seq);
      sqlite3_bind_text(ins, 2, rt->route, -1, SQLITE_STATIC);
      sqlite3_bind_int64(ins, 3, claimed ? c->lease_until : rt->first_at);
      cebs_bind_text(ins, 4, rt->order_key);
      if (claimed) {
        sqlite3_bind_int64(ins, 5, c->now);
        sqlite3_bind_int64(ins, 6, st->owner_id);
      }
      if (sqlite3_step(ins) != SQLITE_DONE) {
        ceb_log_error("store: delivery insert: %s", sqlite3_errmsg(db));
        return CEB_EIO;
      }
      /* in progress, a row stays in the set at its lease end */
      if (head &&
          (rrc = cebs_ready_insert(db, rt->route, e->seq,
                                   claimed ? c->lease_until : rt->first_at,
                                   rt->order_key)) != CEB_OK)
        return rrc;
    }
  }
  sqlite3_reset(j);
  sqlite3_reset(d);
  sqlite3_reset(t);
  if (dc) sqlite3_reset(dc);
  return CEB_OK;
}
