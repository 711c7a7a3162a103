/* Connection guard of the plugins' listeners (the intermediary, the pull
 * API): deadlines and a minimum data rate per request, and a reserve of
 * connection slots.
 *
 * The guard itself is lib/mhd_guard (mhd_guard.h says why libmicrohttpd
 * needs one and how it closes connections; the admin API uses it too):
 * this file binds it to a plugin's host (metrics http_connections_closed_
 * total{reason} and the gauge http_connections_open, the host's log) and
 * to the sources' config keys, so plugins see only this header. It closes
 *  - a connection whose request head is not complete within head_ms of its
 *    start (first request) or keepalive_ms of the previous response;
 *  - a request whose body is not complete within body_ms of its head, or
 *    that falls below min_rate bytes/s after 5 s;
 *  - when the open connections reach max_conn - reserve, the connection that
 *    has waited longest for its request head (slow, idle or kept alive), one
 *    per new connection, so that new clients find a slot.
 * A request being handled (submitted, waiting for durability, answered) is
 * never closed by the guard. Each close is counted by reason and logged at
 * most once per 10 s per reason, with the count and one client address.
 *
 * Threading: one guard per source, shared by its daemons; every function is
 * thread-safe. Records belong to the guard (created by opened, freed by
 * closed, both on the connection's daemon thread). */
#ifndef HTTP_GUARD_H
#define HTTP_GUARD_H

#include <ceb/ceb.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>

/* The same values as lib/mhd_guard's mhd_guard_reason, in its order. */
typedef enum http_close_reason {
  HTTP_CLOSE_HEAD_TIMEOUT = 0, /* head not complete within its deadline */
  HTTP_CLOSE_BODY_TIMEOUT,     /* body not complete within its deadline */
  HTTP_CLOSE_BODY_RATE,        /* body below the minimum rate */
  HTTP_CLOSE_EVICTED,          /* waiting for a head when slots ran short */
  HTTP_CLOSE_BODY_TOO_LARGE,   /* far over max_body: not read to the end */
  HTTP_CLOSE_NREASONS
} http_close_reason;

typedef struct http_guard_cfg {
  int64_t head_ms, keepalive_ms, body_ms;
  uint64_t min_rate; /* body bytes per second; 0: no minimum */
  unsigned max_conn, reserve;
} http_guard_cfg;

typedef struct http_guard http_guard;
/* a connection's record: lib/mhd_guard's */
typedef struct mhd_guard_conn http_guard_conn;

/* Starts the guard's thread. NULL on allocation or thread failure. */
http_guard *http_guard_new(const ceb_host *host, ceb_instance *inst,
                           const http_guard_cfg *cfg);
/* Stops the thread and frees the guard; call after the daemons stopped
 * (every record closed). NULL is ignored. */
void http_guard_free(http_guard *g);

/* A connection started (NOTIFY_CONNECTION STARTED): returns its record, to
 * keep as libmicrohttpd's socket context; NULL when out of memory (the
 * connection then goes unguarded). */
http_guard_conn *http_guard_opened(http_guard *g, struct MHD_Connection *conn);
/* The connection ended (NOTIFY_CONNECTION CLOSED); rec may be NULL. */
void http_guard_closed(http_guard *g, http_guard_conn *rec);

/* Called by the accept policy with the open connections counted: at
 * max_conn - reserve or more, closes the connection that has waited
 * longest for a request head (at least EVICT_MIN_AGE_MS). 1 when one was
 * closed (the new connection may take its place). */
int http_guard_admit(http_guard *g, unsigned open);

/* Request phases, from the access handler (the connection's thread).
 * head_done: the head is complete, the body's deadline and rate start (also
 * after a wait marked busy before the body is read, e.g. for the JWKS). */
void http_guard_head_done(struct MHD_Connection *conn);
void http_guard_body(struct MHD_Connection *conn, size_t n);
/* The request is complete and is being handled: exempt from the guard.
 * Returns 0 when the guard is already closing the connection (then the
 * request must not be acted on). */
int http_guard_busy(struct MHD_Connection *conn);
/* The response was sent (NOTIFY_COMPLETED): the next head's clock starts. */
void http_guard_request_done(struct MHD_Connection *conn);

/* libmicrohttpd's error logger (MHD_OPTION_EXTERNAL_LOGGER) for the
 * guard's listener: it logs a line per failing connection ("closed by
 * remote side with incomplete request", ...), thousands a second under an
 * attack or when the guard closes slow connections, so the same message
 * (format) is logged at most once per 10 s, with the number left out. */
void http_guard_mhd_log(http_guard *g, const char *fmt, va_list ap);

/* Counts and logs a close decided elsewhere (the handler returning MHD_NO). */
void http_guard_note(http_guard *g, struct MHD_Connection *conn,
                     http_close_reason why);

#endif
