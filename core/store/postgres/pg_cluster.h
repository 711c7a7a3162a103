/* Several bridges on one PostgreSQL database: what the engine adds besides
 * the shared tables (core/store/postgres/pg_cluster.c, pg_notify.c,
 * pg_pull.c):
 *  - wake-ups (pg_notify.c): after a group that ingested deliveries or
 *    settled one, the engine NOTIFYs channel "ceb_work" with each route's
 *    name (only while another bridge listens: pg_notify.c); a listener
 *    thread on its own connection hears the other bridges'
 *    notifications and calls the store's wake listener (the delivery
 *    engine), and, after it lost its connection, wakes every route once
 *    (what it missed is recounted);
 *  - leaders (pg_cluster.c): ceb_store_try_lead holds a session advisory
 *    lock per task on a connection of its own; losing that connection
 *    gives every task up, and the next call tries again;
 *  - the instances table with heartbeats and the cluster view;
 *  - pull queues (pg_pull.c), appended by a writer thread in groups.
 * Wiring (pg_engine.c, pg_internal.h, pg_conn.h):
 *  - struct ceb_store_impl gains: ceb_store *owner (open's owner: the
 *    notification thread calls ceb_store_woken(owner, route));
 *    cebpg_cluster *notify; cebpg_pull *pull; and for the leader session
 *    pthread_mutex_t lead_lock, PGconn *lead_conn, char **held,
 *    size_t nheld, capheld;
 *  - pg_conn.h gains cebpg_pool_connect(pool, err, errlen): a connection
 *    of the pool's conninfo outside its count (the caller PQfinish-es it);
 *  - open starts cebpg_notify_start and cebpg_pull_start after the
 *    committer; close stops them first (pull, then notify), then
 *    cebpg_lead_close;
 *  - the committer's finish_group calls cebpg_notify_route for each route
 *    of an ingest that inserted a delivery and of a settle that ended a
 *    delivery or put it back (done, dead, pending), and dlq_replay for
 *    each route it replayed;
 *  - the table: pull_* = cebpg_pull_*, shared = 1, try_lead =
 *    cebpg_try_lead, heartbeat, leave, cluster = cebpg_cluster_view;
 *  - a migration adds pull_event, pull_queue, instances and leaders (as
 *    the SQLite engine's schema 10).
 * Threading: every function is thread-safe. */
#ifndef CEB_STORE_PG_CLUSTER_H
#define CEB_STORE_PG_CLUSTER_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "store/ceb_store.h"

typedef struct ceb_store_impl ceb_store_impl;
typedef struct cebpg_cluster cebpg_cluster;
typedef struct cebpg_pull cebpg_pull;

/* ---- pg_notify.c ---- */
/* Starts the listener thread (it connects by itself, with backoff).
 * CEB_OK or < 0 with err. */
int cebpg_notify_start(ceb_store_impl *s, cebpg_cluster **out, char *err,
                       size_t errlen);
/* Stops the thread and closes its connection. NULL ignored. */
void cebpg_notify_stop(cebpg_cluster *c);
/* A wake listener of its own (tests); without one, notifications go to
 * ceb_store_woken(owner): the delivery engine. Any thread. */
void cebpg_notify_set_listener(cebpg_cluster *c, ceb_store_wake_fn fn,
                               void *arg);
/* Queues a notification for route (coalesced: one per route per round of
 * the thread). Never blocks on the network: the thread sends it. */
void cebpg_notify_route(cebpg_cluster *c, const char *route);
/* The same for a pull queue appended to (channel "ceb_pull"): the other
 * bridges' long polls read again (ceb_store_pull_woken). */
void cebpg_notify_pull(cebpg_cluster *c, const char *queue);
/* Names notified and names dropped while no other bridge listened, since
 * start. NULL: zeros. Any thread. */
void cebpg_notify_counts(cebpg_cluster *c, uint64_t *sent, uint64_t *skipped);

/* ---- pg_cluster.c ---- */
int cebpg_try_lead(ceb_store_impl *s, const char *task, int64_t now);
int cebpg_heartbeat(ceb_store_impl *s, const ceb_store_member *m, int64_t now);
int cebpg_leave(ceb_store_impl *s);
json_t *cebpg_cluster_view(ceb_store_impl *s, int64_t now);
/* Closes the leader session (every task given up). */
void cebpg_lead_close(ceb_store_impl *s);

/* ---- pg_pull.c ---- */
int cebpg_pull_start(ceb_store_impl *s, cebpg_pull **out, char *err,
                     size_t errlen);
/* Runs what is queued (each done called) and joins the writer. */
void cebpg_pull_stop(cebpg_pull *p);
int cebpg_pull_append(ceb_store_impl *s, const char *queue, const char *key,
                      const char *json, size_t len, size_t max,
                      ceb_store_done_fn done, void *arg);
int cebpg_pull_fetch(ceb_store_impl *s, const char *queue, int64_t after,
                     size_t max, ceb_store_pull_visit visit, void *arg,
                     int64_t *last);
int cebpg_pull_commit(ceb_store_impl *s, const char *queue, int64_t cursor,
                      int64_t *committed);
int cebpg_pull_stats(ceb_store_impl *s, const char *queue, int64_t *depth,
                     int64_t *last, int64_t *committed);

#endif
