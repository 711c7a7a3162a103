/* Settles: from the sink (ceb_engine_settle) or the host (timeouts, refused
 * deliver calls), into a store write, then the follow-ups once it is
 * durable: counters, metrics, dead-letter forwarding and receipts. The
 * host's side of a settle is engine_send.c's cebe_settle_begin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "delivery/ceb_deadletter.h"
#include "delivery/engine_internal.h"
#include "log/ceb_log.h"

static const char *outcome_name(ceb_outcome o) {
  return o == CEB_ACK ? "ack" : o == CEB_REJECT ? "reject" : "retry";
}

typedef struct outcome_op {
  ceb_attempt_result r;
  ceb_engine *e;
  size_t route;
  ceb_event *ev; /* for forwards and receipts; may be NULL */
  int64_t received_at;
  uint32_t attempt;
  char *reason, *error, *dead_json;
  char *response; /* ACK: the peer's body excerpt (CEB_SETTLE_BODY_MAX) */
  char *key;      /* the order key (NULL: unordered) */
  const char *dead_reason;
} outcome_op;

static void outcome_free(outcome_op *op) {
  ceb_event_unref(op->ev);
  free(op->reason);
  free(op->error);
  free(op->dead_json);
  free(op->response);
  free(op->key);
  free(op);
}

/* The store queued a callback delivery to route with this settle (in its
 * transaction): counted open and claimed at once, as an ingest's rows. */
static void cebe_callback_queued(ceb_engine *e, const char *route) {
  pthread_mutex_lock(&e->lock);
  for (size_t r = 0; r < e->nroutes; r++)
    if (strcmp(e->routes[r].cfg.name, route) == 0) {
      e->routes[r].open++;
      e->routes[r].added++;
      e->open_total++;
    }
  cebe_kick_locked(e);
  pthread_mutex_unlock(&e->lock);
}

static void outcome_done(void *arg, int status) {
  outcome_op *op = arg;
  ceb_engine *e = op->e;
  eng_route *rt = &e->routes[op->route];
  int final = op->r.state == CEB_DS_DONE || op->r.state == CEB_DS_DEAD;
  if (status == CEB_OK) {
    if (final) {
      pthread_mutex_lock(&e->lock);
      if (rt->open > 0) {
        rt->open--;
        e->open_total--;
      } else {
        /* a delivery another writer added (another bridge, a CLI
         * replay): this process never counted it, so its count is wrong;
         * recount (engine_core.c, resync_routes_locked) */
        rt->resync = 1;
      }
      pthread_mutex_unlock(&e->lock);
    }
    cebe_key_outcome(e, op->route, op->key, op->r.state);
    if (op->r.callback_queued[0])
      cebe_callback_queued(e, op->r.callback_queued);
    char labels[256];
    if (rt->cfg.callbacks && op->r.state != CEB_DS_RETRYING &&
        op->r.state != CEB_DS_PENDING) {
      snprintf(labels, sizeof labels, "%s,result=\"%s\"", rt->labels,
               op->r.state == CEB_DS_DONE ? "sent" : "failed");
      cebe_metric_add(e, "cebridge_callbacks_total", labels, 1);
    }
    if (op->r.state == CEB_DS_DONE) {
      cebe_metric_add(e, "cebridge_events_delivered_total", rt->labels, 1);
      if (e->metrics)
        ceb_metrics_observe(e->metrics, "cebridge_delivery_latency_seconds",
                            rt->labels,
                            (double)(op->r.now - op->received_at) / 1000.0);
    } else if (op->r.state == CEB_DS_DEAD) {
      snprintf(labels, sizeof labels, "%s,reason=\"%s\"", rt->labels,
               op->dead_reason);
      cebe_metric_add(e, "cebridge_events_dead_total", labels, 1);
      ceb_log_ctx ctx = {.route = rt->cfg.name};
      char trace[33];
      ceb_log_ctx_event(&ctx, op->ev, trace);
      ceb_log_write(CEB_LOG_WARN, "engine", &ctx,
                    "dead-lettered (%s after %u attempts, last %s); DLQ id "
                    "%lld",
                    op->dead_reason, op->attempt, op->reason ? op->reason : "-",
                    (long long)op->r.dlq_id);
      if (rt->cfg.dlq_sink >= 0)
        cebe_fwd_dead(e, op->route, op->r.dlq_id, op->dead_json);
    }
    if (final && rt->cfg.receipts_sink >= 0 && op->ev) {
      ceb_event *rc = cebe_receipt(
          op->ev, rt->cfg.name, rt->cfg.receipts_prefix, op->r.seq,
          op->r.state == CEB_DS_DONE, op->attempt, op->reason, op->r.now);
      dctx *refused = NULL;
      int st = rc ? cebe_send_extra(
                        e, DCTX_RECEIPT, (size_t)rt->cfg.receipts_sink,
                        rt->cfg.receipts_topic, rc, rt->cfg.name, 0, &refused)
                  : CEB_OK;
      if (refused) cebe_refused(e, refused, st);
    }
  } else if (status == CEB_ECONFLICT) {
    /* the row is not in progress under our fence any more: our lease ended
     * and another claim (this instance's or another's) took it over, or
     * it was settled already; its new holder settles it */
    ceb_log_warn("engine: route %s: late settle refused: lease lost (event "
                 "seq %lld, fence %lld); the delivery's new holder settles it",
                 rt->cfg.name, (long long)op->r.seq, (long long)op->r.fence);
    cebe_metric_add(e, "cebridge_delivery_settles_fenced_total", rt->labels, 1);
  } else {
    ceb_log_error("engine: route %s: recording the outcome of seq %lld "
                  "failed (%s); it is retried after a restart",
                  rt->cfg.name, (long long)op->r.seq, ceb_strerror(status));
  }
  ceb_engine_kick(e);
  outcome_free(op);
}

/* The peer's body as the store keeps it: its first CEB_SETTLE_BODY_MAX
 * bytes as UTF-8 text, every byte that starts no well-formed sequence (and
 * NUL; a sequence the cut split too) read as U+FFFD, so that any engine
 * stores it as text and the status shows it as a JSON string. malloc'd; NULL
 * when out of memory. */
static char *response_text(const char *body, size_t len) {
  if (len > CEB_SETTLE_BODY_MAX) len = CEB_SETTLE_BODY_MAX;
  const unsigned char *p = (const unsigned char *)body;
  char *out = malloc(len * 3 + 1), *o = out;
  if (!out) return NULL;
  for (size_t k = 0; k < len;) {
    size_t n = ceb_utf8_seq(p + k, len - k);
    if (n && p[k] != 0) {
      memcpy(o, p + k, n);
      o += n;
      k += n;
    } else {
      memcpy(o, "\xEF\xBF\xBD", 3);
      o += 3;
      k++;
    }
  }
  *o = '\0';
  return out;
}

void cebe_outcome(ceb_engine *e, dctx *c, const ceb_settle_info *info) {
  eng_route *rt = &e->routes[c->route];
  outcome_op *op = calloc(1, sizeof *op);
  if (!op) {
    ceb_log_error("engine: out of memory recording an outcome");
    return;
  }
  int64_t now = cebe_now(e);
  op->e = e;
  op->route = c->route;
  op->ev = c->ev ? ceb_event_ref(c->ev) : NULL;
  op->received_at = c->received_at;
  op->attempt = c->attempt;
  op->reason = info->reason ? strdup(info->reason) : NULL;
  op->error = info->detail ? strndup(info->detail, CEB_DL_ERROR_MAX) : NULL;
  /* for the key metrics, and for the store: writes of one key apart */
  if (c->order_key) op->key = strdup(c->order_key);
  op->r = (ceb_attempt_result){.seq = c->seq,
                               .route = rt->cfg.name,
                               .fence = c->fence,
                               .order_key = op->key,
                               .now = now,
                               .status_code = info->status_code,
                               .reason = op->reason,
                               .error = op->error,
                               .sink = e->sinks[c->sink].cfg.name,
                               .attempt = c->attempt,
                               .started_at = c->started_at};
  if (info->outcome == CEB_ACK && info->body && info->body_len) {
    /* without it the status says only the code */
    op->response = response_text(info->body, info->body_len);
    if (op->response) {
      op->r.response = op->response;
      op->r.response_len = strlen(op->response);
    }
  }
  int64_t next_at = 0;
  if (info->outcome == CEBE_DEFER) {
    op->r.state = CEB_DS_PENDING;
    op->r.next_at = now + info->retry_after_ms;
    op->r.refund = 1;
  } else
    switch (info->outcome) {
    case CEB_ACK:
      op->r.state = CEB_DS_DONE;
      break;
    case CEB_RETRY: {
      pthread_mutex_lock(&e->lock);
      ceb_retry_verdict v =
          ceb_retry_next(rt->cfg.retry, c->attempt, now, c->received_at,
                         info->retry_after_ms, &e->rng, &next_at);
      pthread_mutex_unlock(&e->lock);
      if (v == CEB_RETRY_AGAIN) {
        op->r.state = CEB_DS_RETRYING;
        op->r.next_at = next_at;
      } else {
        op->r.state = CEB_DS_DEAD;
        op->dead_reason =
            v == CEB_RETRY_DEADLINE ? CEB_DEAD_DEADLINE : CEB_DEAD_EXHAUSTED;
      }
      break;
    }
    default:
      op->r.state = CEB_DS_DEAD;
      op->dead_reason = CEB_DEAD_REJECTED;
    }
  if (op->r.state == CEB_DS_DEAD) {
    op->r.dead_reason = op->dead_reason;
    if (c->ev)
      op->dead_json =
          cebe_dead_json(c->ev, rt->cfg.name, e->sinks[c->sink].cfg.name,
                         op->dead_reason, info, c->attempt, c->first_at, now);
    op->r.dead_json = op->dead_json;
  }
  if (info->outcome == CEBE_DEFER) {
    cebe_metric_add(e, "cebridge_deliveries_deferred_total", rt->labels, 1);
  } else {
    pthread_mutex_lock(&e->lock);
    ceb_rate_window_add(&rt->rate, now, info->outcome == CEB_ACK);
    pthread_mutex_unlock(&e->lock);
    char labels[256];
    snprintf(labels, sizeof labels, "%s,outcome=\"%s\"", rt->labels,
             info->reason && strcmp(info->reason, "timeout") == 0
                 ? "timeout"
                 : outcome_name(info->outcome));
    cebe_metric_add(e, "cebridge_delivery_attempts_total", labels, 1);
  }
  /* not synced: a lost outcome is delivered again */
  int rc = ceb_store_settle(e->store, &op->r, outcome_done, op);
  if (rc != CEB_OK) {
    ceb_log_error("engine: route %s: cannot queue an outcome (%s); the "
                  "delivery is retried after a restart",
                  rt->cfg.name, ceb_strerror(rc));
    outcome_free(op);
  }
}

static void extra_settled(ceb_engine *e, dctx *c, const ceb_settle_info *info) {
  if (c->kind == DCTX_FORWARD) {
    cebe_fwd_settled(e, c, info); /* retried until the sink takes it */
    return;
  }
  if (info->outcome == CEB_ACK) return;
  ceb_log_warn("engine: receipt to sink %s failed (%s)",
               e->sinks[c->sink].cfg.name,
               info->reason ? info->reason : "no reason");
}

/* Settles d with in: the host's bookkeeping (cebe_settle_begin), then the
 * outcome of a route delivery or of a forward or receipt. */
static void settle_impl(ceb_engine *e, ceb_delivery *d, ceb_settle_info in) {
  dctx *c = cebe_settle_begin(e, d, &in);
  if (!c) return;
  if (c->kind == DCTX_ROUTE)
    cebe_outcome(e, c, &in);
  else
    extra_settled(e, c, &in);
  cebe_dctx_free(c);
}

void ceb_engine_settle(ceb_engine *e, ceb_delivery *d,
                       const ceb_settle_info *info) {
  if (!e || !d) return;
  ceb_settle_info fallback = {.struct_size = sizeof fallback,
                              .outcome = CEB_RETRY,
                              .retry_after_ms = -1,
                              .reason = "settle.noinfo"};
  ceb_settle_info in = fallback;
  if (info && info->struct_size >= sizeof(ceb_settle_info)) {
    in = *info;
  } else if (info && info->struct_size >= CEB_SETTLE_INFO_SIZE_1_0) {
    /* a plugin built before 1.2: no response body */
    memcpy(&in, info, CEB_SETTLE_INFO_SIZE_1_0);
    in.struct_size = sizeof in;
    in.body = NULL;
    in.body_len = 0;
  } else if (info)
    ceb_log_error("engine: settle with a short info struct; treated as "
                  "retry");
  if (in.outcome == CEBE_DEFER) in.outcome = CEB_RETRY; /* host-only */
  settle_impl(e, d, in);
}

void cebe_refused(ceb_engine *e, dctx *c, int rc) {
  char reason[48];
  ceb_settle_info in;
  cebe_refusal_info(rc, &in, reason);
  settle_impl(e, &c->d, in); /* CEBE_DEFER for CEB_EBUSY */
}

json_t *ceb_engine_routes_json(ceb_engine *e) {
  json_t *arr = json_array();
  int64_t now = cebe_now(e);
  for (size_t i = 0; i < e->nroutes; i++) {
    eng_route *rt = &e->routes[i];
    int64_t oldest = ceb_store_oldest_open(e->store, rt->cfg.name);
    pthread_mutex_lock(&e->lock);
    uint64_t ok = 0, failed = 0;
    ceb_rate_window_sum(&rt->rate, now, &ok, &failed);
    json_t *o = json_pack(
        "{ss ss sI sI sI ss sI}", "route", rt->cfg.name, "sink",
        e->sinks[rt->cfg.sink].cfg.name, "queued", (json_int_t)rt->open,
        "inflight", (json_int_t)rt->inflight, "oldest_age_ms",
        (json_int_t)(oldest > 0 && now > oldest ? now - oldest : 0), "circuit",
        ceb_circuit_state_name(e->sinks[rt->cfg.sink].circuit.state),
        "max_inflight", (json_int_t)rt->cfg.max_inflight);
    pthread_mutex_unlock(&e->lock);
    /* The last minute's attempts: delivered per second, and the share of
     * attempts that failed (0 when there were none). */
    json_object_set_new(o, "window_s", json_integer(CEB_RATE_WINDOW_S));
    json_object_set_new(o, "delivered_1m", json_integer((json_int_t)ok));
    json_object_set_new(o, "failed_1m", json_integer((json_int_t)failed));
    json_object_set_new(o, "throughput_per_s",
                        json_real((double)ok / CEB_RATE_WINDOW_S));
    json_object_set_new(
        o, "failure_rate",
        json_real(ok + failed ? (double)failed / (double)(ok + failed) : 0.0));
    if (e->metrics)
      ceb_metrics_set(
          e->metrics, "cebridge_queue_oldest_age_seconds", rt->labels,
          oldest > 0 && now > oldest ? (double)(now - oldest) / 1e3 : 0);
    json_array_append_new(arr, o);
  }
  return arr;
}
