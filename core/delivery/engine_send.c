/* Handing attempts to sinks (cebe_dispatch, cebe_send_extra) and the
 * host's side of every settle (cebe_settle_begin: the live set, the sink's
 * circuit and backpressure pause, in-flight counts). A refused deliver is
 * returned, not settled: the caller above finishes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "delivery/engine_internal.h"
#include "log/ceb_log.h"

int cebe_dispatch(ceb_engine *e, dctx *c) {
  eng_sink *s = &e->sinks[c->sink];
  ceb_instance *inst = s->cfg.inst;
  int rc = inst && inst->plugin && inst->plugin->deliver
               ? inst->plugin->deliver(inst->state, &c->d)
               : CEB_EUNSUPPORTED;
  if (rc == CEB_OK) {
    if (atomic_load_explicit(&s->busy_ms, memory_order_relaxed))
      atomic_store_explicit(&s->busy_ms, 0, memory_order_relaxed);
    return 0;
  }
  return rc; /* refused: the caller settles c (cebe_refusal_info) */
}

void cebe_refusal_info(int rc, ceb_settle_info *info, char reason[48]) {
  if (rc == CEB_EBUSY) {
    *info = (ceb_settle_info){.struct_size = sizeof *info,
                              .outcome = CEBE_DEFER,
                              .reason = "deferred",
                              .detail = "the sink is busy (backpressure); not "
                                        "counted as an attempt"};
    return;
  }
  /* Not taken: a retryable failure with the status, unless the attempt
   * was already timed out meanwhile. */
  snprintf(reason, 48, "deliver.%s", ceb_status_name(rc));
  *info = (ceb_settle_info){.struct_size = sizeof *info,
                            .outcome = CEB_RETRY,
                            .retry_after_ms = -1,
                            .reason = reason,
                            .detail = ceb_strerror(rc)};
}

int cebe_send_extra(ceb_engine *e, int kind, size_t sink, const char *topic,
                    ceb_event *ev, const char *route, int64_t dlq_id,
                    dctx **refused) {
  *refused = NULL;
  pthread_mutex_lock(&e->lock);
  int stopping = e->stopping;
  pthread_mutex_unlock(&e->lock);
  dctx *c = stopping ? NULL : calloc(1, sizeof *c);
  if (!c) {
    ceb_event_unref(ev);
    return stopping ? CEB_ESHUTDOWN : CEB_ENOMEM;
  }
  c->kind = kind;
  c->sink = sink;
  c->ev = ev;
  c->dlq_id = dlq_id;
  c->attempt = 1;
  snprintf(c->topic, sizeof c->topic, "%s", topic ? topic : "");
  cebe_idem_key(ev, kind == DCTX_FORWARD ? "~dlq" : "~receipt", 0, 0,
                c->idem_key);
  c->d = (ceb_delivery){.struct_size = sizeof c->d,
                        .event = ev,
                        .route = route,
                        .topic = topic ? c->topic : NULL,
                        .idempotency_key = c->idem_key,
                        .attempt = 1};
  pthread_mutex_lock(&e->lock);
  c->started_at = cebe_now(e);
  c->d.deadline_ms = c->started_at + FWD_TIMEOUT_MS;
  int rc = cebe_ptrset_add(&e->live, c);
  if (rc == CEB_OK) cebe_expire_lower_locked(e, 0, c->d.deadline_ms);
  pthread_mutex_unlock(&e->lock);
  if (rc != CEB_OK) {
    cebe_dctx_free(c);
    return rc;
  }
  rc = cebe_dispatch(e, c);
  if (rc != CEB_OK) *refused = c;
  return rc;
}

dctx *cebe_settle_begin(ceb_engine *e, ceb_delivery *d, ceb_settle_info *inp) {
  ceb_settle_info in = *inp;
  pthread_mutex_lock(&e->lock);
  if (!cebe_ptrset_has(&e->live, d)) {
    pthread_mutex_unlock(&e->lock);
    ceb_log_error("engine: settle of an unknown or already settled delivery "
                  "ignored (a sink bug: settle exactly once)");
    return NULL;
  }
  dctx *c = (dctx *)d;
  cebe_ptrset_del(&e->live, c);
  if (c->host_settled) {
    pthread_mutex_unlock(&e->lock);
    ceb_log_info("engine: late settle after the attempt timed out ignored");
    cebe_dctx_free(c);
    return NULL;
  }
  eng_sink *s = &e->sinks[c->sink];
  int64_t now = cebe_now(e);
  int was = s->circuit.state;
  int busy_first = 0;
  /* the sink's life cycle (engine_sinkstate.c): a result of the whole sink
   * (not one destination of a templated one, not a forward) */
  int gone_wait = 0;
  if (c->kind == DCTX_ROUTE && in.outcome != CEBE_DEFER &&
      !(in.flags & CEB_SETTLE_DESTINATION)) {
    if ((in.flags & CEB_SETTLE_OPEN_CIRCUIT) && s->cfg.disable_on_gone)
      gone_wait = cebe_sink_result_locked(e, s, CEBE_SINK_GONE, in.reason, now);
    else
      cebe_sink_result_locked(
          e, s, in.outcome == CEB_RETRY ? CEBE_SINK_FAILED : CEBE_SINK_OK,
          in.reason, now);
  }
  if (in.outcome == CEBE_DEFER) {
    /* A busy sink is alive: no circuit failure, and a half-open probe that
     * did not happen is given back. The pause doubles once per pause that
     * ended busy again, not once per delivery deferred within it. */
    if (c->kind != DCTX_FORWARD) ceb_circuit_cancel(&s->circuit);
    if (now >= s->busy_until) {
      int64_t ms = atomic_load(&s->busy_ms);
      busy_first = ms == 0;
      ms = ms ? ms * 2 : CEBE_BUSY_MIN_MS;
      if (ms > CEBE_BUSY_MAX_MS) ms = CEBE_BUSY_MAX_MS;
      atomic_store(&s->busy_ms, ms);
      s->busy_until = now + ms;
    }
    in.retry_after_ms = s->busy_until - now;
  } else if (gone_wait) {
    /* disabled instead: the circuit stays as it was, so the first attempt
     * after the operator's enable goes out at once */
  } else if (in.flags & CEB_SETTLE_OPEN_CIRCUIT) {
    ceb_circuit_trip(&s->circuit, now);
  } else if (in.flags & CEB_SETTLE_DESTINATION) {
    /* one destination's result: the sink keeps that destination's circuit;
     * for the whole sink it only shows the sink works (a half-open probe
     * closes) */
    if (c->kind != DCTX_FORWARD) ceb_circuit_success(&s->circuit);
  } else if (c->kind == DCTX_FORWARD) {
    /* forwards back off on their own (cebe_fwd_settled); they take no
     * circuit probe, so they neither use nor give one back */
  } else if (in.outcome == CEB_RETRY) {
    ceb_circuit_failure(&s->circuit, now);
  } else {
    /* ACK, and REJECT too: the peer answered, it is alive */
    ceb_circuit_success(&s->circuit);
  }
  int changed = was != s->circuit.state;
  if (changed) cebe_update_gauges_locked(e, 1);
  if (c->kind == DCTX_ROUTE) {
    e->routes[c->route].inflight--;
    e->inflight_total--;
    pthread_cond_broadcast(&e->idle);
  }
  cebe_kick_locked(e);
  int state = s->circuit.state;
  pthread_mutex_unlock(&e->lock);
  if (gone_wait) {
    /* not dead-lettered: the delivery waits for the sink to be enabled,
     * the attempt given back (the ALERT said it once, at the disabling) */
    in.outcome = CEBE_DEFER;
    in.retry_after_ms = 0;
    in.reason = "sink.disabled";
    in.detail = "the sink is disabled (410 Gone); waiting to be enabled";
  } else if (in.flags & CEB_SETTLE_OPEN_CIRCUIT)
    ceb_log_error("ALERT engine: sink %s reports its peer gone (%s); circuit "
                  "opened",
                  s->cfg.name, in.reason ? in.reason : "no reason");
  else if (changed)
    ceb_log_warn("engine: sink %s circuit %s", s->cfg.name,
                 ceb_circuit_state_name(state));
  if (busy_first)
    ceb_log_info("engine: sink %s is busy (backpressure); its deliveries "
                 "pause %lld ms and back off while it stays busy",
                 s->cfg.name, (long long)in.retry_after_ms);
  *inp = in;
  return c;
}
