/* Small helpers of the PostgreSQL engine: array literals, statement
 * parameters, running one statement on a pool connection, columns. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_internal.h"

static void grow(cebpg_buf *b, size_t more) {
  if (b->oom || b->len + more + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + more + 1)
    cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return;
  }
  b->p = p;
  b->cap = cap;
}

void cebpg_buf_add(cebpg_buf *b, const char *s, size_t n) {
  grow(b, n);
  if (b->oom) return;
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = '\0';
}

/* A text[] element in the array input syntax: "..." with \ and " escaped,
 * so any text (blanks, commas, braces, the word NULL) reads back as is. */
void cebpg_buf_elem(cebpg_buf *b, const char *s, size_t n, int first) {
  if (!first) cebpg_buf_add(b, ",", 1);
  if (!s) {
    cebpg_buf_add(b, "NULL", 4);
    return;
  }
  grow(b, 2 * n + 2);
  if (b->oom) return;
  char *o = b->p + b->len;
  *o++ = '"';
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"' || s[i] == '\\') *o++ = '\\';
    *o++ = s[i];
  }
  *o++ = '"';
  b->len = (size_t)(o - b->p);
  b->p[b->len] = '\0';
}

void cebpg_buf_free(cebpg_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

void cebpg_p_text(cebpg_params *p, const char *v) {
  if (p->n >= CEBPG_MAX_PARAMS) return;
  p->v[p->n] = v;
  p->len[p->n] = 0;
  p->fmt[p->n] = 0;
  p->n++;
}

void cebpg_p_int(cebpg_params *p, int64_t v) {
  if (p->n >= CEBPG_MAX_PARAMS) return;
  snprintf(p->num[p->n], sizeof p->num[p->n], "%" PRId64, v);
  cebpg_p_text(p, p->num[p->n]);
}

void cebpg_p_bytes(cebpg_params *p, const void *v, size_t n) {
  if (p->n >= CEBPG_MAX_PARAMS) return;
  p->v[p->n] = v ? v : "";
  p->len[p->n] = (int)n;
  p->fmt[p->n] = 1; /* binary: bytea's bytes as they are */
  p->n++;
}

const char *cebpg_cut_error(const char *err, char *buf) {
  if (!err) return NULL;
  size_t n = strlen(err);
  if (n > CEBPG_ERROR_MAX) {
    n = CEBPG_ERROR_MAX;
    while (n > 0 && ((unsigned char)err[n] & 0xC0) == 0x80)
      n--;
  }
  memcpy(buf, err, n);
  buf[n] = '\0';
  return buf;
}

/* r when it succeeded (PGRES_COMMAND_OK or TUPLES_OK), else NULL after
 * logging "store: <what>: <scrubbed error>" and telling the pool. */
static PGresult *checked(ceb_store_impl *s, PGconn *c, const char *what,
                         PGresult *r) {
  ExecStatusType st = PQresultStatus(r);
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
    cebpg_pool_ok(s->pool);
    return r;
  }
  char msg[400];
  cebpg_scrub(s->pool, r ? PQresultErrorMessage(r) : PQerrorMessage(c), msg,
              sizeof msg);
  if (!cebpg_pool_failed(s->pool, c, r, what))
    ceb_log_error("store: %s: %s", what, msg);
  PQclear(r);
  return NULL;
}

PGresult *cebpg_query_on(ceb_store_impl *s, PGconn *c, const char *what,
                         const char *sql, const cebpg_params *p) {
  return checked(s, c, what,
                 PQexecParams(c, sql, p ? p->n : 0, NULL, p ? p->v : NULL,
                              p ? p->len : NULL, p ? p->fmt : NULL, 0));
}

/* SQLSTATE 26000: no prepared statement of that name on this session */
static int not_prepared(const PGresult *r) {
  const char *st = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
  return st && strcmp(st, "26000") == 0;
}

static PGresult *exec_named(PGconn *c, const char *name,
                            const cebpg_params *p) {
  return PQexecPrepared(c, name, p ? p->n : 0, p ? p->v : NULL,
                        p ? p->len : NULL, p ? p->fmt : NULL, 0);
}

PGresult *cebpg_query_prepared(ceb_store_impl *s, const char *what,
                               const char *name, const char *sql,
                               const cebpg_params *p) {
  char err[400];
  PGconn *c = cebpg_pool_get(s->pool, CEBPG_POOL_WAIT_MS, err, sizeof err);
  if (!c) {
    ceb_log_debug("store: %s: %s", what, err);
    return NULL;
  }
  /* prepared on first use per session: pool connections carry no state
   * of ours, so the server says whether this one has it (one failed
   * round trip per connection and statement, outside any transaction) */
  PGresult *r = exec_named(c, name, p);
  if (not_prepared(r)) {
    PQclear(r);
    r = PQprepare(c, name, sql, 0, NULL);
    if (PQresultStatus(r) == PGRES_COMMAND_OK) {
      PQclear(r);
      r = exec_named(c, name, p);
    }
  }
  r = checked(s, c, what, r);
  cebpg_pool_put(s->pool, c);
  return r;
}

PGresult *cebpg_query(ceb_store_impl *s, const char *what, const char *sql,
                      const cebpg_params *p) {
  char err[400];
  PGconn *c = cebpg_pool_get(s->pool, CEBPG_POOL_WAIT_MS, err, sizeof err);
  if (!c) {
    ceb_log_debug("store: %s: %s", what, err);
    return NULL;
  }
  PGresult *r = cebpg_query_on(s, c, what, sql, p);
  cebpg_pool_put(s->pool, c);
  return r;
}

char *cebpg_dup(const PGresult *r, int row, int col) {
  if (PQgetisnull(r, row, col)) return NULL;
  return strdup(PQgetvalue(r, row, col));
}

int64_t cebpg_int(const PGresult *r, int row, int col) {
  if (PQgetisnull(r, row, col)) return 0;
  return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

/* Type oids of the integer columns (pg_type.h is a server header). */
#define INT8OID 20
#define INT2OID 21
#define INT4OID 23

void cebpg_json_col(json_t *o, const char *key, const PGresult *r, int row,
                    int col) {
  if (PQgetisnull(r, row, col)) {
    json_object_set_new(o, key, json_null());
    return;
  }
  Oid t = PQftype(r, col);
  if (t == INT8OID || t == INT2OID || t == INT4OID)
    json_object_set_new(o, key, json_integer(cebpg_int(r, row, col)));
  else
    json_object_set_new(o, key, json_string(PQgetvalue(r, row, col)));
}
