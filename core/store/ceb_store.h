/* The durable store, as the rest of the host sees it: the journal of
 * accepted events, per (event, route) delivery state with leases, the DLQ,
 * idempotency records and the contract register, as operations that say
 * what they mean. No engine type appears here: an engine (core/store/
 * sqlite/, core/store/postgres/) implements the table of
 * ceb_store_engine.h and ceb_store_open picks one from the store spec.
 *
 * Two kinds of operations:
 *  - async ones (ingest, settle, dlq_forwarded_async) take a done callback
 *    that the engine calls exactly once when the op returned CEB_OK. done
 *    runs on an engine thread, must not block and must not call blocking
 *    store functions;
 *  - blocking ones wait for their write (and, where the op says "synced",
 *    for it to be durable) or their read. They must not be called from a
 *    done callback or the ingest listener.
 *
 * Guarantees every engine keeps (tests/store/ is their definition):
 *  - an ingest's done gets CEB_OK only after its rows are durable: the 202,
 *    the offset commit and the PUBACK hang on it;
 *  - dedupe on (client, source, id), within one batch too;
 *  - FIFO per (route, order key): a delivery is claimable only when no
 *    older unsettled delivery of its key exists, whoever holds it;
 *  - a claim holds a lease (this store's instance id, an expiry, a fencing
 *    token); a settle carrying a token that is not the row's current one
 *    changes nothing (CEB_ECONFLICT); an expired lease is claimable again
 *    by any instance.
 *
 * Threading: every function is thread-safe unless noted. */
#ifndef CEB_STORE_H
#define CEB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef struct ceb_store ceb_store;

/* Schema version the SQLite engine writes (PRAGMA user_version). */
#define CEB_STORE_SCHEMA_VERSION 21

/* Delivery states as stored (delivery.state). */
typedef enum ceb_dstate {
  CEB_DS_PENDING = 0,
  CEB_DS_INFLIGHT = 1,
  CEB_DS_RETRYING = 2,
  CEB_DS_DONE = 3,
  CEB_DS_DEAD = 4
} ceb_dstate;

/* "pending", "in-progress", "retrying", "done", "dead". */
const char *ceb_dstate_name(int state);

/* Integrity check at open (ceb_store_opts.check; engines without one
 * ignore it). */
enum {
  CEB_STORE_CHECK_QUICK = 0, /* SQLite: PRAGMA quick_check (the default) */
  CEB_STORE_CHECK_FULL = 1,  /* SQLite: PRAGMA integrity_check */
  CEB_STORE_CHECK_OFF = 2    /* none (huge stores; start time matters) */
};

/* Lease of a claim when neither the opts nor the claim say otherwise. */
#define CEB_STORE_LEASE_DEFAULT_MS 60000
/* Longest instance id kept (longer ones are cut). */
#define CEB_STORE_INSTANCE_MAX 128

typedef struct ceb_store_opts {
  /* The store spec: a file path or "sqlite:PATH" (the SQLite engine,
   * created when missing); "postgresql://…", "postgres://…" or a libpq
   * key=value conninfo ("host=… dbname=…"): the PostgreSQL engine when
   * this build has it. Anything else is refused with a clear error. */
  const char *spec;
  int synchronous_full;  /* 1: durable before done (SQLite: FULL) */
  size_t group_max;      /* most ops per transaction (>= 1) */
  int64_t group_wait_ms; /* wait this long (real time) to fill a group */
  size_t queue_max;      /* most queued ingest ops before CEB_EBUSY */
  int check;             /* CEB_STORE_CHECK_* */
  size_t reserve;        /* SQLite: bytes kept in "<path>.reserve", given
                            up to open on a full disk; 0: none (tools other
                            than the bridge) */
  /* This process among the instances sharing the store: recorded as the
   * owner of its claims. NULL or "": ceb_store_default_instance's. */
  const char *instance;
  /* Shortest lease of a claim (ms); 0: CEB_STORE_LEASE_DEFAULT_MS. A claim
   * asks for more when its attempt may take longer (ceb_store_claim). */
  int64_t lease_ms;
  /* A database server's engine (PostgreSQL): most connections open at
   * once (0: the engine's default, 8), the password when the spec holds
   * none (a resolved secret; NULL: the spec's, PGPASSWORD or the libpq
   * passfile), and no_migrate 1 to refuse a schema older than the build's
   * instead of migrating it at open (store.migrate = off). SQLite ignores
   * them. */
  size_t pool_size;
  const char *password;
  int no_migrate;
} ceb_store_opts;

/* Opens (creating and migrating) the store the spec names. Control thread.
 * On error returns < 0 with a one-line reason in err: CEB_EUNSUPPORTED for
 * a spec of an engine this build lacks or no engine at all, CEB_ECONFLICT
 * when the store must not be used as it is (damaged, another program's,
 * or missing / replaced while its marker says one existed), CEB_EINVAL for
 * a location that cannot be opened (a missing directory, permissions),
 * CEB_EIO for I/O errors such as a full disk or an unreachable server
 * (worth retrying), others for the rest. */
int ceb_store_open(const ceb_store_opts *opts, ceb_store **out, char *err,
                   size_t errlen);
/* Runs every queued op (their done included), stops the engine's threads
 * and closes. Control thread; no other call may be running or follow.
 * NULL is ignored. */
void ceb_store_close(ceb_store *st);

/* The engine serving st: "sqlite", "postgresql". */
const char *ceb_store_engine_name(const ceb_store *st);
/* The instance id st claims under (opts.instance or the default). */
const char *ceb_store_instance(const ceb_store *st);
/* The file of a SQLite spec (a path, or what follows "sqlite:"); NULL for
 * a spec of another engine. Lets tools check or resolve a file path
 * without knowing the prefixes. Pure. */
const char *ceb_store_sqlite_path(const char *spec);
/* "<host>-<pid>-<8 hex random>", at most CEB_STORE_INSTANCE_MAX - 1
 * bytes: the instance id when [bridge] instance is not set. Any thread. */
void ceb_store_default_instance(char *buf, size_t size);

/* Called once per async op that was queued (see above), with its status:
 * CEB_OK, CEB_ECONFLICT (a settle whose lease was lost), CEB_EIO when the
 * write or its sync failed, CEB_ESHUTDOWN when the store closed first.
 * Owns arg from then on. */
typedef void (*ceb_store_done_fn)(void *arg, int status);

/* 1 while writes succeed; 0 after a failed commit (a full disk, an I/O
 * error, a lost database connection: until a write succeeds again, the
 * engine probing by itself), or damage met at run time (until a restart).
 * why (may be NULL) gets the reason. Any thread, never blocks. */
int ceb_store_writable(ceb_store *st, char *why, size_t whylen);

/* Counters for metrics, tests and benches. Engines fill what they have and
 * leave the rest 0. Any thread, never blocks. */
typedef struct ceb_store_stats {
  uint64_t batches;        /* write transactions committed */
  uint64_t ops;            /* ops they held */
  uint64_t syncs;          /* fsyncs done by the store itself */
  uint64_t dedupe_entries; /* entries of an in-memory dedupe map */
  uint64_t dedupe_bytes;   /* bytes it holds */
  size_t queued;           /* ingest ops queued and not yet done */
  /* wake-up notifications to other bridges on a shared store (routes and
   * pull queues named): sent, and skipped because no other bridge
   * listened (0 on an engine of one process) */
  uint64_t notify_sent, notify_skipped;
} ceb_store_stats;
void ceb_store_get_stats(ceb_store *st, ceb_store_stats *out);
/* Shorthands of ceb_store_get_stats. */
size_t ceb_store_queued(ceb_store *st);
void ceb_store_commit_stats(ceb_store *st, uint64_t *batches, uint64_t *ops);
uint64_t ceb_store_syncs(ceb_store *st);
void ceb_store_dedupe_stats(ceb_store *st, uint64_t *entries, uint64_t *bytes);
void ceb_store_notify_stats(ceb_store *st, uint64_t *sent, uint64_t *skipped);

/* ---- journal ingest ---- */

/* One route an ingested event goes to. */
typedef struct ceb_ingest_route {
  const char *route;
  const char *order_key; /* NULL: unordered */
  int64_t first_at;      /* when the first attempt is due */
  size_t index;          /* the route's index in the engine (config order),
                            for the ingest listener */
} ceb_ingest_route;

typedef struct ceb_ingest_event {
  const char *client; /* NULL: "" */
  const char *source;
  const char *id;
  const char *type;
  const char *json; /* the event in JSON format */
  size_t json_len;
  const ceb_ingest_route *routes; /* none: journaled as unrouted */
  size_t nroutes;
  /* The client's callback (X-Callback, docs/integration-guide.md
   * "Callbacks"): when both are set and the event has routes, the store
   * keeps them with the journal row, and the settle that makes the
   * event's status final (every route done or dead) adds, in its own
   * transaction, a pending delivery of the event to callback_route (no
   * order key, due at that settle's now): the callback is journaled like
   * any delivery. The journal row stays open until that delivery settles
   * too. Once per event: a later settle (after a DLQ replay) adds none. */
  const char *callback_route;
  const char *callback_url;
  /* out, set by the store: 1 new, 0 duplicate of (client, source, id) */
  int inserted;
  int64_t seq;
} ceb_ingest_event;

/* A batch of events to journal with their delivery rows, deduping on
 * (client, source, id), a duplicate within the batch included. */
typedef struct ceb_ingest_batch {
  ceb_ingest_event *events;
  size_t count;
  int64_t now;
} ceb_ingest_batch;

/* The store tells the delivery engine of new deliveries itself: fn is
 * called on an engine thread right after each batch of ceb_store_ingest /
 * ceb_store_ingest_wait committed (events' inserted and seq set), before
 * any later write of this store runs (a claim or an outcome may then count
 * on them) and before the batch's done. Must not block. Set it (or NULL)
 * while no ingest is queued: the delivery engine does at ceb_engine_new
 * and never clears it, so the store is closed (its queued ingests run and
 * call fn) before the engine is freed (ceb_engine.h, ceb_runtime_close). */
typedef void (*ceb_store_ingest_listener)(void *arg,
                                          const ceb_ingest_batch *batch);
void ceb_store_set_ingest_listener(ceb_store *st, ceb_store_ingest_listener fn,
                                   void *arg);
/* Claims at ingest (optional; the SQLite and PostgreSQL engines have it,
 * another engine may ignore the hook and the engine claims as usual). A
 * new delivery that is claimable at once (no order key, or no older
 * unsettled delivery of its key) is written claimed, in the ingest's own
 * transaction, when the delivery engine takes it: no second transaction
 * reads it back and claims it. reserve is called on the store's committer
 * thread, before or inside the ingest's transaction, once per delivery
 * that may be claimable (the PostgreSQL engine asks before its statement
 * decides which rows are heads): 1 when the engine takes it now (one
 * in-flight slot held for it), with the engine's *now and the lease it
 * asks (*lease_ms); 0 leaves it pending. claimed then follows on the same
 * thread for every reservation, once: committed 1 right after the ingest
 * listener with those written claimed (the engine owns them as any claim
 * it made, the lease held by this handle's instance), committed 0 with
 * the rest (not claimable after all, a duplicate event, or the
 * transaction or the ingest failed: the slots go back); an ingest may get
 * one call of each. Each claim's event and route point into batch, valid
 * only during the call. Neither may block. Set it (or NULL) as the ingest
 * listener: while no ingest is queued. */
typedef struct ceb_ingest_claim {
  const ceb_ingest_event *event; /* in the batch */
  const ceb_ingest_route *route; /* one of event->routes */
  int64_t now;                   /* the engine's, from reserve */
  int64_t lease_until;
  int64_t fence; /* the settle's fencing token (ceb_claim.fence) */
} ceb_ingest_claim;
typedef struct ceb_store_claim_hook {
  int (*reserve)(void *arg, const ceb_ingest_route *route, int64_t *now,
                 int64_t *lease_ms);
  void (*claimed)(void *arg, const ceb_ingest_batch *batch,
                  const ceb_ingest_claim *claims, size_t n, int committed);
  void *arg;
} ceb_store_claim_hook;
/* hook NULL: off. The store copies *hook. */
void ceb_store_set_claim_hook(ceb_store *st, const ceb_store_claim_hook *hook);
/* Work another writer changed: another bridge on the same database (the
 * PostgreSQL engine hears of it through LISTEN/NOTIFY) or a tool beside a
 * running bridge. fn(arg, route) tells the delivery engine that route (NULL:
 * any route) may have new claimable deliveries: rows ingested elsewhere, a
 * key's head settled elsewhere, a DLQ replay. It is a hint: a lost one is
 * made up by the engine's poll (store.poll_interval). Called from the
 * engine's listener thread (or the caller of ceb_store_woken); must not
 * block. Set it (or NULL) as the ingest listener (the delivery engine does
 * at ceb_engine_new). Kept by the dispatch (store_dispatch.c), the same
 * for every engine. */
typedef void (*ceb_store_wake_fn)(void *arg, const char *route);
void ceb_store_set_wake_listener(ceb_store *st, ceb_store_wake_fn fn,
                                 void *arg);
/* Calls the wake listener (if any) with route: what an engine's listener
 * does for each notification it receives. Any thread. */
void ceb_store_woken(ceb_store *st, const char *route);
/* Pull queues another writer appended to (another bridge on the same
 * database; the PostgreSQL engine hears of it through LISTEN/NOTIFY):
 * fn(arg, queue) (NULL: any queue) tells the host's long polls
 * (core/runtime/runtime_queue.c) to read again. A hint, as the wake
 * listener's: a lost one is made up by the long poll's fallback read.
 * Called from the engine's listener thread (or the caller of
 * ceb_store_pull_woken); must not block. Kept by the dispatch. */
void ceb_store_set_pull_listener(ceb_store *st, ceb_store_wake_fn fn,
                                 void *arg);
/* Calls the pull listener (if any) with queue. Any thread. */
void ceb_store_pull_woken(ceb_store *st, const char *queue);
/* Async: queues batch to be journaled; done(arg, status) once its
 * transaction is durable. Bounded: CEB_EBUSY when queue_max ingests wait.
 * Returns CEB_OK (done will be called), CEB_EBUSY, CEB_EIO (the store
 * cannot make anything durable now), CEB_ESHUTDOWN or CEB_ENOMEM (done
 * is never called). batch must live until done. */
int ceb_store_ingest_async(ceb_store *st, ceb_ingest_batch *batch,
                           ceb_store_done_fn done, void *arg);
/* ceb_store_ingest_async with batch as done's arg: embed the batch first
 * in the caller's own struct to find that again. */
int ceb_store_ingest(ceb_store *st, ceb_ingest_batch *batch,
                     ceb_store_done_fn done);
/* Blocking: journals batch, returns once durable (the ingest listener
 * hears of it as of any ingest). Not bounded by queue_max: the caller
 * waits its turn. */
int ceb_store_ingest_wait(ceb_store *st, ceb_ingest_batch *batch);

/* ---- deliveries ---- */

/* One claimed delivery; strings malloc'd, freed by ceb_claim_free. */
typedef struct ceb_claim {
  int64_t seq;
  char *event_json;
  char *order_key;
  uint32_t attempt; /* the attempt being started (1-based) */
  int64_t received_at;
  int64_t first_at;    /* first attempt time */
  uint32_t replays;    /* times the dead letter was replayed: a new
                          Idempotency-Key per replay (engine_core.c) */
  int64_t fence;       /* the claim's fencing token: greater than any token
                          this delivery was claimed with before; the settle
                          must carry it (ceb_attempt_result.fence) */
  int64_t lease_until; /* the lease ends then (ms): settle before */
  int64_t replay_of;   /* a copy made by ceb_store_replay_range: the seq of
                          the journal row it copies (0: an event as
                          received). Its Idempotency-Key is its own
                          (engine_base.c) */
} ceb_claim;
void ceb_claim_free(ceb_claim *c);
void ceb_claims_free(ceb_claim *c, size_t count);

/* Blocking: claims up to max due deliveries of route for this instance
 * and returns them in *out (array freed by ceb_claims_free; NULL when
 * none). Due: pending or retrying with next_at <= now and the head of its
 * (route, order key) (no older unsettled row of the key, whoever holds
 * it), or in progress under a lease that ended (lease_until <= now: its
 * holder is taken to be gone; the claim counts an attempt). Each claimed
 * row gets owner = this instance, lease_until = now + max(lease_ms,
 * opts.lease_ms) and a new fence. The caller must settle within the lease:
 * the delivery engine asks for its attempt timeout plus a margin
 * (engine_core.c), so an attempt never outlives its lease and leases are
 * not renewed. Not synced: a claim lost in a power cut only repeats an
 * attempt. */
int ceb_store_claim(ceb_store *st, const char *route, int64_t now, size_t max,
                    int64_t lease_ms, ceb_claim **out, size_t *count);

/* Earliest next_at later than after of a claimable row of route (pending
 * or retrying head of its key, or the lease end of a row in progress);
 * INT64_MAX when none. A row queued behind its key's head becomes
 * claimable when the head settles, which the engine learns from the
 * outcome. Blocking read. */
int64_t ceb_store_next_due(ceb_store *st, const char *route, int64_t after);

/* The outcome of one attempt, as written. */
typedef struct ceb_attempt_result {
  int64_t seq;
  const char *route;
  int64_t fence; /* the claim's token (ceb_claim.fence) */
  /* the claim's order key (ceb_claim.order_key); NULL: unordered or not
   * known. A scheduling hint only (the PostgreSQL engine keeps the writes
   * of one key out of groups that run at once: pg_commit.c); the row's own
   * key is what the settle acts on. */
  const char *order_key;
  int state;       /* CEB_DS_DONE, CEB_DS_RETRYING, CEB_DS_DEAD, or
                      CEB_DS_PENDING for an attempt that did not happen */
  int64_t next_at; /* RETRYING, PENDING */
  int refund;      /* 1: give the claim's attempt back (PENDING) */
  int64_t now;
  int status_code;
  const char *reason; /* settle reason code */
  const char *error;  /* detail, truncated to 512 bytes by the store */
  /* CEB_DS_DEAD: the DLQ row */
  const char *dead_reason; /* "rejected", "max_attempts", "deadline" */
  const char *sink;
  const char *dead_json; /* the dead-letter event in JSON format */
  int64_t dlq_id;        /* out: id of the new DLQ row */
  /* For the attempt history (ceb_store_attempts_of): the attempt's number
   * (1 = first since ingest or replay) and when it started (ms; 0:
   * unknown). */
  uint32_t attempt;
  int64_t started_at;
  /* CEB_DS_DONE: what the peer answered (a body excerpt the sink bounded),
   * NUL-terminated UTF-8 text of response_len bytes (the delivery engine
   * makes it so: engine_settle.c), kept on the delivery row for the
   * client's job status; NULL: nothing. */
  const char *response;
  size_t response_len;
  /* out, set before done: the callback route this settle queued a
   * delivery to (ceb_ingest_event.callback_route, cut to fit), "" when it
   * queued none. The delivery engine wakes that route. */
  char callback_queued[128];
} ceb_attempt_result;
/* Async: records an attempt's outcome: updates the delivery row and
 * releases its lease, settles the journal row when every route is done or
 * dead, and inserts the DLQ row (r->dlq_id set before done). done's status
 * is CEB_ECONFLICT, and nothing changed, when the row is not in progress
 * under r->fence any more (its lease ended and another claim took it, or
 * it was settled already). Not synced (a lost outcome repeats the
 * attempt). r must live until done. Returns as ceb_store_ingest_async,
 * without CEB_EBUSY. */
int ceb_store_settle(ceb_store *st, ceb_attempt_result *r,
                     ceb_store_done_fn done, void *arg);
/* Blocking ceb_store_settle: returns done's status. */
int ceb_store_settle_wait(ceb_store *st, ceb_attempt_result *r);

/* Blocking, at start before the engine claims: releases the claims this
 * store may own from an earlier run, back to pending (attempts kept), and
 * returns their count or < 0. SQLite (one process per file): every row in
 * progress. A shared store: only rows of this instance id, and rows whose
 * lease ended before now; never a live claim of another instance. */
int ceb_store_recover(ceb_store *st, int64_t now);

/* Counts unsettled (pending, in-progress, retrying) deliveries, per route
 * when route is non-NULL. Blocking read; < 0 on error. */
int64_t ceb_store_count_open(ceb_store *st, const char *route);
/* Unsettled deliveries of (route, order key key), counted no further than
 * cap (> 0; the caller compares with its limit: max_open_per_key). Blocking
 * read, < 0 on error (CEB_EUNSUPPORTED: an engine without the op). */
int64_t ceb_store_count_open_key(ceb_store *st, const char *route,
                                 const char *key, int64_t cap);
/* Per ordering key of route (a key with open deliveries, or with an
 * attempt outcome within the retention), by key, at most limit (> 0) keys:
 *   [{"key","open","last_success_at","last_failure_at"}]
 * open: unsettled deliveries; last_success_at: the latest delivered
 * attempt; last_failure_at: the latest failed attempt (retrying or dead);
 * null when none. Both are written by the settle's own transaction (the
 * key_status table of both engines), so they outlive the key's delivery
 * rows and a restart; ceb_store_sweep drops a key without open rows whose
 * last outcome is older than the retention. Blocking read; a new
 * reference, NULL on error or from an engine without the op. */
json_t *ceb_store_key_stats(ceb_store *st, const char *route, size_t limit);
/* received_at of the oldest unsettled delivery of route; 0 when none. */
int64_t ceb_store_oldest_open(ceb_store *st, const char *route);

/* Status of an event: every (source, id) match (source NULL: any) with its
 * per-route delivery rows, oldest first. Returns a new JSON array (caller
 * decrefs), empty when not found, NULL on error:
 *   [{"seq","client","source","id","type","received_at","unrouted",
 *     "settled_at",
 *     "routes":[{"route","state","attempts","next_attempt_at",
 *                "first_attempt_at","last_attempt_at","last_status",
 *                "last_reason","last_error","order_key","dlq_id",
 *                "response"}]}]
 * response: the body the peer answered a delivery with (as settled),
 * null when none was kept.
 * Times are ms since the epoch. Blocking read. */
json_t *ceb_store_event_status(ceb_store *st, const char *id,
                               const char *source);
/* The same, of the newest max matches only (max 0: all): an id many
 * events carry (one per source, each replay of a client's) costs a
 * bounded read. Ask for one more than you show to know there are more. */
json_t *ceb_store_event_status_max(ceb_store *st, const char *id,
                                   const char *source, size_t max);

/* The callback URL kept with journal row seq (ceb_ingest_event.
 * callback_url), malloc'd (caller frees); NULL with *status CEB_ENOTFOUND
 * when it has none (swept, or never had one), CEB_EIO on a read error,
 * CEB_EUNSUPPORTED from an engine without callbacks. Blocking read. */
char *ceb_store_callback_url(ceb_store *st, int64_t seq, int *status);

/* ---- DLQ ---- */

typedef struct ceb_dlq_filter {
  const char *route;  /* NULL: any */
  const char *type;   /* exact, or "x*" prefix */
  const char *source; /* exact */
  const char *reason; /* exact dead reason */
  int64_t since;      /* created_at >= since (ms); 0: any */
  int64_t until;      /* created_at < until (ms); 0: any */
  int64_t id;         /* one row; 0: any */
  size_t limit;       /* 0: 100 for lists, no limit for replay/purge */
} ceb_dlq_filter;

/* The members of a ceb_store_dlq_list row, in the order every engine
 * selects the columns they come from (one list, so the engines cannot
 * drift apart): id, seq, route, sink, reason, last_reason, status,
 * attempts, first_attempt_at, last_attempt_at, created_at, error,
 * event_id, source, type, replayed_at, replays, forwarded_at. */
#define CEB_DLQ_ROW_MEMBERS 18
extern const char *const ceb_dlq_row_names[CEB_DLQ_ROW_MEMBERS];

/* Rows, newest first, without the event body: objects of the members of
 * ceb_dlq_row_names. New reference, NULL on error. Blocking read. */
json_t *ceb_store_dlq_list(ceb_store *st, const ceb_dlq_filter *f);
/* The dead letters of journal row seq (every route, every time it died),
 * oldest first, same shape as the list. New reference, NULL on error. Read
 * connection. */
json_t *ceb_store_dlq_of_seq(ceb_store *st, int64_t seq);
/* The same, of the newest max rows only (max 0: all), oldest first: an
 * event replayed and dead again thousands of times costs a bounded read. */
json_t *ceb_store_dlq_of_seq_max(ceb_store *st, int64_t seq, size_t max);
/* The failed attempts of journal row seq, every route, oldest first:
 *   [{"route","n","started_at","at","status","reason","outcome"}]
 * outcome: "retrying" or "dead". An attempt that delivered is not listed:
 * the delivery row holds it (a first attempt that succeeds, the usual
 * case, writes nothing more). Rows go with their journal row at sweep.
 * New reference; NULL on error or when the engine keeps no history (the
 * caller then has the delivery rows' first and last attempt). Read
 * connection. */
json_t *ceb_store_attempts_of(ceb_store *st, int64_t seq);
/* The same, of the newest max attempts only (max 0: all), oldest first: a
 * retry-forever route's 100k attempts cost a bounded read. */
json_t *ceb_store_attempts_of_max(ceb_store *st, int64_t seq, size_t max);
/* One row with "event" (the dead-letter event as JSON); NULL when absent. */
json_t *ceb_store_dlq_show(ceb_store *st, int64_t id);

/* Blocking, synced. Puts every matching dead (event, route) back to pending
 * with attempts reset, marks the DLQ rows replayed. dry_run: counts only.
 * *count gets the number of rows (dry run: that would be) replayed;
 * {"dlq_id","seq","route"} of each row (dry run: that would be)
 * replayed is appended to *replayed (a JSON array, may be NULL). Rows
 * whose delivery is not dead any more (already replayed and pending) are
 * skipped. */
int ceb_store_dlq_replay(ceb_store *st, const ceb_dlq_filter *f, int64_t now,
                         int dry_run, size_t *count, json_t *replayed);
/* Blocking, synced. Deletes matching DLQ rows (dry_run: counts). */
int ceb_store_dlq_purge(ceb_store *st, const ceb_dlq_filter *f, int dry_run,
                        size_t *count);
/* Blocking, synced. Marks a DLQ row forwarded to its topic destination. */
int ceb_store_dlq_forwarded(ceb_store *st, int64_t id, int64_t now);
/* The same, async (done as ceb_store_ingest_async's, without CEB_EBUSY). */
int ceb_store_dlq_forwarded_async(ceb_store *st, int64_t id, int64_t now,
                                  ceb_store_done_fn done, void *arg);
/* Ids of route's DLQ rows still to forward to a topic: not forwarded and
 * not replayed (a replay resolves the letter), id > after, ascending; at
 * most max into ids, *n the count (the engine pages through them at
 * start). Blocking read; CEB_OK or < 0. */
int ceb_store_dlq_unforwarded(ceb_store *st, const char *route, int64_t after,
                              size_t max, int64_t *ids, size_t *n);
/* The dead-letter event (JSON, malloc'd, caller frees) of DLQ row id while
 * it is still to forward (as above); NULL with *status CEB_ENOTFOUND when
 * the row is gone (purged), forwarded or replayed, CEB_EIO / CEB_ENOMEM on
 * errors. Blocking read. */
char *ceb_store_dlq_forward_event(ceb_store *st, int64_t id, int *status);

/* ---- idempotency ---- */

/* States stored in idempotency.state. */
enum { CEB_IDEM_ROW_INFLIGHT = 0, CEB_IDEM_ROW_DONE = 1 };

typedef struct ceb_idem_result {
  int state; /* ceb_idem_state from plugin.h */
  int http_status;
  char *content_type; /* malloc'd, REPLAY only */
  char *body;         /* malloc'd, REPLAY only */
  size_t body_len;
} ceb_idem_result;

/* Blocking, synced. Reserves (client, key) or reports its state. Expired
 * records count as absent. Of two begins of one key at once (threads or
 * instances), exactly one gets CEB_IDEM_NEW. */
int ceb_store_idem_begin(ceb_store *st, const char *client, const char *key,
                         const char *fingerprint, int64_t now,
                         ceb_idem_result *res);
/* Blocking, synced. Stores the response; the record expires at
 * now + ttl_ms. CEB_ENOTFOUND when no reservation is held. */
int ceb_store_idem_finish(ceb_store *st, const char *client, const char *key,
                          int http_status, const char *content_type,
                          const char *body, size_t body_len, int64_t now,
                          int64_t ttl_ms);
/* Blocking. Drops an in-flight reservation (done records stay). */
int ceb_store_idem_abort(ceb_store *st, const char *client, const char *key);
/* Blocking, at start. Drops the in-flight reservations an earlier run of
 * this store left (SQLite: every one; a shared store: this instance's). */
int ceb_store_idem_reset_inflight(ceb_store *st);

/* ---- contract register ---- */

/* Blocking, synced. CEB_OK new, CEB_EDUPLICATE same sha256 held,
 * CEB_ECONFLICT a different document under a held version (flagged, not
 * stored). */
int ceb_store_contract_put(ceb_store *st, const char *name, const char *version,
                           const char *document, size_t len,
                           const char *provenance, int64_t now);
/* [{"name","version","sha256","provenance","fetched_at","conflict",
 *   "conflict_sha256","conflict_at"}] for name (NULL: all), by name and
 * version; conflict is the integer 1 for a flagged version, else 0 (the
 * conflict_* members null). Blocking. */
json_t *ceb_store_contract_list(ceb_store *st, const char *name);
/* The document of (name, version), malloc'd; NULL when absent. */
char *ceb_store_contract_get(ceb_store *st, const char *name,
                             const char *version, size_t *len);

/* ---- pull queues ---- */

/* Queues that hold events until a consumer commits past them (the pull
 * sink's), shared by every bridge on the store: an event appended on one
 * instance is fetched on any, and a cursor commit holds for all. A queue is
 * named by its sink; each event gets the next sequence number of its queue
 * (1, 2, ...; never reused, commits included). */

/* Async (synced): appends json under key to queue. A key the queue still
 * holds is not stored again (done gets CEB_OK: it is durable). done gets
 * CEB_EBUSY, nothing stored, when the queue holds max (>= 1) events not
 * committed. Returns CEB_OK (done will be called) or < 0 (never called).
 * The strings are copied. */
int ceb_store_pull_append(ceb_store *st, const char *queue, const char *key,
                          const char *json, size_t len, size_t max,
                          ceb_store_done_fn done, void *arg);
/* Blocking read: calls visit(arg, seq, json, len) for up to max events of
 * queue after `after` (and after its committed cursor), in order; visit's
 * strings are borrowed for the call, a non-zero return stops the walk.
 * *last gets the sequence of the last event visited, or max(after,
 * committed) when none. CEB_OK or < 0. */
typedef int (*ceb_store_pull_visit)(void *arg, int64_t seq, const char *json,
                                    size_t len);
int ceb_store_pull_fetch(ceb_store *st, const char *queue, int64_t after,
                         size_t max, ceb_store_pull_visit visit, void *arg,
                         int64_t *last);
/* Blocking, synced: removes every event of queue up to cursor and records
 * the cursor (it never moves back: a lower one changes nothing). CEB_OK
 * with *committed the queue's cursor; CEB_EINVAL when cursor is negative or
 * beyond the last sequence ever appended. */
int ceb_store_pull_commit(ceb_store *st, const char *queue, int64_t cursor,
                          int64_t *committed);
/* Blocking read: events held (not committed), the last sequence appended
 * and the committed cursor of queue (0s for a queue never appended to).
 * Pointers may be NULL. */
int ceb_store_pull_stats(ceb_store *st, const char *queue, int64_t *depth,
                         int64_t *last, int64_t *committed);

/* ---- instances and leaders ---- */

/* Whether other bridges may write this store while this one runs (a
 * shared engine: PostgreSQL): the engine then rereads what it cannot hear
 * of (dead letters to forward that died elsewhere). SQLite: 0. */
int ceb_store_shared(ceb_store *st);

/* Blocking. Tries to make this instance the one that runs task
 * ("sweeper", "dlq-forward", "contracts:<name>"): 1 it leads (now, and
 * until it calls again and gets 0), 0 another instance does, < 0 an error
 * (take it as 0). Call before each round of the task: leadership can move
 * (a lost connection gives it up). SQLite (one process per file): always
 * 1. The leader is recorded for the cluster view. */
int ceb_store_try_lead(ceb_store *st, const char *task, int64_t now);

/* An instance without a heartbeat for this long is "stale" in the view. */
#define CEB_STORE_STALE_MS 30000

/* This bridge, as the cluster view lists it. */
typedef struct ceb_store_member {
  const char *hostname;
  long pid;
  const char *version;
  int64_t started_at;
} ceb_store_member;
/* Blocking: records (or refreshes) this store's instance with
 * heartbeat_at = now, and drops instances silent for an hour. Call at
 * start and then every few seconds (the runtime's sweeper does, every
 * 5 s). Not synced: a lost heartbeat is the next one's. */
int ceb_store_heartbeat(ceb_store *st, const ceb_store_member *m, int64_t now);
/* Blocking: removes this store's instance and the tasks it is recorded
 * to lead (a clean stop). */
int ceb_store_leave(ceb_store *st);
/* Blocking read: the cluster view, a new JSON object:
 *   {"instance": this store's id,
 *    "instances":[{"id","hostname","pid","version","started_at",
 *                  "heartbeat_at","stale","leases":{"<route>":n},
 *                  "leads":[task]}],
 *    "leases_expired":{"<route>":n}}
 * oldest start first. stale: no heartbeat for CEB_STORE_STALE_MS. leads:
 * the tasks it was the last to take (ceb_store_try_lead). leases:
 * deliveries in progress under an unexpired lease of the instance, per
 * route (a holder that is not in the table is listed with its id only,
 * stale); leases_expired: those whose lease ended (their holder is gone:
 * any instance takes them over). Blocking read; NULL on error. */
json_t *ceb_store_cluster(ceb_store *st, int64_t now);
/* ---- sink life cycle ---- */

/* A sink's life-cycle state, shared by every bridge on the store: a sink
 * disabled (410 Gone, or failing without a success for disable_after) is
 * sent nothing until an operator enables it (`cebridge sink enable`, the
 * admin API); failing_since survives restarts so that the period counts
 * from the first failure after the last success. */
#define CEB_SINK_REASON_MAX 256
typedef struct ceb_sink_state {
  int disabled;
  char reason[CEB_SINK_REASON_MAX]; /* why it was disabled ("" enabled) */
  int64_t disabled_at;              /* host ms; 0 when enabled */
  int64_t failing_since; /* first failure after the last success; 0 none */
} ceb_sink_state;

/* Blocking read. CEB_OK with *out, CEB_ENOTFOUND when nothing was ever
 * stored for sink (enabled, not failing), CEB_EIO; CEB_EUNSUPPORTED from an
 * engine without the ops (the delivery engine then keeps the state in
 * memory only). */
int ceb_store_sink_state_get(ceb_store *st, const char *sink,
                             ceb_sink_state *out);
/* Blocking, synced. Stores sink's state (replacing it). CEB_OK or < 0. */
int ceb_store_sink_state_put(ceb_store *st, const char *sink,
                             const ceb_sink_state *state);
/* [{"sink","disabled","reason","disabled_at","failing_since"}] of every
 * sink with a stored state, by name; NULL on a read error. */
json_t *ceb_store_sink_states(ceb_store *st);

/* ---- the archive: replay by time range ---- */

/* Settled events stay in the journal for [bridge] retention (the archive,
 * ceb_store_sweep) and can be offered to their route again. */
typedef struct ceb_replay_filter {
  const char *route; /* required */
  const char *type;  /* exact, or "x*" prefix; NULL: any */
  int64_t since;     /* received_at >= since (ms) */
  int64_t until;     /* received_at < until (ms) */
} ceb_replay_filter;
/* Blocking, synced. Re-offers to f->route every event received in
 * [since, until) (and of type) whose delivery to that route is settled
 * (done or dead; an open one is still to be delivered and is left alone),
 * as a new delivery each: a copy of the journal row with a new seq,
 * received_at = now and replay_of = the original's seq, pending at now. A
 * new seq puts it behind every open delivery of its order key (FIFO per
 * key holds), copies in the originals' order. Copies are not themselves
 * replayed by a later range (only events as received are), so replaying
 * one window twice offers each event twice, never more. dry_run: counts
 * only. *count gets the number of (dry run: that would be) replayed
 * events; *exists (may be NULL) 1 when the store holds any delivery of
 * route at all, to tell a route never seen from an empty window.
 * CEB_OK, CEB_EINVAL (no route, since >= until), CEB_EIO;
 * CEB_EUNSUPPORTED from an engine without the op. */
int ceb_store_replay_range(ceb_store *st, const ceb_replay_filter *f,
                           int64_t now, int dry_run, size_t *count,
                           int *exists);

/* ---- sweeping ---- */

/* Blocking. Deletes at most chunk expired rows of each kind: idempotency
 * records past expires_at, and journal rows settled before
 * now - retention_ms with their delivery rows (rows still referenced by a
 * DLQ row are kept: replay needs the event). Returns the number of rows
 * deleted (callers loop while it equals the chunk) or < 0. */
int ceb_store_sweep(ceb_store *st, int64_t now, int64_t retention_ms,
                    size_t chunk);

#endif
