/* The runtime: the durable core behind the ceb_host table. It owns the
 * store, the router and the delivery engine; it implements submit (validate,
 * route, dedupe, journal by group commit, then call back), settle (ACK done,
 * RETRY scheduled in the store, REJECT/exhausted to the DLQ), idempotency and
 * the contract register hooks.
 *
 * Lifecycle, all on the control thread:
 *   ceb_runtime_open -> (bridge: plugin init for every instance with
 *   ceb_runtime_host()) -> ceb_runtime_start -> (bridge: start sinks, then
 *   sources) ... ceb_runtime_drain -> (bridge: destroy plugins) ->
 *   ceb_runtime_close. */
#ifndef CEB_RUNTIME_H
#define CEB_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include <ceb/plugin.h>

#include "bridge/ceb_instance.h"
#include "config/ceb_conf.h"
#include "metrics/ceb_metrics.h"

typedef struct ceb_runtime ceb_runtime;

/* The host clock; NULL in opts means the wall clock. Tests inject one. */
typedef int64_t (*ceb_clock_fn)(void *arg);

typedef struct ceb_runtime_opts {
  const ceb_conf *conf;          /* checked; borrowed for the runtime's life */
  ceb_instance *const *instances;/* every instance, created, not yet init'ed */
  size_t ninstances;
  ceb_metrics *metrics;          /* borrowed */
  ceb_clock_fn clock;            /* may be NULL */
  void *clock_arg;
} ceb_runtime_opts;

/* Opens the store named by [bridge] store and builds the routes. On error
 * returns < 0 with a one-line reason in err. */
int ceb_runtime_open(const ceb_runtime_opts *opts, ceb_runtime **out,
                     char *err, size_t errlen);

/* The host table handed to every plugin's init. Static; thread-safe. */
const ceb_host *ceb_runtime_host(void);

/* Starts the committer, the sweeper and the delivery workers, and resumes
 * deliveries left pending by a previous run. */
int ceb_runtime_start(ceb_runtime *rt);

/* Stops accepting (submit -> CEB_ESHUTDOWN), commits what is queued, and
 * waits for in-flight deliveries until deadline_ms (host clock). In-flight
 * work that does not settle in time stays pending in the store. */
int ceb_runtime_drain(ceb_runtime *rt, int64_t deadline_ms);

/* Frees everything. Plugins must be destroyed before. */
void ceb_runtime_close(ceb_runtime *rt);

/* 1 when the runtime accepts submissions (readiness). */
int ceb_runtime_ready(ceb_runtime *rt);

/* The runtime's store (borrowed; thread-safe read functions), for the admin
 * API. Added by the lead for core/admin. */
struct ceb_store;
struct ceb_store *ceb_runtime_store(ceb_runtime *rt);

#endif
