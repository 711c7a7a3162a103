/* submit: validate, match routes, encode, and queue one ingest op to the
 * committer; the source's callback runs once the batch is durable. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "log/ceb_log.h"
#include "runtime/runtime_internal.h"

/* One submit in flight. batch first: the store op's run gets this. */
typedef struct ingest_job {
  ceb_ingest_batch batch;
  ceb_runtime *rt;
  ceb_instance *inst;
  ceb_submit_cb cb;
  void *cb_arg;
  int64_t submitted_at;
  ceb_ingest_event *events;
  size_t count;
  ceb_ingest_route *routes; /* all events' routes, sliced */
  char **strings;           /* owned copies */
  size_t nstrings;
} ingest_job;

static void job_free(ingest_job *j) {
  for (size_t i = 0; i < j->nstrings; i++)
    free(j->strings[i]);
  free(j->strings);
  free(j->events);
  free(j->routes);
  free(j);
}

static const char *keep(ingest_job *j, const char *s, size_t cap) {
  if (!s) return NULL;
  char *c = strdup(s);
  if (c && j->nstrings < cap)
    j->strings[j->nstrings++] = c;
  else {
    free(c);
    c = NULL;
  }
  return c;
}

void cebr_reject_metric(ceb_runtime *rt, ceb_instance *inst,
                        const char *reason) {
  if (!rt->metrics) return;
  char labels[320];
  snprintf(labels, sizeof labels, "%s,reason=\"%s\"", inst->labels, reason);
  ceb_metrics_add(rt->metrics, "cebridge_events_rejected_total", labels, 1);
}

static void ingest_done(void *arg, int status) {
  ingest_job *j = arg;
  ceb_runtime *rt = j->rt;
  ceb_submit_result res = {.struct_size = sizeof res, .status = status};
  if (status == CEB_OK) {
    for (size_t i = 0; i < j->count; i++) {
      if (j->events[i].inserted)
        res.accepted++;
      else
        res.duplicates++;
      if (!j->events[i].inserted || j->events[i].nroutes) continue;
      /* the engine heard of the routed ones from the store itself */
      if (rt->metrics)
        ceb_metrics_add(rt->metrics, "cebridge_events_unrouted_total",
                        j->inst->labels, 1);
      ceb_log_warn("runtime: event %s from %s matches no route; journaled "
                   "and marked unrouted",
                   j->events[i].id, j->inst->name);
    }
    if (rt->metrics) {
      ceb_metrics_add(rt->metrics, "cebridge_events_accepted_total",
                      j->inst->labels, (double)res.accepted);
      ceb_metrics_add(rt->metrics, "cebridge_events_duplicate_total",
                      j->inst->labels, (double)res.duplicates);
      ceb_metrics_observe(rt->metrics, "cebridge_ingest_latency_seconds",
                          j->inst->labels,
                          (double)(cebr_now(rt) - j->submitted_at) / 1000.0);
    }
  } else {
    ceb_log_error("runtime: journaling a batch of %zu events from %s failed: "
                  "%s",
                  j->count, j->inst->name, ceb_strerror(status));
  }
  if (j->cb) j->cb(j->cb_arg, &res);
  job_free(j);
}

/* Validation of one event; CEB_OK or the refusal status. */
static int check_event(ceb_runtime *rt, ceb_instance *inst, const ceb_event *ev,
                       const ceb_submit_opts *opts, ceb_violations *v) {
  rt_inst *d = inst->runtime_data;
  size_t size = ceb_event_size(ev);
  if (size > rt->max_event_size) {
    v->count = v->errors = 1;
    v->warnings = 0;
    v->truncated = 0;
    v->items[0].attribute[0] = '\0';
    v->items[0].code = "event.too_large";
    v->items[0].severity = CEB_SEV_ERROR;
    snprintf(v->items[0].message, sizeof v->items[0].message,
             "event is %zu bytes, the limit is %zu", size, rt->max_event_size);
    return CEB_ETOOLARGE;
  }
  ceb_validate_opts vo = {.struct_size = sizeof vo,
                          .nlgov = d->profile,
                          .max_size = rt->max_event_size};
  if (ceb_event_validate(ev, &vo, v) > 0) return CEB_EVALIDATION;
  if (v->warnings && ceb_log_enabled(CEB_LOG_WARN)) {
    /* The log line carries the event id, the client and the trace id of
     * the request (traceparent header) or of the event's extension. */
    ceb_log_ctx ctx = {.client = opts ? opts->client : NULL};
    char trace[33];
    ceb_log_ctx_event(&ctx, ev, trace);
    if (opts && opts->traceparent)
      ctx.trace_id = ceb_log_trace_id(opts->traceparent, trace);
    ceb_log_write(CEB_LOG_WARN, inst->component, &ctx,
                  "event %s: %zu profile warning(s), first: %s (%s)",
                  ceb_event_get(ev, "id") ? ceb_event_get(ev, "id") : "?",
                  v->warnings, v->items[0].code, v->items[0].message);
  }
  return CEB_OK;
}

/* The contract hook for routes that pin one. */
static int check_contracts(ceb_runtime *rt, const ceb_route *r,
                           const ceb_event *ev, ceb_violations *v) {
  if (!r->contract) return CEB_OK;
  if (!rt->contract_check) {
    if (!atomic_exchange(&rt->contract_warned, 1))
      ceb_log_warn("runtime: route %s pins contract %s but no contract "
                   "checker is installed; events are not checked",
                   r->name, r->contract);
    return CEB_OK;
  }
  int rc = rt->contract_check(rt->contract_arg, r, ev, v);
  if (rc != CEB_OK && r->contract_warn) {
    ceb_log_warn("runtime: route %s: event %s does not match contract %s "
                 "(warn mode)",
                 r->name, ceb_event_get(ev, "id"), r->contract);
    return CEB_OK;
  }
  return rc;
}

static int journal_job(ceb_runtime *rt, ceb_instance *inst,
                       ceb_event *const *events, size_t count,
                       const ceb_submit_opts *opts, ceb_submit_cb cb,
                       void *cb_arg, const unsigned char *hit, size_t nr,
                       char **json, size_t *json_len);

/* One violation for a refusal that is not the event's own (a filter). */
static void violation(ceb_violations *v, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void violation(ceb_violations *v, const char *code, const char *fmt,
                      ...) {
  v->count = v->errors = 1;
  v->warnings = 0;
  v->truncated = 0;
  v->items[0].attribute[0] = '\0';
  v->items[0].code = code;
  v->items[0].severity = CEB_SEV_ERROR;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v->items[0].message, sizeof v->items[0].message, fmt, ap);
  va_end(ap);
}

/* Route filters (filter = <jq>) of the (event, route) pairs marked 2 in
 * hit: one batch to the mapping workers, each event encoded once (the
 * encoding is the journal's too). A pair becomes 1 (taken) or 0. A filter
 * that fails refuses the whole submit, like a failed validation, so that
 * nothing is half-accepted: CEB_EVALIDATION, code route.filter, with
 * *failed the event's index. */
static int run_filters(ceb_runtime *rt, ceb_event *const *events, size_t count,
                       unsigned char *hit, size_t npending, char **json,
                       size_t *json_len, ceb_violations *v, size_t *failed) {
  ceb_map_req *reqs = calloc(npending, sizeof *reqs);
  size_t *pair = calloc(npending, sizeof *pair);
  int rc = reqs && pair ? CEB_OK : CEB_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; rc == CEB_OK && i < count; i++)
    for (size_t r = 0; rc == CEB_OK && r < rt->nroutes; r++) {
      if (hit[i * rt->nroutes + r] != 2) continue;
      if (!json[i] &&
          ceb_json_encode(events[i], &json[i], &json_len[i]) != CEB_OK) {
        rc = CEB_ENOMEM;
        break;
      }
      pair[n] = i * rt->nroutes + r;
      reqs[n++] = (ceb_map_req){.program = (uint32_t)rt->route_filter[r],
                                .flags = CEB_MAP_TRUTH,
                                .input = json[i],
                                .input_len = json_len[i]};
    }
  if (rc == CEB_OK) rc = ceb_mapper_run(rt->mapper, reqs, n);
  for (size_t k = 0; rc == CEB_OK && k < n; k++) {
    size_t i = pair[k] / rt->nroutes, r = pair[k] % rt->nroutes;
    if (reqs[k].status != CEB_OK) {
      violation(v, "route.filter", "route %s: filter failed: %s",
                rt->routes[r]->name, reqs[k].reason);
      *failed = i;
      rc = CEB_EVALIDATION;
      break;
    }
    const char *o = ceb_map_output(&reqs[k], NULL);
    hit[pair[k]] = o && strcmp(o, "true") == 0;
  }
  for (size_t k = 0; reqs && k < n; k++)
    ceb_map_req_clear(&reqs[k]);
  free(reqs);
  free(pair);
  return rc;
}

static void free_json(char **json, size_t count) {
  for (size_t i = 0; json && i < count; i++)
    ceb_free(json[i]);
  free(json);
}

/* max_open_per_key: CEB_EBUSY when an event's key on a matched route has
 * as many open deliveries as the route allows, counting the batch's own
 * earlier events of the key; CEB_OK otherwise (or without a limit). Read
 * from the store, so it holds across restarts and for every bridge on a
 * shared store; requests of one key submitted at the same moment may each
 * pass before the other's rows are written (the overshoot is bounded by
 * those concurrent requests). A store error is CEB_EIO (503). */
static int key_limits(ceb_runtime *rt, ceb_event *const *events, size_t count,
                      const unsigned char *hit) {
  for (size_t r = 0; r < rt->nroutes; r++) {
    const ceb_route *route = rt->routes[r];
    int64_t max = route->max_open_per_key;
    if (max <= 0) continue;
    for (size_t i = 0; i < count; i++) {
      if (!hit[i * rt->nroutes + r]) continue;
      const char *key = ceb_route_order_key(route, events[i]);
      if (!key) continue;
      int64_t ahead = 0; /* this batch's earlier events of the key */
      for (size_t k = 0; k < i; k++) {
        const char *o = hit[k * rt->nroutes + r]
                            ? ceb_route_order_key(route, events[k])
                            : NULL;
        if (o && strcmp(o, key) == 0) ahead++;
      }
      if (ahead >= max) return CEB_EBUSY;
      int64_t open =
          ceb_store_count_open_key(rt->store, route->name, key, max - ahead);
      if (open == CEB_EUNSUPPORTED) continue;
      if (open < 0) return CEB_EIO;
      if (open + ahead >= max) return CEB_EBUSY;
    }
  }
  return CEB_OK;
}

int cebr_submit(ceb_instance *inst, ceb_event *const *events, size_t count,
                const ceb_submit_opts *opts, ceb_submit_cb cb, void *cb_arg) {
  return cebr_submit_ex(inst, events, count, opts, cb, cb_arg, 0);
}

int cebr_submit_ex(ceb_instance *inst, ceb_event *const *events, size_t count,
                   const ceb_submit_opts *opts, ceb_submit_cb cb, void *cb_arg,
                   unsigned flags) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt || !events || count == 0 || !cb) return CEB_EINVAL;
  if (inst->role != CEB_ROLE_SOURCE) return CEB_EINVAL;
  if (opts && opts->struct_size < offsetof(ceb_submit_opts, key_limited))
    opts = NULL; /* too old to read: no client, no outputs */
  /* ABI 1.2: only a plugin that knows it is told why it is busy */
  int *key_limited =
      opts && opts->struct_size >=
                  offsetof(ceb_submit_opts, key_limited) + sizeof(int *)
          ? opts->key_limited
          : NULL;
  if (key_limited) *key_limited = 0;
  /* ABI 1.3: the client's callback URL (the source checked its form) */
  const char *callback =
      opts && opts->struct_size >=
                  offsetof(ceb_submit_opts, callback) + sizeof(char *)
          ? opts->callback
          : NULL;
  if (callback && !cebr_callback_route(rt, inst->name))
    return CEB_EUNSUPPORTED; /* no route sends this source's callbacks */
  if (atomic_load(&rt->draining) || !rt->started) return CEB_ESHUTDOWN;
  /* A store that cannot write (full disk, I/O error, damage) could never
   * make the events durable: refuse before taking anything (sources answer
   * 503 with Retry-After), rather than fail each batch after the fact. */
  if (!ceb_store_writable(rt->store, NULL, 0)) {
    cebr_reject_metric(rt, inst, "store_unavailable");
    return CEB_EIO;
  }
  if (!ceb_engine_accepting(rt->engine)) {
    cebr_reject_metric(rt, inst, "backpressure");
    return CEB_EBUSY;
  }
  if (rt->metrics && !(flags & CEBR_SUBMIT_AGAIN))
    ceb_metrics_add(rt->metrics, "cebridge_events_received_total", inst->labels,
                    (double)count);
  ceb_violations local;
  ceb_violations *v = opts && opts->violations ? opts->violations : &local;
  /* Matching routes per event, matched once here (the contracts of the
   * matching routes need it) and carried to the journal rows below:
   * hit[i * nroutes + r]; 2 while the route's filter is to run. Counted
   * first for one allocation. */
  unsigned char hit_small[256];
  size_t nhit = count * rt->nroutes;
  unsigned char *hit = nhit <= sizeof hit_small ? hit_small : malloc(nhit);
  /* the events' one encoding, made early when a filter needs it */
  char **json = calloc(count, sizeof *json);
  size_t *json_len = calloc(count, sizeof *json_len);
  if (!hit || !json || !json_len) {
    if (hit != hit_small) free(hit);
    free(json);
    free(json_len);
    return CEB_ENOMEM;
  }
  size_t nr = 0, npending = 0, failed = 0;
  int rc = CEB_OK;
  for (size_t i = 0; rc == CEB_OK && i < count; i++) {
    if (!events[i]) {
      rc = CEB_EINVAL;
      break;
    }
    rc = check_event(rt, inst, events[i], opts, v);
    if (rc != CEB_OK) failed = i;
    for (size_t r = 0; rc == CEB_OK && r < rt->nroutes; r++) {
      unsigned char m = ceb_route_matches(rt->routes[r], inst->name, events[i]);
      if (m && rt->route_filter[r] >= 0) {
        m = 2;
        npending++;
      }
      hit[i * rt->nroutes + r] = m;
    }
  }
  if (rc == CEB_OK && npending)
    rc = run_filters(rt, events, count, hit, npending, json, json_len, v,
                     &failed);
  for (size_t i = 0; rc == CEB_OK && i < count; i++)
    for (size_t r = 0; rc == CEB_OK && r < rt->nroutes; r++) {
      if (!hit[i * rt->nroutes + r]) continue;
      nr++;
      rc = check_contracts(rt, rt->routes[r], events[i], v);
      if (rc != CEB_OK) failed = i;
    }
  if (rc != CEB_OK) {
    if (hit != hit_small) free(hit);
    free_json(json, count);
    free(json_len);
    if (rc == CEB_EINVAL || rc == CEB_ENOMEM) return rc;
    if (opts && opts->failed_index) *opts->failed_index = failed;
    cebr_reject_metric(rt, inst,
                       rc == CEB_ETOOLARGE ? "too_large" : "validation");
    return rc;
  }
  rc = key_limits(rt, events, count, hit);
  if (rc != CEB_OK) {
    if (hit != hit_small) free(hit);
    free_json(json, count);
    free(json_len);
    if (rc == CEB_EBUSY) {
      if (key_limited) *key_limited = 1;
      cebr_reject_metric(rt, inst, "key_limit");
    }
    return rc;
  }
  rc = journal_job(rt, inst, events, count, opts, cb, cb_arg, hit, nr, json,
                   json_len);
  if (hit != hit_small) free(hit);
  free_json(json, count); /* the ones the job took are NULL now */
  free(json_len);
  return rc;
}

/* Copies what the journal needs of the events (their one JSON encoding,
 * the matched routes' rows) into a job and queues it to the store. */
static int journal_job(ceb_runtime *rt, ceb_instance *inst,
                       ceb_event *const *events, size_t count,
                       const ceb_submit_opts *opts, ceb_submit_cb cb,
                       void *cb_arg, const unsigned char *hit, size_t nr,
                       char **pre, size_t *pre_len) {
  ingest_job *j = calloc(1, sizeof *j);
  size_t scap = count * 6 + nr + 1;
  if (j) {
    j->events = calloc(count, sizeof *j->events);
    j->routes = calloc(nr ? nr : 1, sizeof *j->routes);
    j->strings = calloc(scap, sizeof *j->strings);
  }
  if (!j || !j->events || !j->routes || !j->strings) {
    if (j) job_free(j);
    return CEB_ENOMEM;
  }
  j->rt = rt;
  j->inst = inst;
  j->cb = cb;
  j->cb_arg = cb_arg;
  j->count = count;
  int64_t now = cebr_now(rt);
  j->submitted_at = now;
  const char *client = opts ? opts->client : NULL;
  const char *callback =
      opts && opts->struct_size >=
                  offsetof(ceb_submit_opts, callback) + sizeof(char *)
          ? opts->callback
          : NULL;
  /* the route's name lives as long as the runtime */
  const char *cb_route = callback ? cebr_callback_route(rt, inst->name) : NULL;
  size_t off = 0;
  for (size_t i = 0; i < count; i++) {
    const ceb_event *ev = events[i];
    ceb_ingest_event *ie = &j->events[i];
    char *json = pre[i];
    size_t len = pre_len[i];
    pre[i] = NULL; /* the job's now (freed with it on failure too) */
    if (!json && ceb_json_encode(ev, &json, &len) != CEB_OK) {
      job_free(j);
      return CEB_ENOMEM;
    }
    /* the one encoding: the job keeps it (libceb's allocator is malloc) */
    if (j->nstrings < scap) {
      j->strings[j->nstrings++] = json;
      ie->json = json;
    } else {
      ceb_free(json);
    }
    ie->json_len = len;
    ie->client = keep(j, client ? client : "", scap);
    ie->source = keep(j, ceb_event_get(ev, "source"), scap);
    ie->id = keep(j, ceb_event_get(ev, "id"), scap);
    ie->type = keep(j, ceb_event_get(ev, "type"), scap);
    ie->routes = &j->routes[off];
    for (size_t r = 0; r < rt->nroutes; r++) {
      const ceb_route *route = rt->routes[r];
      if (!hit[i * rt->nroutes + r]) continue;
      j->routes[off] = (ceb_ingest_route){
          .route = route->name,
          .order_key = keep(j, ceb_route_order_key(route, ev), scap),
          .first_at = now + ceb_retry_first_delay(&route->retry),
          .index = r};
      off++;
      ie->nroutes++;
    }
    if (cb_route) {
      ie->callback_route = cb_route;
      ie->callback_url = keep(j, callback, scap);
      if (!ie->callback_url) {
        job_free(j);
        return CEB_ENOMEM;
      }
    }
    if (!ie->json || !ie->source || !ie->id) {
      job_free(j);
      return CEB_ENOMEM;
    }
  }
  j->batch = (ceb_ingest_batch){j->events, count, now};
  /* the store tells the engine of the new deliveries once they are
   * committed (ceb_store_set_ingest_listener); ingest_done acknowledges
   * after the sync */
  int rc = ceb_store_ingest(rt->store, &j->batch, ingest_done);
  if (rc != CEB_OK) {
    job_free(j);
    if (rc == CEB_EBUSY) cebr_reject_metric(rt, inst, "backpressure");
    return rc;
  }
  /* The host owns the events now; everything needed was copied. */
  for (size_t i = 0; i < count; i++)
    ceb_event_unref(events[i]);
  return CEB_OK;
}
