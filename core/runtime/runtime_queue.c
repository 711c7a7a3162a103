/* The host's queue services (ABI 1.2: ceb_host.queue_*): a sink's queue
 * of events in the store (ceb_store_pull_*), named after the sink, and
 * ceb_host.lead. The store makes the queue durable and shared by every
 * bridge on it; this file adds the long poll: a fetch with nothing to
 * return waits for an append. Appends on this bridge wake it at once, and
 * so do another bridge's on a shared store (the store's pull listener,
 * cebr_queue_pulled: PostgreSQL's LISTEN/NOTIFY); since a notification is
 * a hint that a lost connection can lose, a long poll on a shared store
 * also reads again every QUEUE_POLL_MS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ceb/ceb.h>

#include "log/ceb_log.h"
#include "runtime/runtime_internal.h"

#define QUEUE_POLL_MS 1000

typedef struct append_arg {
  ceb_runtime *rt;
  void (*cb)(void *arg, int status);
  void *arg;
} append_arg;

static void appended(void *arg, int status) {
  append_arg *a = arg;
  ceb_runtime *rt = a->rt;
  if (status == CEB_OK) {
    pthread_mutex_lock(&rt->queue_lock);
    rt->queue_gen++;
    pthread_cond_broadcast(&rt->queue_cond);
    pthread_mutex_unlock(&rt->queue_lock);
  }
  a->cb(a->arg, status);
  free(a);
}

int cebr_queue_append(ceb_instance *inst, const char *key, const char *json,
                      size_t len, size_t max, void (*cb)(void *, int),
                      void *arg) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt || !key || !json || !cb) return CEB_EINVAL;
  if (inst->role != CEB_ROLE_SINK) return CEB_EFORBIDDEN;
  append_arg *a = malloc(sizeof *a);
  if (!a) return CEB_ENOMEM;
  *a = (append_arg){rt, cb, arg};
  int rc = ceb_store_pull_append(rt->store, inst->name, key, json, len, max,
                                 appended, a);
  if (rc != CEB_OK) free(a);
  return rc;
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Counts what visit saw, for the long poll. */
typedef struct fetch_arg {
  int (*visit)(void *, int64_t, const char *, size_t);
  void *arg;
  size_t seen;
} fetch_arg;

static int counted(void *arg, int64_t seq, const char *json, size_t len) {
  fetch_arg *f = arg;
  f->seen++;
  return f->visit(f->arg, seq, json, len);
}

int cebr_queue_fetch(ceb_instance *inst, int64_t after, size_t max,
                     int64_t wait_ms,
                     int (*visit)(void *, int64_t, const char *, size_t),
                     void *arg, int64_t *last) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt || !visit || !last || max == 0) return CEB_EINVAL;
  if (inst->role != CEB_ROLE_SINK) return CEB_EFORBIDDEN;
  rt_inst *ri = inst->runtime_data;
  int shared = ceb_store_shared(rt->store);
  int64_t end = mono_ms() + (wait_ms > 0 ? wait_ms : 0);
  for (;;) {
    /* the generation before the read: an append committed after it wakes
     * the wait below even when the read missed it */
    pthread_mutex_lock(&rt->queue_lock);
    uint64_t gen = rt->queue_gen;
    pthread_mutex_unlock(&rt->queue_lock);
    fetch_arg f = {visit, arg, 0};
    int rc = ceb_store_pull_fetch(rt->store, inst->name, after, max, counted,
                                  &f, last);
    if (rc != CEB_OK || f.seen > 0) return rc;
    int64_t left = end - mono_ms();
    if (left <= 0 || atomic_load(&ri->queue_stop)) return CEB_OK;
    if (shared && left > QUEUE_POLL_MS) left = QUEUE_POLL_MS;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += left / 1000;
    ts.tv_nsec += (left % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&rt->queue_lock);
    while (rt->queue_gen == gen && !atomic_load(&ri->queue_stop))
      if (pthread_cond_timedwait(&rt->queue_cond, &rt->queue_lock, &ts) != 0)
        break;
    pthread_mutex_unlock(&rt->queue_lock);
  }
}

int cebr_queue_commit(ceb_instance *inst, int64_t cursor, int64_t *committed) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt) return CEB_EINVAL;
  if (inst->role != CEB_ROLE_SINK) return CEB_EFORBIDDEN;
  int64_t c = 0;
  int rc = ceb_store_pull_commit(rt->store, inst->name, cursor, &c);
  if (rc == CEB_OK && committed) *committed = c;
  return rc;
}

int cebr_queue_stats(ceb_instance *inst, int64_t *depth, int64_t *last,
                     int64_t *committed) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt) return CEB_EINVAL;
  return ceb_store_pull_stats(rt->store, inst->name, depth, last, committed);
}

void cebr_queue_pulled(void *arg, const char *queue) {
  ceb_runtime *rt = arg;
  (void)queue; /* one condition for every queue: each poll rereads its own */
  pthread_mutex_lock(&rt->queue_lock);
  rt->queue_gen++;
  pthread_cond_broadcast(&rt->queue_cond);
  pthread_mutex_unlock(&rt->queue_lock);
}

void cebr_queue_wake(ceb_instance *inst) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt) return;
  rt_inst *ri = inst->runtime_data;
  atomic_store(&ri->queue_stop, 1);
  pthread_mutex_lock(&rt->queue_lock);
  pthread_cond_broadcast(&rt->queue_cond);
  pthread_mutex_unlock(&rt->queue_lock);
}

int cebr_lead(ceb_instance *inst, const char *task) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt || !task || !*task) return 0;
  char scoped[256];
  snprintf(scoped, sizeof scoped, "%s:%s", inst->name, task);
  int rc = ceb_store_try_lead(rt->store, scoped, cebr_now(rt));
  return rc == 1;
}
