/* The PostgreSQL engine's connection pool and reachability (pg_conn.h). */
#include "store/postgres/pg_conn.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ceb/status.h>

#include "log/ceb_log.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define WHY_MAX 300

struct cebpg_pool {
  char *conninfo;
  char *password;    /* store.password, or NULL */
  char *ci_password; /* the conninfo's own, or NULL: scrubbed from messages */
  char *app;
  char display[512];
  size_t size;
  pthread_mutex_t lock;
  pthread_cond_t cond; /* a connection was put back or closed */
  PGconn **idle;
  size_t nidle;
  size_t open; /* idle + taken + being connected */
  int healthy;
  char why[WHY_MAX];
  int64_t backoff_ms;
  int64_t next_try;    /* monotonic ms: no new connection before, when sick */
  uint64_t generation; /* connection failures so far */
};

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- scrubbing ---- */

static void replace_all(char *s, size_t cap, const char *needle) {
  size_t nl = needle ? strlen(needle) : 0;
  if (nl == 0) return;
  char *p = s;
  while ((p = strstr(p, needle))) {
    size_t rest = strlen(p + nl);
    if ((size_t)(p - s) + 3 + rest + 1 > cap) {
      *p = '\0'; /* no room: cut rather than show it */
      return;
    }
    memmove(p + 3, p + nl, rest + 1);
    memcpy(p, "***", 3);
    p += 3;
  }
}

/* "password=VALUE" (VALUE up to a blank, or a quoted '…' string) and
 * "scheme://user:VALUE@" become "…=***" and "user:***@". */
static void mask_patterns(char *s) {
  for (char *p = s; (p = strstr(p, "password"));) {
    char *q = p + 8;
    while (*q == ' ')
      q++;
    if (*q != '=') {
      p = q;
      continue;
    }
    q++;
    while (*q == ' ')
      q++;
    char *end = q;
    if (*q == '\'') {
      end++;
      while (*end && *end != '\'')
        end += end[0] == '\\' && end[1] ? 2 : 1;
      if (*end) end++;
    } else {
      while (*end && *end != ' ' && *end != '&' && *end != '"')
        end++;
    }
    if (end - q >= 3) {
      memcpy(q, "***", 3);
      memmove(q + 3, end, strlen(end) + 1);
    }
    p = q;
  }
  for (char *p = s; (p = strstr(p, "://"));) {
    char *u = p + 3;
    char *at = strpbrk(u, "@/ ?\"'");
    char *colon = strchr(u, ':');
    if (at && *at == '@' && colon && colon < at && at - colon - 1 >= 3) {
      memcpy(colon + 1, "***", 3);
      memmove(colon + 4, at, strlen(at) + 1);
    }
    p = u;
  }
}

void cebpg_scrub(const cebpg_pool *p, const char *msg, char *out,
                 size_t outlen) {
  if (!outlen) return;
  snprintf(out, outlen, "%s", msg ? msg : "");
  if (p) {
    replace_all(out, outlen, p->password);
    replace_all(out, outlen, p->ci_password);
  }
  mask_patterns(out);
  size_t n = strlen(out);
  while (n > 0 &&
         (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
    out[--n] = '\0';
  for (char *c = out; *c; c++)
    if (*c == '\n' || *c == '\t') *c = ' '; /* libpq's multi-line details */
}

/* ---- opening ---- */

int cebpg_pool_new(const cebpg_pool_opts *opts, cebpg_pool **out, char *err,
                   size_t errlen) {
  *out = NULL;
  char *perr = NULL;
  PQconninfoOption *o = PQconninfoParse(opts->conninfo, &perr);
  if (!o) {
    char msg[WHY_MAX];
    cebpg_scrub(NULL, perr ? perr : "out of memory", msg, sizeof msg);
    PQfreemem(perr);
    snprintf(err, errlen, "store: not a valid PostgreSQL URI or conninfo: %s",
             msg);
    return CEB_EINVAL;
  }
  cebpg_pool *p = calloc(1, sizeof *p);
  if (!p) {
    PQconninfoFree(o);
    return CEB_ENOMEM;
  }
  const char *user = NULL, *host = NULL, *port = NULL, *db = NULL;
  for (PQconninfoOption *i = o; i->keyword; i++) {
    if (!i->val || !*i->val) continue;
    if (!strcmp(i->keyword, "user")) user = i->val;
    if (!strcmp(i->keyword, "host")) host = i->val;
    if (!strcmp(i->keyword, "hostaddr") && !host) host = i->val;
    if (!strcmp(i->keyword, "port")) port = i->val;
    if (!strcmp(i->keyword, "dbname")) db = i->val;
    if (!strcmp(i->keyword, "password")) p->ci_password = strdup(i->val);
  }
  snprintf(p->display, sizeof p->display, "postgresql://%s%s%s%s%s/%s",
           user ? user : "", user ? "@" : "", host ? host : "", port ? ":" : "",
           port ? port : "", db ? db : "");
  PQconninfoFree(o);
  p->conninfo = strdup(opts->conninfo);
  p->password = opts->password ? strdup(opts->password) : NULL;
  p->app = strdup(opts->application_name ? opts->application_name : "cebridge");
  p->size = opts->size ? opts->size : 1;
  p->idle = calloc(p->size, sizeof *p->idle);
  p->healthy = 1;
  p->backoff_ms = BACKOFF_MIN_MS;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  if (!p->conninfo || !p->app || !p->idle || (opts->password && !p->password)) {
    cebpg_pool_free(p);
    return CEB_ENOMEM;
  }
  *out = p;
  return CEB_OK;
}

void cebpg_pool_free(cebpg_pool *p) {
  if (!p) return;
  for (size_t i = 0; i < p->nidle; i++)
    PQfinish(p->idle[i]);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->cond);
  free(p->idle);
  free(p->conninfo);
  if (p->password) memset(p->password, 0, strlen(p->password));
  if (p->ci_password) memset(p->ci_password, 0, strlen(p->ci_password));
  free(p->password);
  free(p->ci_password);
  free(p->app);
  free(p);
}

const char *cebpg_pool_display(const cebpg_pool *p) {
  return p->display;
}

/* ---- health ---- */

/* Under lock. */
static void mark_sick(cebpg_pool *p, const char *why) {
  if (p->healthy)
    ceb_log_error("store: PostgreSQL %s unreachable: %s", p->display, why);
  else if (strcmp(p->why, why) != 0)
    ceb_log_warn("store: PostgreSQL %s still unreachable: %s", p->display, why);
  if (!p->healthy)
    p->backoff_ms =
        p->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : p->backoff_ms * 2;
  p->healthy = 0;
  snprintf(p->why, sizeof p->why, "%s", why);
  p->next_try = mono_ms() + p->backoff_ms;
}

/* Under lock. */
static void mark_well(cebpg_pool *p) {
  if (!p->healthy)
    ceb_log_info("store: PostgreSQL %s reachable again", p->display);
  p->healthy = 1;
  p->why[0] = '\0';
  p->backoff_ms = BACKOFF_MIN_MS;
}

void cebpg_pool_ok(cebpg_pool *p) {
  pthread_mutex_lock(&p->lock);
  if (!p->healthy) mark_well(p);
  pthread_mutex_unlock(&p->lock);
}

int cebpg_pool_healthy(cebpg_pool *p, char *why, size_t whylen) {
  pthread_mutex_lock(&p->lock);
  int ok = p->healthy;
  if (!ok && why && whylen)
    snprintf(why, whylen, "PostgreSQL %s unreachable: %s", p->display, p->why);
  pthread_mutex_unlock(&p->lock);
  return ok;
}

uint64_t cebpg_pool_generation(cebpg_pool *p) {
  pthread_mutex_lock(&p->lock);
  uint64_t g = p->generation;
  pthread_mutex_unlock(&p->lock);
  return g;
}

int cebpg_pool_probe_due(cebpg_pool *p) {
  pthread_mutex_lock(&p->lock);
  int due = !p->healthy && mono_ms() >= p->next_try;
  pthread_mutex_unlock(&p->lock);
  return due;
}

int cebpg_conn_lost(PGconn *c, const PGresult *res) {
  if (c && PQstatus(c) == CONNECTION_BAD) return 1;
  if (!res) return c == NULL;
  ExecStatusType s = PQresultStatus(res);
  if (s != PGRES_FATAL_ERROR && s != PGRES_NONFATAL_ERROR &&
      s != PGRES_PIPELINE_ABORTED)
    return 0;
  const char *st = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  /* no SQLSTATE: libpq's own error (the connection went away) */
  if (!st) return s == PGRES_FATAL_ERROR;
  /* connection exceptions (not 08P01, a protocol violation: a statement's
   * own), shutdowns, too many connections */
  return (strncmp(st, "08", 2) == 0 && strcmp(st, "08P01") != 0) ||
         strncmp(st, "57P", 3) == 0 || strcmp(st, "53300") == 0;
}

/* Closes every idle connection (they share a restarted server's fate).
 * Under lock; returns them to close outside it. */
static size_t take_idle(cebpg_pool *p, PGconn **out) {
  size_t n = p->nidle;
  memcpy(out, p->idle, n * sizeof *out);
  p->open -= n;
  p->nidle = 0;
  return n;
}

int cebpg_pool_failed(cebpg_pool *p, PGconn *c, const PGresult *res,
                      const char *what) {
  if (!cebpg_conn_lost(c, res)) return 0;
  char msg[WHY_MAX], raw[WHY_MAX];
  snprintf(raw, sizeof raw, "%s: %s", what ? what : "statement",
           res && PQresultErrorMessage(res)[0] ? PQresultErrorMessage(res)
           : c                                 ? PQerrorMessage(c)
                                               : "no connection");
  cebpg_scrub(p, raw, msg, sizeof msg);
  PGconn **drop = malloc(p->size * sizeof *drop);
  size_t n = 0;
  pthread_mutex_lock(&p->lock);
  mark_sick(p, msg);
  p->generation++;
  if (drop) n = take_idle(p, drop);
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  for (size_t i = 0; i < n; i++)
    PQfinish(drop[i]);
  free(drop);
  return 1;
}

/* ---- taking and giving back ---- */

static PGconn *connect_one(cebpg_pool *p, char *why, size_t whylen) {
  /* Later keywords win; the conninfo (expanded from dbname) overrides the
   * defaults before it, store.password overrides the conninfo's. */
  const char *keys[] = {"application_name",
                        "connect_timeout",
                        "keepalives",
                        "keepalives_idle",
                        "keepalives_interval",
                        "keepalives_count",
                        "dbname",
                        NULL,
                        NULL};
  const char *vals[] = {p->app, "10",        "1",  "10", "5",
                        "3",    p->conninfo, NULL, NULL};
  if (p->password) {
    keys[7] = "password";
    vals[7] = p->password;
  }
  PGconn *c = PQconnectdbParams(keys, vals, 1);
  if (c && PQstatus(c) == CONNECTION_OK) return c;
  cebpg_scrub(p, c ? PQerrorMessage(c) : "out of memory", why, whylen);
  PQfinish(c);
  return NULL;
}

PGconn *cebpg_pool_connect(cebpg_pool *p, char *err, size_t errlen) {
  char why[WHY_MAX];
  PGconn *c = connect_one(p, why, sizeof why);
  if (!c && err)
    snprintf(err, errlen, "PostgreSQL %s unreachable: %s", p->display, why);
  return c;
}

PGconn *cebpg_pool_get(cebpg_pool *p, int64_t wait_ms, char *err,
                       size_t errlen) {
  int64_t end = mono_ms() + wait_ms;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    if (p->nidle > 0) {
      PGconn *c = p->idle[--p->nidle];
      pthread_mutex_unlock(&p->lock);
      return c;
    }
    if (p->open < p->size) {
      if (!p->healthy && mono_ms() < p->next_try) {
        if (err)
          snprintf(err, errlen, "PostgreSQL %s unreachable: %s", p->display,
                   p->why);
        pthread_mutex_unlock(&p->lock);
        return NULL;
      }
      p->open++;
      pthread_mutex_unlock(&p->lock);
      char why[WHY_MAX];
      PGconn *c = connect_one(p, why, sizeof why);
      pthread_mutex_lock(&p->lock);
      if (c) {
        mark_well(p);
      } else {
        p->open--;
        mark_sick(p, why);
        pthread_cond_signal(&p->cond);
        if (err)
          snprintf(err, errlen, "PostgreSQL %s unreachable: %s", p->display,
                   why);
      }
      pthread_mutex_unlock(&p->lock);
      return c;
    }
    int64_t now = mono_ms();
    if (now >= end) {
      if (err)
        snprintf(err, errlen,
                 "PostgreSQL %s: all %zu pool connections busy (store.pool)",
                 p->display, p->size);
      pthread_mutex_unlock(&p->lock);
      return NULL;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t left = end - now;
    if (left > 100) left = 100; /* re-check the health now and then */
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (long)(left % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&p->cond, &p->lock, &ts);
  }
}

void cebpg_pool_discard(cebpg_pool *p, PGconn *c) {
  if (!c) return;
  pthread_mutex_lock(&p->lock);
  p->open--;
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->lock);
  PQfinish(c);
}

void cebpg_pool_put(cebpg_pool *p, PGconn *c) {
  if (!c) return;
  int keep = PQstatus(c) == CONNECTION_OK &&
             PQtransactionStatus(c) == PQTRANS_IDLE &&
             PQpipelineStatus(c) == PQ_PIPELINE_OFF;
  pthread_mutex_lock(&p->lock);
  if (keep && p->nidle < p->size) {
    p->idle[p->nidle++] = c;
    c = NULL;
  } else {
    p->open--;
  }
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->lock);
  PQfinish(c);
}
