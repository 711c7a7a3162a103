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
  int started;
  int store_unavailable; /* the last start failed opening the store (I/O) */
};

#endif
