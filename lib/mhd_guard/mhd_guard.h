/* A connection guard for libmicrohttpd listeners: deadlines for a
 * request's head and body, a minimum body rate, and a slot freed for a new
 * client when connections run short.
 *
 * Why: libmicrohttpd's connection_timeout is an inactivity timer that
 * every byte resets, so a client sending a header byte every few seconds
 * holds its slot for ever, and enough of them (or of idle kept-alive
 * connections) keep every other client out. The guard closes
 *  - a connection whose request head is not complete within head_ms of its
 *    start (first request) or keepalive_ms of the previous answer;
 *  - a request whose body is not complete within body_ms of its head, or
 *    that falls below min_rate bytes/s after MHD_GUARD_RATE_GRACE_MS;
 *  - on mhd_guard_evict (the listener's accept policy decides when), the
 *    connection that has waited longest for its request head.
 * A request being handled (mhd_guard_busy until mhd_guard_request_done) is
 * never closed by the guard. Closing is shutdown(2) of the socket from the
 * guard's thread (or the accepting thread, for an eviction): libmicrohttpd
 * sees the end of the stream and cleans up on the connection's own thread
 * (it calls the CLOSED notification before close(2), so the descriptor is
 * not reused under the guard).
 *
 * Host-neutral: it knows neither the bridge's core nor the plugin ABI; what
 * it counts and logs leaves through mhd_guard_hooks. The admin API
 * (core/admin/ceb_admin_conns.c) and the plugins' listeners
 * (plugins/common/http_guard.c) both link it: core may not link plugin
 * code and plugins may not link core, so the one implementation sits in
 * lib/, below both (docs/architecture.md).
 *
 * Threading: one guard per listener (shared by its daemons); every
 * function is thread-safe. A record belongs to the guard (made by
 * mhd_guard_opened, freed by mhd_guard_closed, both on libmicrohttpd's
 * threads). */
#ifndef MHD_GUARD_H
#define MHD_GUARD_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct MHD_Connection;

/* A body's rate is judged only after this long (slow starts are normal). */
#define MHD_GUARD_RATE_GRACE_MS 5000

typedef enum mhd_guard_reason {
  MHD_GUARD_HEAD_TIMEOUT = 0, /* head not complete within its deadline */
  MHD_GUARD_BODY_TIMEOUT,     /* body not complete within its deadline */
  MHD_GUARD_BODY_RATE,        /* body below the minimum rate */
  MHD_GUARD_EVICTED,          /* waiting for a head when slots ran short */
  MHD_GUARD_BODY_TOO_LARGE,   /* far over the size limit: not read */
  MHD_GUARD_NREASONS
} mhd_guard_reason;

/* The reason's label value: "head_timeout", "body_timeout", "body_rate",
 * "evicted", "body_too_large". */
const char *mhd_guard_reason_code(mhd_guard_reason why);

/* What the guard tells its owner. Called without the guard's lock held
 * unless said otherwise; arg is the hooks' own. */
typedef struct mhd_guard_hooks {
  void *arg;
  /* One connection closed for why: called once per close (a counter). */
  void (*closed)(void *arg, mhd_guard_reason why);
  /* The text of why for a log line, naming the owner's config keys
   * (e.g. "request head not complete within request_head_timeout (10000
   * ms)"). */
  void (*describe)(void *arg, mhd_guard_reason why, char *buf, size_t n);
  /* A warning line, rate-limited by the guard, not yet escaped: the
   * owner's logger escapes control characters. */
  void (*warn)(void *arg, const char *line);
  /* The open connections changed; under the guard's lock, so the last
   * value given is the current one. May be NULL. */
  void (*open_changed)(void *arg, unsigned open);
} mhd_guard_hooks;

typedef struct mhd_guard_cfg {
  int64_t head_ms, keepalive_ms, body_ms;
  uint64_t min_rate;       /* body bytes per second; 0: no minimum */
  int64_t sweep_ms;        /* how often deadlines are checked; 0: 250 */
  const char *log_prefix;  /* put before every line ("admin API: "), or NULL */
  const char *thread_name; /* the sweeper's name (15 bytes at most), or NULL */
} mhd_guard_cfg;

typedef struct mhd_guard mhd_guard;
typedef struct mhd_guard_conn mhd_guard_conn;

/* Starts the guard's thread; cfg and hooks are copied (log_prefix and
 * thread_name must outlive the guard). NULL on allocation or thread
 * failure. */
mhd_guard *mhd_guard_new(const mhd_guard_cfg *cfg, const mhd_guard_hooks *h);
/* Stops the thread and frees the guard; after the daemons stopped (every
 * record closed). NULL is ignored. */
void mhd_guard_free(mhd_guard *g);

/* MHD_CONNECTION_NOTIFY_STARTED: the connection's record, to keep as its
 * socket context; NULL when out of memory (the connection then goes
 * unguarded) or g is NULL. */
mhd_guard_conn *mhd_guard_opened(mhd_guard *g, struct MHD_Connection *conn);
/* MHD_CONNECTION_NOTIFY_CLOSED; rec may be NULL. */
void mhd_guard_closed(mhd_guard *g, mhd_guard_conn *rec);

/* Open connections that are not being closed: the slots in use. */
unsigned mhd_guard_live(mhd_guard *g);
/* Closes the connection that has waited longest for a request head (for at
 * least 1 s: a new connection is not pushed out by the next one), counted
 * and logged as evicted. 1 when one was closed: a new connection may take
 * its place. */
int mhd_guard_evict(mhd_guard *g);

/* Request phases, from the access handler (the connection's thread).
 * head_done: the head is complete, the body's deadline and rate start
 * (also after a wait marked busy before the body was read). */
void mhd_guard_head_done(struct MHD_Connection *conn);
/* n more body bytes arrived (for the minimum rate). */
void mhd_guard_body(struct MHD_Connection *conn, size_t n);
/* The request is being handled: exempt from the guard. 0 when the guard
 * is closing the connection already (then do not act on the request). */
int mhd_guard_busy(struct MHD_Connection *conn);
/* The answer was sent (NOTIFY_COMPLETED): the next head's clock starts. */
void mhd_guard_request_done(struct MHD_Connection *conn);

/* Counts and logs a close decided elsewhere (the handler returning MHD_NO,
 * e.g. for a body far over the limit). */
void mhd_guard_note(mhd_guard *g, struct MHD_Connection *conn,
                    mhd_guard_reason why);

/* libmicrohttpd's error logger (MHD_OPTION_EXTERNAL_LOGGER): it logs a
 * line per failing connection ("closed by remote side with incomplete
 * request", ...), hundreds a second under slow or refused clients, so
 * each message (its format) is passed on at most once per 10 s, with the
 * number left out. */
void mhd_guard_mhd_log(mhd_guard *g, const char *fmt, va_list ap);

#endif
