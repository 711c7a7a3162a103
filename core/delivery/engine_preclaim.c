/* Claims at ingest (ceb_store_set_claim_hook): a new delivery that is
 * claimable at once is written claimed by its ingest's own transaction
 * when its route could take it now, and handed to the route's worker
 * here, instead of the worker's claim reading it back in a second
 * transaction (issue 18: that round trip was a third of the committer's
 * work per event). The row is claimed as the worker's claim would claim
 * it: in progress, attempt 1, fence 1, under this instance's lease, and a
 * key's head only (the store decides that), so leases, fencing and FIFO
 * per key are those of any claim. */
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "delivery/engine_internal.h"
#include "log/ceb_log.h"

/* Committer thread, inside the ingest's transaction: 1 with one slot of
 * the route held when its worker would claim ir now (the checks of
 * cebe_worker_main's loop; a half-open circuit, a paused or disabled
 * sink, a rate-limited sink or a callbacks route are left to it). */
static int reserve(void *arg, const ceb_ingest_route *ir, int64_t *now,
                   int64_t *lease_ms) {
  ceb_engine *e = arg;
  int ok = 0;
  pthread_mutex_lock(&e->lock);
  size_t r = ir->index;
  if (e->started && !e->stopping && !e->draining && r < e->nroutes &&
      strcmp(ir->route, e->routes[r].cfg.name) == 0) {
    eng_route *rt = &e->routes[r];
    eng_sink *s = &e->sinks[rt->cfg.sink];
    int64_t t = cebe_now(e);
    ok = !rt->cfg.callbacks && ir->first_at <= t &&
         rt->inflight < rt->cfg.max_inflight && !s->st.disabled &&
         s->circuit.state == CEB_CIRCUIT_CLOSED && s->busy_until <= t &&
         s->bucket.rate <= 0;
    if (ok) {
      rt->inflight++;
      e->inflight_total++;
      *now = t;
      *lease_ms = rt->cfg.timeout_ms + CEBE_LEASE_MARGIN_MS;
    }
  }
  pthread_mutex_unlock(&e->lock);
  return ok;
}

static void release_locked(ceb_engine *e, size_t route, size_t n) {
  e->routes[route].inflight -= (uint32_t)n;
  e->inflight_total -= n;
  pthread_cond_broadcast(&e->idle);
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

/* The claim as the store's claim would return it (ceb_claim), from the
 * batch's copy of the event; NULL when out of memory. */
static eng_pre *pre_of(const ceb_ingest_batch *b, const ceb_ingest_claim *c) {
  eng_pre *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->route = c->route->index;
  p->now = c->now;
  p->cl = (ceb_claim){
      .seq = c->event->seq,
      .event_json = dup_n(c->event->json, c->event->json_len),
      .order_key = c->route->order_key ? strdup(c->route->order_key) : NULL,
      .attempt = 1,
      .received_at = b->now,
      .first_at = c->now,
      .fence = c->fence,
      .lease_until = c->lease_until};
  if (!p->cl.event_json || (c->route->order_key && !p->cl.order_key)) {
    ceb_claim_free(&p->cl);
    free(p);
    return NULL;
  }
  return p;
}

/* Committer thread, after the ingest committed (or failed): the claims
 * wait for their workers, or their slots go back. */
static void claimed(void *arg, const ceb_ingest_batch *b,
                    const ceb_ingest_claim *claims, size_t n, int committed) {
  ceb_engine *e = arg;
  eng_pre *head = NULL, **tail = &head;
  for (size_t i = 0; i < n; i++) {
    eng_pre *p = committed ? pre_of(b, &claims[i]) : NULL;
    if (!p) {
      if (committed) /* claimed in the store: its lease ends, it is retaken */
        ceb_log_error("engine: out of memory taking a delivery claimed at "
                      "ingest (event seq %lld); retried when its lease ends",
                      (long long)claims[i].event->seq);
      pthread_mutex_lock(&e->lock);
      release_locked(e, claims[i].route->index, 1);
      pthread_mutex_unlock(&e->lock);
      continue;
    }
    *tail = p;
    tail = &p->next;
  }
  pthread_mutex_lock(&e->lock);
  if (head) {
    if (e->pre_tail)
      e->pre_tail->next = head;
    else
      e->pre_head = head;
    for (eng_pre *p = head; p; p = p->next)
      e->pre_tail = p;
    cebe_kick_locked(e);
  }
  pthread_mutex_unlock(&e->lock);
}

void cebe_preclaim_hook(ceb_engine *e) {
  ceb_store_claim_hook h = {.reserve = reserve, .claimed = claimed, .arg = e};
  ceb_store_set_claim_hook(e->store, &h);
}

int cebe_preclaimed_run_locked(ceb_engine *e, unsigned w) {
  if (!e->pre_head) return 0;
  eng_pre *mine = NULL, **mt = &mine, *rest = NULL, **rt = &rest;
  e->pre_tail = NULL;
  for (eng_pre *p = e->pre_head, *next; p; p = next) {
    next = p->next;
    p->next = NULL;
    if (e->routes[p->route].worker == w) {
      *mt = p;
      mt = &p->next;
    } else {
      *rt = p;
      rt = &p->next;
      e->pre_tail = p;
    }
  }
  e->pre_head = rest;
  if (!mine) return 0;
  while (mine) {
    /* a run of one route's claims: one call (one mapping batch) */
    size_t r = mine->route, k = 0;
    int64_t now = mine->now;
    for (eng_pre *p = mine; p && p->route == r; p = p->next) {
      k++;
      if (p->now < now) now = p->now; /* deadlines within every lease */
    }
    ceb_claim *cs = malloc(k * sizeof *cs);
    for (size_t i = 0; i < k; i++) {
      eng_pre *p = mine;
      mine = p->next;
      if (cs)
        cs[i] = p->cl;
      else
        ceb_claim_free(&p->cl);
      free(p);
    }
    if (!cs) {
      ceb_log_error("engine: out of memory dispatching %zu deliveries "
                    "claimed at ingest; they are retried when their lease "
                    "ends",
                    k);
      release_locked(e, r, k);
      continue;
    }
    /* Reserved when the ingest ran: since then the sink may have been
     * disabled or its circuit opened (a failure of an earlier delivery),
     * and the attempt's deadline (reservation + timeout, within the
     * lease) runs from then. Sent only when the worker would claim it now
     * and at least half its time is left; else deferred unasked, back to
     * pending for the worker's own claim, which checks all of it. */
    eng_route *route = &e->routes[r];
    eng_sink *s = &e->sinks[route->cfg.sink];
    int defer = s->st.disabled || s->circuit.state != CEB_CIRCUIT_CLOSED ||
                cebe_now(e) - now > route->cfg.timeout_ms / 2;
    pthread_mutex_unlock(&e->lock);
    cebe_take_claims(e, r, now, k, cs, k,
                     defer ? CEBE_TAKE_DEFER : 0); /* returns locked */
  }
  return 1;
}

void cebe_preclaimed_free(ceb_engine *e) {
  for (eng_pre *p = e->pre_head, *next; p; p = next) {
    next = p->next;
    ceb_claim_free(&p->cl);
    free(p);
  }
  e->pre_head = e->pre_tail = NULL;
}
