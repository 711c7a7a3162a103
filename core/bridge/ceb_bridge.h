/* The bridge: one running configuration. It reads bridge.d/ (ceb_conf),
 * loads the plugins the config names (ceb_loader), checks every section
 * against the host's and the plugin's spec, creates one ceb_instance per
 * [source]/[sink]/[contracts] section, and drives the lifecycle around the
 * runtime:
 *
 *   load:  conf load -> plugins -> conf check -> instances     (no side effects
 *          beyond dlopen: used by `check` and `plugins` too)
 *   start: runtime open -> init sinks, contracts, sources -> runtime start
 *          -> start sinks, contracts, sources -> admin API
 *   drain: admin not ready -> drain sources (stop accepting) -> runtime drain
 *          (commit, wait in-flight) -> drain contracts and sinks
 *   free:  destroy plugins -> runtime close -> unload
 *
 * Control thread only. Not a singleton: tests run several bridges. */
#ifndef CEB_BRIDGE_H
#define CEB_BRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "instance/ceb_instance.h"
#include "config/ceb_conf.h"
#include "loader/ceb_loader.h"
#include "metrics/ceb_metrics.h"

typedef struct ceb_bridge ceb_bridge;
struct ceb_runtime;

typedef int64_t (*ceb_bridge_clock_fn)(void *arg);

typedef struct ceb_bridge_opts {
  const char *config_dir;    /* bridge.d/ */
  const char *plugin_dir;    /* NULL: [bridge] plugin_dir, else the default */
  ceb_bridge_clock_fn clock; /* NULL: wall clock (tests inject one) */
  void *clock_arg;
  int dry_run; /* `run --dry-run`: every route as with dry_run = true */
} ceb_bridge_opts;

/* Loads and checks a configuration. CEB_OK with *out, or CEB_ECONFIG with
 * every error in errs (and *out NULL). */
int ceb_bridge_load(const ceb_bridge_opts *opts, ceb_bridge **out,
                    ceb_conf_errors *errs);

/* `check`: runs every instance's plugin init (as ceb_bridge_start would,
 * without the runtime: nothing is started, data directories are temporary)
 * and destroys it again. Errors (file:line, the plugin's message) go to
 * errs; CEB_ECONFIG when any init failed. Control thread; not on a bridge
 * that is started. */
int ceb_bridge_check_init(ceb_bridge *b, ceb_conf_errors *errs);

/* Starts everything; on failure stops what started and returns < 0 with a
 * one-line reason in err. */
int ceb_bridge_start(ceb_bridge *b, char *err, size_t errlen);

/* Graceful stop by deadline_ms (host clock). CEB_OK when everything in
 * flight settled, CEB_ETIMEOUT when something was left pending (it stays in
 * the store and is delivered after the next start). */
int ceb_bridge_drain(ceb_bridge *b, int64_t deadline_ms);

/* Undoes a start (after ceb_bridge_drain, or a failed start): admin API
 * off, plugin instances destroyed, runtime closed; the loaded config and
 * plugins stay, so that ceb_bridge_start may run again (a reload's
 * rollback, a retry). NULL ignored. */
void ceb_bridge_stop(ceb_bridge *b);

/* 1 when the last ceb_bridge_start failed because the store could not be
 * opened for an I/O reason (a full disk): worth retrying, unlike a damaged
 * or foreign store (CEB_ECONFLICT) or a configuration error. */
int ceb_bridge_store_unavailable(const ceb_bridge *b);

/* Starts only the admin API, without a runtime: /healthz 200, /readyz 503,
 * for a bridge waiting for its store (ceb_bridge_start later replaces it).
 * < 0 with err as for ceb_bridge_start. */
int ceb_bridge_start_waiting(ceb_bridge *b, char *err, size_t errlen);

/* Destroys plugin instances, closes the runtime, unloads. NULL ignored. */
void ceb_bridge_free(ceb_bridge *b);

/* Accessors (borrowed). */
const ceb_conf *ceb_bridge_conf(const ceb_bridge *b);
ceb_metrics *ceb_bridge_metrics(ceb_bridge *b);
struct ceb_runtime *ceb_bridge_runtime(ceb_bridge *b);
size_t ceb_bridge_instance_count(const ceb_bridge *b);
ceb_instance *ceb_bridge_instance(ceb_bridge *b, size_t i);
ceb_instance *ceb_bridge_find(ceb_bridge *b, uint32_t role, const char *name);
const char *ceb_bridge_plugin_dir(const ceb_bridge *b);
/* Host clock now, in ms since the epoch. */
int64_t ceb_bridge_now_ms(const ceb_bridge *b);

#endif
