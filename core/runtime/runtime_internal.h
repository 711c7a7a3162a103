/* Internals of the runtime, shared by its files. */
#ifndef CEB_RUNTIME_INTERNAL_H
#define CEB_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "delivery/ceb_engine.h"
#include "mapping/ceb_mapping.h"
#include "mapping/ceb_mapping_set.h"
#include "router/ceb_route.h"
#include "runtime/ceb_runtime.h"
#include "store/ceb_store.h"

typedef struct cebr_amap cebr_amap;

/* Per-instance data (ceb_instance.runtime_data). */
typedef struct rt_inst {
  ceb_runtime *rt;
  ceb_profile_level profile; /* sources */
  atomic_int queue_stop;     /* sinks: queue_wake was called */
  int map_prog;              /* sources: the ingress program, or -1 */
} rt_inst;

struct ceb_runtime {
  const ceb_conf *conf;
  ceb_metrics *metrics;
  ceb_clock_fn clock;
  void *clock_arg;
  ceb_store *store;
  ceb_engine *engine;
  ceb_route **routes;
  size_t nroutes;
  int *route_filter; /* per route: its filter program, or -1 */
  /* jq mappings: every program of the config, and the worker pool that
   * runs them (NULL when the config has none) */
  ceb_mapping_set *maps;
  ceb_mapper *mapper;
  /* submit_mapped_async's queue and threads, made at its first call
   * (amap_lock guards the making) */
  pthread_mutex_t amap_lock;
  _Atomic(cebr_amap *) amap;
  ceb_instance **instances;
  size_t ninstances;
  rt_inst *idata;
  size_t max_event_size;
  int64_t idem_ttl_ms, retention_ms;
  atomic_int draining;
  int started;
  ceb_contract_check_fn contract_check;
  void *contract_arg;
  atomic_int contract_warned;
  /* sweeper */
  pthread_t sweeper;
  int sweeper_running;
  atomic_int sweeper_stop;
  pthread_mutex_t sweep_lock;
  pthread_cond_t sweep_cond;
  int64_t started_at; /* host clock at ceb_runtime_start */
  /* queue long polls (runtime_queue.c): queue_gen counts appends this
   * bridge made durable; waiting fetches watch it */
  pthread_mutex_t queue_lock;
  pthread_cond_t queue_cond;
  uint64_t queue_gen;
};

int64_t cebr_now(ceb_runtime *rt);
/* The instance's runtime, or NULL (logged) for a foreign pointer. */
ceb_runtime *cebr_of(ceb_instance *inst);

int cebr_submit(ceb_instance *inst, ceb_event *const *events, size_t count,
                const ceb_submit_opts *opts, ceb_submit_cb cb, void *cb_arg);
/* cebr_submit with flags: CEBR_SUBMIT_AGAIN, the events were counted as
 * received by an earlier call (submit_mapped_batch submits what is left
 * after a document was refused). */
#define CEBR_SUBMIT_AGAIN 1u
int cebr_submit_ex(ceb_instance *inst, ceb_event *const *events, size_t count,
                   const ceb_submit_opts *opts, ceb_submit_cb cb, void *cb_arg,
                   unsigned flags);
/* ceb_host.submit_mapped (runtime_mapped.c). */
int cebr_submit_mapped(ceb_instance *inst, const char *doc, size_t len,
                       const ceb_submit_opts *opts, ceb_submit_cb cb,
                       void *cb_arg, char *err, size_t errlen);
/* After the program ran (r filled by ceb_mapper_run): r's outputs decoded
 * and submitted as submit() would, r cleared. o is complete (struct_size
 * sizeof, violations and failed_index set). CEB_OK: cb will be called;
 * else nothing was taken, err says why (runtime_mapped.c). */
int cebr_mapped_submit(ceb_runtime *rt, ceb_instance *inst, ceb_map_req *r,
                       ceb_submit_opts *o, ceb_submit_cb cb, void *cb_arg,
                       char *err, size_t errlen);
/* The status of a mapped submit refused before its program runs because
 * the runtime is not ready (draining, store not writable, backpressure). */
int cebr_mapped_refusal(ceb_runtime *rt, ceb_instance *inst, char *err,
                        size_t errlen);
/* ceb_host.submit_mapped_async, ABI 1.4 (runtime_mapped_async.c). */
int cebr_submit_mapped_async(ceb_instance *inst, const char *doc, size_t len,
                             const ceb_submit_opts *opts, ceb_submit_cb cb,
                             void *cb_arg);
/* Stops the async mapping threads (runtime_mapped_async.c): documents
 * still queued are refused with CEB_ESHUTDOWN (their callbacks run), the
 * ones being mapped finish. Before the store closes. NULL-safe. */
void cebr_amap_free(cebr_amap *q);
/* ceb_host.submit_mapped_batch, ABI 1.3 (runtime_mapped_batch.c). */
int cebr_submit_mapped_batch(ceb_instance *inst, ceb_mapped_doc *docs, size_t n,
                             const ceb_submit_opts *opts, ceb_submit_cb cb,
                             void *cb_arg);
/* Shared by both (runtime_mapped.c): a refusal by the mapping, logged and
 * counted, its reason "mapping: <msg>" into err; returns CEB_EMAPPING. */
int cebr_mapping_error(ceb_runtime *rt, ceb_instance *inst, char *err,
                       size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The program's outputs of r (r->nout of them) decoded into events[];
 * CEB_OK, or CEB_EMAPPING through cebr_mapping_error (events decoded so
 * far are left in events[] for the caller to unref). */
int cebr_map_decode(ceb_runtime *rt, ceb_instance *inst, const ceb_map_req *r,
                    ceb_event **events, char *err, size_t errlen);
/* Callbacks (runtime_callback.c): ceb_engine_opts.callback_doc, and the
 * callbacks route of source instance `source` (the first route with
 * callbacks = true whose from names it; NULL: none). */
char *cebr_callback_doc(void *arg, int64_t seq, const char *id, int *retry,
                        char *why, size_t whylen);
const char *cebr_callback_route(ceb_runtime *rt, const char *source);
/* Counts a refusal in cebridge_events_rejected_total{reason}. */
void cebr_reject_metric(ceb_runtime *rt, ceb_instance *inst,
                        const char *reason);
void *cebr_sweeper_main(void *arg);
/* Records this bridge's heartbeat in the store (the sweeper, each round). */
void cebr_heartbeat(ceb_runtime *rt);
/* ceb_host.queue_* and ceb_host.lead (runtime_queue.c). */
int cebr_queue_append(ceb_instance *inst, const char *key, const char *json,
                      size_t len, size_t max, void (*cb)(void *, int),
                      void *arg);
int cebr_queue_fetch(ceb_instance *inst, int64_t after, size_t max,
                     int64_t wait_ms,
                     int (*visit)(void *, int64_t, const char *, size_t),
                     void *arg, int64_t *last);
int cebr_queue_commit(ceb_instance *inst, int64_t cursor, int64_t *committed);
int cebr_queue_stats(ceb_instance *inst, int64_t *depth, int64_t *last,
                     int64_t *committed);
void cebr_queue_wake(ceb_instance *inst);
/* The store's pull listener (ceb_store_set_pull_listener; arg: the
 * runtime): another bridge appended to queue (NULL: any); every long poll
 * reads again. Any thread; never blocks beyond the queue lock. */
void cebr_queue_pulled(void *arg, const char *queue);
int cebr_lead(ceb_instance *inst, const char *task);

#endif
