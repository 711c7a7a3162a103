/* Taking claimed deliveries: contexts made from the store's claims (the
 * worker's, or those claimed at ingest: engine_preclaim.c), their egress
 * mapping, and their hand-off to the sinks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "delivery/engine_internal.h"
#include "log/ceb_log.h"

/* Hands c to its sink; a refusal is settled here (CEB_EBUSY defers c: not
 * an attempt). deliver may settle before it returns, so c is not touched
 * after it was taken. Returns 1 when the sink said CEB_EBUSY, else 0. */
/* The egress mapping of the route's claimed contexts (one batch): the
 * ones it fails are dead-lettered now (reason "mapping": a program that
 * throws, outputs the wrong shape, runs too long or too big fails the same
 * way on every try) or, when no worker could run, retried. Returns how
 * many of ready[] are left, in order. Unlocked. */
static size_t map_ready(ceb_engine *e, size_t r, dctx **ready, size_t n) {
  eng_route *rt = &e->routes[r];
  char(*why)[CEBE_MAP_WHY] = calloc(n, sizeof *why);
  int *retry = calloc(n, sizeof *retry);
  if (why && retry && rt->cfg.callbacks) {
    cebe_callback_claimed(e, ready, n, why, retry);
  } else if (why && retry) {
    cebe_map_claimed(e->mapper, rt->cfg.map_program, ready, n, why, retry);
  } else { /* never sent unmapped: tried again later */
    free(why);
    why = NULL;
  }
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    dctx *c = ready[i];
    if (why && !why[i][0]) {
      ready[kept++] = c;
      continue;
    }
    const char *w = why ? why[i] : "mapping: out of memory";
    int again = !why || retry[i];
    ceb_log_warn("engine: route %s: event %s: %s failed: %s", rt->cfg.name,
                 ceb_event_get(c->ev, "id"),
                 rt->cfg.callbacks ? "callback document" : "egress mapping", w);
    ceb_settle_info info = {.struct_size = sizeof info,
                            .outcome = again ? CEB_RETRY : CEB_REJECT,
                            .retry_after_ms = -1,
                            .reason =
                                rt->cfg.callbacks ? "callback" : "mapping",
                            .detail = w};
    pthread_mutex_lock(&e->lock);
    rt->inflight--;
    e->inflight_total--;
    pthread_mutex_unlock(&e->lock);
    cebe_outcome(e, c, &info);
    cebe_dctx_free(c);
  }
  free(why);
  free(retry);
  return kept;
}

/* A dry run (route dry_run, `run --dry-run`): everything up to the send
 * was done (decode, egress mapping); the sink is not called. The attempt
 * settles done with reason "dry-run" and what would have gone out, which
 * the status keeps (last_reason, last_error) and the log shows. */
static void dry_run(ceb_engine *e, dctx *c) {
  eng_route *rt = &e->routes[c->route];
  const ceb_mapped_out *m = c->d.mapped;
  char detail[480];
  if (m)
    snprintf(detail, sizeof detail,
             "would send to sink %s: %zu bytes of %s%s%s: %.300s",
             e->sinks[c->sink].cfg.name, m->body_len, m->content_type,
             m->topic ? " on topic " : "", m->topic ? m->topic : "", m->body);
  else
    snprintf(detail, sizeof detail,
             "would send to sink %s: the event (%zu bytes of "
             "application/cloudevents+json), Idempotency-Key %s",
             e->sinks[c->sink].cfg.name, c->d.encoded_len, c->idem_key);
  ceb_log_info("engine: dry-run: route %s: event %s: %s", rt->cfg.name,
               ceb_event_get(c->ev, "id"), detail);
  ceb_settle_info info = {.struct_size = sizeof info,
                          .outcome = CEB_ACK,
                          .retry_after_ms = -1,
                          .reason = "dry-run",
                          .detail = detail};
  ceb_engine_settle(e, &c->d, &info);
}

static int dispatch(ceb_engine *e, dctx *c) {
  if (e->routes[c->route].cfg.dry_run) {
    dry_run(e, c);
    return 0;
  }
  int rc = cebe_dispatch(e, c);
  if (rc != CEB_OK) cebe_refused(e, c, rc);
  return rc == CEB_EBUSY;
}

size_t cebe_take_claims(ceb_engine *e, size_t r, int64_t now, size_t n,
                        ceb_claim *claims, size_t count, int refuse) {
  eng_route *rt = &e->routes[r];
  eng_sink *s = &e->sinks[rt->cfg.sink];
  int defer = refuse == CEBE_TAKE_DEFER;
  if (defer) refuse = 0;
  dctx **ready = calloc(count ? count : 1, sizeof *ready);
  size_t nready = 0;
  for (size_t i = 0; i < count && ready; i++) {
    ceb_claim *cl = &claims[i];
    dctx *c = calloc(1, sizeof *c);
    ceb_event *ev = NULL;
    ceb_error err;
    /* the journal holds what ceb_json_encode wrote at ingest */
    size_t json_len = cl->event_json ? strlen(cl->event_json) : 0;
    if (c && ceb_json_decode_trusted(cl->event_json, json_len, &ev, &err) ==
                 CEB_OK) {
      c->kind = DCTX_ROUTE;
      c->route = r;
      c->sink = rt->cfg.sink;
      c->seq = cl->seq;
      c->fence = cl->fence;
      c->received_at = cl->received_at;
      c->first_at = cl->first_at;
      c->started_at = now;
      c->attempt = cl->attempt;
      c->ev = ev;
      /* the sink gets the journal's bytes too (ABI 1.1): a structured-mode
       * sink sends them as they are instead of encoding ev again */
      c->json = cl->event_json;
      cl->event_json = NULL;
      c->order_key = cl->order_key;
      cl->order_key = NULL;
      cebe_idem_key(ev, rt->cfg.name, cl->replays, cl->replay_of ? cl->seq : 0,
                    c->idem_key);
      c->d = (ceb_delivery){.struct_size = sizeof c->d,
                            .event = ev,
                            .route = rt->cfg.name,
                            .topic = NULL,
                            .idempotency_key = c->idem_key,
                            .attempt = cl->attempt,
                            .deadline_ms = now + rt->cfg.timeout_ms,
                            .encoded = c->json,
                            .encoded_len = json_len};
      ready[nready++] = c;
    } else {
      /* A journal row we cannot decode can never be delivered: dead. */
      ceb_log_error("engine: route %s: stored event %lld cannot be decoded; "
                    "dead-lettering it",
                    rt->cfg.name, (long long)cl->seq);
      dctx tmp = {.kind = DCTX_ROUTE,
                  .route = r,
                  .sink = rt->cfg.sink,
                  .seq = cl->seq,
                  .fence = cl->fence,
                  .received_at = cl->received_at,
                  .first_at = cl->first_at,
                  .attempt = cl->attempt,
                  .order_key = cl->order_key}; /* borrowed */
      ceb_settle_info info = {.struct_size = sizeof info,
                              .outcome = CEB_REJECT,
                              .retry_after_ms = -1,
                              .reason = "decode",
                              .detail = "stored event cannot be decoded"};
      pthread_mutex_lock(&e->lock);
      rt->inflight--;
      e->inflight_total--;
      pthread_mutex_unlock(&e->lock);
      cebe_outcome(e, &tmp, &info);
      free(c);
    }
  }
  ceb_claims_free(claims, count);
  if (!refuse && !defer && nready && ready &&
      ((rt->cfg.map_program >= 0 && e->mapper) || rt->cfg.callbacks))
    nready = map_ready(e, r, ready, nready);
  pthread_mutex_lock(&e->lock);
  size_t unused = n - count;
  if (!ready) unused = n;
  if (refuse) unused += nready;
  rt->inflight -= (uint32_t)unused;
  e->inflight_total -= unused;
  if (refuse) {
    pthread_cond_broadcast(&e->idle);
    pthread_mutex_unlock(&e->lock);
    ceb_settle_info info = {.struct_size = sizeof info,
                            .outcome = CEB_RETRY,
                            .retry_after_ms = -1,
                            .reason = "circuit.open",
                            .detail = "not sent: the sink's circuit is open"};
    for (size_t i = 0; i < nready; i++) {
      cebe_outcome(e, ready[i], &info);
      cebe_dctx_free(ready[i]);
    }
    free(ready);
    pthread_mutex_lock(&e->lock);
    return count;
  }
  for (size_t i = 0; i < nready; i++) {
    ceb_circuit_started(&s->circuit);
    ceb_token_bucket_take(&s->bucket, 1);
    if (cebe_ptrset_add(&e->live, ready[i]) != CEB_OK) {
      ceb_log_error("engine: out of memory tracking a delivery");
    }
    cebe_expire_lower_locked(e, rt->worker, ready[i]->d.deadline_ms);
  }
  if (unused) pthread_cond_broadcast(&e->idle);
  /* a sink paused since (claims made at ingest, before its busy answer to
   * an earlier one) is not asked either: deferred as the rest of a batch */
  int busy = defer || s->busy_until > cebe_now(e);
  pthread_mutex_unlock(&e->lock);
  /* once the sink says busy, the rest of the batch is deferred unasked */
  for (size_t i = 0; i < nready; i++) {
    if (busy) {
      cebe_refused(e, ready[i], CEB_EBUSY); /* deferred */
      continue;
    }
    busy = dispatch(e, ready[i]);
    if (!busy)
      cebe_metric_add(e, "cebridge_delivery_attempts_started_total", rt->labels,
                      1);
  }
  free(ready);
  pthread_mutex_lock(&e->lock);
  return count;
}
