/* Connections of the PostgreSQL engine: a pool of libpq connections to
 * one database, the engine's view of whether the database is reachable,
 * reconnects with backoff, and conninfo redaction. Other files of the
 * engine (and core/store/postgres/pg_cluster.c & co.) take a connection
 * with cebpg_pool_get, run their statements, and give it back with
 * cebpg_pool_put, reporting a failure with cebpg_pool_failed so the whole
 * engine learns that the database went away.
 *
 * Passwords: the conninfo (URI or key=value) may carry one, and
 * store.password may give one; neither is ever written into an error, a
 * log line or cebpg_pool_display. Every libpq message passes through
 * cebpg_scrub before it is shown.
 *
 * Threading: every function is thread-safe. A connection taken from the
 * pool is the taker's alone until it is put back. */
#ifndef CEB_STORE_PG_CONN_H
#define CEB_STORE_PG_CONN_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cebpg_pool cebpg_pool;

typedef struct cebpg_pool_opts {
  const char *conninfo; /* libpq URI or key=value conninfo (may hold a
                           password) */
  const char *password; /* NULL: the conninfo's, PGPASSWORD or passfile */
  size_t size;          /* most connections open at once (>= 1) */
  const char *application_name; /* NULL: "cebridge" */
} cebpg_pool_opts;

/* Parses the conninfo (never connects). CEB_OK, or CEB_EINVAL with the
 * reason in err (scrubbed). The pool copies what it keeps. */
int cebpg_pool_new(const cebpg_pool_opts *opts, cebpg_pool **out, char *err,
                   size_t errlen);
/* Closes every connection. No connection may be out. NULL is ignored. */
void cebpg_pool_free(cebpg_pool *p);

/* "postgresql://user@host:port/dbname": the database without its password,
 * for logs and errors. Pure after cebpg_pool_new. */
const char *cebpg_pool_display(const cebpg_pool *p);

/* A connection for the caller: an idle one, or a new one while fewer than
 * size are open; waits up to wait_ms for one to be put back. While the
 * database is unreachable a new connection is tried only once the backoff
 * (100 ms doubling to 5 s) has passed: otherwise NULL at once, so callers
 * fail fast (a 503) instead of queueing on a dead server. NULL with the
 * reason in err (may be NULL) on failure. Blocks (connecting: up to the
 * conninfo's connect_timeout, 10 s unless it says otherwise). */
PGconn *cebpg_pool_get(cebpg_pool *p, int64_t wait_ms, char *err,
                       size_t errlen);
/* A connection of the pool's conninfo outside its count (a session of
 * its own: LISTEN, leader locks); the caller PQfinish-es it. NULL with the
 * reason in err (scrubbed). Blocks while connecting. */
PGconn *cebpg_pool_connect(cebpg_pool *p, char *err, size_t errlen);
/* Gives c back. A connection that is broken or not idle (a transaction
 * left open) is closed instead of kept. */
void cebpg_pool_put(cebpg_pool *p, PGconn *c);

/* Closes c, taken from the pool, instead of giving it back. */
void cebpg_pool_discard(cebpg_pool *p, PGconn *c);

/* Tells the pool that a statement on c failed. When the failure is the
 * connection's (it broke, the server shuts down: SQLSTATE class 08, 57P),
 * the database counts as unreachable (cebpg_pool_healthy says 0 with the
 * reason), and the idle connections, which share the server's fate, are
 * dropped. Returns 1 when it was such a failure, else 0 (a statement's
 * own error: the connection stays usable). res may be NULL. */
int cebpg_pool_failed(cebpg_pool *p, PGconn *c, const PGresult *res,
                      const char *what);
/* Counts the connection failures the pool was told of: a connection a
 * caller keeps (a committer's) made before the last one shares that
 * server's fate and is remade. Never blocks. */
uint64_t cebpg_pool_generation(cebpg_pool *p);
/* Tells the pool that a statement succeeded (the database is reachable
 * again). */
void cebpg_pool_ok(cebpg_pool *p);

/* 1 while the database is reachable as far as the pool knows; 0 with
 * the reason in why after a connection failure, until a connection or
 * statement succeeds again. Never blocks. */
int cebpg_pool_healthy(cebpg_pool *p, char *why, size_t whylen);
/* 1 when a reconnect attempt is due (unhealthy and the backoff passed):
 * the engine's committer probes then. */
int cebpg_pool_probe_due(cebpg_pool *p);

/* Copies msg into out with every password the pool knows, and any
 * "password=…" value or "user:password@" part of a URI, replaced by
 * "***", and trailing newlines dropped. p may be NULL (patterns only). */
void cebpg_scrub(const cebpg_pool *p, const char *msg, char *out,
                 size_t outlen);

/* 1 when res (or c, when res is NULL) failed because of the connection or
 * a server shutdown rather than the statement. */
int cebpg_conn_lost(PGconn *c, const PGresult *res);

#endif
