/* The admin API's connection guard: deadlines for a request's head and
 * body, and a slot freed for a new client when the connections run out.
 *
 * Why: libmicrohttpd's connection timeout is an idle timer every byte
 * resets, so a client sending a header byte every 20 s never times out,
 * and 64 of them (CONNECTION_LIMIT) held every slot: the operator and the
 * /healthz and /readyz probes were locked out for as long as they kept
 * dripping (a liveness probe then restarts the bridge). The intermediary
 * has the same guard with its own keys (plugins/common/http_guard.c).
 *
 * The guard itself is lib/mhd_guard (shared with the intermediary's
 * listeners through plugins/common/http_guard.c): this file binds it to
 * the admin API's config keys, metrics and log. It closes
 *  - a connection whose request head is not complete within head_ms of its
 *    start, or within keepalive_ms of the previous answer on a kept-alive
 *    connection (head_timeout);
 *  - a request whose body is not complete within body_ms of its head
 *    (body_timeout);
 *  - when every one of max_conn slots is taken, the connection that has
 *    waited longest for its request head (at least 1 s), so that a new
 *    connection (a probe, the operator) takes its place (evicted).
 * A request being answered (a store read, a replay) is never closed by the
 * guard. Each close is counted in
 * cebridge_admin_connections_closed_total{reason} and logged at most once
 * per 10 s per reason with the count and the last client's address.
 *
 * Threading: every function is thread-safe. A record belongs to the guard
 * (made by ceb_admin_conns_opened, freed by ceb_admin_conns_closed, both
 * on libmicrohttpd's threads). */
#ifndef CEB_ADMIN_CONNS_H
#define CEB_ADMIN_CONNS_H

#include <stdarg.h>
#include <stdint.h>

#include "metrics/ceb_metrics.h"

struct MHD_Connection;

typedef struct ceb_admin_conns_cfg {
  int64_t head_ms, keepalive_ms, body_ms;
  unsigned max_conn; /* slots; one more connection evicts */
} ceb_admin_conns_cfg;

typedef struct ceb_admin_conns ceb_admin_conns;
/* a connection's record: lib/mhd_guard's */
typedef struct mhd_guard_conn ceb_admin_conn;

/* Starts the guard's thread; metrics is borrowed (outlives the guard).
 * NULL on allocation or thread failure. Control thread. */
ceb_admin_conns *ceb_admin_conns_new(ceb_metrics *metrics,
                                     const ceb_admin_conns_cfg *cfg);
/* Stops the thread and frees the guard; after the daemon stopped (every
 * record closed). NULL ignored. Control thread. */
void ceb_admin_conns_free(ceb_admin_conns *g);

/* MHD_CONNECTION_NOTIFY_STARTED: the connection's record, to keep as its
 * socket context; NULL when out of memory (it goes unguarded). */
ceb_admin_conn *ceb_admin_conns_opened(ceb_admin_conns *g,
                                       struct MHD_Connection *c);
/* MHD_CONNECTION_NOTIFY_CLOSED; rec may be NULL. */
void ceb_admin_conns_closed(ceb_admin_conns *g, ceb_admin_conn *rec);

/* The accept policy: 1 when a new connection may be taken. Under max_conn
 * open connections, yes; at it, the connection waiting longest for its
 * head is closed for the new one, or no when none waits (every slot is
 * answering). Listening thread. */
int ceb_admin_conns_admit(ceb_admin_conns *g);

/* Request phases, from the access handler (the connection's thread).
 * head_done: the head is complete, the body's deadline starts. */
void ceb_admin_conns_head_done(struct MHD_Connection *c);
/* The request is being answered: exempt from the guard. 0 when the guard
 * is closing the connection already (then answer nothing: MHD_NO). */
int ceb_admin_conns_busy(struct MHD_Connection *c);
/* The answer was sent (NOTIFY_COMPLETED): the next head's clock starts. */
void ceb_admin_conns_done(struct MHD_Connection *c);

/* MHD_OPTION_EXTERNAL_LOGGER (cls: the guard): libmicrohttpd logs a line
 * per failing connection ("closed by remote side with incomplete request",
 * ...), hundreds a second under slow or refused clients: each message
 * (its format) goes to the bridge's log (control characters escaped) at
 * most once per 10 s, with the number left out. Any thread. */
void ceb_admin_conns_mhd_log(void *cls, const char *fmt, va_list ap);

#endif
