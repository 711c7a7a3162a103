/* The fake host's queue services (ceb_fake_host_queue): ceb_host.queue_*
 * and lead on a real store, so a plugin test exercises the store's queue
 * (durability across a restart included) without the runtime. The long
 * poll is the runtime's (core/runtime/runtime_queue.c) without the shared
 * store's polling: appends through this fake wake it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ceb_fake_host.h"
#include "store/ceb_store.h"

static ceb_fake_host *fake_of(ceb_instance *inst) {
  return (ceb_fake_host *)inst->runtime_data;
}

typedef struct fq_append {
  ceb_fake_host *f;
  void (*cb)(void *, int);
  void *arg;
} fq_append;

static void fq_appended(void *arg, int status) {
  fq_append *a = arg;
  if (status == CEB_OK) {
    pthread_mutex_lock(&a->f->lock);
    a->f->queue_gen++;
    pthread_cond_broadcast(&a->f->cond);
    pthread_mutex_unlock(&a->f->lock);
  }
  a->cb(a->arg, status);
  free(a);
}

static int fq_append_fn(ceb_instance *inst, const char *key, const char *json,
                        size_t len, size_t max, void (*cb)(void *, int),
                        void *arg) {
  ceb_fake_host *f = fake_of(inst);
  fq_append *a = malloc(sizeof *a);
  if (!a) return CEB_ENOMEM;
  *a = (fq_append){f, cb, arg};
  int rc = ceb_store_pull_append(f->store, inst->name, key, json, len, max,
                                 fq_appended, a);
  if (rc != CEB_OK) free(a);
  return rc;
}

typedef struct fq_fetch {
  int (*visit)(void *, int64_t, const char *, size_t);
  void *arg;
  size_t seen;
} fq_fetch;

static int fq_counted(void *arg, int64_t seq, const char *json, size_t len) {
  fq_fetch *q = arg;
  q->seen++;
  return q->visit(q->arg, seq, json, len);
}

static int fq_fetch_fn(ceb_instance *inst, int64_t after, size_t max,
                       int64_t wait_ms,
                       int (*visit)(void *, int64_t, const char *, size_t),
                       void *arg, int64_t *last) {
  ceb_fake_host *f = fake_of(inst);
  struct timespec end;
  clock_gettime(CLOCK_REALTIME, &end);
  int64_t w = wait_ms > 0 ? wait_ms : 0;
  end.tv_sec += w / 1000;
  end.tv_nsec += (w % 1000) * 1000000L;
  if (end.tv_nsec >= 1000000000L) {
    end.tv_sec++;
    end.tv_nsec -= 1000000000L;
  }
  for (;;) {
    pthread_mutex_lock(&f->lock);
    uint64_t gen = f->queue_gen;
    pthread_mutex_unlock(&f->lock);
    fq_fetch q = {visit, arg, 0};
    int rc = ceb_store_pull_fetch(f->store, inst->name, after, max, fq_counted,
                                  &q, last);
    if (rc != CEB_OK || q.seen || w == 0) return rc;
    int timed_out = 0;
    pthread_mutex_lock(&f->lock);
    while (f->queue_gen == gen && !f->queue_stop && !timed_out)
      timed_out = pthread_cond_timedwait(&f->cond, &f->lock, &end) == ETIMEDOUT;
    int stop = f->queue_stop;
    pthread_mutex_unlock(&f->lock);
    if (timed_out || stop) return CEB_OK;
  }
}

static int fq_commit_fn(ceb_instance *inst, int64_t cursor,
                        int64_t *committed) {
  return ceb_store_pull_commit(fake_of(inst)->store, inst->name, cursor,
                               committed);
}

static int fq_stats_fn(ceb_instance *inst, int64_t *depth, int64_t *last,
                       int64_t *committed) {
  return ceb_store_pull_stats(fake_of(inst)->store, inst->name, depth, last,
                              committed);
}

static void fq_wake_fn(ceb_instance *inst) {
  ceb_fake_host *f = fake_of(inst);
  pthread_mutex_lock(&f->lock);
  f->queue_stop = 1;
  pthread_cond_broadcast(&f->cond);
  pthread_mutex_unlock(&f->lock);
}

static int fq_lead_fn(ceb_instance *inst, const char *task) {
  return ceb_store_try_lead(fake_of(inst)->store, task, 0) == 1;
}

int ceb_fake_host_queue(ceb_fake_host *f, const char *store_path) {
  ceb_store_opts o = {.spec = store_path,
                      .synchronous_full = 1,
                      .group_max = 64,
                      .queue_max = 1024,
                      .check = CEB_STORE_CHECK_OFF};
  char err[512] = "";
  int rc = ceb_store_open(&o, &f->store, err, sizeof err);
  if (rc != CEB_OK) {
    fprintf(stderr, "fake host: store %s: %s\n", store_path, err);
    return rc;
  }
  f->host.queue_append = fq_append_fn;
  f->host.queue_fetch = fq_fetch_fn;
  f->host.queue_commit = fq_commit_fn;
  f->host.queue_stats = fq_stats_fn;
  f->host.queue_wake = fq_wake_fn;
  f->host.lead = fq_lead_fn;
  return CEB_OK;
}
