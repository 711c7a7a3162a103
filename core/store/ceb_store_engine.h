/* What a store engine implements: one table of operations, filled in by
 * each engine (core/store/sqlite/store_engine.c, core/store/postgres/) and
 * called only by the dispatch (store_dispatch.c), which adds what is the
 * same for every engine: choosing the engine from the spec
 * (store_select.c), the instance id, the blocking forms of async ops.
 *
 * Each op's contract is the one of its ceb_store_* function in
 * ceb_store.h, with these notes for an engine author:
 *  - self is the engine's own state. Every engine defines struct
 *    ceb_store_impl in its own files (never in a header another engine
 *    includes) and hands it out from open.
 *  - Durability: done / a blocking return of an op marked "synced" in
 *    ceb_store.h comes only after the write is durable (SQLite: the WAL
 *    fsync; PostgreSQL: COMMIT with synchronous_commit on). How writes are
 *    grouped (one transaction for many ingests) is the engine's business.
 *  - Async ops (ingest, settle, dlq_forwarded): return CEB_OK and call done
 *    exactly once later, from any engine thread, or return an error and
 *    never call it. ingest respects queue_max (CEB_EBUSY) only when bounded
 *    is 1.
 *  - ingest must call the listener set by set_ingest_listener after the
 *    batch committed and before any later write of the store runs, and
 *    before the batch's done.
 *  - Leases: claim records (owner = opts.instance, lease_until, fence) on
 *    each claimed row; fence is per delivery row, strictly increasing
 *    across claims of that row (a column incremented by the claim does).
 *    settle applies only WHERE state = in progress AND fence = r->fence,
 *    else changes nothing and reports CEB_ECONFLICT. A row in progress
 *    whose lease_until <= the claim's now is claimable by any instance
 *    (FIFO holds: a row in progress was claimed as its key's head).
 *    With several processes on one store the claim must be atomic against
 *    the others (PostgreSQL: SELECT … FOR UPDATE SKIP LOCKED on the heads,
 *    or an equivalent), and a key's head stays blocked for everyone while
 *    any instance holds it.
 *  - recover releases only what this instance may own (see
 *    ceb_store_recover); idem_reset_inflight likewise.
 *  - Time: due times, lease ends, expiries and the rows' timestamps come
 *    from the now the caller passes (ms since the epoch), never from a
 *    clock of the engine's own (nor the database server's): the delivery
 *    engine runs on an injectable clock, and the contract suite depends
 *    on it.
 *  - Strings and JSON returned are the caller's (malloc / new references).
 *  - tests/store/ (store_contract.h) is the definition: an engine has a
 *    runner there that passes the whole suite.
 *
 * Versioning: struct_size first; an engine built against an older table
 * (smaller struct_size) is refused at open, new ops are appended at the
 * end. */
#ifndef CEB_STORE_ENGINE_H
#define CEB_STORE_ENGINE_H

#include <pthread.h>

#include "store/ceb_store.h"

#define CEB_STORE_ENGINE_VERSION 1

typedef struct ceb_store_impl ceb_store_impl;

typedef struct ceb_store_engine {
  size_t struct_size; /* sizeof(ceb_store_engine) the engine was built with */
  uint32_t version;   /* CEB_STORE_ENGINE_VERSION */
  const char *name;   /* "sqlite", "postgresql" */

  /* location: the spec with the engine's prefix taken off ("sqlite:"), or
   * the whole spec (a PostgreSQL URI or conninfo). opts->instance is set
   * (never NULL or "") and opts->lease_ms > 0. owner is the handle the
   * engine serves: its listener thread calls ceb_store_woken(owner, route)
   * for work other writers changed (valid until close returns). Errors
   * as ceb_store_open; err must never carry a password. */
  int (*open)(const ceb_store_opts *opts, const char *location,
              ceb_store *owner, ceb_store_impl **out, char *err, size_t errlen);
  void (*close)(ceb_store_impl *self);
  int (*writable)(ceb_store_impl *self, char *why, size_t whylen);
  void (*stats)(ceb_store_impl *self, ceb_store_stats *out);

  void (*set_ingest_listener)(ceb_store_impl *self,
                              ceb_store_ingest_listener fn, void *arg);
  int (*ingest)(ceb_store_impl *self, ceb_ingest_batch *batch, int bounded,
                ceb_store_done_fn done, void *arg);

  int (*claim)(ceb_store_impl *self, const char *route, int64_t now, size_t max,
               int64_t lease_ms, ceb_claim **out, size_t *count);
  int64_t (*next_due)(ceb_store_impl *self, const char *route, int64_t after);
  int (*settle)(ceb_store_impl *self, ceb_attempt_result *r,
                ceb_store_done_fn done, void *arg);
  int (*recover)(ceb_store_impl *self, int64_t now);
  int64_t (*count_open)(ceb_store_impl *self, const char *route);
  int64_t (*oldest_open)(ceb_store_impl *self, const char *route);
  /* max > 0: only the newest max matches (ceb_store_event_status_max) */
  json_t *(*event_status)(ceb_store_impl *self, const char *id,
                          const char *source, size_t max);

  json_t *(*dlq_list)(ceb_store_impl *self, const ceb_dlq_filter *f);
  json_t *(*dlq_show)(ceb_store_impl *self, int64_t id);
  int (*dlq_replay)(ceb_store_impl *self, const ceb_dlq_filter *f, int64_t now,
                    int dry_run, size_t *count, json_t *replayed);
  int (*dlq_purge)(ceb_store_impl *self, const ceb_dlq_filter *f, int dry_run,
                   size_t *count);
  int (*dlq_forwarded)(ceb_store_impl *self, int64_t id, int64_t now,
                       ceb_store_done_fn done, void *arg);
  int (*dlq_unforwarded)(ceb_store_impl *self, const char *route, int64_t after,
                         size_t max, int64_t *ids, size_t *n);
  char *(*dlq_forward_event)(ceb_store_impl *self, int64_t id, int *status);

  int (*idem_begin)(ceb_store_impl *self, const char *client, const char *key,
                    const char *fingerprint, int64_t now, ceb_idem_result *res);
  int (*idem_finish)(ceb_store_impl *self, const char *client, const char *key,
                     int http_status, const char *content_type,
                     const char *body, size_t body_len, int64_t now,
                     int64_t ttl_ms);
  int (*idem_abort)(ceb_store_impl *self, const char *client, const char *key);
  int (*idem_reset_inflight)(ceb_store_impl *self);

  int (*contract_put)(ceb_store_impl *self, const char *name,
                      const char *version, const char *document, size_t len,
                      const char *provenance, int64_t now);
  json_t *(*contract_list)(ceb_store_impl *self, const char *name);
  char *(*contract_get)(ceb_store_impl *self, const char *name,
                        const char *version, size_t *len);

  int (*sweep)(ceb_store_impl *self, int64_t now, int64_t retention_ms,
               size_t chunk);

  /* Pull queues: append is async and synced (as ingest, never bounded by
   * queue_max: the max of the call bounds it); with several processes on
   * one store the next seq of a queue must be taken atomically against
   * the others (a row lock on the queue's row). */
  int (*pull_append)(ceb_store_impl *self, const char *queue, const char *key,
                     const char *json, size_t len, size_t max,
                     ceb_store_done_fn done, void *arg);
  int (*pull_fetch)(ceb_store_impl *self, const char *queue, int64_t after,
                    size_t max, ceb_store_pull_visit visit, void *arg,
                    int64_t *last);
  int (*pull_commit)(ceb_store_impl *self, const char *queue, int64_t cursor,
                     int64_t *committed);
  int (*pull_stats)(ceb_store_impl *self, const char *queue, int64_t *depth,
                    int64_t *last, int64_t *committed);

  /* Instances: 1 when other processes may write the store (PostgreSQL),
   * and leadership of a task (PostgreSQL: an advisory lock held on a
   * connection of its own; SQLite: always 1). */
  int (*shared)(ceb_store_impl *self);
  int (*try_lead)(ceb_store_impl *self, const char *task, int64_t now);

  /* max > 0: only the newest max rows (ceb_store_dlq_of_seq_max) */
  json_t *(*dlq_of_seq)(ceb_store_impl *self, int64_t seq, size_t max);

  /* The cluster view: this instance's heartbeat (which also drops rows
   * silent for an hour), its leaving, and the view (ceb_store.h). */
  int (*heartbeat)(ceb_store_impl *self, const ceb_store_member *m,
                   int64_t now);
  int (*leave)(ceb_store_impl *self);
  json_t *(*cluster)(ceb_store_impl *self, int64_t now);
  /* optional (NULL: the engine keeps no attempt history) */
  json_t *(*attempts_of)(ceb_store_impl *self, int64_t seq, size_t max);
  /* Sink life cycle (ceb_store_sink_state_*): one row per sink, shared by
   * the instances on the store (PostgreSQL: a table like SQLite's). */
  int (*sink_state_get)(ceb_store_impl *self, const char *sink,
                        ceb_sink_state *out);
  int (*sink_state_put)(ceb_store_impl *self, const char *sink,
                        const ceb_sink_state *state);
  json_t *(*sink_states)(ceb_store_impl *self);
  /* The archive (ceb_store_replay_range); NULL: CEB_EUNSUPPORTED. Copies
   * carry replay_of, which the claim returns (ceb_claim.replay_of). */
  int (*replay_range)(ceb_store_impl *self, const ceb_replay_filter *f,
                      int64_t now, int dry_run, size_t *count, int *exists);
  /* ceb_store_count_open_key; NULL: CEB_EUNSUPPORTED (no per-key limit) */
  int64_t (*count_open_key)(ceb_store_impl *self, const char *route,
                            const char *key, int64_t cap);
  /* ceb_store_key_stats; NULL: the status API answers 501 */
  json_t *(*key_stats)(ceb_store_impl *self, const char *route, size_t limit);
  /* ceb_store_callback_url; NULL: CEB_EUNSUPPORTED. An engine that has it
   * keeps ceb_ingest_event.callback_* and queues the callback delivery in
   * the final settle's transaction (ceb_store.h). */
  char *(*callback_url)(ceb_store_impl *self, int64_t seq, int *status);
  /* ceb_store_set_claim_hook; NULL: no claims at ingest (the hook is
   * ignored). An engine that has it honours the contract above for the
   * rows it claims at ingest as for its claims. */
  void (*set_claim_hook)(ceb_store_impl *self,
                         const ceb_store_claim_hook *hook);
} ceb_store_engine;

/* The handle ceb_store_open returns. Engines' own tests reach their state
 * through impl (the SQLite engine's unit tests do). */
struct ceb_store {
  const ceb_store_engine *eng;
  ceb_store_impl *impl;
  char instance[CEB_STORE_INSTANCE_MAX];
  pthread_mutex_t wake_lock; /* guards woken, woken_arg, pulled, pulled_arg */
  ceb_store_wake_fn woken;   /* the delivery engine (ceb_store_woken) */
  void *woken_arg;
  ceb_store_wake_fn pulled; /* the host's long polls (ceb_store_pull_woken) */
  void *pulled_arg;
};

/* The engines this build has (store_select.c). */
extern const ceb_store_engine ceb_store_sqlite_engine;
#ifdef CEB_HAVE_POSTGRES
extern const ceb_store_engine ceb_store_postgres_engine;
#endif

/* Picks the engine of spec and the location it gets (see ceb_store_opts:
 * spec). CEB_OK, or CEB_EUNSUPPORTED / CEB_EINVAL with the reason in err
 * (the spec itself is never quoted whole: it may hold a password). */
int ceb_store_select(const char *spec, const ceb_store_engine **eng,
                     const char **location, char *err, size_t errlen);

#endif
