/* Queries and operations for the admin API and the CLI. */
#include <string.h>

#include <ceb/ceb.h>

#include "log/ceb_log.h"
#include "runtime/runtime_internal.h"

struct ceb_store *ceb_runtime_store(ceb_runtime *rt) {
  return rt->store;
}
int64_t ceb_runtime_now(ceb_runtime *rt) {
  return cebr_now(rt);
}
void ceb_runtime_kick(ceb_runtime *rt) {
  ceb_engine_kick(rt->engine);
  /* the sweeper also runs on the host clock */
  pthread_mutex_lock(&rt->sweep_lock);
  pthread_cond_signal(&rt->sweep_cond);
  pthread_mutex_unlock(&rt->sweep_lock);
}

json_t *ceb_runtime_event_status(ceb_runtime *rt, const char *id,
                                 const char *source) {
  return ceb_store_event_status(rt->store, id, source);
}

json_t *ceb_runtime_routes(ceb_runtime *rt) {
  return ceb_engine_routes_json(rt->engine);
}

void ceb_runtime_key_gauges(ceb_runtime *rt) {
  ceb_engine_key_gauges(rt->engine);
}

json_t *ceb_runtime_sinks(ceb_runtime *rt) {
  return ceb_engine_sinks_json(rt->engine);
}

int ceb_runtime_sink_enable(ceb_runtime *rt, const char *name) {
  return ceb_engine_sink_enable(rt->engine, name);
}

json_t *ceb_runtime_dlq_list(ceb_runtime *rt, const ceb_dlq_filter *f) {
  return ceb_store_dlq_list(rt->store, f);
}

json_t *ceb_runtime_dlq_show(ceb_runtime *rt, int64_t id) {
  return ceb_store_dlq_show(rt->store, id);
}

static long route_index(ceb_runtime *rt, const char *name) {
  for (size_t i = 0; name && i < rt->nroutes; i++)
    if (strcmp(rt->routes[i]->name, name) == 0) return (long)i;
  return -1;
}

int ceb_runtime_replay_range(ceb_runtime *rt, const ceb_replay_filter *f,
                             int dry_run, size_t *count) {
  long r = f ? route_index(rt, f->route) : -1;
  if (r < 0) {
    if (count) *count = 0;
    return CEB_ENOTFOUND; /* a route that is not configured cannot run */
  }
  size_t n = 0;
  int rc =
      ceb_store_replay_range(rt->store, f, cebr_now(rt), dry_run, &n, NULL);
  if (count) *count = n;
  if (rc == CEB_OK && !dry_run && n) {
    ceb_engine_added(rt->engine, (size_t)r, (int64_t)n);
    ceb_log_info("runtime: %zu event(s) of route %s replayed from the archive",
                 n, f->route);
  }
  return rc;
}

int ceb_runtime_dlq_replay(ceb_runtime *rt, const ceb_dlq_filter *f,
                           int dry_run, size_t *count, json_t *replayed) {
  if (f && f->route && route_index(rt, f->route) < 0)
    return CEB_ENOTFOUND; /* a route that is not configured cannot run */
  json_t *rows = json_array();
  int rc =
      ceb_store_dlq_replay(rt->store, f, cebr_now(rt), dry_run, count, rows);
  if (rc == CEB_OK && !dry_run) {
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
      const char *route = json_string_value(json_object_get(row, "route"));
      long r = route_index(rt, route);
      if (r >= 0)
        ceb_engine_added(rt->engine, (size_t)r, 1);
      else
        ceb_log_warn("runtime: replayed a dead letter of route %s, which is "
                     "not configured; it waits in the store",
                     route ? route : "?");
    }
    ceb_log_info("runtime: %zu dead letter(s) replayed", count ? *count : 0);
  }
  if (replayed && rc == CEB_OK) json_array_extend(replayed, rows);
  json_decref(rows);
  return rc;
}

int ceb_runtime_dlq_purge(ceb_runtime *rt, const ceb_dlq_filter *f, int dry_run,
                          size_t *count) {
  int rc = ceb_store_dlq_purge(rt->store, f, dry_run, count);
  if (rc == CEB_OK && !dry_run)
    ceb_log_info("runtime: %zu dead letter(s) purged", count ? *count : 0);
  return rc;
}

void ceb_runtime_set_contract_check(ceb_runtime *rt, ceb_contract_check_fn fn,
                                    void *arg) {
  rt->contract_check = fn;
  rt->contract_arg = arg;
}
