/* Internals of the delivery engine, shared by its files.
 *
 * The files are layers and call one way only, down this list (a file calls
 * the files below it, never one above; each function below is declared
 * under the file that defines it):
 *   engine_core.c        lifecycle, workers, claims, timeouts; the public
 *                        ceb_engine_* calls but settle (and kick: base)
 *   engine_preclaim.c    claims made at ingest (the store's claim hook),
 *                        waiting for their workers
 *   engine_take.c        claims into contexts, mapped and handed to sinks
 *   engine_settle.c      settles (ceb_engine_settle) and their outcomes:
 *                        store writes, dead letters, receipts
 *   engine_keys.c        per-key metrics: outcomes per ordering key, open
 *                        events per key at scrape (ceb_key_metrics.h)
 *   engine_dlq_forward.c the dead-letter forwards' schedule and sends
 *   engine_send.c        handing attempts to sinks (a refusal is returned
 *                        to the caller above, which settles it) and the
 *                        host's side of every settle (cebe_settle_begin)
 *   engine_sinkstate.c   the sinks' life cycle: disabled after 410 Gone or
 *                        disable_after of failures, enabled by an operator;
 *                        kept in the store
 *   engine_base.c, engine_deadletter.c, engine_ptrset.c   leaves
 *   engine_map.c         egress mappings (a leaf below the others: the
 *                        contexts' mapped results, freed by engine_base)
 * A sink that settles inside deliver re-enters through the host's settle
 * call (the plugin's side of the ABI), not through these files.
 * tests/unit/delivery/engine_layers.sh (unit_delivery_layers) checks the
 * order from the archive's symbols: a new file needs its row here and there. */
#ifndef CEB_ENGINE_INTERNAL_H
#define CEB_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "delivery/ceb_circuit.h"
#include "delivery/ceb_engine.h"
#include "delivery/ceb_key_metrics.h"
#include "delivery/ceb_rate_window.h"
#include "delivery/ceb_token_bucket.h"

enum { DCTX_ROUTE = 0, DCTX_FORWARD = 1, DCTX_RECEIPT = 2 };

/* One attempt. d is first so that the plugin's ceb_delivery pointer is the
 * context. Lives from dispatch until the plugin settles (or the engine is
 * freed); `host_settled` marks an attempt the host already timed out. */
struct ceb_egress_out; /* core/mapping/ceb_mapping_egress.h */

typedef struct dctx {
  ceb_delivery d;
  int kind;
  size_t route, sink;
  int64_t seq, received_at, first_at, started_at, dlq_id;
  int64_t fence; /* the claim's fencing token (ceb_claim.fence) */
  uint32_t attempt;
  ceb_event *ev;
  char *json; /* the journal's bytes of ev (d.encoded), owned; NULL for
                 forwards and receipts */
  struct ceb_egress_out *mapped; /* the egress mapping's result (d.mapped),
                                   owned */
  int host_settled;
  char *order_key; /* the claim's, owned; NULL: unordered */
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
  /* life cycle (engine_sinkstate.c), engine lock: the state, bumped
   * st_gen at every change in memory, st_written the st_gen the store
   * holds (they differ: worker 0 writes it) */
  ceb_sink_state st;
  uint64_t st_gen, st_written;
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
/* A claim's lease is the route's attempt timeout plus this (and at least
 * the store's [bridge] lease): the engine's timer settles an attempt by
 * its timeout, and the outcome then waits its turn in the store's queue.
 * With it no attempt outlives its lease, and leases are never renewed. */
#define CEBE_LEASE_MARGIN_MS 30000
#define CEBE_BUSY_MIN_MS 20
#define CEBE_BUSY_MAX_MS 1000

typedef struct eng_route {
  ceb_engine_route cfg;
  uint32_t inflight;
  int64_t open;      /* unsettled deliveries in the store: this process's
                        count, which other writers (another bridge on the same
                        database, a CLI replay) make wrong both ways; a recount
                        from the store (`resync`) sets it right again */
  int64_t added;     /* deliveries this process added, ever: a recount adds
                        those counted in while it read the store */
  int resync;        /* recount before the next claim (a wake-up, the poll, or
                        open went below 0) */
  int64_t due_at;    /* the store's earliest due time, read by the worker */
  uint64_t due_iter; /* in this pass of its loop (engine_core.c) */
  int due_read;      /* due_at was read at due_read_mono (cebe_mono_ms) */
  int64_t due_read_mono;
  int due_kept; /* this pass used that read again (claimable_locked) */
  unsigned worker;
  char labels[160];     /* route="..." */
  ceb_rate_window rate; /* recent outcomes (admin API), under e->lock */
  ceb_key_metrics *km;  /* per-key metrics' labels, under e->lock; NULL:
                           none */
} eng_route;

/* A set of live context pointers: settle checks membership before touching
 * the pointer, so a double or bogus settle is detected, not followed. */
/* A delivery the store claimed at its ingest for this engine
 * (engine_preclaim.c), waiting for its route's worker. */
typedef struct eng_pre {
  struct eng_pre *next;
  size_t route;
  int64_t now; /* the claim's */
  ceb_claim cl;
} eng_pre;

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
  ceb_mapper *mapper; /* borrowed; egress mappings (NULL: none) */
  /* callbacks routes' documents (ceb_engine_opts.callback_doc) */
  char *(*callback_doc)(void *arg, int64_t seq, const char *id, int *retry,
                        char *why, size_t whylen);
  void *callback_arg;
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
  int64_t poll_ms; /* ceb_engine_opts.poll_ms */
  /* ceb_store_shared at creation: other bridges claim from the same
   * store, so a route whose sink's circuit is open here leaves its due
   * deliveries to them instead of failing them (engine_core.c) */
  int shared;

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
  /* forwards run on one bridge of those sharing the store at a time
   * (ceb_store_try_lead "dlq-forward"); asked every poll_ms of real time */
  /* per worker: no live context it times out has an earlier deadline (a
   * bound: lowered at every registration, set by expire_locked's full
   * scan), so a pass before it skips the scan of the whole set; lock */
  int64_t *expire_at;
  /* claimed at ingest, not yet dispatched (engine_preclaim.c); lock */
  eng_pre *pre_head, *pre_tail;
  int fwd_leader;
  int64_t fwd_lead_next; /* CLOCK_MONOTONIC ms of the next question */
};

/* ---- engine_core.c ---- */
/* c was registered in e->live with its deadline: worker w (the route's,
 * 0 for a forward) scans for timeouts by then. Lock held. */
static inline void cebe_expire_lower_locked(ceb_engine *e, unsigned w,
                                            int64_t at) {
  if (e->expire_at && at < e->expire_at[w]) e->expire_at[w] = at;
}

void *cebe_worker_main(void *arg);
/* Makes dctxs of claims (count of them; n slots were reserved for the
 * call, the unused ones are given back), maps and dispatches them, or
 * settles them RETRY "circuit.open" with refuse (1), or defers them unasked
 * (refuse CEBE_TAKE_DEFER: back to pending, no attempt counted, as the rest
 * of a batch after a busy answer). Owns claims (freed). Entered unlocked,
 * returns with the lock held; returns count. Worker. */
#define CEBE_TAKE_DEFER 2
size_t cebe_take_claims(ceb_engine *e, size_t r, int64_t now, size_t n,
                        ceb_claim *claims, size_t count, int refuse);
/* Claims at ingest (engine_preclaim.c): sets the store's claim hook, at
 * ceb_engine_new; runs worker w's waiting claims (lock held on entry and
 * exit, dropped meanwhile; 1 when it ran any); frees what never ran, at
 * ceb_engine_free. */
void cebe_preclaim_hook(ceb_engine *e);
int cebe_preclaimed_run_locked(ceb_engine *e, unsigned w);
void cebe_preclaimed_free(ceb_engine *e);

/* ---- engine_settle.c ---- */
/* Records an attempt outcome for a route delivery whose in-flight slot was
 * already released (lock not held). Takes nothing from c. */
void cebe_outcome(ceb_engine *e, dctx *c, const ceb_settle_info *info);
/* Settles c, which cebe_dispatch returned refused with rc: CEB_EBUSY backs
 * the sink off and defers c (see CEBE_DEFER), anything else is a RETRY
 * "deliver.<status>". Lock not held; c is freed. */
void cebe_refused(ceb_engine *e, dctx *c, int rc);

/* ---- engine_keys.c ---- */
/* Declares the per-key families (ceb_engine_new, once). */
void cebe_declare_key_metrics(ceb_metrics *m);
/* Counts an attempt's recorded outcome (state: CEB_DS_*) of route under
 * key's label when the route has per-key metrics. Lock not held. */
void cebe_key_outcome(ceb_engine *e, size_t route, const char *key, int state);

/* ---- engine_dlq_forward.c ---- */
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

/* ---- engine_send.c ---- */
/* Hands c to its sink's deliver. Lock not held. CEB_OK: taken (the sink
 * may have settled already: c is not touched after); else the sink's
 * refusal (CEB_EBUSY: busy), c still live: the caller settles it. */
int cebe_dispatch(ceb_engine *e, dctx *c);
/* The settle info of a refusal rc (CEBE_DEFER for CEB_EBUSY); reason is
 * the caller's buffer the info points into. */
void cebe_refusal_info(int rc, ceb_settle_info *info, char reason[48]);
/* Starts a forward (DLQ topic) or receipt delivery of ev to sink; takes ev's
 * reference. Lock not held. CEB_OK when handed to the sink (its outcome
 * arrives as a settle). When the sink refused it: its status, with
 * *refused set to the live context for the caller to settle. Else < 0 with
 * *refused NULL (the engine is stopping, or no memory). */
int cebe_send_extra(ceb_engine *e, int kind, size_t sink, const char *topic,
                    ceb_event *ev, const char *route, int64_t dlq_id,
                    dctx **refused);
/* The host's side of a settle of d with *in (lock not held): takes d out of
 * the live set, updates the sink's circuit (or its busy pause for
 * CEBE_DEFER, setting in->retry_after_ms) and the in-flight counts, wakes
 * the workers. Returns the context for the caller to finish (outcome,
 * forward, receipt) and free, or NULL when there is nothing to finish (an
 * unknown or double settle, or one after the host timed the attempt out). */
dctx *cebe_settle_begin(ceb_engine *e, ceb_delivery *d, ceb_settle_info *in);

/* ---- engine_sinkstate.c ---- */
/* Control thread, before the workers start: each sink's stored state. */
void cebe_sink_load(ceb_engine *e);
/* An attempt's result for s at now (lock held): a success ends a failing
 * period; a failure starts one, and disables s once it has lasted
 * disable_after; gone (410, when disable_on_gone) disables s at once.
 * why: the settle's reason. Returns 1 when s is disabled after it. */
int cebe_sink_result_locked(ceb_engine *e, eng_sink *s, int kind,
                            const char *why, int64_t now);
enum { CEBE_SINK_OK = 0, CEBE_SINK_FAILED = 1, CEBE_SINK_GONE = 2 };
/* 1 when a state waits to be written (lock held). */
int cebe_sink_dirty_locked(ceb_engine *e);
/* Worker 0, lock not held: writes the changed states, then rereads the
 * store's (an operator's enable, another bridge's disable). */
void cebe_sink_sync(ceb_engine *e);

/* ---- engine_base.c ---- */
int64_t cebe_now(ceb_engine *e);
/* CLOCK_MONOTONIC in ms: real time, for polls the host clock must not
 * stretch. */
int64_t cebe_mono_ms(void);
void cebe_kick_locked(ceb_engine *e);
/* Releases a context: drops its event reference and frees it. */
void cebe_dctx_free(dctx *c);
/* The Idempotency-Key of (ev, route[, replays]) into out. */
void cebe_idem_key(const ceb_event *ev, const char *route, uint32_t replays,
                   int64_t copy_seq, char out[65]);
/* Metric helpers (no-ops without a registry). */
void cebe_metric_add(ceb_engine *e, const char *name, const char *labels,
                     double v);
void cebe_update_gauges_locked(ceb_engine *e, int force);

/* ---- engine_deadletter.c ---- */
/* Builds the dead-letter event JSON (malloc'd) or NULL. */
char *cebe_dead_json(const ceb_event *ev, const char *route, const char *sink,
                     const char *dead_reason, const ceb_settle_info *info,
                     uint32_t attempts, int64_t first_at, int64_t last_at);
/* Builds a receipt event (new reference) or NULL. */
ceb_event *cebe_receipt(const ceb_event *ev, const char *route,
                        const char *prefix, int64_t seq, int done,
                        uint32_t attempts, const char *reason, int64_t now);

/* engine_ptrset.c: cebe_ptrset_* above, with its struct. */

/* ---- engine_map.c ---- */
#define CEBE_MAP_WHY 512
/* Runs egress program `program` on each context's journaled JSON (one
 * batch): sets cs[i]->mapped and cs[i]->d.mapped, or why[i] to the reason
 * the mapping failed (why[i] "" when it did not; retry[i] 1 when it was no
 * fault of the program: no worker could run). Returns how many failed.
 * Blocks the calling worker for at most about n x mapping.timeout. */
size_t cebe_map_claimed(ceb_mapper *mapper, int program, dctx **cs, size_t n,
                        char (*why)[CEBE_MAP_WHY], int *retry);
/* The callbacks of a callbacks route's claimed contexts: each gets the
 * mapped output of its callback document (ceb_engine_opts.callback_doc),
 * or why[i] (retry[i] when it may work later). Returns how many failed. */
size_t cebe_callback_claimed(ceb_engine *e, dctx **cs, size_t n,
                             char (*why)[CEBE_MAP_WHY], int *retry);
/* Frees a context's mapped result (a ceb_egress_out). */
void cebe_mapped_free(struct ceb_egress_out *m);

#endif
