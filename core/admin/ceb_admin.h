/* The admin API: a small HTTP server (libmicrohttpd, loopback by default)
 * for operators and supervisors (docs/operator-guide.md, "The admin API").
 *   GET  /healthz                   200 while the process serves requests
 *   GET  /readyz                    200 when accepting events, else 503
 *   GET  /metrics                   Prometheus text format
 *   GET  /v1/routes                 queue depth, oldest age, in flight,
 *                                   circuit, last minute's throughput
 *   GET  /v1/cluster                bridges sharing the store, leaders,
 *                                   claims per instance and route
 *   GET  /v1/events/{id}/status     per-route delivery status (?source=)
 *   GET  /v1/events/{id}/timeline   the same as a timeline (?source=)
 *   GET  /v1/dlq                    dead letters (?route&type&source&reason
 *                                   &since&until&limit)
 *   GET  /v1/dlq/{id}               one dead letter with its event
 *   POST /v1/dlq/replay             replay (?id | ?route [filters])
 *                                   [&dry_run=true]
 *   POST /v1/dlq/purge              purge, same filters, needs
 *                                   &confirm=true (or &dry_run=true)
 *   GET  /v1/contracts              the contract register (?name=)
 *   GET  /v1/contracts/{n}/{v}      one version's document
 *   GET  /v1/contracts/{n}/diff     ?from=&to=: the diff of two versions
 *   GET  /ui/...                    the operator console (ceb_admin_ui.h)
 * /v1/ requires "Authorization: Bearer <admin.token>". Errors are
 * application/problem+json. Threads: MHD's own; the handlers only read the
 * thread-safe parts of what the view names (metrics, store read
 * connections, the runtime's DLQ calls). */
#ifndef CEB_ADMIN_H
#define CEB_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "config/ceb_conf.h"
#include "metrics/ceb_metrics.h"

struct ceb_runtime;
typedef struct ceb_admin ceb_admin;

/* What the admin API sees of the bridge that runs it: the bridge fills it
 * in (core/bridge/ceb_bridge_run.c) and admin includes no bridge header.
 * Everything it points to is borrowed and outlives the admin API: the
 * bridge starts the API after it set these up and stops it before it
 * frees them. */
typedef struct ceb_admin_view {
  const ceb_conf *conf;   /* [bridge] admin.* and the routes */
  ceb_metrics *metrics;   /* rendered at /metrics */
  struct ceb_runtime *rt; /* NULL while waiting for the store: /readyz and
                             /v1/ answer 503 */
  int64_t (*now_ms)(void *clock_arg); /* host clock, ms since the epoch;
                                         called from MHD's threads */
  void *clock_arg;
} ceb_admin_view;

/* Starts the server on [bridge] admin.listen (CEB_OK and *out NULL when it
 * is "off"). view is copied. Control thread. */
int ceb_admin_start(const ceb_admin_view *view, ceb_admin **out, char *err,
                    size_t errlen);
/* Readiness switch (drain sets it to 0 before sources stop). */
void ceb_admin_set_ready(ceb_admin *a, int ready);
/* The bound port (useful with port 0). */
int ceb_admin_port(const ceb_admin *a);
/* Stops and frees; NULL ignored. Control thread. */
void ceb_admin_stop(ceb_admin *a);

#endif
