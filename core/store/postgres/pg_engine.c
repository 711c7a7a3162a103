/* The PostgreSQL engine's table (ceb_store_engine.h): open (pool, schema
 * migrations, committer), close, health, and the ops of the other files. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_internal.h"

/* Connections when store.pool is not set: the committer's, and the
 * blocking reads and admin writes of the HTTP threads and the CLI. */
#define POOL_DEFAULT 8

static void pg_close(ceb_store_impl *s) {
  if (!s) return;
  cebpg_pull_stop(s->pull);
  /* the committers first: a group that finishes while they stop notifies
   * its routes through s->notify (finish_group), which must still be
   * there (a SIGTERM under load freed it under them: heap-use-after-free,
   * integration_ha_pg_rolling under ASan) */
  cebpg_committer_stop(s);
  cebpg_notify_stop(s->notify);
  s->notify = NULL;
  cebpg_lead_close(s);
  cebpg_pool_free(s->pool);
  cebpg_live_free(&s->live);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  pthread_cond_destroy(&s->turn_cond);
  pthread_mutex_destroy(&s->lead_lock);
  free(s->held);
  free(s);
}

static int pg_open(const ceb_store_opts *opts, const char *location,
                   ceb_store *owner, ceb_store_impl **out, char *err,
                   size_t errlen) {
  *out = NULL;
  ceb_store_impl *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "store: out of memory");
    return CEB_ENOMEM;
  }
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  pthread_cond_init(&s->turn_cond, NULL);
  cebpg_live_init(&s->live);
  pthread_mutex_init(&s->lead_lock, NULL);
  s->owner = owner;
  snprintf(s->instance, sizeof s->instance, "%s",
           opts->instance ? opts->instance : "");
  s->lease_ms =
      opts->lease_ms > 0 ? opts->lease_ms : CEB_STORE_LEASE_DEFAULT_MS;
  s->group_max = opts->group_max ? opts->group_max : 512;
  s->group_wait_ms = opts->group_wait_ms;
  s->queue_max = opts->queue_max ? opts->queue_max : 4096;
  size_t pool = opts->pool_size ? opts->pool_size : POOL_DEFAULT;
  cebpg_pool_opts po = {.conninfo = location,
                        .password = opts->password,
                        .size = pool < 2 ? 2 : pool,
                        .application_name = "cebridge"};
  int rc = cebpg_pool_new(&po, &s->pool, err, errlen);
  if (rc == CEB_OK) {
    rc = cebpg_migrate(s->pool, !opts->no_migrate, err, errlen);
    if (rc == CEB_EIO && !strstr(err, "store:")) {
      char why[400];
      snprintf(why, sizeof why, "%s", err);
      snprintf(err, errlen, "store: cannot open %s: %s",
               cebpg_pool_display(s->pool), why);
    }
  }
  /* committers keep a pool connection each: leave the rest of the pool
   * at least one (reads, admin writes). Two: with groups of disjoint keys
   * (pg_commit.c) one group's statements run while the other's COMMIT
   * waits for its WAL flush; a third made the groups smaller for no more
   * overlap (bench/store/RESULTS.md, session 15) */
  size_t committers = po.size - 1 < 2 ? po.size - 1 : 2;
  if (rc == CEB_OK) rc = cebpg_committer_start(s, committers, err, errlen);
  if (rc == CEB_OK) rc = cebpg_notify_start(s, &s->notify, err, errlen);
  if (rc == CEB_OK) rc = cebpg_pull_start(s, &s->pull, err, errlen);
  if (rc != CEB_OK) {
    pg_close(s);
    return rc;
  }
  ceb_log_info("store: PostgreSQL %s (schema %d, pool %zu, instance %s)",
               cebpg_pool_display(s->pool), CEBPG_SCHEMA_VERSION, po.size,
               s->instance);
  *out = s;
  return CEB_OK;
}

static int pg_writable(ceb_store_impl *s, char *why, size_t whylen) {
  return cebpg_pool_healthy(s->pool, why, whylen);
}

static void pg_stats(ceb_store_impl *s, ceb_store_stats *o) {
  pthread_mutex_lock(&s->lock);
  o->batches = s->batches;
  o->ops = s->ops;
  o->queued = s->queued_bounded;
  pthread_mutex_unlock(&s->lock);
  cebpg_notify_counts(s->notify, &o->notify_sent, &o->notify_skipped);
}

static void pg_set_listener(ceb_store_impl *s, ceb_store_ingest_listener fn,
                            void *arg) {
  pthread_mutex_lock(&s->lock);
  s->listener = fn;
  s->listener_arg = arg;
  pthread_mutex_unlock(&s->lock);
}

/* Claims at ingest (pg_ingest.c); set, as the listener is, while no
 * ingest is queued. */
static void pg_set_claim_hook(ceb_store_impl *s,
                              const ceb_store_claim_hook *hook) {
  pthread_mutex_lock(&s->lock);
  s->claim_hook = hook ? *hook : (ceb_store_claim_hook){0};
  pthread_mutex_unlock(&s->lock);
}

/* Other bridges may write the database while this one runs. */
static int pg_shared(ceb_store_impl *s) {
  (void)s;
  return 1;
}

const ceb_store_engine ceb_store_postgres_engine = {
    .struct_size = sizeof(ceb_store_engine),
    .version = CEB_STORE_ENGINE_VERSION,
    .name = "postgresql",
    .open = pg_open,
    .close = pg_close,
    .writable = pg_writable,
    .stats = pg_stats,
    .set_ingest_listener = pg_set_listener,
    .set_claim_hook = pg_set_claim_hook,
    .ingest = cebpg_ingest,
    .claim = cebpg_claim,
    .next_due = cebpg_next_due,
    .settle = cebpg_settle,
    .recover = cebpg_recover,
    .count_open = cebpg_count_open,
    .oldest_open = cebpg_oldest_open,
    .event_status = cebpg_event_status,
    .dlq_list = cebpg_dlq_list,
    .dlq_show = cebpg_dlq_show,
    .dlq_replay = cebpg_dlq_replay,
    .dlq_purge = cebpg_dlq_purge,
    .dlq_forwarded = cebpg_dlq_forwarded,
    .dlq_unforwarded = cebpg_dlq_unforwarded,
    .dlq_forward_event = cebpg_dlq_forward_event,
    .idem_begin = cebpg_idem_begin,
    .idem_finish = cebpg_idem_finish,
    .idem_abort = cebpg_idem_abort,
    .idem_reset_inflight = cebpg_idem_reset_inflight,
    .contract_put = cebpg_contract_put,
    .contract_list = cebpg_contract_list,
    .contract_get = cebpg_contract_get,
    .sweep = cebpg_sweep,
    .pull_append = cebpg_pull_append,
    .pull_fetch = cebpg_pull_fetch,
    .pull_commit = cebpg_pull_commit,
    .pull_stats = cebpg_pull_stats,
    .shared = pg_shared,
    .try_lead = cebpg_try_lead,
    .dlq_of_seq = cebpg_dlq_of_seq,
    .heartbeat = cebpg_heartbeat,
    .leave = cebpg_leave,
    .cluster = cebpg_cluster_view,
    .attempts_of = cebpg_attempts_of,
    .sink_state_get = cebpg_sink_state_get,
    .sink_state_put = cebpg_sink_state_put,
    .sink_states = cebpg_sink_states,
    .replay_range = cebpg_replay_range,
    .count_open_key = cebpg_count_open_key,
    .key_stats = cebpg_key_stats,
    .callback_url = cebpg_callback_url,
};
