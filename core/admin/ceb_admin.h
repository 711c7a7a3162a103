/* The admin API: a small HTTP server (libmicrohttpd, loopback by default)
 * for operators and supervisors.
 *   GET  /healthz                    200 while the process serves requests
 *   GET  /readyz                     200 when accepting events, else 503
 *   GET  /metrics                    Prometheus text format
 *   GET  /v1/routes                  routes: queue depth, oldest age, sink
 *   GET  /v1/events/{id}/status      per-route delivery status (?source=)
 *   GET  /v1/dlq                     dead letters (?route&type&source&reason&since&limit)
 *   GET  /v1/dlq/{id}                one dead letter with its event
 *   POST /v1/dlq/replay              replay (?id | ?route [filters]) [&dry_run=true]
 *   POST /v1/dlq/purge               purge, same filters, needs &confirm=true
 *   GET  /v1/contracts               the contract register
 * /v1/ requires "Authorization: Bearer <admin.token>" when a token is set.
 * Errors are application/problem+json. Threads: MHD's own; the handlers only
 * read the bridge's thread-safe parts (metrics, store read connections). */
#ifndef CEB_ADMIN_H
#define CEB_ADMIN_H

#include <stddef.h>

struct ceb_bridge;
typedef struct ceb_admin ceb_admin;

/* Starts the server on [bridge] admin.listen. Control thread. */
int ceb_admin_start(struct ceb_bridge *b, ceb_admin **out, char *err,
                    size_t errlen);
/* Readiness switch (drain sets it to 0 before sources stop). */
void ceb_admin_set_ready(ceb_admin *a, int ready);
/* The bound port (useful with port 0). */
int ceb_admin_port(const ceb_admin *a);
/* Stops and frees; NULL ignored. Control thread. */
void ceb_admin_stop(ceb_admin *a);

#endif
