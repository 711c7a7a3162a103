/* The DLQ on PostgreSQL: list, show, replay, purge, and the reads of DLQ
 * forwarding. Same rows and JSON as the SQLite engine's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_internal.h"

/* $1..$7 always bound (NULL when unused): one SQL text per statement; $8
 * is a LIMIT. A type ending in '*' is a prefix. */
#define DLQ_WHERE                                                              \
  " WHERE ($1::text IS NULL OR route = $1)"                                    \
  " AND ($2::text IS NULL OR type = $2 OR (right($2, 1) = '*' AND"             \
  "  left(type, length($2) - 1) = left($2, -1)))"                              \
  " AND ($3::text IS NULL OR source = $3)"                                     \
  " AND ($4::text IS NULL OR reason = $4)"                                     \
  " AND ($5::bigint IS NULL OR created_at >= $5)"                              \
  " AND ($6::bigint IS NULL OR id = $6)"                                       \
  " AND ($7::bigint IS NULL OR created_at < $7)"

#define DLQ_COLS                                                               \
  "id, seq, route, sink, reason, last_reason, status, attempts, first_at,"     \
  " last_at, created_at, error, event_id, source, type, replayed_at,"          \
  " replays, forwarded_at"

static void bind_filter(cebpg_params *p, const ceb_dlq_filter *f) {
  cebpg_p_text(p, f ? f->route : NULL);
  cebpg_p_text(p, f ? f->type : NULL);
  cebpg_p_text(p, f ? f->source : NULL);
  cebpg_p_text(p, f ? f->reason : NULL);
  if (f && f->since > 0)
    cebpg_p_int(p, f->since);
  else
    cebpg_p_text(p, NULL);
  if (f && f->id > 0)
    cebpg_p_int(p, f->id);
  else
    cebpg_p_text(p, NULL);
  if (f && f->until > 0)
    cebpg_p_int(p, f->until);
  else
    cebpg_p_text(p, NULL);
}

static json_t *dlq_row(const PGresult *r, int row) {
  json_t *o = json_object();
  for (int i = 0; i < CEB_DLQ_ROW_MEMBERS; i++)
    cebpg_json_col(o, ceb_dlq_row_names[i], r, row, i);
  return o;
}

json_t *cebpg_dlq_list(ceb_store_impl *s, const ceb_dlq_filter *f) {
  cebpg_params p = {.n = 0};
  bind_filter(&p, f);
  cebpg_p_int(&p, f && f->limit ? (int64_t)f->limit : 100);
  PGresult *r = cebpg_query(s, "dlq list",
                            "SELECT " DLQ_COLS " FROM dlq" DLQ_WHERE
                            " ORDER BY id DESC LIMIT $8",
                            &p);
  if (!r) return NULL;
  json_t *arr = json_array();
  for (int i = 0; i < PQntuples(r); i++)
    json_array_append_new(arr, dlq_row(r, i));
  PQclear(r);
  return arr;
}

json_t *cebpg_dlq_of_seq(ceb_store_impl *s, int64_t seq, size_t max) {
  cebpg_params p = {.n = 0};
  cebpg_p_int(&p, seq);
  if (max)
    cebpg_p_int(&p, (int64_t)max);
  else
    cebpg_p_text(&p, NULL); /* LIMIT NULL: all */
  /* the newest max, read back oldest first */
  PGresult *r = cebpg_query(s, "dlq of seq",
                            "SELECT " DLQ_COLS " FROM (SELECT * FROM dlq"
                            " WHERE seq = $1 ORDER BY id DESC"
                            " LIMIT $2::bigint) d ORDER BY id",
                            &p);
  if (!r) return NULL;
  json_t *arr = json_array();
  for (int i = 0; i < PQntuples(r); i++)
    json_array_append_new(arr, dlq_row(r, i));
  PQclear(r);
  return arr;
}

json_t *cebpg_dlq_show(ceb_store_impl *s, int64_t id) {
  cebpg_params p = {.n = 0};
  cebpg_p_int(&p, id);
  PGresult *r = cebpg_query(
      s, "dlq show", "SELECT " DLQ_COLS ", event FROM dlq WHERE id = $1", &p);
  if (!r) return NULL;
  json_t *o = NULL;
  if (PQntuples(r) > 0) {
    o = dlq_row(r, 0);
    json_t *e = PQgetisnull(r, 0, 18)
                    ? NULL
                    : json_loads(PQgetvalue(r, 0, 18), 0, NULL);
    json_object_set_new(o, "event", e ? e : json_null());
  }
  PQclear(r);
  return o;
}

/* Only rows whose delivery is still dead and points at this DLQ row are
 * replayed: replaying twice never duplicates a pending delivery. The rows
 * are locked (FOR UPDATE) so that two instances replaying at once replay
 * each row once. */
int cebpg_dlq_replay(ceb_store_impl *s, const ceb_dlq_filter *f, int64_t now,
                     int dry_run, size_t *count, json_t *replayed) {
  if (count) *count = 0;
  char err[400];
  PGconn *c = cebpg_pool_get(s->pool, CEBPG_POOL_WAIT_MS, err, sizeof err);
  if (!c) {
    ceb_log_error("store: dlq replay: %s", err);
    return CEB_EIO;
  }
  PGresult *r = cebpg_query_on(s, c, "dlq replay", "BEGIN", NULL);
  int rc = r ? CEB_OK : CEB_EIO;
  PQclear(r);
  cebpg_params p = {.n = 0};
  bind_filter(&p, f);
  cebpg_p_int(&p, f && f->limit ? (int64_t)f->limit : INT64_MAX);
  PGresult *rows = NULL;
  if (rc == CEB_OK && !dry_run) {
    cebpg_params lp = {.n = 0};
    bind_filter(&lp, f);
    /* the keys first, in order, as every writer of the head flag does
     * (pg_keylock.c); then the rows */
    r = cebpg_query_on(
        s, c, "dlq replay",
        "SELECT count(pg_advisory_xact_lock(h)) FROM (SELECT DISTINCT"
        " hashtextextended(d.route || chr(31) || d.order_key, 1128416) AS h"
        " FROM dlq q JOIN delivery d ON d.seq = q.seq AND d.route = q.route"
        " WHERE d.order_key IS NOT NULL AND q.id IN (SELECT id FROM"
        " dlq" DLQ_WHERE ") ORDER BY 1) x",
        &lp);
    if (!r) rc = CEB_EIO;
    PQclear(r);
  }
  if (rc == CEB_OK) {
    rows = cebpg_query_on(
        s, c, "dlq replay",
        "SELECT q.id, q.seq, q.route FROM dlq q JOIN delivery d ON"
        " d.seq = q.seq AND d.route = q.route AND d.state = 4 AND"
        " d.dlq_id = q.id WHERE q.id IN (SELECT id FROM dlq" DLQ_WHERE ")"
        " ORDER BY q.id LIMIT $8 FOR UPDATE OF q, d",
        &p);
    if (!rows) rc = CEB_EIO;
  }
  size_t n = 0;
  for (int i = 0; rc == CEB_OK && i < PQntuples(rows); i++) {
    int64_t id = cebpg_int(rows, i, 0), seq = cebpg_int(rows, i, 1);
    const char *route = PQgetvalue(rows, i, 2);
    n++;
    if (replayed)
      json_array_append_new(replayed,
                            json_pack("{sI sI ss}", "dlq_id", (json_int_t)id,
                                      "seq", (json_int_t)seq, "route", route));
    if (dry_run) continue;
    cebpg_params u = {.n = 0};
    cebpg_p_int(&u, seq);
    cebpg_p_text(&u, route);
    cebpg_p_int(&u, now);
    cebpg_p_int(&u, id);
    /* the key's open rows locked first: a claim of its head that is under
     * way commits before the next statement reads the key (READ
     * COMMITTED), and none starts until this transaction ends */
    cebpg_params k = {.n = 0};
    cebpg_p_int(&k, seq);
    cebpg_p_text(&k, route);
    r = cebpg_query_on(s, c, "dlq replay",
                       "SELECT p.seq FROM delivery p WHERE p.route = $2 AND"
                       " p.order_key = (SELECT order_key FROM delivery WHERE"
                       " seq = $1 AND route = $2) AND p.open"
                       " ORDER BY p.seq FOR UPDATE OF p",
                       &k);
    if (!r) {
      rc = CEB_EIO;
      break;
    }
    PQclear(r);
    r = cebpg_query_on(
        s, c, "dlq replay",
        /* pending again: its key's head when no older row of the key is
         * unsettled and no row of the key is in progress (one delivery of
         * a key at a time: else the settle of the row in progress hands
         * it the head), and then the newer head waits behind it */
        "WITH d AS (UPDATE delivery SET state = 0, attempts = 0,"
        " next_at = $3, first_at = NULL, last_at = NULL,"
        " replays = replays + 1, lease_owner = NULL, lease_until = NULL,"
        " head = order_key IS NOT NULL AND NOT EXISTS (SELECT 1 FROM"
        " delivery p WHERE p.route = $2 AND p.order_key = delivery.order_key"
        " AND p.open AND (p.state = 1 OR p.seq < $1))"
        " WHERE seq = $1 AND route = $2 AND state = 4"
        " RETURNING order_key, head),"
        " n AS (UPDATE delivery SET head = false WHERE route = $2 AND"
        " order_key = (SELECT order_key FROM d WHERE head) AND seq > $1"
        " AND head AND state <> 1),"
        " j AS (UPDATE journal_settle SET open_routes = open_routes + 1,"
        " settled_at = NULL WHERE seq = $1)"
        " UPDATE dlq SET replayed_at = $3, replays = replays + 1"
        " WHERE id = $4",
        &u);
    if (!r) rc = CEB_EIO;
    PQclear(r);
  }
  r = cebpg_query_on(s, c, "dlq replay",
                     rc == CEB_OK && !dry_run ? "COMMIT" : "ROLLBACK", NULL);
  if (!r && rc == CEB_OK) rc = CEB_EIO;
  PQclear(r);
  /* pending again: the other bridges may claim them */
  for (int i = 0; rc == CEB_OK && !dry_run && s->notify && i < PQntuples(rows);
       i++)
    cebpg_notify_route(s->notify, PQgetvalue(rows, i, 2));
  PQclear(rows);
  cebpg_pool_put(s->pool, c);
  if (count && rc == CEB_OK) *count = n;
  return rc;
}

int cebpg_dlq_purge(ceb_store_impl *s, const ceb_dlq_filter *f, int dry_run,
                    size_t *count) {
  if (count) *count = 0;
  cebpg_params p = {.n = 0};
  bind_filter(&p, f);
  PGresult *r = cebpg_query(s, "dlq purge",
                            dry_run ? "SELECT count(*) FROM dlq" DLQ_WHERE
                                    : "DELETE FROM dlq" DLQ_WHERE,
                            &p);
  if (!r) return CEB_EIO;
  size_t n = dry_run ? (size_t)cebpg_int(r, 0, 0)
                     : (size_t)strtoull(PQcmdTuples(r), NULL, 10);
  PQclear(r);
  if (count) *count = n;
  return CEB_OK;
}

int cebpg_dlq_unforwarded(ceb_store_impl *s, const char *route, int64_t after,
                          size_t max, int64_t *ids, size_t *n) {
  *n = 0;
  if (!route || !ids || !max) return CEB_EINVAL;
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, route);
  cebpg_p_int(&p, after);
  cebpg_p_int(&p, (int64_t)max);
  PGresult *r = cebpg_query(
      s, "dlq unforwarded",
      "SELECT id FROM dlq WHERE route = $1 AND id > $2 AND forwarded_at IS"
      " NULL AND replayed_at IS NULL ORDER BY id LIMIT $3",
      &p);
  if (!r) return CEB_EIO;
  for (int i = 0; i < PQntuples(r) && *n < max; i++)
    ids[(*n)++] = cebpg_int(r, i, 0);
  PQclear(r);
  return CEB_OK;
}

char *cebpg_dlq_forward_event(ceb_store_impl *s, int64_t id, int *status) {
  cebpg_params p = {.n = 0};
  cebpg_p_int(&p, id);
  PGresult *r = cebpg_query(s, "dlq forward event",
                            "SELECT event FROM dlq WHERE id = $1 AND"
                            " forwarded_at IS NULL AND replayed_at IS NULL",
                            &p);
  if (!r) {
    *status = CEB_EIO;
    return NULL;
  }
  char *out = NULL;
  if (PQntuples(r) == 0) {
    *status = CEB_ENOTFOUND;
  } else {
    out = cebpg_dup(r, 0, 0);
    *status = out ? CEB_OK : CEB_ENOMEM;
  }
  PQclear(r);
  return out;
}
