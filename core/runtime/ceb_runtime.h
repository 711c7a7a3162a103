/* The runtime: the durable core behind the ceb_host table. It owns the
 * store, the router and the delivery engine; it implements submit (validate,
 * route, dedupe, journal by group commit, then call back), settle (ACK done,
 * RETRY scheduled in the store, REJECT/exhausted to the DLQ), idempotency and
 * the contract register hooks.
 *
 * Decisions the guarantees rest on:
 *  - An event no route matches is still accepted: it is journaled (durable),
 *    marked "unrouted" in its status, counted in
 *    cebridge_events_unrouted_total and logged, then expires with the
 *    retention like any settled event. The bridge never drops an event
 *    silently, and a source is not punished for a routing gap.
 *  - A dead letter always gets a store DLQ row, in the same transaction that
 *    marks the delivery dead. A route with dlq = SINK:topic also forwards
 *    it there (one attempt); the row records forwarded_at, and a failed
 *    forward leaves it in the store DLQ only (logged), so nothing is lost.
 *  - Receipts (route receipts = SINK[:topic]) are best effort: one attempt
 *    after the outcome is durable, not journaled themselves.
 *
 * Lifecycle, all on the control thread:
 *   ceb_runtime_open -> (bridge: plugin init for every instance with
 *   ceb_runtime_host(), then start sinks) -> ceb_runtime_start -> (bridge:
 *   start sources) ... ceb_runtime_drain -> ceb_runtime_halt -> (bridge:
 *   destroy plugins) -> ceb_runtime_close. */
#ifndef CEB_RUNTIME_H
#define CEB_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include <ceb/plugin.h>

#include "config/ceb_conf.h"
#include "instance/ceb_instance.h"
#include "metrics/ceb_metrics.h"

typedef struct ceb_runtime ceb_runtime;

/* The host clock; NULL in opts means the wall clock. Tests inject one. */
typedef int64_t (*ceb_clock_fn)(void *arg);

typedef struct ceb_runtime_opts {
  const ceb_conf *conf;           /* checked; borrowed for the runtime's life */
  ceb_instance *const *instances; /* every instance, created, not yet init'ed */
  size_t ninstances;
  ceb_metrics *metrics; /* borrowed */
  ceb_clock_fn clock;   /* may be NULL */
  void *clock_arg;
  int dry_run; /* `run --dry-run`: every route as with dry_run = true */
} ceb_runtime_opts;

/* Opens the store named by [bridge] store, builds the routes, and starts
 * the mapping workers when the config has a map or filter (programs read
 * again here: the bridge checked them at load). On error returns < 0 with
 * a one-line reason in err. */
int ceb_runtime_open(const ceb_runtime_opts *opts, ceb_runtime **out, char *err,
                     size_t errlen);

/* The host table handed to every plugin's init. Static; thread-safe. */
const ceb_host *ceb_runtime_host(void);

/* Starts the committer, the sweeper and the delivery workers, and resumes
 * deliveries left pending by a previous run. */
int ceb_runtime_start(ceb_runtime *rt);

/* Stops accepting (submit -> CEB_ESHUTDOWN), commits what is queued, and
 * waits for in-flight deliveries until deadline_ms (host clock). In-flight
 * work that does not settle in time stays pending in the store. */
int ceb_runtime_drain(ceb_runtime *rt, int64_t deadline_ms);

/* Stops the delivery workers: no sink's deliver is called once it
 * returns (a sink may then be destroyed). Idempotent; also what a failed
 * start, which is not drained, needs before the plugins go. */
void ceb_runtime_halt(ceb_runtime *rt);

/* Frees everything. Plugins must be destroyed before. */
void ceb_runtime_close(ceb_runtime *rt);

/* 1 when the runtime accepts submissions (readiness). */
int ceb_runtime_ready(ceb_runtime *rt);

/* The runtime's store (borrowed; thread-safe read functions), for the admin
 * API. Added by the lead for core/admin. */
struct ceb_store;
struct ceb_store *ceb_runtime_store(ceb_runtime *rt);

/* ---- queries and operations for the admin API and the CLI ----
 * Thread-safe; they read the store on read connections (the blocking ones
 * wait for one commit). JSON results are new references (json_decref). */

#include <jansson.h>

#include "store/ceb_store.h"

/* The host clock now. */
int64_t ceb_runtime_now(ceb_runtime *rt);
/* Wakes the delivery engine and the sweeper (tests call it after moving
 * their clock). */
void ceb_runtime_kick(ceb_runtime *rt);

/* Status of an event by id (and source, may be NULL): see
 * ceb_store_event_status for the shape. */
json_t *ceb_runtime_event_status(ceb_runtime *rt, const char *id,
                                 const char *source);
/* Routes with queue depth, in-flight attempts, oldest age and the sink's
 * circuit state: see ceb_engine_routes_json. */
json_t *ceb_runtime_routes(ceb_runtime *rt);
/* Any thread, before /metrics renders: the per-key metrics' labels and
 * open-event gauges brought up to date (ceb_engine_key_gauges). */
void ceb_runtime_key_gauges(ceb_runtime *rt);
/* The sinks' life cycle (ceb_engine_sinks_json) and an operator's enable
 * (ceb_engine_sink_enable: CEB_OK, CEB_ENOTFOUND, a store error). */
json_t *ceb_runtime_sinks(ceb_runtime *rt);
int ceb_runtime_sink_enable(ceb_runtime *rt, const char *name);

/* DLQ: list (newest first), show one (with the dead-letter event), replay
 * (back into its route as a fresh delivery with the same event id; rows
 * remember replays; dry_run counts only) and purge (dry_run counts only; the
 * caller asks the operator for confirmation). Filters: ceb_dlq_filter.
 * replay: CEB_ENOTFOUND when f->route names no configured route. */
/* Replay by time range from the archive (ceb_store_replay_range) into a
 * configured route, with the engine told at once. CEB_ENOTFOUND when
 * f->route names no configured route; else as the store op. Control or
 * admin thread (blocking). */
int ceb_runtime_replay_range(ceb_runtime *rt, const ceb_replay_filter *f,
                             int dry_run, size_t *count);
json_t *ceb_runtime_dlq_list(ceb_runtime *rt, const ceb_dlq_filter *f);
json_t *ceb_runtime_dlq_show(ceb_runtime *rt, int64_t id);
int ceb_runtime_dlq_replay(ceb_runtime *rt, const ceb_dlq_filter *f,
                           int dry_run, size_t *count, json_t *replayed);
int ceb_runtime_dlq_purge(ceb_runtime *rt, const ceb_dlq_filter *f, int dry_run,
                          size_t *count);

/* Contract checks of a route at ingress. The hook is called by submit for
 * every route an event matches that pins a contract (route->contract);
 * it returns CEB_OK or CEB_EVALIDATION after filling violations. Unset (the
 * default), pinned routes accept every event and log once that contracts
 * are not enforced. Set it before ceb_runtime_start. */
struct ceb_route;
typedef int (*ceb_contract_check_fn)(void *arg, const struct ceb_route *route,
                                     const ceb_event *ev,
                                     ceb_violations *violations);
void ceb_runtime_set_contract_check(ceb_runtime *rt, ceb_contract_check_fn fn,
                                    void *arg);

#endif
