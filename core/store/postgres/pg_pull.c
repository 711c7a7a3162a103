/* Pull queues on PostgreSQL (ceb_store.h "pull queues"; pg_cluster.h).
 *
 * Appends go to a writer thread that runs everything queued meanwhile in
 * one transaction on a pool connection, so many deliveries to pull sinks
 * share a commit (durable with synchronous_commit on) before their done.
 * Per queue it locks the queue's row (SELECT … FOR UPDATE): appends of
 * several bridges to one queue take turns, so sequences stay gapless and
 * increasing and the fill limit holds across bridges. Reads and commits run
 * on the caller's thread on a pool connection. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_cluster.h"
#include "store/postgres/pg_internal.h"

typedef struct pull_op {
  struct pull_op *next;
  char *queue, *key, *json;
  size_t max;
  int64_t now;
  ceb_store_done_fn done;
  void *arg;
  int status;
} pull_op;

struct cebpg_pull {
  ceb_store_impl *s;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pull_op *head, *tail;
  int stop, started;
  pthread_t thread;
};

static void op_free(pull_op *op) {
  free(op->queue);
  free(op->key);
  free(op->json);
  free(op);
}

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The appends of one queue (ops[0..n) share it), inside the transaction. */
static int append_queue(ceb_store_impl *s, PGconn *c, pull_op **ops, size_t n) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, ops[0]->queue);
  PGresult *r = cebpg_query_on(
      s, c, "pull append",
      "INSERT INTO pull_queue (name, last_seq, committed, depth) VALUES"
      " ($1, 0, 0, 0) ON CONFLICT (name) DO NOTHING",
      &p);
  if (!r) return CEB_EIO;
  PQclear(r);
  r = cebpg_query_on(s, c, "pull append",
                     "SELECT last_seq, depth FROM pull_queue WHERE name = $1"
                     " FOR UPDATE",
                     &p);
  if (!r || PQntuples(r) != 1) {
    PQclear(r);
    return CEB_EIO;
  }
  int64_t last = cebpg_int(r, 0, 0), depth = cebpg_int(r, 0, 1);
  PQclear(r);
  int64_t first = last;
  for (size_t i = 0; i < n; i++) {
    pull_op *op = ops[i];
    cebpg_params q = {.n = 0};
    cebpg_p_text(&q, op->queue);
    cebpg_p_text(&q, op->key);
    r = cebpg_query_on(s, c, "pull append",
                       "SELECT 1 FROM pull_event WHERE queue = $1 AND"
                       " idem = $2",
                       &q);
    if (!r) return CEB_EIO;
    int held = PQntuples(r) > 0;
    PQclear(r);
    if (held) { /* a retried delivery: durable already */
      op->status = CEB_OK;
      continue;
    }
    if (depth >= 0 && (uint64_t)depth >= (uint64_t)op->max) {
      op->status = CEB_EBUSY;
      continue;
    }
    cebpg_p_int(&q, last + 1);
    cebpg_p_text(&q, op->json);
    cebpg_p_int(&q, op->now);
    r = cebpg_query_on(s, c, "pull append",
                       "INSERT INTO pull_event (queue, idem, seq, event,"
                       " enqueued_at) VALUES ($1, $2, $3, $4, $5)",
                       &q);
    if (!r) return CEB_EIO;
    PQclear(r);
    last++;
    depth++;
    op->status = CEB_OK;
  }
  if (last == first) return CEB_OK;
  cebpg_params u = {.n = 0};
  cebpg_p_text(&u, ops[0]->queue);
  cebpg_p_int(&u, last);
  cebpg_p_int(&u, last - first);
  r = cebpg_query_on(s, c, "pull append",
                     "UPDATE pull_queue SET last_seq = $2, depth = depth + $3"
                     " WHERE name = $1",
                     &u);
  if (!r) return CEB_EIO;
  PQclear(r);
  return CEB_OK;
}

/* One group, ops sorted by queue name (the writer does: two bridges
 * locking the same queues never wait for each other in a cycle), in
 * arrival order within a queue. Every op gets its status (CEB_EIO for all
 * when the transaction did not commit). */
static void run_group(ceb_store_impl *s, pull_op **ops, size_t n) {
  char err[400];
  PGconn *c = cebpg_pool_get(s->pool, CEBPG_POOL_WAIT_MS, err, sizeof err);
  int rc = c ? CEB_OK : CEB_EIO;
  PGresult *r = c ? cebpg_query_on(s, c, "pull append", "BEGIN", NULL) : NULL;
  if (c && !r) rc = CEB_EIO;
  PQclear(r);
  for (size_t i = 0; rc == CEB_OK && i < n;) {
    size_t j = i + 1;
    while (j < n && strcmp(ops[j]->queue, ops[i]->queue) == 0)
      j++;
    rc = append_queue(s, c, &ops[i], j - i);
    i = j;
  }
  if (rc == CEB_OK) {
    r = cebpg_query_on(s, c, "pull append", "COMMIT", NULL);
    if (!r) rc = CEB_EIO;
    PQclear(r);
  } else if (c) {
    PQclear(PQexec(c, "ROLLBACK"));
  }
  if (c) cebpg_pool_put(s->pool, c);
  for (size_t i = 0; i < n; i++)
    if (rc != CEB_OK) ops[i]->status = rc;
  /* the long polls of the other bridges read again at once (ops are
   * sorted by queue: one notification per queue) */
  const char *told = NULL;
  for (size_t i = 0; rc == CEB_OK && i < n; i++)
    if (ops[i]->status == CEB_OK && (!told || strcmp(told, ops[i]->queue))) {
      cebpg_notify_pull(s->notify, ops[i]->queue);
      told = ops[i]->queue;
    }
}

static void *writer_main(void *arg) {
  cebpg_pull *p = arg;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->head && !p->stop)
      pthread_cond_wait(&p->cond, &p->lock);
    if (!p->head) break;
    pull_op *list = p->head;
    p->head = p->tail = NULL;
    pthread_mutex_unlock(&p->lock);
    size_t n = 0;
    for (pull_op *o = list; o; o = o->next)
      n++;
    pull_op **ops = malloc(n * sizeof *ops);
    size_t k = 0;
    for (pull_op *o = list; o; o = o->next)
      if (ops) ops[k++] = o;
    if (ops) {
      /* by queue name, stable (arrival order within a queue): an
       * insertion sort, the groups are small */
      for (size_t i = 1; i < n; i++)
        for (size_t j = i;
             j > 0 && strcmp(ops[j - 1]->queue, ops[j]->queue) > 0; j--) {
          pull_op *t = ops[j];
          ops[j] = ops[j - 1];
          ops[j - 1] = t;
        }
      run_group(p->s, ops, n);
    }
    for (pull_op *o = list, *nx; o; o = nx) {
      nx = o->next;
      o->done(o->arg, ops ? o->status : CEB_ENOMEM);
      op_free(o);
    }
    free(ops);
    pthread_mutex_lock(&p->lock);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

int cebpg_pull_start(ceb_store_impl *s, cebpg_pull **out, char *err,
                     size_t errlen) {
  *out = NULL;
  cebpg_pull *p = calloc(1, sizeof *p);
  if (!p) {
    snprintf(err, errlen, "store: out of memory");
    return CEB_ENOMEM;
  }
  p->s = s;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  if (pthread_create(&p->thread, NULL, writer_main, p) != 0) {
    snprintf(err, errlen, "store: cannot start the pull queue writer");
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->cond);
    free(p);
    return CEB_EINTERNAL;
  }
  pthread_setname_np(p->thread, "store-pull");
  p->started = 1;
  *out = p;
  return CEB_OK;
}

void cebpg_pull_stop(cebpg_pull *p) {
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  p->stop = 1;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  if (p->started) pthread_join(p->thread, NULL);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->cond);
  free(p);
}

int cebpg_pull_append(ceb_store_impl *s, const char *queue, const char *key,
                      const char *json, size_t len, size_t max,
                      ceb_store_done_fn done, void *arg) {
  cebpg_pull *p = s->pull;
  if (!p || !queue || !key || !json || !done || max < 1) return CEB_EINVAL;
  pull_op *op = calloc(1, sizeof *op);
  if (!op) return CEB_ENOMEM;
  op->queue = strdup(queue);
  op->key = strdup(key);
  op->json = malloc(len + 1);
  if (!op->queue || !op->key || !op->json) {
    op_free(op);
    return CEB_ENOMEM;
  }
  memcpy(op->json, json, len);
  op->json[len] = '\0';
  op->max = max;
  op->now = wall_ms();
  op->done = done;
  op->arg = arg;
  pthread_mutex_lock(&p->lock);
  if (p->stop) {
    pthread_mutex_unlock(&p->lock);
    op_free(op);
    return CEB_ESHUTDOWN;
  }
  if (p->tail)
    p->tail->next = op;
  else
    p->head = op;
  p->tail = op;
  pthread_cond_signal(&p->cond);
  pthread_mutex_unlock(&p->lock);
  return CEB_OK;
}

int cebpg_pull_fetch(ceb_store_impl *s, const char *queue, int64_t after,
                     size_t max, ceb_store_pull_visit visit, void *arg,
                     int64_t *last) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, queue);
  cebpg_p_int(&p, after);
  cebpg_p_int(&p, (int64_t)max);
  /* one statement, one snapshot: the cursor and the rows agree */
  PGresult *r = cebpg_query(
      s, "pull fetch",
      "SELECT q.committed, e.seq, e.event FROM (SELECT COALESCE(max("
      "committed), 0) AS committed FROM pull_queue WHERE name = $1) q"
      " LEFT JOIN LATERAL (SELECT seq, event FROM pull_event WHERE queue = $1"
      " AND seq > GREATEST($2::bigint, q.committed) ORDER BY seq LIMIT $3) e"
      " ON true ORDER BY e.seq",
      &p);
  if (!r) return CEB_EIO;
  int64_t committed = PQntuples(r) ? cebpg_int(r, 0, 0) : 0;
  *last = after > committed ? after : committed;
  for (int i = 0; i < PQntuples(r); i++) {
    if (PQgetisnull(r, i, 1)) continue; /* the queue row, no event */
    *last = cebpg_int(r, i, 1);
    if (visit(arg, *last, PQgetvalue(r, i, 2), (size_t)PQgetlength(r, i, 2)))
      break;
  }
  PQclear(r);
  return CEB_OK;
}

int cebpg_pull_commit(ceb_store_impl *s, const char *queue, int64_t cursor,
                      int64_t *committed) {
  if (cursor < 0) return CEB_EINVAL;
  char err[400];
  PGconn *c = cebpg_pool_get(s->pool, CEBPG_POOL_WAIT_MS, err, sizeof err);
  if (!c) return CEB_EIO;
  int rc = CEB_OK;
  PGresult *r = cebpg_query_on(s, c, "pull commit", "BEGIN", NULL);
  if (!r) rc = CEB_EIO;
  PQclear(r);
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, queue);
  int64_t last = 0, was = 0;
  if (rc == CEB_OK) {
    r = cebpg_query_on(s, c, "pull commit",
                       "SELECT last_seq, committed FROM pull_queue WHERE"
                       " name = $1 FOR UPDATE",
                       &p);
    if (!r) rc = CEB_EIO;
    if (r && PQntuples(r) == 1) {
      last = cebpg_int(r, 0, 0);
      was = cebpg_int(r, 0, 1);
    }
    PQclear(r);
  }
  if (rc == CEB_OK && cursor > last) rc = CEB_EINVAL;
  int64_t now_committed = was;
  if (rc == CEB_OK && cursor > was) {
    cebpg_p_int(&p, cursor);
    r = cebpg_query_on(s, c, "pull commit",
                       "WITH d AS (DELETE FROM pull_event WHERE queue = $1"
                       " AND seq <= $2 RETURNING 1) UPDATE pull_queue SET"
                       " committed = $2, depth = GREATEST(depth - (SELECT"
                       " count(*) FROM d), 0) WHERE name = $1",
                       &p);
    if (!r) rc = CEB_EIO;
    PQclear(r);
    now_committed = cursor;
  }
  if (rc == CEB_OK) {
    r = cebpg_query_on(s, c, "pull commit", "COMMIT", NULL);
    if (!r) rc = CEB_EIO;
    PQclear(r);
  } else {
    PQclear(PQexec(c, "ROLLBACK"));
  }
  cebpg_pool_put(s->pool, c);
  if (rc == CEB_OK && committed) *committed = now_committed;
  return rc;
}

int cebpg_pull_stats(ceb_store_impl *s, const char *queue, int64_t *depth,
                     int64_t *last, int64_t *committed) {
  cebpg_params p = {.n = 0};
  cebpg_p_text(&p, queue);
  PGresult *r = cebpg_query(s, "pull stats",
                            "SELECT depth, last_seq, committed FROM"
                            " pull_queue WHERE name = $1",
                            &p);
  if (!r) return CEB_EIO;
  int have = PQntuples(r) == 1;
  if (depth) *depth = have ? cebpg_int(r, 0, 0) : 0;
  if (last) *last = have ? cebpg_int(r, 0, 1) : 0;
  if (committed) *committed = have ? cebpg_int(r, 0, 2) : 0;
  PQclear(r);
  return CEB_OK;
}
