/* Idempotency records on PostgreSQL, shared by every instance. A begin
 * inserts the reservation with ON CONFLICT DO NOTHING: of two begins of
 * one key at once (two threads or two instances), the unique key lets
 * exactly one insert; the other waits for it to commit and then reads the
 * row (in flight, or its answer). A reservation row of this instance that
 * this process does not hold (cebpg_live: its abort or finish failed to
 * write) is taken over; another instance's is in flight until that
 * instance finishes, aborts, or restarts (idem_reset_inflight). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/plugin.h>
#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_internal.h"

enum { ROW_INFLIGHT = 0, ROW_DONE = 1 };

static int finish_tx(ceb_store_impl *s, PGconn *c, int rc) {
  PGresult *r = cebpg_query_on(s, c, "idempotency",
                               rc == CEB_OK ? "COMMIT" : "ROLLBACK", NULL);
  if (!r && rc == CEB_OK) rc = CEB_EIO;
  PQclear(r);
  return rc;
}

/* Reports the held row r (state, answer) into res; *takeover when the row
 * counts as absent (expired, or a stale reservation of this instance). */
static int report(ceb_store_impl *s, const PGresult *r, const char *client,
                  const char *key, const char *fingerprint, int64_t now,
                  ceb_idem_result *res, int *takeover) {
  int state = (int)cebpg_int(r, 0, 1);
  *takeover = 0;
  if (state == ROW_DONE && !PQgetisnull(r, 0, 5) && cebpg_int(r, 0, 5) <= now)
    *takeover = 1; /* expired: as if absent */
  if (state == ROW_INFLIGHT && !PQgetisnull(r, 0, 6) &&
      strcmp(PQgetvalue(r, 0, 6), s->instance) == 0 &&
      !cebpg_live_has(&s->live, client, key))
    *takeover = 1; /* ours, and no request of this process holds it */
  if (*takeover) return CEB_OK;
  if (strcmp(PQgetvalue(r, 0, 0), fingerprint) != 0) {
    res->state = CEB_IDEM_MISMATCH;
  } else if (state == ROW_INFLIGHT) {
    res->state = CEB_IDEM_IN_FLIGHT;
  } else {
    res->state = CEB_IDEM_REPLAY;
    res->http_status = (int)cebpg_int(r, 0, 2);
    res->content_type = cebpg_dup(r, 0, 3);
    size_t n = 0;
    unsigned char *b =
        PQgetisnull(r, 0, 4)
            ? NULL
            : PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 4), &n);
    res->body = malloc(n + 1);
    if (!res->body) {
      PQfreemem(b);
      return CEB_ENOMEM;
    }
    if (n) memcpy(res->body, b, n);
    res->body[n] = '\0';
    res->body_len = n;
    PQfreemem(b);
  }
  return CEB_OK;
}

int cebpg_idem_begin(ceb_store_impl *s, const char *client, const char *key,
                     const char *fingerprint, int64_t now,
                     ceb_idem_result *res) {
  if (!key || !*key || !fingerprint || !res) return CEB_EINVAL;
  memset(res, 0, sizeof *res);
  client = client ? client : "";
  char err[400];
  PGconn *c = cebpg_pool_get(s->pool, CEBPG_POOL_WAIT_MS, err, sizeof err);
  if (!c) {
    ceb_log_error("store: idempotency: %s", err);
    return CEB_EIO;
  }
  /* held before the insert commits: a reservation of ours is never seen
   * stale by a concurrent begin of this process */
  int rc = cebpg_live_add(&s->live, client, key);
  int added = rc == CEB_OK;
  PGresult *r =
      rc == CEB_OK ? cebpg_query_on(s, c, "idempotency", "BEGIN", NULL) : NULL;
  if (!r && rc == CEB_OK) rc = CEB_EIO;
  PQclear(r);
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, client);
  cebpg_p_text(&p, key);
  cebpg_p_text(&p, fingerprint);
  cebpg_p_int(&p, now);
  cebpg_p_text(&p, s->instance);
  int reserved = 0;
  if (rc == CEB_OK) {
    r = cebpg_query_on(s, c, "idempotency",
                       "INSERT INTO idempotency (client, key, fingerprint,"
                       " state, created_at, owner) VALUES ($1, $2, $3, 0, $4,"
                       " $5) ON CONFLICT (client, key) DO NOTHING",
                       &p);
    if (!r) rc = CEB_EIO;
    reserved = r && atoi(PQcmdTuples(r)) == 1;
    PQclear(r);
  }
  if (rc == CEB_OK && !reserved) {
    cebpg_params q = {.n = 0};
    cebpg_p_text(&q, client);
    cebpg_p_text(&q, key);
    r = cebpg_query_on(s, c, "idempotency",
                       "SELECT fingerprint, state, http_status, content_type,"
                       " body, expires_at, owner FROM idempotency WHERE"
                       " client = $1 AND key = $2 FOR UPDATE",
                       &q);
    if (!r) rc = CEB_EIO;
    int takeover = 0;
    if (rc == CEB_OK && PQntuples(r) == 1)
      rc = report(s, r, client, key, fingerprint, now, res, &takeover);
    else if (rc == CEB_OK)
      takeover = 1; /* gone meanwhile (aborted): ours to take */
    PQclear(r);
    if (rc == CEB_OK && takeover) {
      r = cebpg_query_on(s, c, "idempotency",
                         "INSERT INTO idempotency (client, key, fingerprint,"
                         " state, created_at, owner) VALUES ($1, $2, $3, 0,"
                         " $4, $5) ON CONFLICT (client, key) DO UPDATE SET"
                         " fingerprint = $3, state = 0, http_status = NULL,"
                         " content_type = NULL, body = NULL, created_at = $4,"
                         " expires_at = NULL, owner = $5",
                         &p);
      if (!r) rc = CEB_EIO;
      reserved = r != NULL;
      PQclear(r);
    }
  }
  rc = finish_tx(s, c, rc);
  cebpg_pool_put(s->pool, c);
  if (rc == CEB_OK && reserved) {
    res->state = CEB_IDEM_NEW;
    return CEB_OK;
  }
  if (added) cebpg_live_remove(&s->live, client, key);
  if (rc != CEB_OK) {
    free(res->content_type);
    free(res->body);
    memset(res, 0, sizeof *res);
  }
  return rc;
}

int cebpg_idem_finish(ceb_store_impl *s, const char *client, const char *key,
                      int http_status, const char *content_type,
                      const char *body, size_t body_len, int64_t now,
                      int64_t ttl_ms) {
  if (!key || (!body && body_len)) return CEB_EINVAL;
  client = client ? client : "";
  cebpg_live_remove(&s->live, client, key);
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, client);
  cebpg_p_text(&p, key);
  cebpg_p_int(&p, http_status);
  cebpg_p_text(&p, content_type);
  cebpg_p_bytes(&p, body, body_len);
  cebpg_p_int(&p, now + ttl_ms);
  PGresult *r = cebpg_query(
      s, "idempotency finish",
      "UPDATE idempotency SET state = 1, http_status = $3, content_type = $4,"
      " body = $5, expires_at = $6, owner = NULL WHERE client = $1 AND"
      " key = $2 AND state = 0",
      &p);
  if (!r) return CEB_EIO;
  int n = atoi(PQcmdTuples(r));
  PQclear(r);
  return n ? CEB_OK : CEB_ENOTFOUND;
}

int cebpg_idem_abort(ceb_store_impl *s, const char *client, const char *key) {
  if (!key) return CEB_EINVAL;
  client = client ? client : "";
  cebpg_live_remove(&s->live, client, key);
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, client);
  cebpg_p_text(&p, key);
  PGresult *r = cebpg_query(s, "idempotency abort",
                            "DELETE FROM idempotency WHERE client = $1 AND"
                            " key = $2 AND state = 0",
                            &p);
  if (!r) return CEB_EIO;
  PQclear(r);
  return CEB_OK;
}

int cebpg_idem_reset_inflight(ceb_store_impl *s) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, s->instance);
  PGresult *r = cebpg_query(s, "idempotency reset",
                            "DELETE FROM idempotency WHERE state = 0 AND"
                            " owner = $1",
                            &p);
  if (!r) return CEB_EIO;
  PQclear(r);
  return CEB_OK;
}
