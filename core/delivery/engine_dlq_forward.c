/* Forwarding dead letters to their route's DLQ sink (`dlq = SINK:topic`)
 * until the sink takes them; the schedule lives in the engine, the work
 * list in the store's dlq table (rows with forwarded_at unset).
 *
 * At least once, like any delivery: a forward that fails (RETRY, REJECT,
 * timeout, the bridge stopping) is tried again until the sink acks it,
 * with the letter's stable Idempotency-Key. Backoff: a fixed doubling from
 * 1 s to 5 min, per letter (a letter the sink keeps refusing does not hold
 * up the others for long) and per sink (a broker that is down gets a few
 * tries per pause, not the whole backlog). Not the route's retry
 * schedule: that one ends (max attempts, deadline), and ending here would
 * lose the letter's way to the DLQ topic. CEB_EBUSY waits for the sink's
 * backpressure pause and counts as no try.
 *
 * Bridges sharing a store forward on one of them at a time, the leader of
 * "dlq-forward" (ceb_store_try_lead): the others keep their schedule but
 * send nothing. The leader of a shared store rereads the work list every
 * poll interval, since letters die on every bridge; a row another bridge
 * forwarded meanwhile is found forwarded when its turn comes and dropped. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "delivery/engine_internal.h"
#include "log/ceb_log.h"

static int64_t fwd_backoff(uint32_t n) {
  int64_t ms = FWD_BACKOFF_MIN_MS;
  for (uint32_t i = 1; i < n && ms < FWD_BACKOFF_MAX_MS; i++)
    ms *= 2;
  return ms < FWD_BACKOFF_MAX_MS ? ms : FWD_BACKOFF_MAX_MS;
}

static size_t fwd_lower_bound(const ceb_engine *e, int64_t id) {
  size_t lo = 0, hi = e->nfwd;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (e->fwd[mid].dlq_id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static eng_fwd *fwd_find_locked(ceb_engine *e, int64_t id) {
  size_t i = fwd_lower_bound(e, id);
  if (i < e->nfwd && e->fwd[i].dlq_id == id && e->fwd[i].state != FWD_GONE)
    return &e->fwd[i];
  return NULL;
}

static eng_sink *fwd_sink(ceb_engine *e, const eng_fwd *f) {
  return &e->sinks[e->routes[f->route].cfg.dlq_sink];
}

static void fwd_gauge_locked(ceb_engine *e, const eng_sink *s) {
  if (!e->metrics) return;
  char labels[160];
  snprintf(labels, sizeof labels, "sink=\"%s\"", s->cfg.name);
  ceb_metrics_set(e->metrics, "cebridge_dlq_forward_pending", labels,
                  (double)s->fwd_waiting);
}

static int fwd_grow_locked(ceb_engine *e) {
  if (e->nfwd < e->capfwd) return CEB_OK;
  size_t cap = e->capfwd ? e->capfwd * 2 : 64;
  eng_fwd *n = realloc(e->fwd, cap * sizeof *n);
  if (!n) return CEB_ENOMEM;
  e->fwd = n;
  e->capfwd = cap;
  return CEB_OK;
}

static void fwd_due_locked(ceb_engine *e, int64_t at) {
  if (at < e->fwd_due) e->fwd_due = at;
}

/* Schedules dlq row id of route, due at now; NULL when it already was (or
 * no memory: then it is picked up again after a restart). */
static eng_fwd *fwd_add_locked(ceb_engine *e, size_t route, int64_t id,
                               int64_t now) {
  size_t i = fwd_lower_bound(e, id);
  if (i < e->nfwd && e->fwd[i].dlq_id == id) {
    if (e->fwd[i].state != FWD_GONE) return NULL;
    e->fwd_gone--; /* a purged row's id came back */
  } else {
    if (fwd_grow_locked(e) != CEB_OK) {
      ceb_log_error("engine: out of memory scheduling the forward of dead "
                    "letter %lld; it is sent after a restart",
                    (long long)id);
      return NULL;
    }
    memmove(&e->fwd[i + 1], &e->fwd[i], (e->nfwd - i) * sizeof *e->fwd);
    e->nfwd++;
  }
  eng_fwd *f = &e->fwd[i];
  *f = (eng_fwd){.dlq_id = id,
                 .next_at = now,
                 .route = (uint32_t)route,
                 .state = FWD_WAIT};
  eng_sink *s = fwd_sink(e, f);
  s->fwd_waiting++;
  fwd_gauge_locked(e, s);
  fwd_due_locked(e, now);
  return f;
}

/* Drops f (forwarded, or its row is gone). Tombstones keep the array
 * sorted; they are squeezed out once they are half of it. */
static void fwd_remove_locked(ceb_engine *e, eng_fwd *f) {
  eng_sink *s = fwd_sink(e, f);
  s->fwd_waiting--;
  fwd_gauge_locked(e, s);
  f->state = FWD_GONE;
  e->fwd_gone++;
  if (e->fwd_gone * 2 < e->nfwd || (e->fwd_gone < 64 && e->fwd_gone < e->nfwd))
    return;
  size_t o = 0;
  for (size_t i = 0; i < e->nfwd; i++)
    if (e->fwd[i].state != FWD_GONE) e->fwd[o++] = e->fwd[i];
  e->nfwd = o;
  e->fwd_gone = 0;
}

static int fwd_sink_ready(const eng_sink *s, int64_t now) {
  return s->fwd_inflight < FWD_WINDOW && now >= s->fwd_pause_until &&
         now >= s->busy_until;
}

static int fwd_cmp(const void *a, const void *b) {
  int64_t x = ((const eng_fwd *)a)->dlq_id, y = ((const eng_fwd *)b)->dlq_id;
  return x < y ? -1 : x > y;
}

static int64_t fwd_routes(const ceb_engine *e) {
  int64_t n = 0;
  for (size_t r = 0; r < e->nroutes; r++)
    n += e->routes[r].cfg.dlq_sink >= 0;
  return n;
}

/* Adds the rows to forward the schedule lacks (letters that died on
 * another bridge). Lock held; dropped around the store reads. */
static void fwd_rescan_locked(ceb_engine *e) {
  enum { PAGE = 256 };
  int64_t ids[PAGE];
  int64_t now = cebe_now(e);
  for (size_t r = 0; r < e->nroutes && !e->stopping; r++) {
    if (e->routes[r].cfg.dlq_sink < 0) continue;
    int64_t after = 0;
    size_t n = PAGE;
    int rc = CEB_OK;
    while (rc == CEB_OK && n == PAGE) {
      pthread_mutex_unlock(&e->lock);
      rc = ceb_store_dlq_unforwarded(e->store, e->routes[r].cfg.name, after,
                                     PAGE, ids, &n);
      pthread_mutex_lock(&e->lock);
      for (size_t i = 0; rc == CEB_OK && i < n; i++)
        fwd_add_locked(e, r, ids[i], now); /* NULL: scheduled already */
      if (n) after = ids[n - 1];
    }
  }
}

/* Worker 0, lock held (dropped around the store): every poll_ms asks the
 * store whether this bridge leads the forwards, and on a shared store the
 * leader rereads the work list. */
static void fwd_leadership_locked(ceb_engine *e) {
  int64_t mono = cebe_mono_ms();
  if (mono < e->fwd_lead_next || !fwd_routes(e)) return;
  e->fwd_lead_next = mono + e->poll_ms;
  int64_t now = cebe_now(e);
  pthread_mutex_unlock(&e->lock);
  int lead = ceb_store_try_lead(e->store, "dlq-forward", now) == 1;
  int shared = ceb_store_shared(e->store);
  pthread_mutex_lock(&e->lock);
  if (lead != e->fwd_leader)
    ceb_log_info(lead ? "engine: this bridge now forwards dead letters to "
                        "their DLQ sinks"
                      : "engine: another bridge forwards dead letters now");
  e->fwd_leader = lead;
  if (lead && shared) fwd_rescan_locked(e);
}

int cebe_fwd_load(ceb_engine *e) {
  enum { PAGE = 256 };
  int64_t ids[PAGE];
  int64_t now = cebe_now(e);
  size_t total = 0;
  int rc = CEB_OK;
  /* the first answer before the workers start; worker 0 asks again */
  e->fwd_leader =
      !fwd_routes(e) || ceb_store_try_lead(e->store, "dlq-forward", now) == 1;
  e->fwd_lead_next = cebe_mono_ms() + e->poll_ms;
  pthread_mutex_lock(&e->lock);
  e->fwd_due = INT64_MAX;
  for (size_t r = 0; r < e->nroutes && rc == CEB_OK; r++) {
    if (e->routes[r].cfg.dlq_sink < 0) continue;
    int64_t after = 0;
    size_t n = PAGE;
    while (rc == CEB_OK && n == PAGE) {
      pthread_mutex_unlock(&e->lock);
      rc = ceb_store_dlq_unforwarded(e->store, e->routes[r].cfg.name, after,
                                     PAGE, ids, &n);
      pthread_mutex_lock(&e->lock);
      for (size_t i = 0; rc == CEB_OK && i < n; i++) {
        rc = fwd_grow_locked(e);
        if (rc != CEB_OK) break;
        /* appended, sorted once below: routes interleave their ids */
        e->fwd[e->nfwd++] = (eng_fwd){.dlq_id = ids[i],
                                      .next_at = now,
                                      .route = (uint32_t)r,
                                      .state = FWD_WAIT};
        e->sinks[e->routes[r].cfg.dlq_sink].fwd_waiting++;
        total++;
      }
      if (n) after = ids[n - 1];
    }
  }
  if (e->nfwd) {
    qsort(e->fwd, e->nfwd, sizeof *e->fwd, fwd_cmp);
    e->fwd_due = now;
  }
  for (size_t r = 0; r < e->nroutes; r++)
    if (e->routes[r].cfg.dlq_sink >= 0)
      fwd_gauge_locked(e, &e->sinks[e->routes[r].cfg.dlq_sink]);
  pthread_mutex_unlock(&e->lock);
  if (rc != CEB_OK)
    ceb_log_error("engine: cannot read the dead letters waiting for their "
                  "forward: %s",
                  ceb_strerror(rc));
  else if (total)
    ceb_log_info("engine: %zu dead letters were not forwarded to their DLQ "
                 "sink yet; they are sent again",
                 total);
  return rc;
}

/* A forward that was not handed to the sink goes back to waiting (no try
 * counted); gone: its row can never be forwarded, drop it. */
static void fwd_unsend(ceb_engine *e, int64_t id, int64_t delay, int gone) {
  pthread_mutex_lock(&e->lock);
  eng_fwd *f = fwd_find_locked(e, id);
  if (f && f->state == FWD_SENDING) {
    eng_sink *s = fwd_sink(e, f);
    s->fwd_inflight--;
    if (gone) {
      fwd_remove_locked(e, f);
    } else {
      f->state = FWD_WAIT;
      f->next_at = cebe_now(e) + delay;
      fwd_due_locked(e, f->next_at);
    }
  }
  cebe_kick_locked(e);
  pthread_mutex_unlock(&e->lock);
}

/* Sends forward id (marked FWD_SENDING) from its dead-letter JSON. */
static void fwd_send(ceb_engine *e, size_t route, int64_t id,
                     const char *json) {
  eng_route *rt = &e->routes[route];
  ceb_event *dl = NULL;
  if (ceb_json_decode(json, strlen(json), &dl, NULL) != CEB_OK) {
    ceb_log_error("engine: route %s: dead letter %lld cannot be decoded; it "
                  "stays in the store DLQ and is not forwarded",
                  rt->cfg.name, (long long)id);
    fwd_unsend(e, id, 0, 1);
    return;
  }
  dctx *refused = NULL;
  int rc = cebe_send_extra(e, DCTX_FORWARD, (size_t)rt->cfg.dlq_sink,
                           rt->cfg.dlq_topic, dl, rt->cfg.name, id, &refused);
  if (refused) {
    /* the sink refused it: settled here as a sink's RETRY (or a busy
     * sink's deferral) would be, without going up to engine_settle.c */
    char reason[48];
    ceb_settle_info in;
    cebe_refusal_info(rc, &in, reason);
    dctx *c = cebe_settle_begin(e, &refused->d, &in);
    if (c) {
      cebe_fwd_settled(e, c, &in);
      cebe_dctx_free(c);
    }
  } else if (rc != CEB_OK) {
    fwd_unsend(e, id, FWD_BACKOFF_MIN_MS, 0);
  }
}

void cebe_fwd_dead(ceb_engine *e, size_t route, int64_t dlq_id,
                   const char *dead_json) {
  eng_route *rt = &e->routes[route];
  if (rt->cfg.dlq_sink < 0 || dlq_id <= 0) return;
  eng_sink *s = &e->sinks[rt->cfg.dlq_sink];
  pthread_mutex_lock(&e->lock);
  int64_t now = cebe_now(e);
  eng_fwd *f = fwd_add_locked(e, route, dlq_id, now);
  /* send now from memory when the sink has room; else worker 0 loads it
   * from the store when its turn comes */
  int now_send = f && dead_json && e->fwd_leader && !e->draining &&
                 !e->stopping && fwd_sink_ready(s, now);
  if (now_send) {
    f->state = FWD_SENDING;
    s->fwd_inflight++;
  }
  cebe_kick_locked(e);
  pthread_mutex_unlock(&e->lock);
  if (now_send) fwd_send(e, route, dlq_id, dead_json);
}

typedef struct fwd_pick {
  int64_t id;
  size_t route;
} fwd_pick;

int64_t cebe_fwd_pump_locked(ceb_engine *e, int64_t now) {
  if (e->draining || e->stopping) return INT64_MAX;
  fwd_leadership_locked(e);
  if (!e->fwd_leader || e->nfwd == 0) return INT64_MAX;
  if (now < e->fwd_due) return e->fwd_due;
  int64_t next = INT64_MAX;
  /* DLQ sinks that can take a forward now; a paused one wakes us later,
   * a full one when a forward settles (that kicks) */
  size_t open = 0;
  for (size_t i = 0; i < e->nsinks; i++) {
    eng_sink *s = &e->sinks[i];
    if (s->fwd_waiting <= (int64_t)s->fwd_inflight) continue;
    if (fwd_sink_ready(s, now)) {
      open++;
    } else if (s->fwd_inflight < FWD_WINDOW) {
      int64_t t = s->fwd_pause_until > s->busy_until ? s->fwd_pause_until
                                                     : s->busy_until;
      if (t < next) next = t;
    }
  }
  enum { PICK_MAX = 64 };
  fwd_pick picks[PICK_MAX];
  size_t np = 0;
  int64_t due = INT64_MAX;
  /* round robin from the cursor (the id after the last one sent), so
   * letters that keep failing do not crowd out the ones never tried */
  size_t start = fwd_lower_bound(e, e->fwd_cursor);
  for (size_t k = 0; k < e->nfwd && open > 0 && np < PICK_MAX; k++) {
    eng_fwd *f = &e->fwd[(start + k) % e->nfwd];
    if (f->state != FWD_WAIT) continue;
    if (f->next_at > now) {
      if (f->next_at < due) due = f->next_at;
      continue;
    }
    eng_sink *s = fwd_sink(e, f);
    if (!fwd_sink_ready(s, now)) continue;
    f->state = FWD_SENDING;
    s->fwd_inflight++;
    picks[np++] = (fwd_pick){f->dlq_id, f->route};
    e->fwd_cursor = f->dlq_id + 1;
    if (!fwd_sink_ready(s, now)) open--;
  }
  if (due < next) next = due;
  /* a full scan saw every waiting letter; a cut one (every open sink
   * filled up) relies on the kicks of their settles, and 64 picks on an
   * immediate rescan */
  e->fwd_due = np == PICK_MAX ? now : next;
  e->fwd_sending += np;
  pthread_mutex_unlock(&e->lock);
  for (size_t k = 0; k < np; k++) {
    int st = CEB_OK;
    char *json = ceb_store_dlq_forward_event(e->store, picks[k].id, &st);
    if (json)
      fwd_send(e, picks[k].route, picks[k].id, json);
    else /* ENOTFOUND: purged meanwhile; else try again later */
      fwd_unsend(e, picks[k].id, FWD_BACKOFF_MIN_MS, st == CEB_ENOTFOUND);
    free(json);
  }
  pthread_mutex_lock(&e->lock);
  e->fwd_sending -= np;
  if (np && e->fwd_sending == 0) pthread_cond_broadcast(&e->idle);
  return next;
}

typedef struct fwd_mark {
  int64_t id;
  ceb_engine *e;
  size_t sink;
  uint32_t tries;
} fwd_mark;

/* The store recorded (status CEB_OK) or did not record forwarded_at. */
static void fwd_mark_done(ceb_engine *e, int64_t id, int status) {
  pthread_mutex_lock(&e->lock);
  eng_fwd *f = fwd_find_locked(e, id);
  if (f && f->state == FWD_MARKING) {
    if (status == CEB_OK || status == CEB_ENOTFOUND) { /* or purged */
      fwd_remove_locked(e, f);
    } else { /* sent again later: the consumer dedupes on the key */
      f->state = FWD_WAIT;
      f->next_at = cebe_now(e) + FWD_BACKOFF_MIN_MS;
      fwd_due_locked(e, f->next_at);
      cebe_kick_locked(e);
    }
  }
  pthread_mutex_unlock(&e->lock);
  if (status != CEB_OK && status != CEB_ENOTFOUND)
    ceb_log_error("engine: recording the forward of dead letter %lld failed "
                  "(%s); it is forwarded again",
                  (long long)id, ceb_strerror(status));
}

static void fwd_marked(void *arg, int status) {
  fwd_mark *m = arg;
  fwd_mark_done(m->e, m->id, status);
  if (status == CEB_OK && m->tries)
    ceb_log_info("engine: dead letter %lld forwarded to sink %s after %u "
                 "failed tries",
                 (long long)m->id, m->e->sinks[m->sink].cfg.name, m->tries);
  free(m);
}

void cebe_fwd_settled(ceb_engine *e, const dctx *c,
                      const ceb_settle_info *info) {
  eng_sink *s = &e->sinks[c->sink];
  const char *result = info->outcome == CEB_ACK      ? "ok"
                       : info->outcome == CEBE_DEFER ? "busy"
                                                     : "failed";
  pthread_mutex_lock(&e->lock);
  int64_t now = cebe_now(e);
  eng_fwd *f = fwd_find_locked(e, c->dlq_id);
  if (!f || f->state != FWD_SENDING) { /* not scheduled: nothing to do */
    pthread_mutex_unlock(&e->lock);
    return;
  }
  s->fwd_inflight--;
  fwd_due_locked(e, now); /* room for the next one */
  int first_failure = 0;
  uint32_t tries = f->tries;
  size_t route = f->route;
  if (info->outcome == CEB_ACK) {
    f->state = FWD_MARKING;
    s->fwd_pause_ms = 0;
    s->fwd_pause_until = 0;
  } else if (info->outcome == CEBE_DEFER) {
    f->state = FWD_WAIT; /* after the sink's backpressure pause */
    f->next_at = now + (info->retry_after_ms > 0 ? info->retry_after_ms : 1);
  } else {
    f->state = FWD_WAIT;
    tries = ++f->tries;
    int64_t wait = fwd_backoff(f->tries);
    if (info->retry_after_ms > wait)
      wait = info->retry_after_ms < FWD_BACKOFF_MAX_MS ? info->retry_after_ms
                                                       : FWD_BACKOFF_MAX_MS;
    f->next_at = now + wait;
    /* and the sink pauses (doubling once per pause that ends in a failure
     * again; a success resets it): a sink that fails everything gets at
     * most FWD_WINDOW tries per pause, however long the backlog */
    if (now >= s->fwd_pause_until) {
      s->fwd_pause_ms =
          s->fwd_pause_ms ? s->fwd_pause_ms * 2 : FWD_BACKOFF_MIN_MS;
      if (s->fwd_pause_ms > FWD_BACKOFF_MAX_MS)
        s->fwd_pause_ms = FWD_BACKOFF_MAX_MS;
      s->fwd_pause_until = now + s->fwd_pause_ms;
    }
    first_failure = !f->warned;
    f->warned = 1;
  }
  if (f->state == FWD_WAIT) fwd_due_locked(e, f->next_at);
  cebe_kick_locked(e);
  pthread_mutex_unlock(&e->lock);
  char labels[224];
  snprintf(labels, sizeof labels, "sink=\"%s\",result=\"%s\"", s->cfg.name,
           result);
  cebe_metric_add(e, "cebridge_dlq_forwards_total", labels, 1);
  if (first_failure)
    ceb_log_warn("engine: route %s: forwarding dead letter %lld to sink %s "
                 "failed (%s%s%s); it stays in the store DLQ and is "
                 "forwarded again with backoff (1 s doubling to 5 min) until "
                 "the sink takes it",
                 e->routes[route].cfg.name, (long long)c->dlq_id, s->cfg.name,
                 info->reason ? info->reason : "no reason",
                 info->detail ? ": " : "", info->detail ? info->detail : "");
  if (info->outcome != CEB_ACK) return;
  fwd_mark *m = malloc(sizeof *m);
  int rc = CEB_ENOMEM;
  if (m) {
    *m = (fwd_mark){c->dlq_id, e, c->sink, tries};
    rc = ceb_store_dlq_forwarded_async(e->store, c->dlq_id, now, fwd_marked, m);
  }
  if (rc != CEB_OK) {
    free(m);
    fwd_mark_done(e, c->dlq_id, rc);
  }
}
