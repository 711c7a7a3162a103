/* Internals of the delivery engine, shared by its files. */
#ifndef CEB_ENGINE_INTERNAL_H
#define CEB_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "delivery/ceb_circuit.h"
#include "delivery/ceb_engine.h"
#include "delivery/ceb_token_bucket.h"

enum { DCTX_ROUTE = 0, DCTX_FORWARD = 1, DCTX_RECEIPT = 2 };

/* One attempt. d is first so that the plugin's ceb_delivery pointer is the
 * context. Lives from dispatch until the plugin settles (or the engine is
 * freed); `host_settled` marks an attempt the host already timed out. */
typedef struct dctx {
  ceb_delivery d;
  int kind;
  size_t route, sink;
  int64_t seq, received_at, first_at, started_at, dlq_id;
  uint32_t attempt;
  ceb_event *ev;
  char *json; /* the journal's bytes of ev (d.encoded), owned; NULL for
                 forwards and receipts */
  int host_settled;
  char idem_key[65];
  char topic[256];
} dctx;

typedef struct eng_sink {
  ceb_engine_sink cfg;
  ceb_circuit circuit;
  ceb_token_bucket bucket;
  /* backpressure: deliver() said CEB_EBUSY. No dispatch before busy_until;
   * busy_ms doubles while it repeats and is 0 once a deliver is taken. */
  int64_t busy_until;      /* under the engine lock */
  _Atomic int64_t busy_ms; /* read without the lock on every dispatch */
  /* as a DLQ sink (engine lock): forwards in flight (at most FWD_WINDOW),
   * dead letters waiting for it, and a pause after failed forwards that
   * doubles per pause that ends in a failure again (FWD_BACKOFF_*) */
  uint32_t fwd_inflight;
  int64_t fwd_waiting;
  int64_t fwd_pause_ms, fwd_pause_until;
} eng_sink;

/* Dead-letter forwards (engine_deadletter.c). The work list is the store:
 * every dlq row with forwarded_at NULL of a route that has a DLQ sink. The
 * engine keeps its schedule in memory (loaded from the store at start,
 * appended as letters die), ordered by dlq id; a row leaves it once the
 * store recorded forwarded_at. */
enum { FWD_WAIT = 0, FWD_SENDING = 1, FWD_MARKING = 2, FWD_GONE = 3 };
typedef struct eng_fwd {
  int64_t dlq_id;
  int64_t next_at; /* host clock: next try due (FWD_WAIT) */
  uint32_t route;
  uint32_t tries; /* failed forwards; CEB_EBUSY is not counted */
  uint8_t state;
  uint8_t warned; /* the failure was logged (once per dead letter) */
} eng_fwd;
#define FWD_WINDOW 4            /* forwards in flight per DLQ sink */
#define FWD_BACKOFF_MIN_MS 1000 /* per dead letter and per sink: doubling */
#define FWD_BACKOFF_MAX_MS 300000
#define FWD_TIMEOUT_MS 30000 /* a forward the sink never settles fails */

/* Internal outcome of an attempt that did not happen (the sink returned
 * CEB_EBUSY): the delivery goes back to pending after a short backoff and
 * the attempt is given back. Never taken from a plugin's settle. */
#define CEBE_DEFER ((ceb_outcome)0x7fff)
#define CEBE_BUSY_MIN_MS 20
#define CEBE_BUSY_MAX_MS 1000

typedef struct eng_route {
  ceb_engine_route cfg;
  uint32_t inflight;
  int64_t open; /* unsettled deliveries in the store */
  unsigned worker;
  char labels[160]; /* route="..." */
} eng_route;

/* A set of live context pointers: settle checks membership before touching
 * the pointer, so a double or bogus settle is detected, not followed. */
typedef struct ptrset {
  void **slots;
  size_t cap, count, used; /* used counts tombstones too */
} ptrset;

int cebe_ptrset_add(ptrset *s, void *p);
int cebe_ptrset_del(ptrset *s, void *p);
int cebe_ptrset_has(const ptrset *s, void *p);
void cebe_ptrset_free(ptrset *s);

struct ceb_engine {
  ceb_store *store;
  ceb_metrics *metrics;
  int64_t (*clock)(void *);
  void *clock_arg;
  eng_sink *sinks;
  size_t nsinks;
  eng_route *routes;
  size_t nroutes;
  unsigned nworkers;
  pthread_t *threads;
  int64_t max_queued;

  pthread_mutex_t lock;
  pthread_cond_t cond; /* workers: something changed */
  pthread_cond_t idle; /* drain: inflight went down */
  uint64_t gen;        /* bumped by every kick */
  int stopping, draining, started;
  int64_t open_total;
  size_t inflight_total;
  ptrset live;
  uint64_t rng;
  int64_t last_gauges;
  eng_fwd *fwd; /* sorted by dlq_id; FWD_GONE slots until compaction */
  size_t nfwd, capfwd, fwd_gone;
  int64_t fwd_due;    /* earliest next_at of a FWD_WAIT entry, or INT64_MAX */
  int64_t fwd_cursor; /* the pump's round robin resumes at this dlq id */
  size_t fwd_sending; /* picked forwards the pump sends outside the lock:
                         drain waits for them (the sink must still exist) */
};

int64_t cebe_now(ceb_engine *e);
void cebe_kick_locked(ceb_engine *e);
void *cebe_worker_main(void *arg);
/* Releases a context: drops its event reference and frees it. */
void cebe_dctx_free(dctx *c);
/* Records an attempt outcome for a route delivery whose in-flight slot was
 * already released (lock not held). Takes nothing from c. */
void cebe_outcome(ceb_engine *e, dctx *c, const ceb_settle_info *info);
/* dispatch's path for a deliver() that returned CEB_EBUSY: backs the sink
 * off and defers c (see CEBE_DEFER). Lock not held; c is freed. */
void cebe_defer(ceb_engine *e, dctx *c);
/* Builds the dead-letter event JSON (malloc'd) or NULL. */
char *cebe_dead_json(const ceb_event *ev, const char *route, const char *sink,
                     const char *dead_reason, const ceb_settle_info *info,
                     uint32_t attempts, int64_t first_at, int64_t last_at);
/* Builds a receipt event (new reference) or NULL. */
ceb_event *cebe_receipt(const ceb_event *ev, const char *route,
                        const char *prefix, int64_t seq, int done,
                        uint32_t attempts, const char *reason, int64_t now);
/* Starts a forward (DLQ topic) or receipt delivery of ev to sink; takes ev's
 * reference. Lock not held. CEB_OK when handed to the sink (its outcome
 * arrives as a settle), else < 0 (the engine is stopping, or no memory). */
int cebe_send_extra(ceb_engine *e, int kind, size_t sink, const char *topic,
                    ceb_event *ev, const char *route, int64_t dlq_id);
/* Forwards. Control thread, before the workers start: loads the dlq rows
 * not forwarded yet of every route with a DLQ sink. */
int cebe_fwd_load(ceb_engine *e);
/* A letter died on route with DLQ row dlq_id (committer; lock not held):
 * scheduled, and sent at once from dead_json when the sink has room. */
void cebe_fwd_dead(ceb_engine *e, size_t route, int64_t dlq_id,
                   const char *dead_json);
/* A forward settled (by the sink, or the host: timeout, EBUSY as
 * CEBE_DEFER). Lock not held; takes nothing from c. */
void cebe_fwd_settled(ceb_engine *e, const dctx *c,
                      const ceb_settle_info *info);
/* Worker 0: starts the due forwards the sinks have room for. Lock held on
 * entry and exit (dropped around the store and the sinks). Returns the host
 * time of the next forward work, or INT64_MAX. */
int64_t cebe_fwd_pump_locked(ceb_engine *e, int64_t now);
/* Metric helpers (no-ops without a registry). */
void cebe_metric_add(ceb_engine *e, const char *name, const char *labels,
                     double v);
void cebe_update_gauges_locked(ceb_engine *e, int force);

#endif
