/* One configured plugin instance ([source x], [sink y], [contracts z]) as
 * the host sees it. The bridge (core/bridge) creates and owns instances; the
 * runtime (core/runtime) implements the ceb_host table on top of them and
 * keeps its per-instance data in runtime_data; the delivery engine
 * (core/delivery) hands deliveries to their sink. It sits in its own folder
 * at the bottom of the layering (docs/architecture.md, "Layers") so that
 * all three include it downwards. The struct is host-internal: plugins only
 * ever see the opaque ceb_instance pointer. */
#ifndef CEB_INSTANCE_H
#define CEB_INSTANCE_H

#include <pthread.h>
#include <stdatomic.h>

#include <ceb/plugin.h>

/* ceb_instance.capture: what host->log does with the instance's lines
 * while its init runs (core/bridge/ceb_bridge_init.c). */
enum {
  CEB_CAPTURE_OFF = 0,  /* log only */
  CEB_CAPTURE_ON = 1,   /* log, and keep ERROR lines in init_error */
  CEB_CAPTURE_QUIET = 2 /* keep ERROR lines, log nothing (`check`) */
};

struct ceb_loaded_plugin;
struct ceb_runtime;

struct ceb_instance {
  char *name;              /* section name */
  uint32_t role;           /* CEB_ROLE_SOURCE, _SINK or _CONTRACTS */
  char component[160];     /* log prefix "sink:kafka:internal" */
  char labels[224];        /* metric labels role="sink",plugin="kafka",instance="internal" */
  const ceb_plugin *plugin;        /* borrowed from the loaded library */
  struct ceb_loaded_plugin *lib;   /* owned by the loader */
  const ceb_config *cfg;           /* the section's checked config (owned by ceb_conf) */
  void *state;                     /* the plugin's, from init */
  int initialised;                 /* init() succeeded: destroy() owed */
  int started;                     /* start() succeeded: drain() owed */
  struct ceb_runtime *rt;          /* set by the runtime */
  void *runtime_data;              /* the runtime's per-instance data */
  /* init's error lines (host->log may be called from a plugin's threads) */
  atomic_int capture;              /* CEB_CAPTURE_* */
  pthread_mutex_t capture_lock;    /* guards init_error */
  char init_error[512];
};

#endif
