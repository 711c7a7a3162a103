/* A route to a sink that sends batches: the route's max_inflight against
 * the sink's batch size. A sink in the CloudEvents batch mode (`mode =
 * batch`, `batch.max` N: the http sink) sends a batch once N deliveries are
 * in hand or its `batch.wait` passed; the engine hands it at most the
 * route's max_inflight. Below N no batch ever fills and a backlog drains at
 * max_inflight events per batch.wait (64 per 200 ms with the defaults).
 * Pure functions over the parsed sections. */
#ifndef CEB_ROUTE_BATCH_H
#define CEB_ROUTE_BATCH_H

#include <stdint.h>

#include <ceb/config.h>

#include "config/ceb_host_cfg.h"

typedef struct ceb_route_batch {
  uint32_t batch_max;    /* the sink's batch size; 0: the sink does not batch */
  uint32_t max_inflight; /* the route's effective max_inflight */
  int explicit_inflight; /* max_inflight is set in the route's section */
  int cannot_fill;       /* explicit max_inflight < batch_max: check warns */
} ceb_route_batch;

/* The effective max_inflight of a route (route: its bound section,
 * max_inflight: its parsed value) to the sink of section sink_cfg: the route's
 * own when set in its section, else, for a batching sink, at least two batches
 * (2 * batch.max: one in flight while the next fills), else max_inflight. */
ceb_route_batch ceb_route_batch_fit(const ceb_route_cfg *route,
                                    uint32_t max_inflight,
                                    const ceb_config *sink_cfg);

#endif
