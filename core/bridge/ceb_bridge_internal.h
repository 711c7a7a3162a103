/* Private state of the bridge, shared by its load and run halves. */
#ifndef CEB_BRIDGE_INTERNAL_H
#define CEB_BRIDGE_INTERNAL_H

#include <limits.h>

#include "bridge/ceb_bridge.h"

struct ceb_admin;
struct ceb_contracts;

struct ceb_bridge {
  ceb_conf *conf;
  ceb_loader *loader;
  char plugin_dir[PATH_MAX];
  ceb_instance **instances; /* owned; in config order */
  size_t ninstances;
  ceb_metrics *metrics;
  struct ceb_runtime *rt;
  struct ceb_admin *admin;
  struct ceb_contracts *contracts; /* pins resolved at start (contracts) */
  ceb_bridge_clock_fn clock;
  void *clock_arg;
  int dry_run; /* ceb_bridge_opts.dry_run */
  int started;
  int store_unavailable; /* the last start failed opening the store (I/O) */
};

/* Why an init failed: file:line and "[component] message". */
typedef struct cebb_init_error {
  char file[256];
  int line;
  char message[720];
} cebb_init_error;

/* Runs inst's plugin init with data_dir, capturing its ERROR log lines
 * (quiet: not logged). CEB_OK (inst->initialised set) or < 0 with e
 * filled. Control thread. */
int cebb_init_instance(ceb_bridge *b, ceb_instance *inst, const char *data_dir,
                       int quiet, cebb_init_error *e);

#endif
