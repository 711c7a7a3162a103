/* Runtime lifecycle: open the store, build routes and the engine from the
 * checked config and the instances; start, drain, close. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ceb/ceb.h>

#include "log/ceb_log.h"
#include "router/ceb_route_batch.h"
#include "runtime/runtime_internal.h"

int64_t cebr_now(ceb_runtime *rt) {
  if (rt && rt->clock) return rt->clock(rt->clock_arg);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t engine_clock(void *arg) {
  return cebr_now(arg);
}

static long find_inst(ceb_runtime *rt, uint32_t role, const char *name) {
  for (size_t i = 0; name && i < rt->ninstances; i++)
    if (rt->instances[i]->role == role &&
        strcmp(rt->instances[i]->name, name) == 0)
      return (long)i;
  return -1;
}

static ceb_profile_level profile_of(const char *s, ceb_profile_level dflt) {
  if (!s) return dflt;
  if (strcmp(s, "off") == 0) return CEB_PROFILE_OFF;
  if (strcmp(s, "enforce") == 0) return CEB_PROFILE_ENFORCE;
  if (strcmp(s, "warn") == 0) return CEB_PROFILE_WARN;
  return dflt;
}

static int store_check_of(const char *s) {
  if (s && strcmp(s, "off") == 0) return CEB_STORE_CHECK_OFF;
  if (s && strcmp(s, "full") == 0) return CEB_STORE_CHECK_FULL;
  return CEB_STORE_CHECK_QUICK;
}

static void declare_metrics(ceb_metrics *m) {
  if (!m) return;
  static const struct {
    const char *name;
    ceb_metric_type type;
    const char *help;
  } k[] = {
      {"cebridge_events_received_total", CEB_MT_COUNTER,
       "Events offered by sources."},
      {"cebridge_events_accepted_total", CEB_MT_COUNTER,
       "Events durably journaled."},
      {"cebridge_events_duplicate_total", CEB_MT_COUNTER,
       "Events already held under (client, source, id)."},
      {"cebridge_events_rejected_total", CEB_MT_COUNTER,
       "Events refused at ingress, by reason."},
      {"cebridge_events_unrouted_total", CEB_MT_COUNTER,
       "Accepted events no route matched (journaled, marked unrouted)."},
      {"cebridge_events_delivered_total", CEB_MT_COUNTER,
       "Events delivered (done) per route."},
      {"cebridge_events_dead_total", CEB_MT_COUNTER,
       "Events dead-lettered per route and reason."},
      {"cebridge_delivery_attempts_total", CEB_MT_COUNTER,
       "Delivery attempts by outcome."},
      {"cebridge_queue_depth", CEB_MT_GAUGE, "Undelivered events per route."},
      {"cebridge_queue_oldest_age_seconds", CEB_MT_GAUGE,
       "Age of the oldest undelivered event per route."},
      {"cebridge_circuit_state", CEB_MT_GAUGE,
       "Sink circuit: 0 closed, 1 open, 2 half-open."},
      {"cebridge_sink_disabled", CEB_MT_GAUGE,
       "1 while the sink is disabled (410 Gone or disable_after of failures; "
       "`cebridge sink enable`)."},
      {"cebridge_sink_disablements_total", CEB_MT_COUNTER,
       "Times a sink was disabled, by reason (gone, failing)."},
      {"cebridge_ingest_latency_seconds", CEB_MT_HISTOGRAM,
       "Submit to durable."},
      {"cebridge_delivery_latency_seconds", CEB_MT_HISTOGRAM,
       "Acceptance to delivered."},
      {"cebridge_store_commits_total", CEB_MT_COUNTER,
       "Group commits of the store's writer."},
      {"cebridge_store_ops_total", CEB_MT_COUNTER,
       "Store operations (ingest batches, claims, outcomes) committed."},
      {"cebridge_store_syncs_total", CEB_MT_COUNTER,
       "fdatasync calls of the WAL before acknowledgements."},
      {"cebridge_store_notifications_total", CEB_MT_COUNTER,
       "Wake-ups to other bridges on a shared store (routes and pull "
       "queues named), by result: sent, or skipped (no other bridge "
       "listened)."},
      {"cebridge_store_dedupe_entries", CEB_MT_GAUGE,
       "Journal rows in the in-memory dedupe map."},
      {"cebridge_store_dedupe_bytes", CEB_MT_GAUGE,
       "Memory of the in-memory dedupe map's table."},
  };
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
    ceb_metrics_declare(m, k[i].name, k[i].type, k[i].help);
}

static void routes_free(ceb_runtime *rt) {
  for (size_t i = 0; i < rt->nroutes; i++)
    ceb_route_free(rt->routes[i]);
  free(rt->routes);
  rt->routes = NULL;
  rt->nroutes = 0;
}

/* The mapping programs and their worker pool (none without programs). */
static int open_mappings(ceb_runtime *rt, char *err, size_t errlen) {
  ceb_conf_errors *errs = calloc(1, sizeof *errs);
  if (!errs) return CEB_ENOMEM;
  int rc = ceb_mapping_set_build(rt->conf, &rt->maps, errs);
  if (rc != CEB_OK) { /* checked at load: a file changed since */
    if (errs->count)
      snprintf(err, errlen, "%s:%d: %s", errs->items[0].file,
               errs->items[0].line, errs->items[0].message);
    else
      snprintf(err, errlen, "runtime: mappings: %s", ceb_strerror(rc));
    free(errs);
    return rc;
  }
  free(errs);
  if (!rt->maps->count) return CEB_OK;
  ceb_mapper_opts o = ceb_mapping_opts(ceb_conf_bridge_cfg(rt->conf));
  o.metrics = rt->metrics;
  rt->mapper =
      ceb_mapper_new(&o, rt->maps->texts, rt->maps->count, err, errlen);
  return rt->mapper ? CEB_OK : CEB_EIO;
}

/* A route's egress program: its own map, else its sink's; -1: none. */
static int route_map(ceb_runtime *rt, const ceb_route *r) {
  int p = ceb_mapping_set_find(rt->maps, "route", r->name, "map");
  return p >= 0 ? p : ceb_mapping_set_find(rt->maps, "sink", r->to, "map");
}

/* Parses every [route] and maps its sinks to instance indexes. */
static int build_routes(ceb_runtime *rt, ceb_engine_route **eroutes,
                        int dry_run, char *err, size_t errlen) {
  size_t n = 0;
  for (size_t i = 0; i < rt->conf->count; i++)
    n += strcmp(rt->conf->sections[i].kind, "route") == 0;
  rt->routes = calloc(n ? n : 1, sizeof *rt->routes);
  rt->route_filter = calloc(n ? n : 1, sizeof *rt->route_filter);
  *eroutes = calloc(n ? n : 1, sizeof **eroutes);
  if (!rt->routes || !rt->route_filter || !*eroutes) return CEB_ENOMEM;
  for (size_t i = 0; i < rt->conf->count; i++) {
    const ceb_conf_section *sec = &rt->conf->sections[i];
    if (strcmp(sec->kind, "route") != 0) continue;
    ceb_route *r = NULL;
    int rc = ceb_route_parse(sec->name, &sec->host.route, &r, err, errlen);
    if (rc != CEB_OK) return rc;

    rt->route_filter[rt->nroutes] =
        ceb_mapping_set_find(rt->maps, "route", r->name, "filter");
    rt->routes[rt->nroutes++] = r;
    long to = find_inst(rt, CEB_ROLE_SINK, r->to);
    long dlq = r->dlq_sink ? find_inst(rt, CEB_ROLE_SINK, r->dlq_sink) : -1;
    long rcp =
        r->receipts_sink ? find_inst(rt, CEB_ROLE_SINK, r->receipts_sink) : -1;
    const char *bad = to < 0                          ? r->to
                      : (r->dlq_sink && dlq < 0)      ? r->dlq_sink
                      : (r->receipts_sink && rcp < 0) ? r->receipts_sink
                                                      : NULL;
    if (bad) {
      snprintf(err, errlen, "%s:%d: route %s: no [sink %s]", sec->file,
               sec->line, r->name, bad);
      return CEB_ECONFIG;
    }
    for (size_t f = 0; f < r->nfrom; f++) {
      if (find_inst(rt, CEB_ROLE_SOURCE, r->from[f]) < 0) {
        snprintf(err, errlen, "%s:%d: route %s: no [source %s]", sec->file,
                 sec->line, r->name, r->from[f]);
        return CEB_ECONFIG;
      }
    }
    const long topic_sinks[2] = {dlq, r->receipts_topic ? rcp : -1};
    for (int t = 0; t < 2; t++) {
      long s = topic_sinks[t];
      if (s >= 0 && !(rt->instances[s]->plugin->roles & CEB_ROLE_TOPICS)) {
        snprintf(err, errlen,
                 "%s:%d: route %s: sink %s cannot publish to a topic (its "
                 "plugin lacks topics)",
                 sec->file, sec->line, r->name, rt->instances[s]->name);
        return CEB_ECONFIG;
      }
    }
    /* A batching sink needs a batch's worth in flight (defaults must not
     * starve each other: 64 against batch.max 100 sent one partial batch
     * per batch.wait). */
    ceb_route_batch fit = ceb_route_batch_fit(&sec->host.route, r->max_inflight,
                                              rt->instances[to]->cfg);
    if (fit.cannot_fill)
      ceb_log_warn("%s: route %s: max_inflight %u is below sink %s's "
                   "batch.max %u: no batch fills, one goes out per "
                   "batch.wait (raise max_inflight to %u or more)",
                   sec->host.route.max_inflight_origin, r->name,
                   fit.max_inflight, r->to, fit.batch_max, 2 * fit.batch_max);
    /* Engine sink indexes are instance indexes (non-sinks are unused). */
    (*eroutes)[rt->nroutes - 1] = (ceb_engine_route){
        .name = r->name,
        .sink = (size_t)to,
        .max_inflight = fit.max_inflight,
        .timeout_ms = r->timeout_ms,
        .retry = &r->retry,
        .dlq_sink = dlq,
        .dlq_topic = r->dlq_topic,
        .receipts_sink = rcp,
        .receipts_topic = r->receipts_topic,
        .receipts_prefix = r->receipts_prefix,
        .map_program = route_map(rt, r),
        .dry_run = dry_run || sec->host.route.dry_run,
        .metrics_keys = sec->host.route.metrics_keys.items,
        .nmetrics_keys = sec->host.route.metrics_keys.count,
        .metrics_keys_top = (unsigned)sec->host.route.metrics_keys_top,
        .callbacks = r->callbacks};
  }
  return CEB_OK;
}

int ceb_runtime_open(const ceb_runtime_opts *opts, ceb_runtime **out, char *err,
                     size_t errlen) {
  *out = NULL;
  if (!opts || !opts->conf || (opts->ninstances && !opts->instances)) {
    snprintf(err, errlen, "runtime: no configuration");
    return CEB_EINVAL;
  }
  ceb_runtime *rt = calloc(1, sizeof *rt);
  if (!rt) return CEB_ENOMEM;
  rt->conf = opts->conf;
  rt->metrics = opts->metrics;
  rt->clock = opts->clock;
  rt->clock_arg = opts->clock_arg;
  rt->ninstances = opts->ninstances;
  rt->instances =
      calloc(opts->ninstances ? opts->ninstances : 1, sizeof *rt->instances);
  rt->idata =
      calloc(opts->ninstances ? opts->ninstances : 1, sizeof *rt->idata);
  pthread_mutex_init(&rt->sweep_lock, NULL);
  pthread_cond_init(&rt->sweep_cond, NULL);
  pthread_mutex_init(&rt->queue_lock, NULL);
  pthread_cond_init(&rt->queue_cond, NULL);
  pthread_mutex_init(&rt->amap_lock, NULL);
  if (!rt->instances || !rt->idata) {
    ceb_runtime_close(rt);
    return CEB_ENOMEM;
  }
  const ceb_bridge_cfg *b = ceb_conf_bridge_cfg(opts->conf);
  ceb_profile_level bprof = profile_of(b->profile, CEB_PROFILE_WARN);
  for (size_t i = 0; i < opts->ninstances; i++) {
    ceb_instance *inst = opts->instances[i];
    rt->instances[i] = inst;
    rt->idata[i].rt = rt;
    const ceb_conf_section *src =
        inst->role == CEB_ROLE_SOURCE
            ? ceb_conf_find(opts->conf, "source", inst->name)
            : NULL;
    rt->idata[i].profile =
        src ? profile_of(src->host.source.profile, bprof) : bprof;
    inst->rt = rt;
    inst->runtime_data = &rt->idata[i];
  }
  rt->max_event_size = (size_t)b->max_event_size;
  rt->idem_ttl_ms = b->idempotency_ttl_ms;
  rt->retention_ms = b->retention_ms;
  const char *sync = b->store.synchronous;
  ceb_store_opts so = {.spec = b->store.path,
                       .instance = b->instance,
                       .lease_ms = b->store.lease_ms,
                       .synchronous_full = !sync || strcmp(sync, "normal") != 0,
                       .group_max = (size_t)b->store.group_max,
                       .group_wait_ms = b->store.group_wait_ms,
                       .queue_max = 4096,
                       .check = store_check_of(b->store.check),
                       .reserve = 2u << 20,
                       .pool_size = (size_t)b->store.pool,
                       .password = b->store.password,
                       .no_migrate = b->store.migrate &&
                                     strcmp(b->store.migrate, "off") == 0};
  int rc = open_mappings(rt, err, errlen);
  for (size_t i = 0; rc == CEB_OK && i < rt->ninstances; i++)
    rt->idata[i].map_prog =
        rt->instances[i]->role == CEB_ROLE_SOURCE
            ? ceb_mapping_set_find(rt->maps, "source", rt->instances[i]->name,
                                   "map")
            : -1;
  if (rc == CEB_OK) rc = ceb_store_open(&so, &rt->store, err, errlen);
  /* another bridge's appends wake this bridge's long polls (shared store) */
  if (rc == CEB_OK)
    ceb_store_set_pull_listener(rt->store, cebr_queue_pulled, rt);
  /* bridges sharing a store tell their series apart by a constant label
   * ("bridge", not "instance": plugin series use that for the section) */
  if (rc == CEB_OK && rt->metrics && ceb_store_shared(rt->store))
    ceb_metrics_set_const_label(rt->metrics, "bridge",
                                ceb_store_instance(rt->store));
  ceb_engine_route *eroutes = NULL;
  ceb_engine_sink *esinks = NULL;
  if (rc == CEB_OK) rc = build_routes(rt, &eroutes, opts->dry_run, err, errlen);
  if (rc == CEB_OK) {
    esinks = calloc(rt->ninstances ? rt->ninstances : 1, sizeof *esinks);
    if (!esinks) rc = CEB_ENOMEM;
  }
  for (size_t i = 0; rc == CEB_OK && i < rt->ninstances; i++) {
    ceb_instance *inst = rt->instances[i];
    esinks[i] = (ceb_engine_sink){.name = inst->name, .inst = inst};
    const ceb_conf_section *sec =
        inst->role == CEB_ROLE_SINK
            ? ceb_conf_find(opts->conf, "sink", inst->name)
            : NULL;
    if (!sec) continue;
    const ceb_sink_cfg *sc = &sec->host.sink;
    esinks[i].rate = sc->rate_limit;
    esinks[i].burst = (double)sc->rate_limit_burst;
    esinks[i].circuit_failures = (uint32_t)sc->circuit_failures;
    esinks[i].circuit_open_for_ms = sc->circuit_open_for_ms;
    esinks[i].disable_after_ms = sc->disable_after_ms;
    esinks[i].disable_on_gone = sc->disable_on_gone;
  }
  if (rc == CEB_OK) {
    ceb_engine_opts eo = {.store = rt->store,
                          .metrics = rt->metrics,
                          .clock = engine_clock,
                          .clock_arg = rt,
                          .sinks = esinks,
                          .nsinks = rt->ninstances,
                          .routes = eroutes,
                          .nroutes = rt->nroutes,
                          .workers = (unsigned)b->workers,
                          .max_queued = b->backpressure_max_queued,
                          .poll_ms = b->store.poll_interval_ms,
                          .mapper = rt->mapper,
                          .callback_doc = cebr_callback_doc,
                          .callback_arg = rt};
    rc = ceb_engine_new(&eo, &rt->engine);
    if (rc != CEB_OK)
      snprintf(err, errlen, "runtime: cannot create the delivery engine: %s",
               ceb_strerror(rc));
  }
  free(eroutes);
  free(esinks);
  if (rc != CEB_OK) {
    ceb_runtime_close(rt);
    return rc;
  }
  declare_metrics(rt->metrics);
  *out = rt;
  return CEB_OK;
}

const ceb_host *cebr_host_table(void);
const ceb_host *ceb_runtime_host(void) {
  return cebr_host_table();
}

int ceb_runtime_start(ceb_runtime *rt) {
  if (!rt || rt->started) return CEB_EINVAL;
  int rc = ceb_store_idem_reset_inflight(rt->store);
  if (rc == CEB_OK) rc = ceb_engine_start(rt->engine);
  if (rc != CEB_OK) {
    ceb_log_error("runtime: start failed: %s", ceb_strerror(rc));
    return rc;
  }
  rt->started_at = cebr_now(rt);
  cebr_heartbeat(rt); /* listed at once, before the first round */
  if (pthread_create(&rt->sweeper, NULL, cebr_sweeper_main, rt) == 0) {
    pthread_setname_np(rt->sweeper, "ceb-sweeper");
    rt->sweeper_running = 1;
  } else {
    ceb_log_error("runtime: cannot start the sweeper; expired rows stay");
  }
  rt->started = 1;
  return CEB_OK;
}

int ceb_runtime_drain(ceb_runtime *rt, int64_t deadline_ms) {
  if (!rt) return CEB_EINVAL;
  atomic_store(&rt->draining, 1);
  /* Commit what sources already handed over (their callbacks run). The
   * budget is spent in real time: an injected clock may stand still. */
  int64_t budget = deadline_ms - cebr_now(rt);
  for (int64_t waited = 0; ceb_store_queued(rt->store) > 0 && waited < budget;
       waited += 2) {
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (!rt->started) return CEB_OK;
  return ceb_engine_drain(rt->engine, deadline_ms);
}

void ceb_runtime_halt(ceb_runtime *rt) {
  if (rt && rt->engine) ceb_engine_stop(rt->engine);
}

void ceb_runtime_close(ceb_runtime *rt) {
  if (!rt) return;
  /* every source is gone: its queued documents are refused, the ones
   * being mapped reach the store before it closes */
  cebr_amap_free(atomic_load(&rt->amap));
  if (rt->sweeper_running) {
    pthread_mutex_lock(&rt->sweep_lock);
    atomic_store(&rt->sweeper_stop, 1);
    pthread_cond_signal(&rt->sweep_cond);
    pthread_mutex_unlock(&rt->sweep_lock);
    pthread_join(rt->sweeper, NULL);
  }
  if (rt->engine) ceb_engine_stop(rt->engine);
  /* a clean stop leaves the cluster view (a crash stays, marked stale) */
  if (rt->started && ceb_store_leave(rt->store) != CEB_OK)
    ceb_log_warn("runtime: could not leave the store's list of bridges; "
                 "it shows this one stale until an hour has passed");
  ceb_store_close(rt->store); /* runs queued outcomes first */
  ceb_engine_free(rt->engine);
  routes_free(rt);
  free(rt->route_filter);
  /* after the engine and every source: nothing maps any more */
  ceb_mapper_free(rt->mapper);
  ceb_mapping_set_free(rt->maps);
  for (size_t i = 0; i < rt->ninstances; i++) {
    if (rt->instances[i] && rt->instances[i]->rt == rt) {
      rt->instances[i]->rt = NULL;
      rt->instances[i]->runtime_data = NULL;
    }
  }
  free(rt->instances);
  free(rt->idata);
  pthread_mutex_destroy(&rt->sweep_lock);
  pthread_cond_destroy(&rt->sweep_cond);
  pthread_mutex_destroy(&rt->queue_lock);
  pthread_cond_destroy(&rt->queue_cond);
  pthread_mutex_destroy(&rt->amap_lock);
  free(rt);
}

int ceb_runtime_ready(ceb_runtime *rt) {
  return rt && rt->started && !atomic_load(&rt->draining) &&
         ceb_store_writable(rt->store, NULL, 0) &&
         ceb_engine_accepting(rt->engine);
}

/* This bridge in the store's list of instances (the cluster view). */
void cebr_heartbeat(ceb_runtime *rt) {
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  ceb_store_member m = {.hostname = host,
                        .pid = (long)getpid(),
                        .version = CEB_VERSION,
                        .started_at = rt->started_at};
  int rc = ceb_store_heartbeat(rt->store, &m, cebr_now(rt));
  if (rc != CEB_OK)
    ceb_log_debug("runtime: heartbeat not recorded: %s", ceb_strerror(rc));
}

/* Expiry in small chunks, and the oldest-age gauges, every few seconds.
 * Of the bridges sharing a store, the leader of "sweeper" sweeps
 * (ceb_store_try_lead, asked each round: leadership moves when the leader
 * stops); every bridge updates its own gauges. */
void *cebr_sweeper_main(void *arg) {
  ceb_runtime *rt = arg;
  int leader = -1;
  pthread_mutex_lock(&rt->sweep_lock);
  while (!atomic_load(&rt->sweeper_stop)) {
    pthread_mutex_unlock(&rt->sweep_lock);
    cebr_heartbeat(rt);
    int lead = ceb_store_try_lead(rt->store, "sweeper", cebr_now(rt)) == 1;
    if (lead != leader && leader >= 0)
      ceb_log_info(lead ? "runtime: this bridge sweeps the store now"
                        : "runtime: another bridge sweeps the store now");
    leader = lead;
    int n = 0;
    int rounds = 0;
    if (lead) do {
        n = ceb_store_sweep(rt->store, cebr_now(rt), rt->retention_ms, 500);
      } while (n > 0 && ++rounds < 100 && !atomic_load(&rt->sweeper_stop));
    json_decref(ceb_engine_routes_json(rt->engine));
    pthread_mutex_lock(&rt->sweep_lock);
    if (atomic_load(&rt->sweeper_stop)) break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 5;
    pthread_cond_timedwait(&rt->sweep_cond, &rt->sweep_lock, &ts);
  }
  pthread_mutex_unlock(&rt->sweep_lock);
  return NULL;
}
