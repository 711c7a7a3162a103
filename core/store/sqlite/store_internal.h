/* The SQLite engine (core/store/sqlite/): internals shared by its files.
 * Not for other parts; the SQLite engine's own unit tests use them.
 *
 * One SQLite file in WAL mode. Writes: a single committer thread owns the
 * write connection. Every write is an "op" queued to it; the committer
 * runs up to group_max ops in one transaction and then calls each op's
 * done (after the syncer's fdatasync of the WAL for synced ops). Ingest
 * ops go through a bounded queue (CEB_EBUSY when full); internal ops
 * (claims, settles, admin actions) are not bounded by it. Reads (status,
 * listings) use separate read connections and never wait for the
 * committer. */
#ifndef CEB_STORE_INTERNAL_H
#define CEB_STORE_INTERNAL_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>

#include "store/ceb_store.h"
#include "store/ceb_store_engine.h"
#include "store/sqlite/store_idmap.h"

#define CEB_STORE_READERS 4
/* Queued ops from which the committer overlaps a running sync. */
#define CEBS_OVERLAP_MIN 32
/* Op flag: a cebs_ingest batch (the ingest listener hears of it). */
#define CEBS_OP_INGEST 0x100
/* Op flag: run may run again from the start after the whole transaction
 * rolled back (it reads its inputs only, and what it does outside the
 * database is undone by the committer: an ingest's, see undo_ops), so a
 * group of such ops needs no savepoint per op (store_commit.c). */
#define CEBS_OP_REDO 0x200

/* The engine's state is the ceb_store_impl the dispatch holds. */
typedef struct ceb_store_impl cebs_store;

/* ---- generic ops (the committer) ---- */

/* Runs inside the batch transaction on the committer thread (in its own
 * savepoint: a failing op rolls back alone). Returns CEB_OK or < 0. */
typedef int (*cebs_run_fn)(sqlite3 *db, void *arg);

/* Op flags. BOUNDED: ingest; CEB_EBUSY when the queue is full. NOSYNC: the
 * op's effect need not be on disk before done runs, because losing it in a
 * power cut is harmless (a claim or an attempt's outcome: the delivery is
 * made again, at least once); nothing acknowledged outside may hang on it.
 * Everything else waits for the sync. */
#define CEBS_BOUNDED 1
#define CEBS_NOSYNC 2

/* Queues an op (flags: CEBS_*). Returns CEB_OK (done will be called
 * exactly once, on the committer or the syncer thread), CEB_EBUSY,
 * CEB_ESHUTDOWN, CEB_EIO (synced op after a failed sync) or CEB_ENOMEM
 * (done is never called). */
int cebs_submit(cebs_store *st, cebs_run_fn run, ceb_store_done_fn done,
                void *arg, int flags);
/* cebs_submit with run's own argument (done gets arg). */
int cebs_submit_op(cebs_store *st, cebs_run_fn run, void *run_arg,
                   ceb_store_done_fn done, void *arg, int flags);
/* Blocking: queues run and waits until its batch committed (and synced);
 * returns the op's status. */
int cebs_call(cebs_store *st, cebs_run_fn run, void *arg);
/* cebs_call with CEBS_NOSYNC (see there). */
int cebs_call_nosync(cebs_store *st, cebs_run_fn run, void *arg);
/* Borrows a read connection (blocks while all are in use); give it back
 * with cebs_read_end. Thread-safe. */
sqlite3 *cebs_read_begin(cebs_store *st);
void cebs_read_end(cebs_store *st, sqlite3 *db);
/* The SQLite engine's state of a store it serves; NULL for another
 * engine's. For the engine's own tests. */
cebs_store *cebs_of(ceb_store *st);

/* Run functions of the ops (committer thread). */
int cebs_ingest_run(sqlite3 *db, void *batch); /* ceb_ingest_batch */
/* After an ingest op's transaction rolled back (committer thread): its
 * events' dedupe map entries go, so that the op can run again. */
void cebs_ingest_undo(cebs_store *st, void *batch);
int cebs_attempt_run(sqlite3 *db, void *result);  /* ceb_attempt_result */
int cebs_dlq_forwarded_run(sqlite3 *db, void *f); /* cebs_dlq_forward */
typedef struct cebs_dlq_forward {
  int64_t id, now;
} cebs_dlq_forward;

typedef struct store_op {
  struct store_op *next;
  cebs_run_fn run;
  void *run_arg; /* run's; for an ingest, its ceb_ingest_batch */
  ceb_store_done_fn done;
  void *arg; /* done's */
  int flags; /* CEB_STORE_*, CEBS_OP_INGEST */
  int status;
  /* an ingest's claims (ceb_store_set_claim_hook), committer only */
  ceb_ingest_claim *claims;
  size_t nclaims, capclaims;
} store_op;

struct ceb_store_impl {
  sqlite3 *wdb; /* the committer's */
  pthread_mutex_t lock;
  pthread_cond_t cond; /* committer: work queued / stop */
  store_op *head, *tail;
  ceb_store_ingest_listener ingested; /* the engine (cebs_ingest) */
  void *ingested_arg;
  ceb_store_claim_hook claim_hook;       /* reserve NULL: off; as ingested */
  char instance[CEB_STORE_INSTANCE_MAX]; /* the owner of our claims */
  int64_t owner_id; /* committer: its lease_owner.id, the delivery.holder
                       of its claims; 0 until its first claim
                       (cebs_owner_register) */
  int64_t lease_ms; /* shortest lease of a claim */
  size_t queued;    /* ops in head..tail */
  size_t queued_bounded;
  size_t queue_max;
  size_t group_max;
  int64_t group_wait_ms;
  int stopping;
  int started;
  pthread_t committer;
  uint64_t batches, ops;
  /* read pool */
  pthread_mutex_t rlock;
  pthread_cond_t rcond;
  sqlite3 *readers[CEB_STORE_READERS];
  int rbusy[CEB_STORE_READERS];
  /* cebs_next_due's statement on each reader, prepared at its first use
   * (the engine's worker asks at every pass): used by the reader's
   * borrower only, finalized at close */
  sqlite3_stmt *rdue[CEB_STORE_READERS];
  /* background WAL checkpoints (store_checkpoint.c) */
  sqlite3 *cdb;
  pthread_t checkpointer;
  int ckpt_started, ckpt_pending, ckpt_stop;
  pthread_mutex_t ckpt_lock;
  pthread_cond_t ckpt_cond;
  pthread_mutex_t ckpt_run; /* held while any checkpoint runs */
  int wal_pages;            /* WAL size after the last commit (committer) */
  int ckpt_next;            /* WAL size of the next pass (committer) */
  uint64_t ckpt_passes, ckpt_forced; /* background passes, and restarts the
                                        committer forced (ckpt_lock) */
  /* the syncer (store_sync.c): committed ops waiting for the WAL fsync */
  int wal_fd; /* -1: SQLite syncs each commit itself (or nothing does) */
  store_op *sync_head, *sync_tail;
  pthread_cond_t sync_cond;
  pthread_t syncer;
  int syncer_started, sync_stop;
  int sync_failed;       /* under lock; final (store_sync.c says why) */
  int syncing;           /* under lock: an fdatasync is running */
  uint64_t commit_wakes; /* under lock: the committer's waits that ended */
  uint64_t syncs;
  /* journal seqs by id hash (store_idmap.h): the committer adds on ingest,
   * the sweeper removes after its delete committed, readers look up */
  cebs_idmap ids;
  /* write health (store_health.c), under lock */
  char *path;
  int write_failed;     /* the last group (or probe) failed to write */
  int write_code;       /* its SQLite error code */
  int corrupt;          /* SQLite reported damage at run time: final */
  int64_t probe_at;     /* committer: CLOCK_MONOTONIC ms of the last probe */
  size_t reserve;       /* bytes of <store>.reserve (0: none) */
  int reserve_released; /* committer: given up to open; take it back */
  /* Idempotency keys this handle holds in flight: hash of (client, key)
   * -> 1 (store_idem.c). A reservation row not held here is stale (its
   * abort failed to write, as on a full disk) and is taken over. */
  cebs_idmap idem_live;
};

/* Store identity (store_ident.c): the marker file beside the store and
 * the id in the SQLite header. */
typedef struct cebs_ident {
  char marker[4200]; /* "<store>.id" */
  int have_marker;
  uint32_t id; /* the marker's, when have_marker */
} cebs_ident;
/* Before SQLite opens the file: reads the marker and refuses a missing or
 * empty store file the marker says existed (CEB_ECONFLICT). */
int cebs_ident_precheck(const char *path, cebs_ident *id, char *err,
                        size_t errlen);
/* After opening, before migrating: refuses another program's database. */
int cebs_ident_foreign_check(sqlite3 *db, const char *path, char *err,
                             size_t errlen);
/* After migrating: the store's identity must match the marker
 * (CEB_ECONFLICT otherwise); without a marker the store gets an identity
 * when it has none, and the marker is written. */
int cebs_ident_settle(sqlite3 *db, const char *path, const cebs_ident *id,
                      char *err, size_t errlen);

/* Health (store_health.c). CEB_ECONFLICT for damage (SQLITE_CORRUPT,
 * SQLITE_NOTADB), CEB_EINVAL for a path or permission problem
 * (SQLITE_CANTOPEN, SQLITE_READONLY, ...), CEB_ENOMEM, else CEB_EIO (a full
 * disk, an I/O error: worth retrying). */
int cebs_status_of(int sqlite_rc);
/* PRAGMA quick_check / integrity_check per mode (CEB_STORE_CHECK_*);
 * CEB_ECONFLICT with the findings in err when the store is damaged. */
int cebs_integrity_check(sqlite3 *db, const char *path, int mode, char *err,
                         size_t errlen);
/* The connection's last error when it means the write did not reach the
 * file (full, I/O, damage), else 0. */
int cebs_write_error_of(sqlite3 *db);
/* The reserve file "<path>.reserve" (store_reserve.c): take allocates it
 * (no-op when held), release removes it. 0 or -errno. */
int cebs_reserve_take(const char *path, size_t bytes);
int cebs_reserve_release(const char *path);
/* Committer: records how a group ended (0: written) and logs changes. */
void cebs_health_group(cebs_store *st, int code);
/* Under lock: 1 while the committer should probe writes when idle. */
int cebs_health_needs_probe(cebs_store *st);
/* Committer thread, without lock: one small write transaction. */
void cebs_health_probe(cebs_store *st);

/* The store whose committer runs on the calling thread, NULL on any other
 * thread: how a run function (given only the connection) reaches the
 * store's own state, such as its dedupe map. */
cebs_store *cebs_committer_store(void);
/* The op whose run function runs on the calling thread (a committer),
 * NULL elsewhere: where an ingest records its claims. */
store_op *cebs_committer_op(void);

/* Opens the WAL for fsyncs of our own and starts the syncer, so that the
 * committer's transactions run with synchronous=NORMAL and the next group
 * is written while the previous one is being synced. CEB_OK, or an error
 * after which the caller keeps SQLite's synchronous=FULL. */
int cebs_syncer_start(cebs_store *st, const char *path, char *err,
                      size_t errlen);
/* The syncer's fdatasync; tests swap it to inject failures. */
extern int (*cebs_fdatasync)(int fd);
/* Runs every queued op's done (after a last sync) and joins the thread. */
void cebs_syncer_stop(cebs_store *st);
/* Committer: hands committed ops (a list, in order) to the syncer. */
void cebs_syncer_push(cebs_store *st, store_op *head, store_op *tail);
/* Runs op's done and frees it. Returns 1 for a bounded op: the caller
 * takes it out of queued_bounded (under the lock, once per batch). */
size_t cebs_op_finish(store_op *op);

/* Starts / stops the background checkpointer (moves WAL checkpoints off
 * the committer so that a commit never waits for one). */
int cebs_checkpointer_start(cebs_store *st, const char *path, int sync_full,
                            char *err, size_t errlen);
void cebs_checkpointer_stop(cebs_store *st);
/* Committer, between transactions: checkpoints inline when the background
 * checkpointer could not keep the WAL small. */
void cebs_checkpoint_if_big(cebs_store *st);

/* The VFS for the committer's connection (store_vfs.c): WAL frames of a
 * transaction written with one pwrite. NULL when it cannot be registered
 * (then SQLite's default serves). Any thread. */
/* Process-wide SQLite settings, before anything initialises SQLite (the
 * first sqlite3_* call does). Any thread, idempotent. store_open.c. */
void cebs_sqlite_configure(void);
#define CEBS_VFS_NAME "ceb-wal"
const char *cebs_vfs_writer(void);
/* Background checkpoint passes and WAL restarts forced by size so far.
 * Any thread. */
void cebs_checkpoint_stats(cebs_store *st, uint64_t *passes, uint64_t *forced);

/* The claimable set (store_ready.c), kept in the transaction that changes a
 * delivery; committer only. A delivery row was just inserted: */
int cebs_ready_added(sqlite3 *db, const char *route, int64_t seq,
                     int64_t next_at, const char *key);
/* The two halves of cebs_ready_added, for an ingest that may claim the
 * row it adds: *head 1 when the row (route, seq, key) will be in the set
 * (no key, or no older unsettled row of its key), then its entry. */
int cebs_ready_is_head(sqlite3 *db, const char *route, int64_t seq,
                       const char *key, int *head);
int cebs_ready_insert(sqlite3 *db, const char *route, int64_t seq,
                      int64_t next_at, const char *key);
/* A row of the set was claimed: it stays, at its lease end. */
int cebs_ready_leased(sqlite3 *db, const char *route, int64_t seq,
                      int64_t lease_until);
/* A row left the set (deleted): */
int cebs_ready_taken(sqlite3 *db, const char *route, int64_t seq);
/* Any other change of a row's state or next_at (outcome, replay,
 * recovery): recomputes the row and, for a keyed row, its key's head. */
int cebs_ready_changed(sqlite3 *db, const char *route, int64_t seq);
/* cebs_ready_changed after seq, the row its key had in progress, was
 * settled (done, dead, retrying or deferred): no row of the key is in
 * progress now (one at a time), so its entry is its oldest unsettled row,
 * found without looking for one in progress. */
int cebs_ready_settled(sqlite3 *db, const char *route, int64_t seq);

/* Committer, at a handle's first claim: the lease_owner.id of instance
 * (added when new; owners no claim names any more are dropped). CEB_OK or
 * CEB_EIO. */
int cebs_owner_register(sqlite3 *db, const char *instance, int64_t *id);
/* Committer, in a transaction about to claim rows: st->owner_id set and
 * its lease_owner row present (put back when another handle's
 * registration dropped it). CEB_OK or CEB_EIO. */
int cebs_owner_ensure(cebs_store *st, sqlite3 *db);

/* Applies the ordered migrations up to CEB_STORE_SCHEMA_VERSION. */
int cebs_migrate(sqlite3 *db, char *err, size_t errlen);
/* The same up to target only: tests build the databases of older
 * versions with it. */
int cebs_migrate_to(sqlite3 *db, int target, char *err, size_t errlen);

/* Runs one statement with optional text binds; CEB_OK or CEB_EIO. */
int cebs_exec(sqlite3 *db, const char *sql);

/* Prepared statement helpers: returns NULL and logs on error. */
sqlite3_stmt *cebs_prepare(sqlite3 *db, const char *sql);

/* Binds NULL-able text. */
void cebs_bind_text(sqlite3_stmt *s, int i, const char *v);

/* strdup of a column (NULL stays NULL). */
char *cebs_col_dup(sqlite3_stmt *s, int i);

/* Sets a JSON member from a column: integer, text or null. */
void cebs_json_col(json_t *o, const char *key, sqlite3_stmt *s, int i);

/* Applies a DLQ filter as a WHERE clause into sql (appends) and binds it. */
void cebs_dlq_where(char *sql, size_t size, const ceb_dlq_filter *f);
void cebs_dlq_bind(sqlite3_stmt *s, int first, const ceb_dlq_filter *f);

/* 64-bit FNV-1a of an event id, as stored in journal.idh. */
int64_t cebs_id_hash(const char *id);

/* A cached prepared statement of the committer's connection, reset and
 * unbound, keyed by the identity of the sql string (use string literals).
 * Committer thread only. NULL on error (logged). */
sqlite3_stmt *cebs_stmt(sqlite3 *db, const char *sql);
/* Finalizes every statement of db (before closing it). */
void cebs_finalize_all(sqlite3 *db);

/* ---- the engine's operations (store_engine.c puts them in its table;
 * each as its ceb_store_* in ceb_store.h) ---- */
int cebs_open(const ceb_store_opts *opts, const char *path, ceb_store *owner,
              cebs_store **out, char *err, size_t errlen);
void cebs_close(cebs_store *st);
int cebs_writable(cebs_store *st, char *why, size_t whylen);
void cebs_stats(cebs_store *st, ceb_store_stats *out);
void cebs_set_ingest_listener(cebs_store *st, ceb_store_ingest_listener fn,
                              void *arg);
void cebs_set_claim_hook(cebs_store *st, const ceb_store_claim_hook *hook);
int cebs_ingest(cebs_store *st, ceb_ingest_batch *batch, int bounded,
                ceb_store_done_fn done, void *arg);
int cebs_claim(cebs_store *st, const char *route, int64_t now, size_t max,
               int64_t lease_ms, ceb_claim **out, size_t *count);
int64_t cebs_next_due(cebs_store *st, const char *route, int64_t after);
int cebs_settle(cebs_store *st, ceb_attempt_result *r, ceb_store_done_fn done,
                void *arg);
int cebs_recover(cebs_store *st, int64_t now);
int64_t cebs_count_open(cebs_store *st, const char *route);
int64_t cebs_oldest_open(cebs_store *st, const char *route);
json_t *cebs_event_status(cebs_store *st, const char *id, const char *source,
                          size_t max);
json_t *cebs_dlq_list(cebs_store *st, const ceb_dlq_filter *f);
json_t *cebs_dlq_show(cebs_store *st, int64_t id);
int cebs_dlq_replay(cebs_store *st, const ceb_dlq_filter *f, int64_t now,
                    int dry_run, size_t *count, json_t *replayed);
int cebs_dlq_purge(cebs_store *st, const ceb_dlq_filter *f, int dry_run,
                   size_t *count);
int cebs_dlq_forwarded(cebs_store *st, int64_t id, int64_t now,
                       ceb_store_done_fn done, void *arg);
int cebs_dlq_unforwarded(cebs_store *st, const char *route, int64_t after,
                         size_t max, int64_t *ids, size_t *n);
char *cebs_dlq_forward_event(cebs_store *st, int64_t id, int *status);
int cebs_idem_begin(cebs_store *st, const char *client, const char *key,
                    const char *fingerprint, int64_t now, ceb_idem_result *res);
int cebs_idem_finish(cebs_store *st, const char *client, const char *key,
                     int http_status, const char *content_type,
                     const char *body, size_t body_len, int64_t now,
                     int64_t ttl_ms);
int cebs_idem_abort(cebs_store *st, const char *client, const char *key);
int cebs_idem_reset_inflight(cebs_store *st);
int cebs_contract_put(cebs_store *st, const char *name, const char *version,
                      const char *document, size_t len, const char *provenance,
                      int64_t now);
json_t *cebs_contract_list(cebs_store *st, const char *name);
char *cebs_contract_get(cebs_store *st, const char *name, const char *version,
                        size_t *len);
int cebs_sweep(cebs_store *st, int64_t now, int64_t retention_ms, size_t chunk);
int cebs_pull_append(cebs_store *st, const char *queue, const char *key,
                     const char *json, size_t len, size_t max,
                     ceb_store_done_fn done, void *arg);
int cebs_pull_fetch(cebs_store *st, const char *queue, int64_t after,
                    size_t max, ceb_store_pull_visit visit, void *arg,
                    int64_t *last);
int cebs_pull_commit(cebs_store *st, const char *queue, int64_t cursor,
                     int64_t *committed);
int cebs_pull_stats(cebs_store *st, const char *queue, int64_t *depth,
                    int64_t *last, int64_t *committed);
int cebs_shared(cebs_store *st);
int cebs_try_lead(cebs_store *st, const char *task, int64_t now);
/* store_cluster.c: the cluster view's tables (ceb_store.h). */
int cebs_heartbeat(cebs_store *st, const ceb_store_member *m, int64_t now);
int cebs_leave(cebs_store *st);
json_t *cebs_cluster(cebs_store *st, int64_t now);
json_t *cebs_dlq_of_seq(cebs_store *st, int64_t seq, size_t max);
/* ceb_store_attempts_of (store_delivery.c). */
json_t *cebs_attempts_of(cebs_store *st, int64_t seq, size_t max);
/* store_sinks.c: the sink life-cycle rows */
int cebs_sink_state_get(cebs_store *st, const char *sink, ceb_sink_state *out);
int cebs_sink_state_put(cebs_store *st, const char *sink,
                        const ceb_sink_state *state);
json_t *cebs_sink_states(cebs_store *st);
/* Callbacks (store_callback.c), in the committer's transaction: keeps an
 * ingested event's callback; after a final settle queues the callback
 * delivery when the journal row just settled (sets r->callback_queued). */
int cebs_callback_add(sqlite3 *db, int64_t seq, const char *route,
                      const char *url);
int cebs_callback_settled(sqlite3 *db, ceb_attempt_result *r);
/* ceb_store_callback_url. Read connection. */
char *cebs_callback_url(cebs_store *st, int64_t seq, int *status);
/* ceb_store_key_stats (store_delivery.c). */
json_t *cebs_key_stats(cebs_store *st, const char *route, size_t limit);
/* ceb_store_count_open_key (store_delivery.c). */
int64_t cebs_count_open_key(cebs_store *st, const char *route, const char *key,
                            int64_t cap);
/* The archive (store_replay.c): ceb_store_replay_range. */
int cebs_replay_range(cebs_store *st, const ceb_replay_filter *f, int64_t now,
                      int dry_run, size_t *count, int *exists);

#endif
