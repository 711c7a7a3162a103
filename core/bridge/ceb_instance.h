/* One configured plugin instance ([source x], [sink y], [contracts z]) as
 * the host sees it. The bridge (core/bridge) creates and owns instances; the
 * runtime (core/runtime) implements the ceb_host table on top of them and
 * keeps its per-instance data in runtime_data. The struct is host-internal:
 * plugins only ever see the opaque ceb_instance pointer. */
#ifndef CEB_INSTANCE_H
#define CEB_INSTANCE_H

#include <ceb/plugin.h>

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
};

#endif
