/* The archive on PostgreSQL: replay by time range (ceb_store_replay_range),
 * as the SQLite engine's store_replay.c. Each matching event is journaled
 * again as a copy (a new seq: behind every open delivery of its key;
 * replay_of the original; copy_no from a sequence, which keeps the copies
 * of one event apart in the (id, source, client, copy_no) constraint that
 * dedupes received events, copy_no 0). One transaction; the keys touched
 * are locked first (pg_keylock.c says why), so that the head flag of a
 * copy is decided on what other writers of its key committed. */
#include <stdlib.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_internal.h"

/* $1 route, $2 since, $3 until, $4 type (exact or "x*"; NULL any). No
 * index on received_at: every ingest would pay for it; an operator's
 * replay reads the route's settled rows once. */
#define MATCH                                                                  \
  " FROM delivery d JOIN journal j ON j.seq = d.seq"                           \
  " WHERE d.route = $1 AND d.state >= 3"                                       \
  " AND j.received_at >= $2 AND j.received_at < $3"                            \
  " AND j.replay_of IS NULL"                                                   \
  " AND ($4::text IS NULL OR j.type = $4 OR (right($4, 1) = '*' AND"           \
  "  left(j.type, length($4) - 1) = left($4, -1)))"

static const char SQL_LOCK[] =
    "SELECT count(pg_advisory_xact_lock(h)) FROM (SELECT DISTINCT"
    " hashtextextended($1 || chr(31) || d.order_key, 1128416) AS h" MATCH
    " AND d.order_key IS NOT NULL ORDER BY 1) x";
/* Copies in the originals' order; a keyed copy is its key's head when it
 * is the key's first copy here and no row of the key is open (the
 * statement's snapshot does not see its own inserts: row_number does). */
static const char SQL_COPY[] =
    "WITH m AS (SELECT j.seq, d.order_key" MATCH "),"
    " ins AS (INSERT INTO journal (client, source, id, type, received_at,"
    " event, size, unrouted, replay_of, copy_no) SELECT j.client, j.source,"
    " j.id, j.type, $5, j.event, j.size, false, j.seq,"
    " nextval('journal_copy_no') FROM m JOIN journal j ON j.seq = m.seq"
    " ORDER BY m.seq RETURNING seq, replay_of),"
    " st AS (INSERT INTO journal_settle (seq, open_routes, settled_at)"
    " SELECT seq, 1, NULL FROM ins),"
    " dl AS (INSERT INTO delivery (seq, route, state, next_at, order_key,"
    " head) SELECT ins.seq, $1, 0, $5, m.order_key, m.order_key IS NOT NULL"
    " AND row_number() OVER (PARTITION BY m.order_key ORDER BY ins.seq) = 1"
    " AND NOT EXISTS (SELECT 1 FROM delivery p WHERE p.route = $1 AND"
    " p.order_key = m.order_key AND p.open) FROM ins JOIN m"
    " ON m.seq = ins.replay_of)"
    " SELECT count(*) FROM ins";

static void bind(cebpg_params *p, const ceb_replay_filter *f) {
  cebpg_p_text(p, f->route);
  cebpg_p_int(p, f->since);
  cebpg_p_int(p, f->until);
  cebpg_p_text(p, f->type);
}

static int step(ceb_store_impl *s, PGconn *c, const char *sql,
                const cebpg_params *p, int64_t *out) {
  PGresult *r = cebpg_query_on(s, c, "replay", sql, p);
  if (!r) return CEB_EIO;
  if (out) *out = PQntuples(r) ? cebpg_int(r, 0, 0) : 0;
  PQclear(r);
  return CEB_OK;
}

int cebpg_replay_range(ceb_store_impl *s, const ceb_replay_filter *f,
                       int64_t now, int dry_run, size_t *count, int *exists) {
  char err[400];
  PGconn *c = cebpg_pool_get(s->pool, CEBPG_POOL_WAIT_MS, err, sizeof err);
  if (!c) {
    ceb_log_error("store: replay: %s", err);
    return CEB_EIO;
  }
  cebpg_params p = {.n = 0}, one = {.n = 0};
  bind(&p, f);
  cebpg_p_text(&one, f->route);
  int64_t any = 0, n = 0;
  int rc = step(s, c, "BEGIN", NULL, NULL);
  if (rc == CEB_OK)
    rc = step(s, c,
              "SELECT count(*) FROM (SELECT 1 FROM delivery WHERE route = $1"
              " LIMIT 1) x",
              &one, &any);
  if (rc == CEB_OK && any && dry_run)
    rc = step(s, c, "SELECT count(*)" MATCH, &p, &n);
  if (rc == CEB_OK && any && !dry_run) {
    rc = step(s, c, SQL_LOCK, &p, NULL);
    cebpg_p_int(&p, now);
    if (rc == CEB_OK) rc = step(s, c, SQL_COPY, &p, &n);
  }
  int commit = rc == CEB_OK && !dry_run && n > 0;
  int end = step(s, c, commit ? "COMMIT" : "ROLLBACK", NULL, NULL);
  if (rc == CEB_OK) rc = end;
  cebpg_pool_put(s->pool, c);
  /* new pending rows: the other bridges may claim them */
  if (rc == CEB_OK && commit && s->notify)
    cebpg_notify_route(s->notify, f->route);
  if (count) *count = rc == CEB_OK ? (size_t)n : 0;
  if (exists) *exists = rc == CEB_OK && any;
  return rc;
}
