/* The delivery engine: worker threads claim due deliveries from the store
 * (the backlog and every retry wait in the store, only in-flight attempts
 * are in memory), hand them to sink plugins, and turn settles into store
 * writes: done, retry at a time, or dead letter.
 *
 * Per route: FIFO per order key (enforced by the store's claim), at most
 * max_inflight attempts, a per-attempt timeout. Per sink: a token bucket
 * and a circuit breaker shared by every route to it. The engine sleeps on a
 * condition variable until work is committed (the store's ingest listener,
 * or ceb_engine_added for a replay), a settle
 * arrives, or the earliest timer (retry due, timeout, circuit probe, token)
 * is reached; it never busy-polls. Time is the injected host clock; a test
 * that moves its clock calls ceb_engine_kick.
 *
 * Threading: ceb_engine_new/start/drain/free on the control thread; every
 * other function from any thread. deliver is called from engine workers
 * (and, for dead-letter forwards and receipts, from the store committer);
 * it must not block. */
#ifndef CEB_ENGINE_H
#define CEB_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include <ceb/plugin.h>
#include <jansson.h>

#include "delivery/ceb_retry.h"
#include "instance/ceb_instance.h"
#include "mapping/ceb_mapping.h"
#include "metrics/ceb_metrics.h"
#include "store/ceb_store.h"

typedef struct ceb_engine ceb_engine;

typedef struct ceb_engine_sink {
  const char *name;
  ceb_instance *inst; /* deliver = inst->plugin->deliver(inst->state, d) */
  double rate;        /* per second; <= 0 unlimited */
  double burst;       /* 0: one second's worth */
  uint32_t circuit_failures;
  int64_t circuit_open_for_ms;
  /* life cycle (the meemoo guide): disabled after a 410 Gone when
   * disable_on_gone, or after disable_after_ms (host clock) of failures
   * without a success (0: never) */
  int disable_on_gone;
  int64_t disable_after_ms;
} ceb_engine_sink;

typedef struct ceb_engine_route {
  const char *name;
  size_t sink; /* index into sinks */
  uint32_t max_inflight;
  int64_t timeout_ms;
  const ceb_retry_policy *retry; /* borrowed; includes the deadline */
  long dlq_sink;                 /* index, or -1: store DLQ only */
  const char *dlq_topic;
  long receipts_sink;         /* index, or -1: no receipts */
  const char *receipts_topic; /* may be NULL */
  const char *receipts_prefix;
  int map_program; /* egress mapping: a program of opts.mapper, or -1 */
  int dry_run;     /* evaluate, settle done "dry-run", never deliver */
  /* per-key metrics (ceb_key_metrics.h): keys with their own label
   * (borrowed, copied by ceb_engine_new) and how many more of the busiest;
   * none and 0: no per-key metrics */
  const char *const *metrics_keys;
  size_t nmetrics_keys;
  unsigned metrics_keys_top;
  /* a callbacks route (route key callbacks = true): its deliveries are the
   * clients' callbacks the store queued at the final settle of their
   * events; each is sent as the mapped output opts.callback_doc makes */
  int callbacks;
} ceb_engine_route;

typedef struct ceb_engine_opts {
  ceb_store *store;     /* borrowed */
  ceb_metrics *metrics; /* borrowed, may be NULL */
  int64_t (*clock)(void *arg);
  void *clock_arg;
  const ceb_engine_sink *sinks; /* copied (strings borrowed) */
  size_t nsinks;
  const ceb_engine_route *routes;
  size_t nroutes;
  unsigned workers;   /* threads; routes are spread over them */
  int64_t max_queued; /* backpressure threshold of open deliveries */
  int64_t poll_ms;    /* store.poll_interval: every route recounts its open
                         deliveries in the store this often (real time), for
                         work other writers added that no wake-up announced
                         and for claims whose lease expired; <= 0: 2 s */
  ceb_mapper *mapper; /* borrowed, may be NULL: runs routes' map_program */
  /* Callbacks routes: the egress object (include/ceb/plugin.h, "egress
   * mappings": body = the event's status document, headers, topic = the
   * client's URL) of the callback of journal row seq (event id), a
   * malloc'd JSON text; NULL with *retry 1 when it cannot be made now (a
   * store read failed), 0 when it never can (the URL is gone). Called on
   * an engine worker, blocking store reads allowed. NULL: such
   * deliveries are dead-lettered. Filled in by the runtime, which knows
   * the job status (core/runtime/runtime_callback.c). */
  char *(*callback_doc)(void *arg, int64_t seq, const char *id, int *retry,
                        char *why, size_t whylen);
  void *callback_arg;
} ceb_engine_opts;

/* Control thread. CEB_OK or < 0. The arrays in opts are copied. The
 * engine becomes the store's ingest listener (ceb_store_ingest batches are
 * counted as they commit) and its wake listener (work other writers added:
 * the route is recounted and claimed at once), so the store must be closed
 * before ceb_engine_free. */
int ceb_engine_new(const ceb_engine_opts *opts, ceb_engine **out);
/* Any thread (the admin API's /metrics, before rendering): the per-key
 * metrics' top N taken again (series of keys that left it removed) and
 * their open-event gauges counted in the store (blocking reads, one per
 * labelled key). Nothing for routes without per-key metrics. */
void ceb_engine_key_gauges(ceb_engine *e);
/* Control thread: puts a crashed run's in-progress rows back to pending,
 * loads the open counts and starts the workers. */
int ceb_engine_start(ceb_engine *e);
/* Control thread: stops claiming and waits until nothing is in flight or
 * deadline_ms (host clock; the budget deadline - now is spent in real time so
 * a frozen test clock cannot hang it) passes: CEB_OK or CEB_ETIMEOUT. Unsettled
 * rows stay in progress in the store and are retried after the next start. */
int ceb_engine_drain(ceb_engine *e, int64_t deadline_ms);
/* Control thread: stops the workers; outcomes still being committed are
 * recorded, but no forward or receipt is sent any more (the sinks are
 * going away). Call before closing the store. */
void ceb_engine_stop(ceb_engine *e);
/* Control thread, after the sink plugins were destroyed and the store
 * closed (its pending callbacks reference the engine). NULL ignored. */
void ceb_engine_free(ceb_engine *e);

/* The host table's settle: exactly once per delivery; a second or unknown
 * settle is logged and ignored; a settle after the host timed the attempt
 * out only releases it. info is copied. */
void ceb_engine_settle(ceb_engine *e, ceb_delivery *d,
                       const ceb_settle_info *info);

/* n new open deliveries were committed on route outside ceb_store_ingest
 * (a DLQ replay); ingested batches reach the engine from the store. */
void ceb_engine_added(ceb_engine *e, size_t route, int64_t n);
/* Wakes the workers (new work, or the test clock moved). */
void ceb_engine_kick(ceb_engine *e);
/* 1 while open deliveries are below max_queued. */
int ceb_engine_accepting(ceb_engine *e);
/* Open (not done, not dead) deliveries, all routes. */
int64_t ceb_engine_open_count(ceb_engine *e);
/* Attempts in flight, all routes. */
size_t ceb_engine_inflight(ceb_engine *e);

/* Enables sink `name` again (any thread; blocks on a store write): its
 * waiting deliveries are claimed again, in order. CEB_OK (also when it was
 * not disabled), CEB_ENOTFOUND (no such sink), or the store's error. */
int ceb_engine_sink_enable(ceb_engine *e, const char *name);
/* The sinks' life cycle, a new JSON array: [{"sink","disabled","reason",
 * "disabled_at","failing_since","disable_after_ms"}]. */
json_t *ceb_engine_sinks_json(ceb_engine *e);

/* Routes for the admin API / CLI, a new JSON array:
 *   [{"route","sink","queued","inflight","oldest_age_ms","circuit",
 *     "max_inflight","window_s","delivered_1m","failed_1m",
 *     "throughput_per_s","failure_rate"}]
 * (circuit: "closed" | "open" | "half-open"; the *_1m figures count the
 * attempts of the last window_s seconds, failure_rate = failed / all). */
json_t *ceb_engine_routes_json(ceb_engine *e);

#endif
