/* ceb_host.submit_mapped_async (ABI 1.4): the ingress mapping without
 * holding the caller's thread.
 *
 * Why: submit_mapped blocks its caller for a worker round trip. The HTTP
 * intermediary calls it from its listener threads (two by default), so at
 * most two requests were ever mapped at once and each paid a round trip
 * of its own: a wake-up of the worker, of the listener, two socket reads
 * and writes per request (bench/mapping: ingress mapping -40 % of the
 * HTTP -> Kafka rate, the worker's CPU per event twice a batched one's).
 * Here the caller only queues the document (a copy) and returns; the
 * runtime's mapping threads take everything queued at once (up to
 * BATCH_MAX documents, from every connection and every source) to the pool
 * as one batch, then continue with each document exactly as submit_mapped
 * does (cebr_mapped_submit: decode, validate, submit, one unit per
 * document), and a refusal goes to the document's callback with its
 * reason instead of a return value.
 *
 * Threads: as many as the pool has workers (at most THREADS_MAX), made at
 * the first call, so that a bridge without mapped sources starts none.
 * The queue is bounded by bytes (QUEUE_BYTES_MAX: CEB_EBUSY beyond, as
 * submit's backpressure): a burst cannot grow it without bound. */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "log/ceb_log.h"
#include "runtime/runtime_internal.h"

/* Documents one thread sends in one round trip (the pool's own combining
 * limit is 256 items). */
#define BATCH_MAX 128
#define THREADS_MAX 4
/* Documents queued behind a batch in flight before a second thread sends
 * them too (a mapping worker per thread): below it they wait for the
 * batch in flight and go with the next one. */
#define HELP_AT 32
/* Bytes of documents queued and not yet taken by a thread. */
#define QUEUE_BYTES_MAX ((size_t)64 * 1024 * 1024)

/* One queued document with copies of the caller's inputs, in one block. */
typedef struct amap_item {
  struct amap_item *next;
  ceb_instance *inst;
  uint32_t program;
  ceb_submit_cb cb;
  void *cb_arg;
  const char *client, *traceparent, *callback; /* in text[], or NULL */
  size_t len;                                  /* of the document */
  size_t bytes;                                /* the whole block */
  char text[];                                 /* the document, then strings */
} amap_item;

struct cebr_amap {
  ceb_runtime *rt;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  amap_item *head, *tail; /* FIFO, under lock */
  size_t bytes;           /* queued, under lock */
  size_t queued;          /* documents queued, under lock */
  int inflight;           /* threads sending a batch, under lock */
  int stop;               /* under lock */
  pthread_t threads[THREADS_MAX];
  int nthreads;
};

/* A refusal through the document's callback. */
static void refuse(amap_item *it, int status, int key_limited,
                   const char *reason, const ceb_violations *v, size_t failed) {
  ceb_submit_result res = {.struct_size = sizeof res,
                           .status = status,
                           .refused = 1,
                           .key_limited = key_limited,
                           .reason = reason,
                           .violations = v,
                           .failed_index = failed};
  it->cb(it->cb_arg, &res);
}

/* The rest of submit_mapped for one document whose program ran. */
static void finish(ceb_runtime *rt, amap_item *it, ceb_map_req *r,
                   ceb_violations *v) {
  size_t failed = 0;
  int key_limited = 0;
  ceb_submit_opts o = {.struct_size = sizeof o,
                       .client = it->client,
                       .traceparent = it->traceparent,
                       .violations = v,
                       .failed_index = &failed,
                       .key_limited = &key_limited,
                       .callback = it->callback};
  char err[512];
  int rc = cebr_mapped_submit(rt, it->inst, r, &o, it->cb, it->cb_arg, err,
                              sizeof err);
  if (rc != CEB_OK)
    refuse(it, rc, key_limited, err,
           rc == CEB_EVALIDATION || rc == CEB_ETOOLARGE ? v : NULL, failed);
}

/* Maps items[0..n) in one round trip and finishes each. */
static void run_batch(cebr_amap *q, amap_item **items, size_t n,
                      ceb_violations *v) {
  ceb_map_req reqs[BATCH_MAX];
  for (size_t i = 0; i < n; i++)
    reqs[i] = (ceb_map_req){.program = items[i]->program,
                            .flags = CEB_MAP_EXPAND,
                            .input = items[i]->text,
                            .input_len = items[i]->len};
  int rc = ceb_mapper_run(q->rt->mapper, reqs, n);
  for (size_t i = 0; i < n; i++) {
    /* the pool refuses a whole batch only for an item it cannot take (a
     * document over the protocol's limit): each alone then, so that the
     * others are not that one's victims */
    if (rc != CEB_OK && ceb_mapper_run(q->rt->mapper, &reqs[i], 1) != CEB_OK)
      refuse(items[i], CEB_EINVAL, 0, "mapping: the document is too large",
             NULL, 0);
    else
      finish(q->rt, items[i], &reqs[i], v);
    free(items[i]);
  }
}

static void *amap_main(void *arg) {
  cebr_amap *q = arg;
  /* made from a source's thread: its own name in top and per-thread CPU */
  pthread_setname_np(pthread_self(), "ceb-map");
  /* one per thread: ~9 KiB, filled by the submits of a batch in turn */
  ceb_violations *v = malloc(sizeof *v);
  amap_item *items[BATCH_MAX];
  pthread_mutex_lock(&q->lock);
  for (;;) {
    /* One batch in flight at a time while the queue is short: what
     * arrives meanwhile goes with the next one, so that a round trip
     * carries many documents (its cost is mostly per trip, not per
     * document). A second thread helps once HELP_AT wait. */
    while (!q->stop && !(q->head && (q->inflight == 0 || q->queued >= HELP_AT)))
      pthread_cond_wait(&q->cond, &q->lock);
    if (!q->head) break;
    size_t n = 0;
    while (q->head && n < BATCH_MAX) {
      amap_item *it = q->head;
      q->head = it->next;
      q->bytes -= it->bytes;
      q->queued--;
      items[n++] = it;
    }
    if (!q->head) q->tail = NULL;
    int stopping = q->stop;
    q->inflight++;
    pthread_mutex_unlock(&q->lock);
    if (stopping || !v) {
      /* closing (every source is gone), or no memory for a batch */
      for (size_t i = 0; i < n; i++) {
        refuse(items[i], v ? CEB_ESHUTDOWN : CEB_ENOMEM, 0,
               v ? "the bridge is shutting down" : "out of memory", NULL, 0);
        free(items[i]);
      }
    } else {
      run_batch(q, items, n, v);
    }
    pthread_mutex_lock(&q->lock);
    q->inflight--;
    if (q->head) pthread_cond_signal(&q->cond); /* the next batch */
  }
  pthread_mutex_unlock(&q->lock);
  free(v);
  return NULL;
}

void cebr_amap_free(cebr_amap *q) {
  if (!q) return;
  pthread_mutex_lock(&q->lock);
  q->stop = 1;
  pthread_cond_broadcast(&q->cond);
  pthread_mutex_unlock(&q->lock);
  for (int i = 0; i < q->nthreads; i++)
    pthread_join(q->threads[i], NULL);
  pthread_mutex_destroy(&q->lock);
  pthread_cond_destroy(&q->cond);
  free(q);
}

/* The runtime's queue, made with its threads at the first call. */
static cebr_amap *amap_of(ceb_runtime *rt) {
  cebr_amap *q = atomic_load(&rt->amap);
  if (q) return q;
  pthread_mutex_lock(&rt->amap_lock);
  q = atomic_load(&rt->amap);
  if (!q && (q = calloc(1, sizeof *q))) {
    q->rt = rt;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->cond, NULL);
    int want = ceb_mapping_opts(ceb_conf_bridge_cfg(rt->conf)).workers;
    want = want < 1 ? 1 : want > THREADS_MAX ? THREADS_MAX : want;
    for (int i = 0; i < want; i++) {
      if (pthread_create(&q->threads[q->nthreads], NULL, amap_main, q) != 0)
        break;
      q->nthreads++;
    }
    if (q->nthreads == 0) {
      ceb_log_error("runtime: no thread for the ingress mappings");
      cebr_amap_free(q);
      q = NULL;
    } else {
      atomic_store(&rt->amap, q);
    }
  }
  pthread_mutex_unlock(&rt->amap_lock);
  return q;
}

static size_t opt_len(const char *s) {
  return s ? strlen(s) + 1 : 0;
}

static const char *opt_copy(char **at, const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  memcpy(*at, s, n);
  const char *copy = *at;
  *at += n;
  return copy;
}

int cebr_submit_mapped_async(ceb_instance *inst, const char *doc, size_t len,
                             const ceb_submit_opts *opts, ceb_submit_cb cb,
                             void *cb_arg) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt || !doc || !cb || inst->role != CEB_ROLE_SOURCE) return CEB_EINVAL;
  rt_inst *d = inst->runtime_data;
  if (!d || d->map_prog < 0 || !rt->mapper) return CEB_EINVAL;
  if (!ceb_runtime_ready(rt)) return cebr_mapped_refusal(rt, inst, NULL, 0);
  /* the caller's inputs as far as its struct_size reaches */
  ceb_submit_opts o = {.struct_size = sizeof o};
  if (opts)
    memcpy(&o, opts,
           opts->struct_size < sizeof o ? opts->struct_size : sizeof o);
  if (!opts || opts->struct_size <
                   offsetof(ceb_submit_opts, callback) + sizeof o.callback)
    o.callback = NULL;
  cebr_amap *q = amap_of(rt);
  if (!q) return CEB_ENOMEM;
  size_t bytes = sizeof(amap_item) + len + 1 + opt_len(o.client) +
                 opt_len(o.traceparent) + opt_len(o.callback);
  amap_item *it = malloc(bytes);
  if (!it) return CEB_ENOMEM;
  *it = (amap_item){.inst = inst,
                    .program = (uint32_t)d->map_prog,
                    .cb = cb,
                    .cb_arg = cb_arg,
                    .len = len,
                    .bytes = bytes};
  memcpy(it->text, doc, len);
  it->text[len] = '\0';
  char *at = it->text + len + 1;
  it->client = opt_copy(&at, o.client);
  it->traceparent = opt_copy(&at, o.traceparent);
  it->callback = opt_copy(&at, o.callback);
  pthread_mutex_lock(&q->lock);
  if (q->stop || q->bytes + bytes > QUEUE_BYTES_MAX) {
    int st = q->stop ? CEB_ESHUTDOWN : CEB_EBUSY;
    pthread_mutex_unlock(&q->lock);
    free(it);
    return st;
  }
  if (q->tail)
    q->tail->next = it;
  else
    q->head = it;
  q->tail = it;
  q->bytes += bytes;
  q->queued++;
  if (q->inflight == 0 || q->queued >= HELP_AT) pthread_cond_signal(&q->cond);
  pthread_mutex_unlock(&q->lock);
  return CEB_OK;
}
