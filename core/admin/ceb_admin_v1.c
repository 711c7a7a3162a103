/* Admin API endpoints: metrics and /v1/ (routes, event status, DLQ,
 * contracts). All reads go through the store's read connections, so the
 * handlers never contend with the committer. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/ceb_admin_internal.h"
#include "metrics/ceb_metrics_process.h"
#include "runtime/ceb_runtime.h"
#include "store/ceb_store.h"

/* Queue gauges are computed at scrape time from the store, so they are
 * right even for work another process (the CLI's replay) added. */
static void refresh_route_gauges(const ceb_admin_view *view, ceb_store *st) {
  const ceb_conf *conf = view->conf;
  ceb_metrics *m = view->metrics;
  int64_t now = view->now_ms(view->clock_arg);
  for (size_t i = 0; i < conf->count; i++) {
    const ceb_conf_section *s = &conf->sections[i];
    if (strcmp(s->kind, "route") != 0) continue;
    char labels[160];
    snprintf(labels, sizeof labels, "route=\"%s\"", s->name);
    int64_t depth = ceb_store_count_open(st, s->name);
    int64_t oldest = depth < 0 ? depth : ceb_store_oldest_open(st, s->name);
    /* a failed read leaves the last figure read (never 0: "nothing
     * waiting" while the store is away would silence an alert); /readyz
     * says the store is away */
    if (depth < 0 || oldest < 0) continue;
    ceb_metrics_set(m, "cebridge_route_queue_depth", labels, (double)depth);
    ceb_metrics_set(m, "cebridge_route_oldest_age_seconds", labels,
                    oldest > 0 && now > oldest ? (double)(now - oldest) / 1e3
                                               : 0);
  }
}

/* Group-commit efficiency: ops per commit and per sync. */
static void refresh_store_counters(const ceb_admin_view *view, ceb_store *st) {
  ceb_metrics *m = view->metrics;
  uint64_t commits = 0, ops = 0;
  ceb_store_commit_stats(st, &commits, &ops);
  ceb_metrics_set_total(m, "cebridge_store_commits_total", "", (double)commits);
  ceb_metrics_set_total(m, "cebridge_store_ops_total", "", (double)ops);
  ceb_metrics_set_total(m, "cebridge_store_syncs_total", "",
                        (double)ceb_store_syncs(st));
  uint64_t sent = 0, skipped = 0;
  ceb_store_notify_stats(st, &sent, &skipped);
  ceb_metrics_set_total(m, "cebridge_store_notifications_total",
                        "result=\"sent\"", (double)sent);
  ceb_metrics_set_total(m, "cebridge_store_notifications_total",
                        "result=\"skipped\"", (double)skipped);
  uint64_t entries = 0, bytes = 0;
  ceb_store_dedupe_stats(st, &entries, &bytes);
  ceb_metrics_set(m, "cebridge_store_dedupe_entries", "", (double)entries);
  ceb_metrics_set(m, "cebridge_store_dedupe_bytes", "", (double)bytes);
}

int ceb_admin_metrics(const ceb_admin_view *view, struct MHD_Connection *c) {
  ceb_store *st = view->rt ? ceb_runtime_store(view->rt) : NULL;
  if (st) refresh_route_gauges(view, st);
  if (view->rt) ceb_runtime_key_gauges(view->rt);
  if (st) refresh_store_counters(view, st);
  ceb_metrics_process_refresh(view->metrics);
  ceb_metrics_build_info(view->metrics);
  char *text = ceb_metrics_render(view->metrics);
  if (!text)
    return ceb_admin_problem(c, 500, "internal", "cannot render metrics");
  int rc = ceb_admin_reply(c, 200, "text/plain; version=0.0.4; charset=utf-8",
                           text, strlen(text));
  free(text);
  return rc;
}

/* Why a route's queue figures are unknown, once per answer: the store's
 * own reason while it cannot write (PostgreSQL away, a failing disk), else
 * the read failed on its own. */
static json_t *queue_unknown(ceb_store *st) {
  char why[300] = "", text[400];
  if (ceb_store_writable(st, why, sizeof why))
    snprintf(text, sizeof text, "the store's queue read failed");
  else
    snprintf(text, sizeof text, "the store is unavailable (%s)",
             why[0] ? why : "no reason given");
  return json_string(text);
}

/* Each configured route with its figures from the store. A figure the
 * store cannot give now (the read failed) is null with the reason in
 * "queue_unknown", never 0: an operator must not read "nothing waiting"
 * while the store is away. The rest of the answer (the configuration, the
 * engine's live view) needs no store and is still given. Once a read failed
 * while the store cannot write, the other routes are not asked (each would
 * fail the same way, a PostgreSQL connect timeout each). */
static json_t *routes_json(const ceb_admin_view *view, ceb_store *st) {
  const ceb_conf *conf = view->conf;
  int64_t now = view->now_ms(view->clock_arg);
  json_t *arr = json_array(), *unknown = NULL;
  for (size_t i = 0; i < conf->count; i++) {
    const ceb_conf_section *s = &conf->sections[i];
    if (strcmp(s->kind, "route") != 0) continue;
    const ceb_route_cfg *rc = &s->host.route;
    json_t *jf = json_array();
    for (size_t k = 0; k < rc->from.count; k++)
      json_array_append_new(jf, json_string(rc->from.items[k]));
    int64_t depth = -1, oldest = -1;
    if (!unknown || ceb_store_writable(st, NULL, 0)) {
      depth = ceb_store_count_open(st, s->name);
      oldest = depth < 0 ? depth : ceb_store_oldest_open(st, s->name);
    }
    int known = depth >= 0 && oldest >= 0;
    if (!known && !unknown) unknown = queue_unknown(st);
    json_t *o = json_pack(
        "{s:s, s:o, s:s, s:s, s:o, s:o, s:s?}", "name", s->name, "from", jf,
        "to", rc->to, "dlq", rc->dlq, "queue_depth",
        known ? json_integer((json_int_t)depth) : json_null(), "oldest_age_ms",
        known ? json_integer(
                    (json_int_t)(oldest > 0 && now > oldest ? now - oldest : 0))
              : json_null(),
        "contract", rc->contract);
    if (!known) json_object_set(o, "queue_unknown", unknown);
    json_array_append_new(arr, o);
  }
  json_decref(unknown);
  return arr;
}

int ceb_admin_keep_newest(json_t *arr, size_t max) {
  int cut = 0;
  while (json_array_size(arr) > max && json_array_remove(arr, 0) == 0)
    cut = 1;
  return cut;
}

const char *ceb_admin_arg(struct MHD_Connection *c, const char *name) {
  const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
  return v && *v ? v : NULL;
}

static int truthy(const char *v) {
  int b = 0;
  return v && ceb_parse_bool(v, &b) == CEB_OK && b;
}

/* "since" and "until" are an RFC 3339 time or a duration back from now
 * ("2h"); *ms stays 0 when the parameter is absent. */
static int time_arg(struct MHD_Connection *c, const char *name, int64_t now,
                    int64_t *ms) {
  const char *v = ceb_admin_arg(c, name);
  int64_t d;
  if (!v || ceb_timestamp_parse(v, ms) == CEB_OK) return 0;
  if (ceb_parse_duration_ms(v, &d) != CEB_OK) return -1;
  *ms = now - d;
  return 0;
}

/* Fills f from the query; *bad names the parameter that failed. */
static int dlq_filter_from(struct MHD_Connection *c, ceb_dlq_filter *f,
                           int64_t now, const char **bad) {
  memset(f, 0, sizeof *f);
  f->route = ceb_admin_arg(c, "route");
  f->type = ceb_admin_arg(c, "type");
  f->source = ceb_admin_arg(c, "source");
  f->reason = ceb_admin_arg(c, "reason");
  const char *id = ceb_admin_arg(c, "id"), *limit = ceb_admin_arg(c, "limit");
  if (time_arg(c, "since", now, &f->since) != 0) {
    *bad = "since";
    return -1;
  }
  if (time_arg(c, "until", now, &f->until) != 0) {
    *bad = "until";
    return -1;
  }
  int64_t v;
  if (id) {
    if (ceb_parse_int(id, &v) != CEB_OK || v <= 0) {
      *bad = "id";
      return -1;
    }
    f->id = v;
  }
  if (limit) {
    if (ceb_parse_int(limit, &v) != CEB_OK || v <= 0 || v > 10000) {
      *bad = "limit";
      return -1;
    }
    f->limit = (size_t)v;
  }
  return 0;
}

static int dlq_action(const ceb_admin_view *view, struct MHD_Connection *c,
                      int replay) {
  ceb_dlq_filter f;
  const char *bad = NULL;
  if (dlq_filter_from(c, &f, view->now_ms(view->clock_arg), &bad) != 0) {
    char d[96];
    snprintf(d, sizeof d, "bad value for '%s'", bad);
    return ceb_admin_problem(c, 400, "bad_parameter", d);
  }
  if (!f.id && !f.route)
    return ceb_admin_problem(c, 400, "missing_selector",
                             "give id=N or route=R (with optional filters)");
  int dry = truthy(ceb_admin_arg(c, "dry_run"));
  size_t count = 0;
  int st_rc;
  json_t *replayed = NULL;
  if (replay) {
    replayed = json_array();
    /* Through the runtime, so that the engine picks the work up now. */
    st_rc = ceb_runtime_dlq_replay(view->rt, &f, dry, &count, replayed);
  } else {
    if (!dry && !truthy(ceb_admin_arg(c, "confirm")))
      return ceb_admin_problem(c, 409, "confirmation_required",
                               "purge deletes dead letters for good: add "
                               "confirm=true (or dry_run=true to count)");
    st_rc = ceb_runtime_dlq_purge(view->rt, &f, dry, &count);
  }
  if (st_rc == CEB_ENOTFOUND) {
    json_decref(replayed);
    return ceb_admin_problem(c, 404, "unknown_route",
                             "no such route in the running configuration");
  }
  if (st_rc != CEB_OK) {
    json_decref(replayed);
    return ceb_admin_store_problem(c, ceb_runtime_store(view->rt),
                                   ceb_strerror(st_rc));
  }
  json_t *out = json_pack("{s:b, s:I}", "dry_run", dry,
                          replay ? "replayed" : "purged", (json_int_t)count);
  if (replayed) json_object_set_new(out, "deliveries", replayed);
  return ceb_admin_reply_json(c, 200, out);
}

/* GET /v1/routes/{route}/keys[?limit=N]: per ordering key of a configured
 * route, its open deliveries and the last success and failure
 * (ceb_store_key_stats), by key, at most limit (default 100) keys. */
static int route_keys(const ceb_admin_view *view, struct MHD_Connection *c,
                      ceb_store *st, const char *route) {
  if (!ceb_conf_find(view->conf, "route", route))
    return ceb_admin_problem(c, 404, "unknown_route",
                             "no such route in the running configuration");
  const char *lim = ceb_admin_arg(c, "limit");
  int64_t limit = 100;
  if (lim &&
      (ceb_parse_int(lim, &limit) != CEB_OK || limit <= 0 || limit > 10000))
    return ceb_admin_problem(c, 400, "bad_parameter",
                             "bad value for 'limit' (1..10000)");
  json_t *keys = ceb_store_key_stats(st, route, (size_t)limit);
  if (!keys) return ceb_admin_store_problem(c, st, "key query failed");
  return ceb_admin_reply_json(
      c, 200, json_pack("{s:s, s:o}", "route", route, "keys", keys));
}

int ceb_admin_v1(const ceb_admin_view *view, struct MHD_Connection *c,
                 const char *method, const char *path) {
  struct ceb_runtime *rt = view->rt;
  ceb_store *st = rt ? ceb_runtime_store(rt) : NULL;
  if (!st)
    return ceb_admin_problem(c, 503, "not_ready", "the store is not open");
  int get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
  int post = strcmp(method, "POST") == 0;

  if (strcmp(path, "/routes") == 0 && get) {
    /* Config and store figures, plus the engine's live view of each route:
     * attempts in flight, the limit, and the sink's circuit state. */
    json_t *routes = routes_json(view, st), *live = ceb_runtime_routes(rt);
    size_t i, k;
    json_t *r, *e;
    json_array_foreach(routes, i, r) {
      const char *name = json_string_value(json_object_get(r, "name"));
      json_array_foreach(live, k, e) {
        const char *en = json_string_value(json_object_get(e, "route"));
        if (!name || !en || strcmp(name, en) != 0) continue;
        const char *keys[] = {"inflight",  "max_inflight",     "circuit",
                              "sink",      "window_s",         "delivered_1m",
                              "failed_1m", "throughput_per_s", "failure_rate"};
        for (size_t n = 0; n < sizeof keys / sizeof keys[0]; n++)
          if (json_object_get(e, keys[n]))
            json_object_set(r, keys[n], json_object_get(e, keys[n]));
      }
    }
    json_decref(live);
    return ceb_admin_reply_json(c, 200, routes);
  }

  const char *ev = "/events/";
  if (strncmp(path, ev, strlen(ev)) == 0 && get) {
    const char *id = path + strlen(ev);
    const char *end = strrchr(id, '/');
    int timeline = end && strcmp(end, "/timeline") == 0;
    if (!end || end == id || (strcmp(end, "/status") != 0 && !timeline))
      return ceb_admin_problem(c, 404, "not_found",
                               "use /v1/events/{id}/status or "
                               "/v1/events/{id}/timeline");
    /* never cut to fit: a cut id would be another event's */
    if ((size_t)(end - id) > ADMIN_ID_MAX)
      return ceb_admin_problem(c, 400, "id_too_long",
                               "the event id is longer than 4096 bytes, "
                               "which no event's id can be");
    char idbuf[ADMIN_ID_MAX + 1];
    /* libmicrohttpd decoded the path once already: an id holding '%'
     * stays as it is */
    snprintf(idbuf, sizeof idbuf, "%.*s", (int)(end - id), id);
    if (timeline)
      return ceb_admin_timeline(view, c, idbuf, ceb_admin_arg(c, "source"));
    json_t *s = ceb_store_event_status_max(
        st, idbuf, ceb_admin_arg(c, "source"), ADMIN_EVENTS_MAX + 1);
    if (!s) return ceb_admin_store_problem(c, st, "status query failed");
    if (json_array_size(s) == 0) {
      json_decref(s);
      return ceb_admin_problem(c, 404, "unknown_event",
                               "no event with that id was accepted (or it "
                               "expired after the retention period)");
    }
    int cut = ceb_admin_keep_newest(s, ADMIN_EVENTS_MAX);
    return ceb_admin_reply_json(c, 200,
                                json_pack("{s:s, s:o, s:b}", "id", idbuf,
                                          "events", s, "truncated", cut));
  }

  if (strcmp(path, "/dlq") == 0 && get) {
    ceb_dlq_filter f;
    const char *bad = NULL;
    if (dlq_filter_from(c, &f, view->now_ms(view->clock_arg), &bad) != 0) {
      char d[96];
      snprintf(d, sizeof d, "bad value for '%s'", bad);
      return ceb_admin_problem(c, 400, "bad_parameter", d);
    }
    json_t *l = ceb_store_dlq_list(st, &f);
    return l ? ceb_admin_reply_json(c, 200, l)
             : ceb_admin_store_problem(c, st, "DLQ query failed");
  }
  if (strcmp(path, "/dlq/replay") == 0 && post) return dlq_action(view, c, 1);
  if (strcmp(path, "/dlq/purge") == 0 && post) return dlq_action(view, c, 0);
  if (strncmp(path, "/dlq/", 5) == 0 && get) {
    int64_t id;
    if (ceb_parse_int(path + 5, &id) != CEB_OK || id <= 0)
      return ceb_admin_problem(c, 400, "bad_parameter", "DLQ id is a number");
    json_t *row = ceb_store_dlq_show(st, id);
    if (!row && !ceb_store_writable(st, NULL, 0))
      return ceb_admin_store_problem(c, st, "DLQ query failed");
    return row ? ceb_admin_reply_json(c, 200, row)
               : ceb_admin_problem(c, 404, "not_found", "no such dead letter");
  }
  if (strcmp(path, "/contracts") == 0 && get) {
    json_t *l = ceb_store_contract_list(st, ceb_admin_arg(c, "name"));
    return l ? ceb_admin_reply_json(c, 200, l)
             : ceb_admin_store_problem(c, st, "register query failed");
  }
  if (strncmp(path, "/contracts/", 11) == 0 && get)
    return ceb_admin_contract_get(view, c, path + 11);
  if (strcmp(path, "/cluster") == 0 && get) {
    /* the bridges sharing the store, what each leads and holds */
    json_t *v = ceb_store_cluster(st, view->now_ms(view->clock_arg));
    return v ? ceb_admin_reply_json(c, 200, v)
             : ceb_admin_store_problem(c, st, "cluster query failed");
  }
  if (strcmp(path, "/sinks") == 0 && get)
    return ceb_admin_reply_json(c, 200, ceb_runtime_sinks(rt));
  const char *ks = "/keys";
  size_t kl = strlen(path);
  if (strncmp(path, "/routes/", 8) == 0 && kl > 8 + strlen(ks) &&
      strcmp(path + kl - strlen(ks), ks) == 0) {
    if (!get)
      return ceb_admin_problem(c, 405, "method_not_allowed",
                               "GET /v1/routes/{route}/keys");
    char route[256];
    snprintf(route, sizeof route, "%.*s", (int)(kl - 8 - strlen(ks)), path + 8);
    return route_keys(view, c, st, route);
  }
  const char *ro = "/routes/", *rp = "/replay";
  size_t rl = strlen(path);
  if (strncmp(path, ro, strlen(ro)) == 0 && rl > strlen(ro) + strlen(rp) &&
      strcmp(path + rl - strlen(rp), rp) == 0) {
    if (!post)
      return ceb_admin_problem(c, 405, "method_not_allowed",
                               "POST /v1/routes/{route}/replay");
    char route[256];
    snprintf(route, sizeof route, "%.*s", (int)(rl - strlen(ro) - strlen(rp)),
             path + strlen(ro));
    return ceb_admin_replay(view, c, route);
  }
  const char *sk = "/sinks/", *en = "/enable";
  size_t pl = strlen(path);
  if (strncmp(path, sk, strlen(sk)) == 0 && pl > strlen(sk) + strlen(en) &&
      strcmp(path + pl - strlen(en), en) == 0) {
    if (!post)
      return ceb_admin_problem(c, 405, "method_not_allowed",
                               "POST /v1/sinks/{name}/enable");
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(pl - strlen(sk) - strlen(en)),
             path + strlen(sk));
    int rc = ceb_runtime_sink_enable(rt, name);
    if (rc == CEB_ENOTFOUND)
      return ceb_admin_problem(c, 404, "not_found", "no such sink");
    if (rc != CEB_OK) return ceb_admin_store_problem(c, st, ceb_strerror(rc));
    return ceb_admin_reply_json(
        c, 200, json_pack("{s:s, s:b}", "sink", name, "disabled", 0));
  }
  if (strcmp(path, "/routes") == 0 || strcmp(path, "/dlq") == 0 ||
      strcmp(path, "/contracts") == 0 || strcmp(path, "/cluster") == 0 ||
      strcmp(path, "/sinks") == 0 || strncmp(path, "/dlq/", 5) == 0)
    return ceb_admin_problem(c, 405, "method_not_allowed",
                             "method not allowed on this endpoint");
  return ceb_admin_problem(c, 404, "not_found", "no such admin endpoint");
}
