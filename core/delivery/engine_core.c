/* Engine lifecycle and the worker loop: claim what is due, dispatch it to
 * the sink, time out what a sink holds too long, then sleep until the
 * earliest timer or a kick. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ceb/ceb.h>

#include "delivery/engine_internal.h"
#include "log/ceb_log.h"

#define CLAIM_MAX 64
#define MAX_SLEEP_MS 1000 /* re-read the clock at least this often */
#define POLL_MS 2000      /* store.poll_interval's default */

static void engine_ingested(void *arg, const ceb_ingest_batch *b);
static void engine_woken(void *arg, const char *route);

int ceb_engine_new(const ceb_engine_opts *o, ceb_engine **out) {
  *out = NULL;
  if (!o || !o->store || (o->nroutes && !o->routes) || (o->nsinks && !o->sinks))
    return CEB_EINVAL;
  ceb_engine *e = calloc(1, sizeof *e);
  if (!e) return CEB_ENOMEM;
  e->store = o->store;
  e->metrics = o->metrics;
  e->mapper = o->mapper;
  e->callback_doc = o->callback_doc;
  e->callback_arg = o->callback_arg;
  e->clock = o->clock;
  e->clock_arg = o->clock_arg;
  e->nworkers = o->workers ? o->workers : 1;
  if (e->nworkers > o->nroutes && o->nroutes)
    e->nworkers = (unsigned)o->nroutes;
  e->max_queued = o->max_queued > 0 ? o->max_queued : 1000000;
  e->poll_ms = o->poll_ms > 0 ? o->poll_ms : POLL_MS;
  e->shared = ceb_store_shared(o->store) == 1;
  e->rng = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)e;
  e->fwd_due = INT64_MAX;
  if (e->metrics) {
    ceb_metrics_declare(e->metrics, "cebridge_dlq_forwards_total",
                        CEB_MT_COUNTER,
                        "Dead-letter forwards to DLQ sinks by result.");
    ceb_metrics_declare(e->metrics, "cebridge_dlq_forward_pending",
                        CEB_MT_GAUGE,
                        "Dead letters not yet forwarded to their DLQ sink.");
  }
  e->sinks = calloc(o->nsinks ? o->nsinks : 1, sizeof *e->sinks);
  e->routes = calloc(o->nroutes ? o->nroutes : 1, sizeof *e->routes);
  e->threads = calloc(e->nworkers, sizeof *e->threads);
  e->expire_at = calloc(e->nworkers, sizeof *e->expire_at); /* 0: scan */
  if (!e->sinks || !e->routes || !e->threads || !e->expire_at) {
    free(e->sinks);
    free(e->routes);
    free(e->threads);
    free(e->expire_at);
    free(e);
    return CEB_ENOMEM;
  }
  int64_t now = cebe_now(e);
  for (size_t i = 0; i < o->nsinks; i++) {
    e->sinks[i].cfg = o->sinks[i];
    ceb_circuit_init(&e->sinks[i].circuit, o->sinks[i].circuit_failures,
                     o->sinks[i].circuit_open_for_ms);
    ceb_token_bucket_init(&e->sinks[i].bucket, o->sinks[i].rate,
                          o->sinks[i].burst, now);
  }
  e->nsinks = o->nsinks;
  for (size_t i = 0; i < o->nroutes; i++) {
    if (o->routes[i].sink >= o->nsinks) {
      for (size_t j = 0; j < i; j++)
        ceb_key_metrics_free(e->routes[j].km);
      free(e->sinks);
      free(e->routes);
      free(e->threads);
      free(e->expire_at);
      free(e);
      return CEB_EINVAL;
    }
    e->routes[i].cfg = o->routes[i];
    if (!e->routes[i].cfg.max_inflight) e->routes[i].cfg.max_inflight = 1;
    e->routes[i].worker = (unsigned)(i % e->nworkers);
    snprintf(e->routes[i].labels, sizeof e->routes[i].labels, "route=\"%s\"",
             o->routes[i].name);
    /* per-key metrics only where configured: other routes pay nothing */
    if (e->metrics &&
        (o->routes[i].nmetrics_keys || o->routes[i].metrics_keys_top)) {
      e->routes[i].km = ceb_key_metrics_new(o->routes[i].metrics_keys,
                                            o->routes[i].nmetrics_keys,
                                            o->routes[i].metrics_keys_top);
      if (!e->routes[i].km)
        ceb_log_error("engine: route %s: per-key metrics off (out of memory "
                      "or more than %d keys)",
                      o->routes[i].name, CEB_KEY_METRICS_MAX);
    }
  }
  if (e->metrics) cebe_declare_key_metrics(e->metrics);
  e->nroutes = o->nroutes;
  pthread_mutex_init(&e->lock, NULL);
  pthread_cond_init(&e->cond, NULL);
  pthread_cond_init(&e->idle, NULL);
  /* new deliveries: the store tells the engine, nobody in between */
  ceb_store_set_ingest_listener(e->store, engine_ingested, e);
  cebe_preclaim_hook(e); /* and claims those it may take at once */
  /* work other writers added: announced by the store when it can */
  ceb_store_set_wake_listener(e->store, engine_woken, e);
  *out = e;
  return CEB_OK;
}

typedef struct worker_arg {
  ceb_engine *e;
  unsigned index;
} worker_arg;

int ceb_engine_start(ceb_engine *e) {
  int n = ceb_store_recover(e->store, cebe_now(e));
  if (n < 0) return n;
  if (n > 0)
    ceb_log_warn("engine: %d deliveries were in progress when the previous "
                 "run stopped; they are retried",
                 n);
  pthread_mutex_lock(&e->lock);
  e->open_total = 0;
  for (size_t i = 0; i < e->nroutes; i++) {
    int64_t c = ceb_store_count_open(e->store, e->routes[i].cfg.name);
    e->routes[i].open = c > 0 ? c : 0;
    e->open_total += e->routes[i].open;
  }
  int64_t all = ceb_store_count_open(e->store, NULL);
  if (all > e->open_total) {
    ceb_log_warn("engine: %lld open deliveries belong to routes no longer "
                 "configured; they stay in the store",
                 (long long)(all - e->open_total));
  }
  cebe_update_gauges_locked(e, 1);
  pthread_mutex_unlock(&e->lock);
  cebe_sink_load(e);
  int rc = cebe_fwd_load(e);
  if (rc != CEB_OK) return rc;
  for (unsigned i = 0; i < e->nworkers; i++) {
    worker_arg *wa = malloc(sizeof *wa);
    if (!wa) return CEB_ENOMEM;
    *wa = (worker_arg){e, i};
    if (pthread_create(&e->threads[i], NULL, cebe_worker_main, wa) != 0) {
      free(wa);
      ceb_log_error("engine: cannot start worker %u", i);
      return CEB_EINTERNAL;
    }
    char name[16];
    snprintf(name, sizeof name, "engine-%u", i % 1000u);
    pthread_setname_np(e->threads[i], name);
    e->started = (int)i + 1;
  }
  return CEB_OK;
}

/* The budget is deadline - now on the host clock, spent in real time, so
 * that an injected clock that stands still cannot make drain hang. */
static int64_t real_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ceb_engine_drain(ceb_engine *e, int64_t deadline_ms) {
  pthread_mutex_lock(&e->lock);
  e->draining = 1;
  cebe_kick_locked(e);
  int64_t end = real_ms() + (deadline_ms - cebe_now(e));
  while ((e->inflight_total > 0 || e->fwd_sending > 0) && real_ms() < end) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&e->idle, &e->lock, &ts);
  }
  int rc = e->inflight_total || e->fwd_sending ? CEB_ETIMEOUT : CEB_OK;
  if (rc != CEB_OK)
    ceb_log_warn("engine: drain deadline passed with %zu deliveries in "
                 "flight; they stay pending",
                 e->inflight_total);
  pthread_mutex_unlock(&e->lock);
  return rc;
}

void ceb_engine_stop(ceb_engine *e) {
  pthread_mutex_lock(&e->lock);
  e->stopping = 1;
  cebe_kick_locked(e);
  pthread_mutex_unlock(&e->lock);
  for (int i = 0; i < e->started; i++)
    pthread_join(e->threads[i], NULL);
  e->started = 0;
}

void ceb_engine_free(ceb_engine *e) {
  if (!e) return;
  ceb_engine_stop(e);
  for (size_t i = 0; i < e->live.cap; i++) {
    void *p = e->live.slots[i];
    if (p && p != (void *)1) cebe_dctx_free(p);
  }
  cebe_ptrset_free(&e->live);
  cebe_preclaimed_free(e);
  free(e->fwd);
  for (size_t i = 0; i < e->nroutes; i++)
    ceb_key_metrics_free(e->routes[i].km);
  pthread_mutex_destroy(&e->lock);
  pthread_cond_destroy(&e->cond);
  pthread_cond_destroy(&e->idle);
  free(e->threads);
  free(e->expire_at);
  free(e->sinks);
  free(e->routes);
  free(e);
}

/* The store's ingest listener (committer thread, right after the commit):
 * counts each route's new deliveries before any later transaction can
 * claim or settle them, so the open count never runs behind; one lock and
 * at most one wake per batch. */
static void engine_ingested(void *arg, const ceb_ingest_batch *b) {
  ceb_engine *e = arg;
  int kick = 0;
  pthread_mutex_lock(&e->lock);
  for (size_t i = 0; i < b->count; i++) {
    const ceb_ingest_event *ie = &b->events[i];
    if (!ie->inserted) continue; /* a duplicate: no new rows */
    for (size_t r = 0; r < ie->nroutes; r++) {
      size_t idx = ie->routes[r].index;
      if (idx >= e->nroutes) continue;
      e->routes[idx].open++;
      e->routes[idx].added++;
      if (e->routes[idx].km && ie->routes[r].order_key)
        ceb_key_metrics_seen(e->routes[idx].km, ie->routes[r].order_key);
      e->open_total++;
      /* only when one may be left to claim: a delivery claimed at this
       * ingest holds its slot already (engine_preclaim.c), and its
       * hand-off wakes the worker; a wake here too found nothing to do
       * and doubled the worker's switches */
      if (e->routes[idx].open > (int64_t)e->routes[idx].inflight) kick = 1;
    }
  }
  if (kick) cebe_kick_locked(e);
  pthread_mutex_unlock(&e->lock);
}

void ceb_engine_added(ceb_engine *e, size_t route, int64_t n) {
  pthread_mutex_lock(&e->lock);
  if (route < e->nroutes) {
    e->routes[route].open += n;
    e->routes[route].added += n;
    e->open_total += n;
  }
  cebe_kick_locked(e);
  pthread_mutex_unlock(&e->lock);
}

/* Whether route r of worker w may have a delivery to claim. While this
 * process holds in flight as many as it counts open (what claims at
 * ingest leave after every batch), a claim would only come back empty, a
 * committer transaction for nothing: then a read of the store's earliest
 * due time decides (another writer's rows are due at once, whatever our
 * counts say), kept in rt->due_at for the worker's sleep (due_iter: the
 * worker's pass it was read in). Lock held, dropped around the read. */
#define DUE_READ_MS 50
static int claimable_locked(ceb_engine *e, eng_route *rt, int64_t now,
                            uint64_t iter) {
  if (rt->open > (int64_t)rt->inflight) return 1;
  /* A read younger than DUE_READ_MS (monotonic: the engine's clock may be
   * a test's) that said "later" stands: the worker passes at every ingest
   * and outcome (hundreds a second under load), and on PostgreSQL each
   * read is a round trip and an index walk (1 600 in 10 s of the bench,
   * 4 % of the server's time: bench/store/RESULTS.md, session 15). A
   * wake-up from another writer drops it (engine_woken); without one, its
   * rows wait DUE_READ_MS at most: the worker sleeps no longer than that
   * on a kept read (due_kept, cebe_worker_main's sleep). */
  int64_t mono = cebe_mono_ms();
  int64_t age = mono - rt->due_read_mono;
  if (rt->due_read && age >= 0 && age < DUE_READ_MS && rt->due_at > now) {
    rt->due_iter = iter;
    rt->due_kept = 1;
    return 0;
  }
  pthread_mutex_unlock(&e->lock);
  int64_t due = ceb_store_next_due(e->store, rt->cfg.name, INT64_MIN);
  pthread_mutex_lock(&e->lock);
  rt->due_read = due > now;
  if (due <= now) return 1;
  rt->due_read_mono = mono;
  rt->due_at = due;
  rt->due_iter = iter;
  rt->due_kept = 0;
  return 0;
}

/* The store's wake listener (its notification thread, or a caller of
 * ceb_store_woken): another writer changed route's deliveries (NULL: any
 * route's). A route this process believes empty is recounted before its
 * next claim; one it believes busy claims at once anyway. */
static void engine_woken(void *arg, const char *route) {
  ceb_engine *e = arg;
  pthread_mutex_lock(&e->lock);
  for (size_t r = 0; r < e->nroutes; r++)
    if (!route || strcmp(route, e->routes[r].cfg.name) == 0) {
      if (e->routes[r].open <= 0) e->routes[r].resync = 1;
      e->routes[r].due_read = 0; /* read again (claimable_locked) */
    }
  cebe_kick_locked(e);
  pthread_mutex_unlock(&e->lock);
}

int ceb_engine_accepting(ceb_engine *e) {
  pthread_mutex_lock(&e->lock);
  int ok = e->open_total < e->max_queued;
  pthread_mutex_unlock(&e->lock);
  return ok;
}

int64_t ceb_engine_open_count(ceb_engine *e) {
  pthread_mutex_lock(&e->lock);
  int64_t n = e->open_total;
  pthread_mutex_unlock(&e->lock);
  return n;
}

size_t ceb_engine_inflight(ceb_engine *e) {
  pthread_mutex_lock(&e->lock);
  size_t n = e->inflight_total;
  pthread_mutex_unlock(&e->lock);
  return n;
}

/* Claims up to n due deliveries of route r and dispatches them, or with
 * `refuse` (the sink's circuit is open, or half-open with its probe out)
 * settles them RETRY "circuit.open" without sending: an attempt that falls
 * due while the circuit is open fails at once and counts, as a send that
 * failed would, so the circuit spares the peer but never stretches the
 * route's retry schedule (docs/operator-guide.md). Called with the lock
 * held; drops it around the store and the plugins. Returns how many were
 * claimed. */
static size_t claim_route(ceb_engine *e, size_t r, int64_t now, size_t n,
                          int refuse) {
  eng_route *rt = &e->routes[r];
  ceb_claim *claims = NULL;
  size_t count = 0;
  rt->inflight += (uint32_t)n; /* reserve the slots while unlocked */
  e->inflight_total += n;
  pthread_mutex_unlock(&e->lock);
  /* the lease outlasts the attempt: the engine settles every attempt by
   * its timeout at the latest (a timer), the margin covers the outcome's
   * wait for the store; so a lease is never renewed */
  int rc = ceb_store_claim(e->store, rt->cfg.name, now, n,
                           rt->cfg.timeout_ms + CEBE_LEASE_MARGIN_MS, &claims,
                           &count);
  if (rc != CEB_OK)
    ceb_log_error("engine: claiming on route %s failed: %s", rt->cfg.name,
                  ceb_strerror(rc));
  return cebe_take_claims(e, r, now, n, claims, count, refuse);
}

/* Times out attempts of worker w's routes; lock held. */
static int64_t expire_locked(ceb_engine *e, unsigned w, int64_t now) {
  /* nothing of w's can be due before expire_at[w]: the scan below reads
   * every slot of the set (max_inflight of each route), at every pass */
  if (now < e->expire_at[w]) return e->expire_at[w];
  int64_t next = INT64_MAX;
  for (size_t i = 0; i < e->live.cap; i++) {
    dctx *c = e->live.slots[i];
    if (!c || c == (void *)1 || c->host_settled) continue;
    if (c->kind == DCTX_FORWARD
            ? w != 0
            : c->kind != DCTX_ROUTE || e->routes[c->route].worker != w)
      continue;
    if (c->d.deadline_ms > now) {
      if (c->d.deadline_ms < next) next = c->d.deadline_ms;
      continue;
    }
    if (c->kind == DCTX_FORWARD) {
      /* fails like a RETRY; the sink's late settle only releases it */
      c->host_settled = 1;
      dctx copy = *c;
      pthread_mutex_unlock(&e->lock);
      ceb_settle_info info = {.struct_size = sizeof info,
                              .outcome = CEB_RETRY,
                              .retry_after_ms = -1,
                              .reason = "timeout",
                              .detail = "the sink did not settle in time"};
      cebe_fwd_settled(e, &copy, &info);
      pthread_mutex_lock(&e->lock);
      i = (size_t)-1;
      next = INT64_MAX;
      continue;
    }
    /* The host settles on the sink's behalf; the context stays registered
     * until the sink's own (late) settle releases it. */
    c->host_settled = 1;
    eng_route *rt = &e->routes[c->route];
    rt->inflight--;
    e->inflight_total--;
    ceb_circuit_failure(&e->sinks[c->sink].circuit, now);
    cebe_sink_result_locked(e, &e->sinks[c->sink], CEBE_SINK_FAILED, "timeout",
                            now);
    pthread_cond_broadcast(&e->idle);
    dctx copy = *c;
    pthread_mutex_unlock(&e->lock);
    ceb_log_ctx ctx = {.route = rt->cfg.name};
    char trace[33];
    ceb_log_ctx_event(&ctx, copy.ev, trace);
    ceb_log_write(CEB_LOG_WARN, "engine", &ctx,
                  "attempt %u timed out; retried per the route's policy",
                  copy.attempt);
    ceb_settle_info info = {.struct_size = sizeof info,
                            .outcome = CEB_RETRY,
                            .retry_after_ms = -1,
                            .reason = "timeout",
                            .detail = "the sink did not settle in time"};
    cebe_outcome(e, &copy, &info);
    pthread_mutex_lock(&e->lock);
    i = (size_t)-1; /* the set may have changed: rescan */
    next = INT64_MAX;
  }
  /* the last pass ran whole under the lock: next bounds every context of
   * w's registered now; later ones lower it (cebe_expire_lower_locked) */
  e->expire_at[w] = next;
  return next;
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The open counts are this process's: other writers (another bridge on
 * the same database, `cebridge dlq replay` beside a running bridge) add
 * rows it never heard of, and settle rows it counted, so a count drifts
 * both ways: too low, a route sits idle with work waiting (or, below 0,
 * stops claiming for good); too high, backpressure refuses ingest. Every
 * poll_ms of real time each route of worker w is recounted in the store,
 * and at once when a wake-up or a count below 0 flagged it. The deliveries
 * this process added while the store was read are added to the figure read:
 * counted twice at worst, which the next recount sets right; never lost.
 * Lock held on entry and exit; released around the store reads. */
static void resync_routes_locked(ceb_engine *e, unsigned w,
                                 int64_t *next_poll) {
  int64_t mono = mono_ms();
  int all = mono >= *next_poll;
  if (all) *next_poll = mono + e->poll_ms;
  for (size_t r = 0; r < e->nroutes && !e->stopping; r++) {
    eng_route *rt = &e->routes[r];
    if (rt->worker != w || (!all && !rt->resync)) continue;
    rt->resync = 0;
    int64_t added = rt->added;
    pthread_mutex_unlock(&e->lock);
    int64_t n = ceb_store_count_open(e->store, rt->cfg.name);
    pthread_mutex_lock(&e->lock);
    if (n < 0) continue; /* a read error: keep the figure, retry next poll */
    n += rt->added - added;
    e->open_total += n - rt->open;
    rt->open = n;
  }
}

void *cebe_worker_main(void *arg) {
  worker_arg *wa = arg;
  ceb_engine *e = wa->e;
  unsigned w = wa->index;
  free(wa);
  int64_t next_poll = mono_ms() + e->poll_ms; /* start counted already */
  int64_t next_sinks = next_poll; /* worker 0: the sinks' life cycle */
  pthread_mutex_lock(&e->lock);
  uint64_t iter = 0; /* passes of the loop below (eng_route.due_iter) */
  while (!e->stopping) {
    uint64_t gen = e->gen;
    iter++;
    if (w == 0 && (mono_ms() >= next_sinks || cebe_sink_dirty_locked(e))) {
      next_sinks = mono_ms() + e->poll_ms;
      pthread_mutex_unlock(&e->lock);
      cebe_sink_sync(e);
      pthread_mutex_lock(&e->lock);
      if (e->stopping) break;
    }
    resync_routes_locked(e, w, &next_poll);
    int64_t now = cebe_now(e);
    int64_t next = expire_locked(e, w, now);
    if (w == 0) { /* dead-letter forwards */
      int64_t t = cebe_fwd_pump_locked(e, now);
      if (t < next) next = t;
    }
    /* claimed at ingest: held slots, so also while draining */
    int progress = cebe_preclaimed_run_locked(e, w);
    for (size_t r = 0; r < e->nroutes && !e->draining && !e->stopping; r++) {
      eng_route *rt = &e->routes[r];
      if (rt->worker != w || rt->open <= 0) continue;
      eng_sink *s = &e->sinks[rt->cfg.sink];
      if (s->st.disabled) continue; /* its deliveries wait in the store */
      int free_slots = (int)rt->cfg.max_inflight - (int)rt->inflight;
      if (free_slots <= 0) continue;
      if (!claimable_locked(e, rt, now, iter)) continue;
      int n = free_slots < CLAIM_MAX ? free_slots : CLAIM_MAX;
      int was = s->circuit.state;
      n = ceb_circuit_allow(&s->circuit, now, n);
      if (was != s->circuit.state) cebe_update_gauges_locked(e, 1);
      if (n == 0) {
        if (s->circuit.state == CEB_CIRCUIT_OPEN &&
            s->circuit.open_until < next)
          next = s->circuit.open_until;
        if (s->circuit.state != CEB_CIRCUIT_CLOSED && !e->shared) {
          /* what falls due meanwhile fails at once (claim_route). Not on
           * a shared store: another bridge's circuit may be closed (this
           * one alone cannot reach the sink, or its clock jumped after a
           * freeze), so the deliveries stay for the bridges that claim
           * them; with every circuit open they wait for a probe */
          size_t want =
              (size_t)(free_slots < CLAIM_MAX ? free_slots : CLAIM_MAX);
          if (claim_route(e, r, now, want, 1) == want) progress = 1;
        }
        continue;
      }
      if (s->busy_until > now) { /* the sink asked for a pause */
        if (s->busy_until < next) next = s->busy_until;
        continue;
      }
      int tokens = ceb_token_bucket_available(&s->bucket, now, n);
      if (tokens == 0) {
        int64_t t = ceb_token_bucket_next(&s->bucket, now);
        if (t < next) next = t;
        continue;
      }
      size_t got = claim_route(e, r, now, (size_t)tokens, 0);
      if (got == (size_t)tokens) progress = 1; /* maybe more is due */
    }
    cebe_update_gauges_locked(e, 0);
    if (progress || e->gen != gen) continue;
    /* Earliest future retry of my routes. */
    for (size_t r = 0; r < e->nroutes && !e->draining; r++) {
      if (e->routes[r].worker != w || e->routes[r].open <= 0) continue;
      /* left to the other bridges (above): due rows of this route are no
       * reason to wake before the circuit's open_until or its probe's
       * outcome */
      const ceb_circuit *cc = &e->sinks[e->routes[r].cfg.sink].circuit;
      if (e->shared &&
          (cc->state == CEB_CIRCUIT_OPEN ||
           (cc->state == CEB_CIRCUIT_HALF_OPEN && cc->probe_inflight)))
        continue;
      int64_t due = e->routes[r].due_at; /* read in this pass already */
      if (e->routes[r].due_iter != iter) {
        pthread_mutex_unlock(&e->lock);
        due = ceb_store_next_due(e->store, e->routes[r].cfg.name, now);
        pthread_mutex_lock(&e->lock);
      } else if (e->routes[r].due_kept && due > now + DUE_READ_MS) {
        due = now + DUE_READ_MS; /* read again then (claimable_locked) */
      }
      if (due < next) next = due;
    }
    if (e->gen != gen || e->stopping) continue;
    int64_t wait = next == INT64_MAX ? MAX_SLEEP_MS : next - now;
    if (wait > MAX_SLEEP_MS) wait = MAX_SLEEP_MS;
    if (wait < 1) wait = 1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += wait / 1000;
    ts.tv_nsec += (wait % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&e->cond, &e->lock, &ts);
  }
  pthread_mutex_unlock(&e->lock);
  return NULL;
}
