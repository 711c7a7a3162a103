/* The sink's event loop: one thread per instance drives its curl multi
 * handle. It takes queued deliveries, forms batches, passes the handshake
 * and OAuth2 gates, starts transfers up to max_connections and settles each
 * delivery from its transfer's result. */
#include "http_out_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_out_classify.h"

/* Upper bound on one poll: pending deliveries are checked against their
 * deadlines at least this often. */
#define LOOP_TICK_MS 200
/* After a failed token fetch, deliveries fail fast for this long instead of
 * hammering the token endpoint. */
#define TOKEN_BACKOFF_MS 1000
/* How often waiting requests are checked against their deadlines. */
#define EXPIRE_SWEEP_MS 50

static void list_push(http_req **head, http_req **tail, http_req *r) {
  r->next = NULL;
  if (*tail)
    (*tail)->next = r;
  else
    *head = r;
  *tail = r;
}

static void pending_push_front(http_sink *s, http_req *r) {
  r->next = s->pending_head;
  s->pending_head = r;
  if (!s->pending_tail) s->pending_tail = r;
}

static http_req *pending_pop(http_sink *s) {
  http_req *r = s->pending_head;
  if (r) {
    s->pending_head = r->next;
    if (!s->pending_head) s->pending_tail = NULL;
    r->next = NULL;
  }
  return r;
}

static void active_unlink(http_sink *s, http_req *r) {
  for (http_req **p = &s->active; *p; p = &(*p)->next) {
    if (*p == r) {
      *p = r->next;
      break;
    }
  }
  r->next = NULL;
  if (r->kind == HTTP_REQ_DELIVERY) s->nactive--;
}

static void dest_unsent(http_sink *s, http_req *r);

static void settle_one(http_sink *s, ceb_delivery *d, ceb_outcome outcome,
                       const char *reason, const char *detail) {
  ceb_settle_info info = {sizeof(info), outcome, -1, 0, reason, detail, 0};
  http_sink_metric_delivery(s, &info, 1);
  http_sink_settle(s, d, &info);
}

/* Settles every pending delivery request the same way. */
static void fail_pending(http_sink *s, ceb_outcome outcome, int status,
                         const char *reason, const char *detail,
                         unsigned flags) {
  http_req *r;
  while ((r = pending_pop(s))) {
    dest_unsent(s, r);
    http_sink_settle_req(s, r, outcome, status, reason, detail, -1, flags);
    http_sink_req_free(s, r);
  }
}

void http_sink_abort_all(http_sink *s) {
  pthread_mutex_lock(&s->lock);
  http_item *it = s->q_head;
  s->q_head = s->q_tail = NULL;
  pthread_mutex_unlock(&s->lock);
  while (it) {
    http_item *next = it->next;
    settle_one(s, it->d, CEB_RETRY, "shutdown", "the sink stopped");
    free(it);
    it = next;
  }
  for (size_t i = 0; i < s->nbatch; i++)
    settle_one(s, s->batch[i], CEB_RETRY, "shutdown", "the sink stopped");
  s->nbatch = 0;
  fail_pending(s, CEB_RETRY, 0, "shutdown", "the sink stopped", 0);
  while (s->active) {
    http_req *r = s->active;
    curl_multi_remove_handle(s->multi, r->easy);
    active_unlink(s, r);
    if (r->kind == HTTP_REQ_DELIVERY) dest_unsent(s, r);
    http_sink_settle_req(s, r, CEB_RETRY, 0, "shutdown",
                         "the sink stopped during the transfer", -1, 0);
    http_sink_req_free(s, r);
  }
  s->token_gate = HTTP_GATE_NONE;
  if (s->handshake_gate == HTTP_GATE_RUNNING)
    s->handshake_gate = HTTP_GATE_NONE;
}

/* ---- batching ---- */

static void batch_flush(http_sink *s, size_t n) {
  http_req *r = http_sink_req_new(s, s->batch, n);
  memmove(s->batch, s->batch + n, (s->nbatch - n) * sizeof(*s->batch));
  s->nbatch -= n;
  s->batch_first_mono_ms = http_sink_mono_ms();
  if (r) list_push(&s->pending_head, &s->pending_tail, r);
}

static void take_delivery(http_sink *s, ceb_delivery *d) {
  if (s->mode != CEB_MODE_BATCH) {
    http_req *r = http_sink_req_new(s, &d, 1);
    if (r) list_push(&s->pending_head, &s->pending_tail, r);
    return;
  }
  if (s->nbatch == 0) s->batch_first_mono_ms = http_sink_mono_ms();
  s->batch[s->nbatch++] = d;
  if (s->nbatch >= (size_t)s->batch_max) batch_flush(s, s->nbatch);
}

/* ---- gates: handshake and token ---- */

static int start_exchange(http_sink *s, http_req_kind kind, const char *url) {
  http_req *r = calloc(1, sizeof(*r));
  if (!r) return CEB_ENOMEM;
  r->kind = kind;
  if (url && !(r->url = strdup(url))) {
    free(r);
    return CEB_ENOMEM;
  }
  int rc = http_sink_req_prepare(s, r, NULL, s->timeout_ms);
  if (rc == CEB_OK && curl_multi_add_handle(s->multi, r->easy) != CURLM_OK)
    rc = CEB_EINTERNAL;
  if (rc != CEB_OK) {
    http_sink_req_free(s, r);
    return rc;
  }
  r->started_mono_ms = http_sink_mono_ms();
  r->next = s->active;
  s->active = r;
  return CEB_OK;
}

/* 0 when the head of the queue may be sent now (token in *token), else the
 * gate is being passed (or failed the queue). */
static int gates_open(http_sink *s, const char **token, uint64_t *gen) {
  *token = NULL;
  if (s->handshake && s->handshake_gate != HTTP_GATE_DONE) {
    if (s->handshake_gate == HTTP_GATE_NONE) {
      int rc = start_exchange(s, HTTP_REQ_HANDSHAKE, s->pending_head->url);
      if (rc != CEB_OK)
        fail_pending(s, CEB_RETRY, 0, "handshake", ceb_strerror(rc), 0);
      else
        s->handshake_gate = HTTP_GATE_RUNNING;
    }
    return 0;
  }
  if (!s->oauth) return 1;
  *token = http_oauth_client_token(s->oauth, s->host->now_ms(s->inst), gen);
  if (*token) return 1;
  if (s->token_gate == HTTP_GATE_RUNNING) return 0;
  if (http_sink_mono_ms() < s->token_retry_mono_ms) {
    fail_pending(s, CEB_RETRY, 0, "oauth2.token", s->token_error, 0);
    return 0;
  }
  int rc = start_exchange(s, HTTP_REQ_TOKEN, NULL);
  if (rc != CEB_OK)
    fail_pending(s, CEB_RETRY, 0, "oauth2.token", ceb_strerror(rc), 0);
  else
    s->token_gate = HTTP_GATE_RUNNING;
  return 0;
}

/* Milliseconds left before the earliest deadline of r (INT64_MAX: none). */
static int64_t req_remaining_ms(http_sink *s, const http_req *r) {
  int64_t now = s->host->now_ms(s->inst), left = INT64_MAX;
  for (size_t i = 0; i < r->nd; i++) {
    if (r->ds[i]->deadline_ms > 0 && r->ds[i]->deadline_ms - now < left)
      left = r->ds[i]->deadline_ms - now;
  }
  return left;
}

static void expire_pending(http_sink *s) {
  http_req **p = &s->pending_head, *prev = NULL;
  while (*p) {
    http_req *r = *p;
    if (req_remaining_ms(s, r) > 0) {
      prev = r;
      p = &r->next;
      continue;
    }
    *p = r->next;
    if (s->pending_tail == r) s->pending_tail = prev;
    dest_unsent(s, r);
    http_sink_settle_req(s, r, CEB_RETRY, 0, "deadline",
                         "the attempt's deadline passed before sending", -1, 0);
    http_sink_req_free(s, r);
  }
}

/* Templated URL: 1 when r's destination circuit lets it go now, else r is
 * settled RETRY "circuit.open" (not sent; the attempt counts, as if it
 * had failed, so an open circuit never stretches the route's schedule)
 * and freed. */
static int dest_pass(http_sink *s, http_req *r) {
  if (!s->dests || r->dest_passed) return 1;
  int64_t now = s->host->now_ms(s->inst), until = now;
  if (http_dest_allow(s->dests, r->url, now, &until)) {
    r->dest_passed = 1;
    return 1;
  }
  char detail[96];
  snprintf(detail, sizeof(detail),
           "not sent: this destination's circuit is open (next probe in "
           "%lld ms)",
           (long long)(until > now ? until - now : 0));
  http_sink_settle_req(s, r, CEB_RETRY, 0, "circuit.open", detail, -1, 0);
  http_sink_req_free(s, r);
  return 0;
}

/* r was let through but is not sent after all: a half-open destination may
 * probe again. */
static void dest_unsent(http_sink *s, http_req *r) {
  if (s->dests && r->dest_passed) http_dest_cancel(s->dests, r->url);
  r->dest_passed = 0;
}

static void dispatch(http_sink *s) {
  while (s->pending_head && s->nactive < (size_t)s->max_connections) {
    const char *token;
    uint64_t gen = 0;
    if (!gates_open(s, &token, &gen)) return;
    if (http_pace_wait_ms(&s->pace, http_sink_mono_ms()) > 0) return;
    http_req *r = pending_pop(s);
    if (!dest_pass(s, r)) continue;
    int64_t timeout = s->timeout_ms, left = req_remaining_ms(s, r);
    if (left <= 0) {
      dest_unsent(s, r);
      http_sink_settle_req(s, r, CEB_RETRY, 0, "deadline",
                           "the attempt's deadline passed before sending", -1,
                           0);
      http_sink_req_free(s, r);
      continue;
    }
    if (left < timeout) timeout = left;
    r->token_generation = gen;
    int rc = http_sink_req_prepare(s, r, token, timeout);
    if (rc == CEB_OK && curl_multi_add_handle(s->multi, r->easy) != CURLM_OK)
      rc = CEB_EINTERNAL;
    if (rc != CEB_OK) {
      dest_unsent(s, r);
      http_sink_settle_req(s, r, CEB_RETRY, 0, "internal", ceb_strerror(rc), -1,
                           0);
      http_sink_req_free(s, r);
      continue;
    }
    r->started_mono_ms = http_sink_mono_ms();
    http_pace_sent(&s->pace, r->started_mono_ms);
    r->next = s->active;
    s->active = r;
    s->nactive++;
  }
}

/* ---- completions ---- */

static const char *transfer_error(const http_req *r, CURLcode res) {
  return r->errbuf[0] ? r->errbuf : curl_easy_strerror(res);
}

/* Templated URL: the answer of r's destination moves its circuit, as the
 * host moves its circuit of a sink (RETRY fails, any answer else succeeds,
 * 410 opens at once). */
static void dest_result(http_sink *s, http_req *r, ceb_outcome outcome,
                        long code) {
  if (!s->dests || !r->dest_passed) return;
  r->dest_passed = 0;
  int64_t now = s->host->now_ms(s->inst);
  if (code == 410) {
    http_dest_trip(s->dests, r->url, now);
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "ALERT the destination %s answered 410 (gone): its circuit is "
            "open; other destinations go on",
            r->url);
  } else if (outcome == CEB_RETRY) {
    if (http_dest_failure(s->dests, r->url, now))
      CEB_LOG(s->host, s->inst, CEB_LOG_WARN,
              "destination %s circuit open; other destinations go on", r->url);
  } else {
    http_dest_success(s->dests, r->url);
  }
}

static void complete_delivery(http_sink *s, http_req *r, CURLcode res,
                              long code) {
  double secs = (double)(http_sink_mono_ms() - r->started_mono_ms) / 1000.0;
  s->host->metric(s->inst, CEB_METRIC_HISTOGRAM, "http_sink_delivery_seconds",
                  NULL, secs);
  if (res != CURLE_OK && r->refused[0]) {
    /* a callback to an address it may not reach: no answer will change
     * that, so it is not retried (dead-lettered on the callbacks route),
     * and the destination's circuit is left alone */
    CEB_LOG(s->host, s->inst, CEB_LOG_WARN, "callback refused: %s",
            r->refused);
    dest_unsent(s, r);
    http_sink_settle_req(s, r, CEB_REJECT, 0, "callback.address", r->refused,
                         -1, 0);
    http_sink_req_free(s, r);
    return;
  }
  if (res != CURLE_OK) {
    dest_result(s, r, CEB_RETRY, 0);
    http_sink_settle_req(s, r, CEB_RETRY, 0,
                         res == CURLE_OPERATION_TIMEDOUT ? "timeout"
                                                         : "network",
                         transfer_error(r, res), -1, 0);
    http_sink_req_free(s, r);
    return;
  }
  if (code == 401 && s->oauth && !r->refreshed) {
    /* The token may have been revoked or rotated early: fetch a new one and
     * send this request once more before judging it. */
    http_oauth_client_invalidate(s->oauth, r->token_generation);
    r->refreshed = 1;
    pending_push_front(s, r);
    return;
  }
  ceb_settle_info info = {sizeof(info)};
  char reason[16];
  http_sink_classify(code, r->retry_after[0] ? r->retry_after : NULL,
                     r->resp_len ? r->resp : NULL, s->host->now_ms(s->inst),
                     &info, reason, sizeof(reason));
  if (info.outcome != CEB_ACK) info.detail = r->resp_len ? r->resp : NULL;
  if (s->dests)
    dest_result(s, r, info.outcome, code);
  else if (info.flags & CEB_SETTLE_OPEN_CIRCUIT)
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR,
            "the endpoint answered %ld (gone): opening the circuit", code);
  http_sink_settle_req(s, r, info.outcome, info.status_code, info.reason,
                       info.detail, info.retry_after_ms, info.flags);
  http_sink_req_free(s, r);
}

static void complete_token(http_sink *s, http_req *r, CURLcode res, long code) {
  s->token_gate = HTTP_GATE_NONE;
  int rc;
  char err[160] = "";
  if (res != CURLE_OK) {
    snprintf(err, sizeof(err), "token endpoint: %.120s",
             transfer_error(r, res));
    rc = CEB_EIO;
  } else {
    rc = http_oauth_client_complete(s->oauth, code, r->resp, r->resp_len,
                                    s->host->now_ms(s->inst), err, sizeof(err));
  }
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "http_sink_token_fetches_total",
                  rc == CEB_OK ? "result=\"ok\"" : "result=\"error\"", 1);
  if (rc != CEB_OK) {
    CEB_LOG(s->host, s->inst, CEB_LOG_WARN, "OAuth2 token fetch failed: %s",
            err);
    snprintf(s->token_error, sizeof(s->token_error), "%s", err);
    s->token_retry_mono_ms = http_sink_mono_ms() + TOKEN_BACKOFF_MS;
    fail_pending(s, CEB_RETRY, 0, "oauth2.token", err, 0);
  }
  http_sink_req_free(s, r);
}

/* A granted handshake's WebHook-Allowed-Rate becomes the sink's pace. */
static void allowed_rate(http_sink *s, http_req *r) {
  int64_t before = s->pace.per_minute;
  http_pace_result pr = http_pace_set(&s->pace, r->allowed_rate, s->rate_limit);
  double rate =
      s->pace.sent ? (double)s->pace.n * 1000.0 / (double)s->pace.window_ms : 0;
  if (pr == HTTP_PACE_SET && s->pace.per_minute != before)
    CEB_LOG(
        s->host, s->inst, CEB_LOG_INFO,
        "the receiver allows %lld requests a minute (WebHook-Allowed-Rate): "
        "sending at most %zu in any %lld ms",
        (long long)s->pace.per_minute, s->pace.n, (long long)s->pace.window_ms);
  else if (pr == HTTP_PACE_INVALID)
    CEB_LOG(s->host, s->inst, CEB_LOG_WARN,
            "the receiver's WebHook-Allowed-Rate \"%s\" is not a positive "
            "integer (requests a minute): ignored",
            r->allowed_rate);
  else if (pr == HTTP_PACE_ABOVE)
    CEB_LOG(s->host, s->inst, CEB_LOG_INFO,
            "the receiver allows %s requests a minute, not less than "
            "rate_limit: rate_limit stays",
            r->allowed_rate);
  s->host->metric(s->inst, CEB_METRIC_GAUGE, "http_sink_allowed_rate", NULL,
                  rate);
}

static void complete_handshake(http_sink *s, http_req *r, CURLcode res,
                               long code) {
  char detail[400];
  if (res != CURLE_OK || code == 408 || code == 429 || code >= 500) {
    s->handshake_gate = HTTP_GATE_NONE;
    if (res != CURLE_OK)
      snprintf(detail, sizeof(detail), "handshake: %s", transfer_error(r, res));
    else
      snprintf(detail, sizeof(detail), "handshake answered %ld", code);
    fail_pending(s, CEB_RETRY, (int)code, "handshake", detail, 0);
  } else if (code >= 200 && code <= 299 &&
             (strcmp(r->allowed_origin, "*") == 0 ||
              strcasecmp(r->allowed_origin, s->origin) == 0)) {
    s->handshake_gate = HTTP_GATE_DONE;
    allowed_rate(s, r);
  } else {
    /* Refused: the circuit opens; the next attempt (the host's half-open
     * probe) handshakes again. */
    s->handshake_gate = HTTP_GATE_NONE;
    snprintf(detail, sizeof(detail),
             "webhook handshake refused: status %ld, allowed origin \"%s\"",
             code, r->allowed_origin);
    CEB_LOG(s->host, s->inst, CEB_LOG_ERROR, "%s", detail);
    fail_pending(s, CEB_REJECT, (int)code, "handshake.refused", detail,
                 CEB_SETTLE_OPEN_CIRCUIT);
  }
  http_sink_req_free(s, r);
}

static int drain_completions(http_sink *s) {
  int n = 0, left;
  CURLMsg *m;
  while ((m = curl_multi_info_read(s->multi, &left))) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL *e = m->easy_handle;
    CURLcode res = m->data.result;
    http_req *r = NULL;
    long code = 0;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&r);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_multi_remove_handle(s->multi, e);
    active_unlink(s, r);
    n++;
    if (r->kind == HTTP_REQ_DELIVERY)
      complete_delivery(s, r, res, code);
    else if (r->kind == HTTP_REQ_TOKEN)
      complete_token(s, r, res, code);
    else
      complete_handshake(s, r, res, code);
  }
  return n;
}

void *http_sink_loop(void *arg) {
  http_sink *s = arg;
  for (;;) {
    pthread_mutex_lock(&s->lock);
    http_item *items = s->q_head;
    s->q_head = s->q_tail = NULL;
    int draining = s->draining, abort_all = s->abort_all,
        stopping = s->stopping;
    pthread_mutex_unlock(&s->lock);

    if (abort_all) {
      /* Taken items are settled here, the rest by abort_all. */
      while (items) {
        http_item *next = items->next;
        settle_one(s, items->d, CEB_RETRY, "shutdown", "the sink stopped");
        free(items);
        items = next;
      }
      http_sink_abort_all(s);
      if (stopping) break;
    }
    while (items) {
      http_item *next = items->next;
      take_delivery(s, items->d);
      free(items);
      items = next;
    }
    int64_t now = http_sink_mono_ms();
    if (s->nbatch &&
        (draining || now - s->batch_first_mono_ms >= s->batch_wait_ms))
      batch_flush(s, s->nbatch);
    /* dispatch() checks the deadline of what it sends; the sweep of what
     * waits (for a gate or a connection) need not run on every wakeup. */
    if (now - s->expired_mono_ms >= EXPIRE_SWEEP_MS) {
      expire_pending(s);
      s->expired_mono_ms = now;
    }
    dispatch(s);
    int running = 0;
    curl_multi_perform(s->multi, &running);
    int done = drain_completions(s);
    if (done) dispatch(s);

    long timeout = done ? 0 : LOOP_TICK_MS;
    if (s->nbatch) {
      int64_t left = s->batch_first_mono_ms + s->batch_wait_ms - now;
      if (left < timeout) timeout = left > 0 ? (long)left : 0;
    }
    if (s->pending_head && s->nactive < (size_t)s->max_connections) {
      /* paced: wake when the window lets the next one go */
      int64_t left = http_pace_wait_ms(&s->pace, http_sink_mono_ms());
      if (left > 0 && left < timeout) timeout = (long)left;
    }
    curl_multi_poll(s->multi, NULL, 0, (int)timeout, NULL);
  }
  return NULL;
}
