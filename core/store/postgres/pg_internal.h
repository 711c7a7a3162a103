/* Internals shared by the PostgreSQL engine's files. Not for other parts
 * (core/store/postgres/pg_conn.h is the part other files of this folder
 * may use). */
#ifndef CEB_STORE_PG_INTERNAL_H
#define CEB_STORE_PG_INTERNAL_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdint.h>

#include "store/ceb_store_engine.h"
#include "store/postgres/pg_cluster.h"
#include "store/postgres/pg_conn.h"

/* Schema version this build writes (table ceb_schema). */
#define CEBPG_SCHEMA_VERSION 13
/* How long a blocking op waits for a pool connection. */
#define CEBPG_POOL_WAIT_MS 30000
/* Error text kept per delivery and DLQ row (bytes, cut on UTF-8). */
#define CEBPG_ERROR_MAX 512

/* Kinds of queued op (the committer's, pg_commit.c). */
enum { CEBPG_OP_INGEST, CEBPG_OP_SETTLE, CEBPG_OP_FORWARDED, CEBPG_OP_CLAIM };

typedef struct cebpg_claim_args {
  const char *route;
  int64_t now, lease_until;
  int64_t token; /* of the last sending (cebpg_claim_token) */
  size_t max;
  ceb_claim *out; /* set by the committer */
  size_t count;
} cebpg_claim_args;

typedef struct cebpg_fwd_args {
  int64_t id, now;
} cebpg_fwd_args;

typedef struct cebpg_op {
  struct cebpg_op *next;
  int kind;
  int bounded;
  void *arg; /* ceb_ingest_batch, ceb_attempt_result, cebpg_fwd_args,
                cebpg_claim_args */
  ceb_store_done_fn done;
  void *done_arg;
  int status;
  int nsent; /* statements this op sent in the running group */
  /* an ingest's claims at ingest (pg_ingest.c): reserved from the engine
   * when sent, claim_ok[i] set for those the statement wrote claimed */
  ceb_ingest_claim *claims;
  unsigned char *claim_ok;
  size_t nclaims, capclaims;
  /* the (route, order key)s it writes, hashed (cebpg_submit): a group is
   * made of ops none of whose keys a running group holds (pg_commit.c) */
  uint64_t *keys; /* kbuf or allocated */
  size_t nkeys;
  uint64_t kbuf[2];
} cebpg_op;
/* pg_opkeys.c. cebpg_op_keys: sets op->keys from op->arg (cebpg_submit,
 * before the op is queued); CEB_ENOMEM: none set. cebpg_op_free: frees op
 * and its keys, not its arg (the caller's). */
int cebpg_op_keys(cebpg_op *op);
void cebpg_op_free(cebpg_op *op);

/* The in-flight idempotency reservations this process holds (hash of
 * client NUL key); a reservation row of this instance not held here is
 * one whose abort or finish failed to write, and is taken over. */
typedef struct cebpg_live {
  pthread_mutex_t lock;
  uint64_t *h;
  size_t n, cap;
} cebpg_live;

/* The fence a claim writes (the claim statement and the ingest's claims
 * at ingest): the row's count of claims in the high bits, a token of the
 * claiming statement in the low CEBPG_TOKEN_BITS. Still strictly
 * increasing per row (the count grows by one per claim), and the rows one
 * statement claimed are known by their token even when its answer was
 * lost (cebpg_lost_claim): same ms and lease do not tell two claims apart.
 * 31 bits of count: no row is claimed 2^31 times. */
#define CEBPG_TOKEN_BITS 32
#define CEBPG_TOKEN_MASK 4294967295LL
/* A new token (any thread): a counter of this handle's claiming
 * statements, modulo 2^32. Two statements of this instance share one only
 * 2^32 statements apart, and a lost claim's release matches its now and
 * lease as well. */
int64_t cebpg_claim_token(ceb_store_impl *s);

/* A claim whose rows no caller knows of while they may be in progress
 * under this instance's lease: its COMMIT's answer was lost with the
 * connection, or the group committed and an answer was not read
 * (pg_commit.c). Released (attempt given back) at the committer's next
 * group or connection: only rows in progress under this instance with
 * the claim's now, lease and token. */
typedef struct cebpg_lost_claim {
  struct cebpg_lost_claim *next;
  int64_t now, lease_until, token;
  char route[];
} cebpg_lost_claim;

/* One committer thread (pg_commit.c). Several run at once, each with its
 * own connection, so that one group is written while another's COMMIT
 * waits for the WAL flush (PostgreSQL flushes concurrent commits
 * together): one committer would wait for every flush in turn. */
#define CEBPG_COMMITTERS_MAX 4
typedef struct cebpg_committer {
  ceb_store_impl *s;
  pthread_t thread;
  PGconn *conn;           /* its own; NULL while lost */
  uint64_t gen;           /* the pool's generation when conn was made */
  cebpg_lost_claim *lost; /* its claims whose answer was lost */
  /* its group holds the ingest turn (turn_cond below) and has not given it
   * up yet; only this committer's thread reads or writes it */
  int turn_held;
  /* the turn was given up before COMMIT's answer (pg_commit.c) */
  int turn_early;
  int turn_keep; /* running a failed group's ops again: no early pass */
  /* the keys (cebpg_op.keys) of its running group, sorted; under the
   * store's lock; empty while it runs none */
  uint64_t *gkeys;
  size_t ngkeys, capgkeys;
} cebpg_committer;

struct ceb_store_impl {
  cebpg_pool *pool;
  ceb_store *owner; /* the handle served: ceb_store_woken(owner, route) */
  char instance[CEB_STORE_INSTANCE_MAX];
  int64_t lease_ms;
  size_t group_max;
  int64_t group_wait_ms;
  size_t queue_max;
  /* the committer (pg_commit.c) */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  cebpg_op *head, *tail;
  size_t queued_bounded;
  /* Groups holding ingests run in the order they were dequeued: a ticket
   * each (under lock), in turn (turn_cond). Several committers otherwise
   * let a later group take a key's advisory lock first, and its events got
   * the lower seq: FIFO per key broken (pg_commit.c). The turn passes as
   * soon as every statement but COMMIT has answered: the group's seqs are
   * taken and its key locks held until it ends, so the next group's
   * statements run while this one's WAL is flushed. */
  pthread_cond_t turn_cond;
  uint64_t ingest_next, ingest_serving;
  int stopping;
  cebpg_committer committers[CEBPG_COMMITTERS_MAX];
  size_t ncommitters;
  ceb_store_ingest_listener listener;
  void *listener_arg;
  ceb_store_claim_hook claim_hook; /* set as the listener is */
  uint64_t batches, ops;           /* under lock */
  _Atomic uint32_t tokens;         /* cebpg_claim_token */
  cebpg_live live;
  /* the cluster parts (pg_cluster.h) */
  cebpg_cluster *notify;
  cebpg_pull *pull;
  pthread_mutex_t lead_lock;
  PGconn *lead_conn;
  char **held;
  size_t nheld, capheld;
};

/* ---- pg_schema.c ---- */
/* Brings the database to CEBPG_SCHEMA_VERSION under an advisory lock
 * (several bridges may start at once). migrate 0: only checks, and refuses
 * an older schema with the command to run. A newer schema than this
 * build's is refused. CEB_OK or < 0 with err. */
/* pg_opkeys.c, under s->lock (take_group). cebpg_keys_busy: whether one
 * of op's keys is in passed[0..npassed) (ops left in the queue before it)
 * or in another committer's running group. cebpg_group_keys_add: adds
 * op's keys to w's group (-1: out of memory, nothing added);
 * cebpg_group_keys_seal sorts them once the group is made. */
int cebpg_keys_busy(const ceb_store_impl *s, const cebpg_committer *w,
                    const cebpg_op *op, const uint64_t *passed, size_t npassed);
int cebpg_group_keys_add(cebpg_committer *w, const cebpg_op *op);
void cebpg_group_keys_seal(cebpg_committer *w);

int cebpg_migrate(cebpg_pool *pool, int migrate, char *err, size_t errlen);
/* The schema version of the database (0: none yet), or < 0. */
int cebpg_schema_version(cebpg_pool *pool, char *err, size_t errlen);

/* ---- pg_commit.c ---- */
/* Starts n committers (1 .. CEBPG_COMMITTERS_MAX). */
int cebpg_committer_start(ceb_store_impl *s, size_t n, char *err,
                          size_t errlen);
/* Runs what is queued (done included) and joins the thread. */
void cebpg_committer_stop(ceb_store_impl *s);
/* Queues op (malloc'd; the committer frees it). CEB_OK, or CEB_EBUSY /
 * CEB_EIO (the database is unreachable) / CEB_ESHUTDOWN, op not taken. */
int cebpg_submit(ceb_store_impl *s, cebpg_op *op);
/* Queues a new op and waits for it: its status. */
int cebpg_call(ceb_store_impl *s, int kind, void *arg);

/* ---- pg_ingest.c, pg_settle.c, pg_delivery.c: the pipelined statements
 * ---- */
/* Prepares the committer's statements on a new connection. */
int cebpg_prepare_all(ceb_store_impl *s, PGconn *c);
/* Sends one statement for every ingest op of the group (all in one);
 * returns the count sent (0 or 1) or < 0. */
int cebpg_ingest_send(ceb_store_impl *s, PGconn *c, cebpg_op **ops, size_t n);
/* Reads that statement's result into the batches' events. */
int cebpg_ingest_recv(PGresult *r, cebpg_op **ops, size_t n);
/* The ingest op's claims at ingest end (committer thread, once per send):
 * committed 1 after the ingest listener, those the statement wrote
 * claimed go to the engine and the other reservations back; committed 0
 * (not sent, failed, rolled back, or about to be sent again) all go back.
 * Frees them. */
void cebpg_ingest_claims_end(ceb_store_impl *s, cebpg_op *op, int committed);
/* Whether op holds claim arrays (reservations or only their room). */
#define CEBPG_CLAIMS_HELD(op) ((op)->claims || (op)->claim_ok)
/* Sends the key locks of the group's keyed ingests and settles
 * (pg_keylock.c); 0 when there is nothing to lock, 1 sent, < 0 failed. */
int cebpg_keylock_send(PGconn *c, cebpg_op **ops, size_t n);
/* pg_settle.c: orders the group's settle ops set[0..n) into rounds in
 * which no seq appears twice (the k-th outcome of a seq in group order goes
 * to round k), keeping their order within a round; round r is
 * set[start[r] .. start[r + 1]) (start holds n + 1). Returns the count of
 * rounds, 0 when n is 0 or out of memory. */
size_t cebpg_settle_rounds(cebpg_op **set, size_t n, size_t *start);
/* pg_settle.c: sent before the group's settles, in its transaction, so
 * that their plans read delivery by index (why there); no parameters. */
extern const char cebpg_sql_noseqscan[];
extern const char cebpg_sql_noseqscan_async[];
/* Sends one statement for the settles of one round (all in one); returns 1
 * sent, 0 for none, < 0 failed. */
int cebpg_settle_send(PGconn *c, cebpg_op **ops, size_t n);
/* Reads its result into the ops: status CEB_OK (applied, or already applied
 * by a resend's first sending) or CEB_ECONFLICT (lease lost), dlq_id and
 * callback_queued. */
int cebpg_settle_recv(PGresult *r, cebpg_op **ops, size_t n);
int cebpg_claim_send(ceb_store_impl *s, PGconn *c, cebpg_op *op);
int cebpg_claim_recv(PGresult *r, cebpg_op *op);
int cebpg_fwd_send(PGconn *c, cebpg_op *op);
int cebpg_fwd_recv(PGresult *r, cebpg_op *op);

/* ---- pg_util.c ---- */
/* A growable text buffer (array literals). */
typedef struct cebpg_buf {
  char *p;
  size_t len, cap;
  int oom;
} cebpg_buf;
void cebpg_buf_add(cebpg_buf *b, const char *s, size_t n);
/* Appends one element of a text[] literal: quoted and escaped, or NULL
 * when s is NULL. first: no comma before it. */
void cebpg_buf_elem(cebpg_buf *b, const char *s, size_t n, int first);
void cebpg_buf_free(cebpg_buf *b);

/* Parameters of one statement in text form. */
#define CEBPG_MAX_PARAMS 16
typedef struct cebpg_params {
  const char *v[CEBPG_MAX_PARAMS];
  int len[CEBPG_MAX_PARAMS];
  int fmt[CEBPG_MAX_PARAMS];
  char num[CEBPG_MAX_PARAMS][24];
  int n;
} cebpg_params;
void cebpg_p_text(cebpg_params *p, const char *v); /* NULL: SQL NULL */
void cebpg_p_int(cebpg_params *p, int64_t v);
void cebpg_p_bytes(cebpg_params *p, const void *v, size_t n); /* bytea */
/* The error text cut to CEBPG_ERROR_MAX bytes on a UTF-8 boundary, into
 * buf (which must hold CEBPG_ERROR_MAX + 1); NULL stays NULL. */
const char *cebpg_cut_error(const char *err, char *buf);

/* Runs one statement on a pool connection (autocommit) and returns its
 * result when it succeeded (PGRES_COMMAND_OK or TUPLES_OK; PQclear it),
 * else NULL after logging "store: <what>: <scrubbed error>" and telling
 * the pool. */
PGresult *cebpg_query(ceb_store_impl *s, const char *what, const char *sql,
                      const cebpg_params *p);
/* cebpg_query as the prepared statement name (of sql), prepared on the
 * connection the first time it runs there: for reads run many times a
 * second, whose parse and plan cost more than their execution (the
 * claims' next-due read: 0.3 ms of planning per call, bench/store/
 * RESULTS.md 2026-12-06 session 14). name is unique per sql. */
PGresult *cebpg_query_prepared(ceb_store_impl *s, const char *what,
                               const char *name, const char *sql,
                               const cebpg_params *p);
/* The same on a connection the caller holds. */
PGresult *cebpg_query_on(ceb_store_impl *s, PGconn *c, const char *what,
                         const char *sql, const cebpg_params *p);
/* A text column: malloc'd copy, NULL when SQL NULL. */
char *cebpg_dup(const PGresult *r, int row, int col);
int64_t cebpg_int(const PGresult *r, int row, int col);
/* Sets o[key] from a column: null, an integer (int2/4/8 columns) or a
 * string. */
void cebpg_json_col(json_t *o, const char *key, const PGresult *r, int row,
                    int col);

/* ---- pg_live.c ---- */
void cebpg_live_init(cebpg_live *l);
void cebpg_live_free(cebpg_live *l);
int cebpg_live_add(cebpg_live *l, const char *client, const char *key);
void cebpg_live_remove(cebpg_live *l, const char *client, const char *key);
int cebpg_live_has(cebpg_live *l, const char *client, const char *key);

/* ---- the engine's ops (pg_engine.c wires them into the table) ---- */
int cebpg_ingest(ceb_store_impl *s, ceb_ingest_batch *b, int bounded,
                 ceb_store_done_fn done, void *arg);
int cebpg_claim(ceb_store_impl *s, const char *route, int64_t now, size_t max,
                int64_t lease_ms, ceb_claim **out, size_t *count);
int cebpg_settle(ceb_store_impl *s, ceb_attempt_result *r,
                 ceb_store_done_fn done, void *arg);
int64_t cebpg_next_due(ceb_store_impl *s, const char *route, int64_t after);
int cebpg_recover(ceb_store_impl *s, int64_t now);
int64_t cebpg_count_open(ceb_store_impl *s, const char *route);
int64_t cebpg_oldest_open(ceb_store_impl *s, const char *route);
json_t *cebpg_event_status(ceb_store_impl *s, const char *id,
                           const char *source, size_t max);
json_t *cebpg_dlq_list(ceb_store_impl *s, const ceb_dlq_filter *f);
json_t *cebpg_dlq_show(ceb_store_impl *s, int64_t id);
json_t *cebpg_dlq_of_seq(ceb_store_impl *s, int64_t seq, size_t max);
json_t *cebpg_attempts_of(ceb_store_impl *s, int64_t seq, size_t max);
int cebpg_dlq_replay(ceb_store_impl *s, const ceb_dlq_filter *f, int64_t now,
                     int dry_run, size_t *count, json_t *replayed);
int cebpg_dlq_purge(ceb_store_impl *s, const ceb_dlq_filter *f, int dry_run,
                    size_t *count);
int cebpg_dlq_forwarded(ceb_store_impl *s, int64_t id, int64_t now,
                        ceb_store_done_fn done, void *arg);
int cebpg_dlq_unforwarded(ceb_store_impl *s, const char *route, int64_t after,
                          size_t max, int64_t *ids, size_t *n);
char *cebpg_dlq_forward_event(ceb_store_impl *s, int64_t id, int *status);
int cebpg_idem_begin(ceb_store_impl *s, const char *client, const char *key,
                     const char *fingerprint, int64_t now,
                     ceb_idem_result *res);
int cebpg_idem_finish(ceb_store_impl *s, const char *client, const char *key,
                      int http_status, const char *content_type,
                      const char *body, size_t body_len, int64_t now,
                      int64_t ttl_ms);
int cebpg_idem_abort(ceb_store_impl *s, const char *client, const char *key);
int cebpg_idem_reset_inflight(ceb_store_impl *s);
int cebpg_contract_put(ceb_store_impl *s, const char *name, const char *version,
                       const char *document, size_t len, const char *provenance,
                       int64_t now);
json_t *cebpg_contract_list(ceb_store_impl *s, const char *name);
char *cebpg_contract_get(ceb_store_impl *s, const char *name,
                         const char *version, size_t *len);
int cebpg_sweep(ceb_store_impl *s, int64_t now, int64_t retention_ms,
                size_t chunk);
int cebpg_sink_state_get(ceb_store_impl *s, const char *sink,
                         ceb_sink_state *out);
int cebpg_sink_state_put(ceb_store_impl *s, const char *sink,
                         const ceb_sink_state *state);
json_t *cebpg_sink_states(ceb_store_impl *s);
/* ceb_store_callback_url (pg_delivery.c). */
char *cebpg_callback_url(ceb_store_impl *s, int64_t seq, int *status);
/* ceb_store_key_stats (pg_delivery.c). */
json_t *cebpg_key_stats(ceb_store_impl *s, const char *route, size_t limit);
/* ceb_store_count_open_key (pg_delivery.c). */
int64_t cebpg_count_open_key(ceb_store_impl *s, const char *route,
                             const char *key, int64_t cap);
/* The archive (pg_replay.c): ceb_store_replay_range. */
int cebpg_replay_range(ceb_store_impl *s, const ceb_replay_filter *f,
                       int64_t now, int dry_run, size_t *count, int *exists);

#endif
