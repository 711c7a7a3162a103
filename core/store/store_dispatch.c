/* ceb_store_* as the host calls them: each goes to the engine's op
 * (ceb_store_engine.h). What is the same for every engine lives here: the
 * engine's choice and the instance id at open, the blocking forms of the
 * async ops, the stats shorthands. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "store/ceb_store_engine.h"

int ceb_store_open(const ceb_store_opts *opts, ceb_store **out, char *err,
                   size_t errlen) {
  if (!opts || !out) {
    snprintf(err, errlen, "store: no options given");
    return CEB_EINVAL;
  }
  *out = NULL;
  const ceb_store_engine *eng = NULL;
  const char *location = NULL;
  int rc = ceb_store_select(opts->spec, &eng, &location, err, errlen);
  if (rc != CEB_OK) return rc;
  if (eng->struct_size < sizeof *eng ||
      eng->version != CEB_STORE_ENGINE_VERSION) {
    snprintf(err, errlen,
             "store: engine %s was built for another engine table "
             "(version %u, %zu bytes)",
             eng->name, eng->version, eng->struct_size);
    return CEB_EINTERNAL;
  }
  ceb_store *st = calloc(1, sizeof *st);
  if (!st) {
    snprintf(err, errlen, "store: out of memory");
    return CEB_ENOMEM;
  }
  st->eng = eng;
  pthread_mutex_init(&st->wake_lock, NULL);
  if (opts->instance && *opts->instance)
    snprintf(st->instance, sizeof st->instance, "%s", opts->instance);
  else
    ceb_store_default_instance(st->instance, sizeof st->instance);
  ceb_store_opts o = *opts;
  o.instance = st->instance;
  if (o.lease_ms <= 0) o.lease_ms = CEB_STORE_LEASE_DEFAULT_MS;
  rc = eng->open(&o, location, st, &st->impl, err, errlen);
  if (rc != CEB_OK) {
    pthread_mutex_destroy(&st->wake_lock);
    free(st);
    return rc;
  }
  *out = st;
  return CEB_OK;
}

void ceb_store_close(ceb_store *st) {
  if (!st) return;
  st->eng->close(st->impl);
  pthread_mutex_destroy(&st->wake_lock);
  free(st);
}

const char *ceb_store_engine_name(const ceb_store *st) {
  return st->eng->name;
}

const char *ceb_store_instance(const ceb_store *st) {
  return st->instance;
}

int ceb_store_writable(ceb_store *st, char *why, size_t whylen) {
  return st->eng->writable(st->impl, why, whylen);
}

void ceb_store_get_stats(ceb_store *st, ceb_store_stats *out) {
  memset(out, 0, sizeof *out);
  st->eng->stats(st->impl, out);
}

size_t ceb_store_queued(ceb_store *st) {
  ceb_store_stats s;
  ceb_store_get_stats(st, &s);
  return s.queued;
}

void ceb_store_commit_stats(ceb_store *st, uint64_t *batches, uint64_t *ops) {
  ceb_store_stats s;
  ceb_store_get_stats(st, &s);
  if (batches) *batches = s.batches;
  if (ops) *ops = s.ops;
}

uint64_t ceb_store_syncs(ceb_store *st) {
  ceb_store_stats s;
  ceb_store_get_stats(st, &s);
  return s.syncs;
}

void ceb_store_notify_stats(ceb_store *st, uint64_t *sent, uint64_t *skipped) {
  ceb_store_stats s;
  ceb_store_get_stats(st, &s);
  *sent = s.notify_sent;
  *skipped = s.notify_skipped;
}

void ceb_store_dedupe_stats(ceb_store *st, uint64_t *entries, uint64_t *bytes) {
  ceb_store_stats s;
  ceb_store_get_stats(st, &s);
  if (entries) *entries = s.dedupe_entries;
  if (bytes) *bytes = s.dedupe_bytes;
}

/* ---- the blocking forms of async ops ---- */

typedef struct waiter {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int finished, status;
} waiter;

static void waiter_init(waiter *w) {
  pthread_mutex_init(&w->lock, NULL);
  pthread_cond_init(&w->cond, NULL);
  w->finished = 0;
  w->status = CEB_OK;
}

static void waiter_done(void *arg, int status) {
  waiter *w = arg;
  pthread_mutex_lock(&w->lock);
  w->status = status;
  w->finished = 1;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

/* rc: what queuing the op returned; waits for done only when it was
 * queued. */
static int waiter_wait(waiter *w, int rc) {
  if (rc == CEB_OK) {
    pthread_mutex_lock(&w->lock);
    while (!w->finished)
      pthread_cond_wait(&w->cond, &w->lock);
    rc = w->status;
    pthread_mutex_unlock(&w->lock);
  }
  pthread_mutex_destroy(&w->lock);
  pthread_cond_destroy(&w->cond);
  return rc;
}

/* ---- journal ingest ---- */

void ceb_store_set_ingest_listener(ceb_store *st, ceb_store_ingest_listener fn,
                                   void *arg) {
  st->eng->set_ingest_listener(st->impl, fn, arg);
}

void ceb_store_set_claim_hook(ceb_store *st, const ceb_store_claim_hook *hook) {
  if (st->eng->set_claim_hook) st->eng->set_claim_hook(st->impl, hook);
}

void ceb_store_set_wake_listener(ceb_store *st, ceb_store_wake_fn fn,
                                 void *arg) {
  pthread_mutex_lock(&st->wake_lock);
  st->woken = fn;
  st->woken_arg = arg;
  pthread_mutex_unlock(&st->wake_lock);
}

void ceb_store_woken(ceb_store *st, const char *route) {
  if (!st) return;
  pthread_mutex_lock(&st->wake_lock);
  ceb_store_wake_fn fn = st->woken;
  void *arg = st->woken_arg;
  pthread_mutex_unlock(&st->wake_lock);
  /* outside the lock: fn takes the engine's lock, which is held around
   * store calls elsewhere */
  if (fn) fn(arg, route);
}

void ceb_store_set_pull_listener(ceb_store *st, ceb_store_wake_fn fn,
                                 void *arg) {
  pthread_mutex_lock(&st->wake_lock);
  st->pulled = fn;
  st->pulled_arg = arg;
  pthread_mutex_unlock(&st->wake_lock);
}

void ceb_store_pull_woken(ceb_store *st, const char *queue) {
  if (!st) return;
  pthread_mutex_lock(&st->wake_lock);
  ceb_store_wake_fn fn = st->pulled;
  void *arg = st->pulled_arg;
  pthread_mutex_unlock(&st->wake_lock);
  if (fn) fn(arg, queue); /* outside the lock, as ceb_store_woken */
}

int ceb_store_ingest_async(ceb_store *st, ceb_ingest_batch *batch,
                           ceb_store_done_fn done, void *arg) {
  if (!st || !batch) return CEB_EINVAL;
  return st->eng->ingest(st->impl, batch, 1, done, arg);
}

int ceb_store_ingest(ceb_store *st, ceb_ingest_batch *batch,
                     ceb_store_done_fn done) {
  return ceb_store_ingest_async(st, batch, done, batch);
}

int ceb_store_ingest_wait(ceb_store *st, ceb_ingest_batch *batch) {
  if (!st || !batch) return CEB_EINVAL;
  waiter w;
  waiter_init(&w);
  return waiter_wait(&w, st->eng->ingest(st->impl, batch, 0, waiter_done, &w));
}

/* ---- deliveries ---- */

int ceb_store_claim(ceb_store *st, const char *route, int64_t now, size_t max,
                    int64_t lease_ms, ceb_claim **out, size_t *count) {
  *out = NULL;
  *count = 0;
  if (!route || max == 0) return CEB_EINVAL;
  return st->eng->claim(st->impl, route, now, max, lease_ms, out, count);
}

int64_t ceb_store_next_due(ceb_store *st, const char *route, int64_t after) {
  return st->eng->next_due(st->impl, route, after);
}

int ceb_store_settle(ceb_store *st, ceb_attempt_result *r,
                     ceb_store_done_fn done, void *arg) {
  if (!st || !r || !r->route) return CEB_EINVAL;
  return st->eng->settle(st->impl, r, done, arg);
}

int ceb_store_settle_wait(ceb_store *st, ceb_attempt_result *r) {
  if (!st || !r || !r->route) return CEB_EINVAL;
  waiter w;
  waiter_init(&w);
  return waiter_wait(&w, st->eng->settle(st->impl, r, waiter_done, &w));
}

int ceb_store_recover(ceb_store *st, int64_t now) {
  return st->eng->recover(st->impl, now);
}

int64_t ceb_store_count_open_key(ceb_store *st, const char *route,
                                 const char *key, int64_t cap) {
  if (!st || !route || !key || cap <= 0) return CEB_EINVAL;
  if (!st->eng->count_open_key) return CEB_EUNSUPPORTED;
  return st->eng->count_open_key(st->impl, route, key, cap);
}

json_t *ceb_store_key_stats(ceb_store *st, const char *route, size_t limit) {
  if (!st || !route || !limit || !st->eng->key_stats) return NULL;
  return st->eng->key_stats(st->impl, route, limit);
}

char *ceb_store_callback_url(ceb_store *st, int64_t seq, int *status) {
  int dummy;
  if (!status) status = &dummy;
  if (!st || seq <= 0) {
    *status = CEB_EINVAL;
    return NULL;
  }
  if (!st->eng->callback_url) {
    *status = CEB_EUNSUPPORTED;
    return NULL;
  }
  return st->eng->callback_url(st->impl, seq, status);
}

int64_t ceb_store_count_open(ceb_store *st, const char *route) {
  return st->eng->count_open(st->impl, route);
}

int64_t ceb_store_oldest_open(ceb_store *st, const char *route) {
  return st->eng->oldest_open(st->impl, route);
}

json_t *ceb_store_event_status(ceb_store *st, const char *id,
                               const char *source) {
  return ceb_store_event_status_max(st, id, source, 0);
}

json_t *ceb_store_event_status_max(ceb_store *st, const char *id,
                                   const char *source, size_t max) {
  if (!id) return NULL;
  return st->eng->event_status(st->impl, id, source, max);
}

/* ---- DLQ ---- */

json_t *ceb_store_dlq_list(ceb_store *st, const ceb_dlq_filter *f) {
  return st->eng->dlq_list(st->impl, f);
}

json_t *ceb_store_dlq_of_seq(ceb_store *st, int64_t seq) {
  return ceb_store_dlq_of_seq_max(st, seq, 0);
}

json_t *ceb_store_dlq_of_seq_max(ceb_store *st, int64_t seq, size_t max) {
  return st->eng->dlq_of_seq(st->impl, seq, max);
}

json_t *ceb_store_attempts_of(ceb_store *st, int64_t seq) {
  return ceb_store_attempts_of_max(st, seq, 0);
}

json_t *ceb_store_attempts_of_max(ceb_store *st, int64_t seq, size_t max) {
  return st->eng->attempts_of ? st->eng->attempts_of(st->impl, seq, max) : NULL;
}

json_t *ceb_store_dlq_show(ceb_store *st, int64_t id) {
  return st->eng->dlq_show(st->impl, id);
}

int ceb_store_dlq_replay(ceb_store *st, const ceb_dlq_filter *f, int64_t now,
                         int dry_run, size_t *count, json_t *replayed) {
  return st->eng->dlq_replay(st->impl, f, now, dry_run, count, replayed);
}

int ceb_store_dlq_purge(ceb_store *st, const ceb_dlq_filter *f, int dry_run,
                        size_t *count) {
  return st->eng->dlq_purge(st->impl, f, dry_run, count);
}

int ceb_store_dlq_forwarded_async(ceb_store *st, int64_t id, int64_t now,
                                  ceb_store_done_fn done, void *arg) {
  return st->eng->dlq_forwarded(st->impl, id, now, done, arg);
}

int ceb_store_dlq_forwarded(ceb_store *st, int64_t id, int64_t now) {
  waiter w;
  waiter_init(&w);
  return waiter_wait(
      &w, st->eng->dlq_forwarded(st->impl, id, now, waiter_done, &w));
}

int ceb_store_dlq_unforwarded(ceb_store *st, const char *route, int64_t after,
                              size_t max, int64_t *ids, size_t *n) {
  return st->eng->dlq_unforwarded(st->impl, route, after, max, ids, n);
}

char *ceb_store_dlq_forward_event(ceb_store *st, int64_t id, int *status) {
  return st->eng->dlq_forward_event(st->impl, id, status);
}

/* ---- idempotency ---- */

int ceb_store_idem_begin(ceb_store *st, const char *client, const char *key,
                         const char *fingerprint, int64_t now,
                         ceb_idem_result *res) {
  return st->eng->idem_begin(st->impl, client, key, fingerprint, now, res);
}

int ceb_store_idem_finish(ceb_store *st, const char *client, const char *key,
                          int http_status, const char *content_type,
                          const char *body, size_t body_len, int64_t now,
                          int64_t ttl_ms) {
  return st->eng->idem_finish(st->impl, client, key, http_status, content_type,
                              body, body_len, now, ttl_ms);
}

int ceb_store_idem_abort(ceb_store *st, const char *client, const char *key) {
  return st->eng->idem_abort(st->impl, client, key);
}

int ceb_store_idem_reset_inflight(ceb_store *st) {
  return st->eng->idem_reset_inflight(st->impl);
}

/* ---- contract register ---- */

int ceb_store_contract_put(ceb_store *st, const char *name, const char *version,
                           const char *document, size_t len,
                           const char *provenance, int64_t now) {
  return st->eng->contract_put(st->impl, name, version, document, len,
                               provenance, now);
}

json_t *ceb_store_contract_list(ceb_store *st, const char *name) {
  return st->eng->contract_list(st->impl, name);
}

char *ceb_store_contract_get(ceb_store *st, const char *name,
                             const char *version, size_t *len) {
  return st->eng->contract_get(st->impl, name, version, len);
}

/* ---- sweeping ---- */

int ceb_store_sweep(ceb_store *st, int64_t now, int64_t retention_ms,
                    size_t chunk) {
  return st->eng->sweep(st->impl, now, retention_ms, chunk);
}

/* ---- pull queues ---- */

int ceb_store_pull_append(ceb_store *st, const char *queue, const char *key,
                          const char *json, size_t len, size_t max,
                          ceb_store_done_fn done, void *arg) {
  return st->eng->pull_append(st->impl, queue, key, json, len, max, done, arg);
}

int ceb_store_pull_fetch(ceb_store *st, const char *queue, int64_t after,
                         size_t max, ceb_store_pull_visit visit, void *arg,
                         int64_t *last) {
  return st->eng->pull_fetch(st->impl, queue, after, max, visit, arg, last);
}

int ceb_store_pull_commit(ceb_store *st, const char *queue, int64_t cursor,
                          int64_t *committed) {
  return st->eng->pull_commit(st->impl, queue, cursor, committed);
}

int ceb_store_pull_stats(ceb_store *st, const char *queue, int64_t *depth,
                         int64_t *last, int64_t *committed) {
  return st->eng->pull_stats(st->impl, queue, depth, last, committed);
}

/* ---- instances and leaders ---- */

int ceb_store_shared(ceb_store *st) {
  return st->eng->shared(st->impl);
}

int ceb_store_sink_state_get(ceb_store *st, const char *sink,
                             ceb_sink_state *out) {
  if (!st || !sink || !out) return CEB_EINVAL;
  /* an engine built before the op (NULL) keeps no life cycle: every sink
   * reads as enabled, and the engine keeps the state in memory */
  if (!st->eng->sink_state_get) return CEB_EUNSUPPORTED;
  return st->eng->sink_state_get(st->impl, sink, out);
}

int ceb_store_sink_state_put(ceb_store *st, const char *sink,
                             const ceb_sink_state *state) {
  if (!st || !sink || !*sink || !state) return CEB_EINVAL;
  if (!st->eng->sink_state_put) return CEB_EUNSUPPORTED;
  return st->eng->sink_state_put(st->impl, sink, state);
}

json_t *ceb_store_sink_states(ceb_store *st) {
  return st && st->eng->sink_states ? st->eng->sink_states(st->impl) : NULL;
}

int ceb_store_replay_range(ceb_store *st, const ceb_replay_filter *f,
                           int64_t now, int dry_run, size_t *count,
                           int *exists) {
  if (count) *count = 0;
  if (exists) *exists = 0;
  if (!st || !f || !f->route || !*f->route || f->since >= f->until)
    return CEB_EINVAL;
  if (!st->eng->replay_range) return CEB_EUNSUPPORTED;
  return st->eng->replay_range(st->impl, f, now, dry_run, count, exists);
}

int ceb_store_try_lead(ceb_store *st, const char *task, int64_t now) {
  if (!st || !task || !*task) return CEB_EINVAL;
  return st->eng->try_lead(st->impl, task, now);
}

int ceb_store_heartbeat(ceb_store *st, const ceb_store_member *m, int64_t now) {
  if (!st) return CEB_EINVAL;
  return st->eng->heartbeat(st->impl, m, now);
}

int ceb_store_leave(ceb_store *st) {
  if (!st) return CEB_EINVAL;
  return st->eng->leave(st->impl);
}

json_t *ceb_store_cluster(ceb_store *st, int64_t now) {
  if (!st) return NULL;
  return st->eng->cluster(st->impl, now);
}
