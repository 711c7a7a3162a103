/* The intermediary's request state machine on libmicrohttpd threads.
 *
 * First call (headers read): path, method, draining, TLS client
 * certificate, size announced, authentication, rate limit, media type and
 * the Idempotency-Key format are checked, so most refusals happen before
 * the body is read. A token whose kid is unknown while the JWKS is being
 * refreshed suspends the connection (never the listener thread, which
 * serves every other connection) until the refresh ends or
 * oauth2.jwks_wait passes; then the head's checks go on. Body calls append
 * to a buffer capped at max_body. Last call: webhook signature, idempotency
 * reservation, decode, validate, authorise types, submit -- then the
 * connection is suspended until the host's submit callback (another thread)
 * resumes it, and only then is the 202 (or 503) queued.
 *
 * The checks live beside it: authentication and the webhook signature in
 * http_in_auth.c, decode / submit / the ack wait in http_in_submit.c, the
 * Idempotency-Key reservation in http_idem.c; the request record they share
 * is http_in_req.h. */
#include "http_in_req.h"

#include "http_in_head.h"
#include "http_in_publish.h"
#include "http_in_util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void http_req_unref(http_req *r) {
  if (atomic_fetch_sub(&r->refs, 1) != 1) return;
  if (r->headers.items != r->headers_inline) free(r->headers.items);
  free(r->body);
  free(r->ids);
  free(r->get_url);
  free(r->refusal);
  http_reply_clear(&r->reply);
  pthread_mutex_destroy(&r->lock);
  free(r);
}

/* ---- responses ---- */

void http_req_unavailable(http_req *r, const char *code, const char *detail) {
  http_reply_problem(&r->reply, 503, code, detail);
  http_reply_retry_after(&r->reply, r->src->retry_after_s);
}

void http_req_key_limited(http_req *r) {
  http_reply_problem(&r->reply, 429, "key.limit",
                     "too many open events for this ordering key (the "
                     "route's max_open_per_key); retry once they are "
                     "delivered");
  http_reply_retry_after(&r->reply, r->src->retry_after_s);
}

/* The request's Idempotency-Key for http_idem.c. */
static http_idem_req idem_of(const http_req *r) {
  return (http_idem_req){r->src->host, r->src->inst,
                         r->has_client ? r->client : NULL, r->idem_key,
                         r->src->retry_after_s};
}

static enum MHD_Result queue_reply(http_req *r) {
  http_source *s = r->src;
  if (r->reply.status == 0)
    http_reply_problem(&r->reply, 500, "internal", "no response was built");
  if (r->idem_reserved) {
    r->idem_reserved = 0;
    http_idem_req q = idem_of(r);
    http_idem_settle(&q, &r->reply);
  }
  if (r->reply.status >= 200 && r->reply.status < 300 && s->wh_replay &&
      r->webhook_id)
    http_replay_check_add(s->wh_replay, r->webhook_id,
                          s->host->now_ms(s->inst));
  /* the response takes the body: no copy */
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      r->reply.len, r->reply.body, MHD_RESPMEM_MUST_FREE);
  if (!resp) return MHD_NO;
  http_reply_release_body(&r->reply);
  if (r->reply.content_type)
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            r->reply.content_type);
  for (size_t i = 0; i < r->reply.headers.count; i++)
    MHD_add_response_header(resp, r->reply.headers.items[i].name,
                            r->reply.headers.items[i].value);
  r->status = r->reply.status;
  r->phase = PHASE_DONE;
  enum MHD_Result rc =
      MHD_queue_response(r->conn, (unsigned)r->reply.status, resp);
  MHD_destroy_response(resp);
  return rc;
}

/* ---- first call: everything decidable from the request head ---- */

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind,
                                      const char *key, const char *value) {
  (void)kind;
  http_req *r = cls;
  ceb_headers *h = &r->headers;
  if (h->count == h->cap) {
    size_t cap = h->cap * 2;
    ceb_header *items = malloc(cap * sizeof *items);
    if (!items) return MHD_NO; /* the rest is not seen: refused below */
    memcpy(items, h->items, h->count * sizeof *items);
    if (h->items != r->headers_inline) free(h->items);
    h->items = items;
    h->cap = cap;
  }
  if (!value) value = "";
  /* const dropped: the list is only read, and never cleared */
  h->items[h->count++] =
      (ceb_header){(char *)key, (char *)value, strlen(value)};
  return MHD_YES;
}

/* Origins are host names: compared case-insensitively, patterns allowed
 * ("*", "*.example.org", "partner.*"). */
static int origin_allowed(http_source *s, const char *origin) {
  char lower[256];
  size_t n = strlen(origin);
  if (n >= sizeof lower) return 0;
  for (size_t i = 0; i <= n; i++)
    lower[i] = (char)tolower((unsigned char)origin[i]);
  for (size_t i = 0; i < s->norigins; i++) {
    char pat[256];
    size_t m = strlen(s->origins[i]);
    if (m >= sizeof pat) continue;
    for (size_t k = 0; k <= m; k++)
      pat[k] = (char)tolower((unsigned char)s->origins[i][k]);
    if (http_pattern_match(pat, lower)) return 1;
  }
  return 0;
}

/* CloudEvents "HTTP 1.1 Web Hooks" section 4 abuse protection. Answered
 * synchronously; WebHook-Request-Callback is never called (the spec lets
 * the target grant in the response instead). */
static void handshake(http_req *r) {
  http_source *s = r->src;
  const char *origin = ceb_headers_get(&r->headers, "WebHook-Request-Origin");
  http_reply_header(&r->reply, "Allow", "POST, OPTIONS");
  if (!origin) {
    http_reply_set(&r->reply, 204, NULL, "", 0);
    return;
  }
  if (!origin_allowed(s, origin)) {
    http_reply_problem(&r->reply, 403, "webhook.origin_not_allowed",
                       "this origin may not deliver to this endpoint");
    return;
  }
  http_reply_set(&r->reply, 200, NULL, "", 0);
  http_reply_header(&r->reply, "WebHook-Allowed-Origin", origin);
  char rate[32] = "*";
  if (s->ratelimit)
    snprintf(rate, sizeof rate, "%.0f", s->rate * 60 < 1 ? 1 : s->rate * 60);
  http_reply_header(&r->reply, "WebHook-Allowed-Rate", rate);
}

static void remote_ip(http_req *r, char *buf, size_t n) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  snprintf(buf, n, "?");
  if (!ci || !ci->client_addr) return;
  const struct sockaddr *sa = ci->client_addr;
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET,
              &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
              (socklen_t)n);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6,
              &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf,
              (socklen_t)n);
}

/* Caller holds s->lock. */
static void unlist(http_source *s, http_req *r) {
  if (!r->listed) return;
  if (r->prev)
    r->prev->next = r->next;
  else
    s->suspended = r->next;
  if (r->next) r->next->prev = r->prev;
  r->listed = 0;
}

void http_req_enlist(http_source *s, http_req *r) {
  r->next = s->suspended;
  r->prev = NULL;
  if (s->suspended) s->suspended->prev = r;
  s->suspended = r;
  r->listed = 1;
}

/* Refuses with 400 what libmicrohttpd let through (http_in_head.h). The
 * parsed head starts at `method` (libmicrohttpd's pointer into its read
 * buffer) and is header_size bytes long. */
static int head_ok(http_req *r, const char *method) {
  const char *head = NULL;
  size_t head_len = 0;
  if (r->src->head_layout) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(
        r->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (ci) {
      head = method;
      head_len = ci->header_size;
    }
  }
  http_head_problem p;
  if (http_in_head_check(&r->headers, head, head_len, &p)) return 1;
  http_reply_problem(&r->reply, p.status, p.code, p.detail);
  return 0;
}

size_t http_source_unescape(void *cls, struct MHD_Connection *conn, char *s) {
  (void)cls;
  (void)conn;
  size_t n = MHD_http_unescape(s);
  if (strlen(s) == n) return n;
  s[0] = '\x01'; /* n >= 1: "%00" took 3 bytes */
  s[1] = '\0';
  return 1;
}

/* A control character in the decoded target, or a decoded NUL
 * (http_source_unescape). */
static int target_ok(const char *url) {
  for (const unsigned char *c = (const unsigned char *)url; *c; c++)
    if (*c < 0x20 || *c == 0x7f) return 0;
  return 1;
}

static int after_auth(http_req *r);

/* A published document (http_in_publish.h): the OpenAPI document to
 * anyone; the contract register under the intermediary's own
 * authentication (client certificate, bearer token) and rate limit.
 * 0 with r->reply set, or 2 when suspended for the JWKS (keys_resumed
 * serves it). */
static int published(http_req *r, const char *url) {
  http_source *s = r->src;
  if (r->route == HTTP_ROUTE_OPENAPI) {
    http_in_publish_serve(r, r->route, url);
    return 0;
  }
  if (atomic_load(&s->draining)) {
    http_req_unavailable(r, "draining", "the intermediary is shutting down");
    return 0;
  }
  if (s->tls.client_ca && !http_tls_peer_verified(r->conn)) {
    http_in_auth_failure(s, "client_certificate");
    http_reply_problem(&r->reply, 403, "tls.client_certificate",
                       "a valid client certificate is required");
    return 0;
  }
  if (!(r->get_url = strdup(url))) {
    http_reply_problem(&r->reply, 500, "internal", "out of memory");
    return 0;
  }
  int auth = http_in_authenticate(r, 0);
  if (auth == 2) return 2;
  if (auth == 1 && http_in_rate_ok(r))
    http_in_publish_serve(r, r->route, r->get_url);
  return 0;
}

/* Returns 1 to go on reading the body, 0 when r->reply is set, 2 when the
 * connection is suspended for the JWKS (resumed into keys_resumed). */
static int first_call(http_req *r, const char *url, const char *method) {
  http_source *s = r->src;
  r->headers.items = r->headers_inline;
  r->headers.cap = REQ_HEADERS_INLINE;
  int nh =
      MHD_get_connection_values(r->conn, MHD_HEADER_KIND, collect_header, r);
  if (nh < 0 || (size_t)nh != r->headers.count) {
    http_reply_problem(&r->reply, 500, "internal", "out of memory");
    return 0;
  }
  if (!head_ok(r, method)) return 0;
  if (!target_ok(url)) {
    http_reply_problem(&r->reply, 400, "url.invalid",
                       "the request target holds a control character or a "
                       "percent-encoded NUL (%00)");
    return 0;
  }
  const char *allow = NULL;
  r->route = http_in_route(s, method, url, &allow);
  if (r->route == HTTP_ROUTE_NONE && !allow) {
    http_reply_problem(&r->reply, 404, "not_found", "no such endpoint");
    return 0;
  }
  if (r->route == HTTP_ROUTE_NONE) {
    http_reply_problem(&r->reply, 405, "method_not_allowed",
                       strcmp(allow, "GET") == 0
                           ? "GET this document"
                           : "POST CloudEvents here (OPTIONS for the "
                             "handshake)");
    http_reply_header(&r->reply, "Allow", allow);
    return 0;
  }
  if (r->route == HTTP_ROUTE_HANDSHAKE) {
    r->is_options = 1;
    return 1; /* answered when complete */
  }
  if (r->route != HTTP_ROUTE_EVENTS) return published(r, url);
  if (atomic_load(&s->draining)) {
    http_req_unavailable(r, "draining", "the intermediary is shutting down");
    return 0;
  }
  /* Refuse early under backpressure rather than read a body to refuse. */
  if (!s->host->accepting(s->inst)) {
    http_req_unavailable(r, "backpressure",
                         "the bridge is not accepting events right now");
    return 0;
  }
  if (s->tls.client_ca && !http_tls_peer_verified(r->conn)) {
    http_in_auth_failure(s, "client_certificate");
    http_reply_problem(&r->reply, 403, "tls.client_certificate",
                       "a valid client certificate is required");
    return 0;
  }
  const char *cl = ceb_headers_get(&r->headers, "Content-Length");
  if (cl) {
    char *end = NULL;
    unsigned long long n = strtoull(cl, &end, 10);
    if (end == cl || *end || n > s->max_body) {
      http_reply_problem(&r->reply, 413, "too_large",
                         "the request body exceeds max_body");
      return 0;
    }
    r->announced = (size_t)n;
  }
  int auth = http_in_authenticate(r, 0);
  if (auth != 1) return auth;
  return after_auth(r);
}

int http_in_rate_ok(http_req *r) {
  http_source *s = r->src;
  if (!s->ratelimit) return 1;
  char ip[64];
  if (!r->has_client) remote_ip(r, ip, sizeof ip);
  int64_t wait_ms = 0;
  if (http_ratelimit_take(s->ratelimit, r->has_client ? r->client : ip,
                          s->host->now_ms(s->inst), &wait_ms))
    return 1;
  http_reply_problem(&r->reply, 429, "rate_limited",
                     "too many requests from this client");
  http_reply_retry_after(&r->reply, (int)((wait_ms + 999) / 1000));
  return 0;
}

/* The checks of the request head after authentication. 1 to go on reading
 * the body, 0 when r->reply is set. */
static int after_auth(http_req *r) {
  http_source *s = r->src;
  if (s->nclients > 0 &&
      !http_in_client_types(s, r->has_client ? r->client : "")) {
    http_reply_problem(&r->reply, 403, "client.not_allowed",
                       "this client may not send events here");
    return 0;
  }
  if (!http_in_rate_ok(r)) return 0;
  if (!http_in_callback_of(r)) return 0;
  const char *ct = ceb_headers_get(&r->headers, "Content-Type");
  /* with a mapping any body is the program's to judge */
  if (!s->mapped && ceb_http_mode_of(ct) == CEB_MODE_BINARY &&
      !ceb_headers_get(&r->headers, "ce-specversion")) {
    int ce_format = ct && strncasecmp(ct, "application/cloudevents", 23) == 0;
    http_reply_problem(&r->reply, 415,
                       ce_format ? "media_type.unsupported_format"
                                 : "media_type.not_cloudevent",
                       ce_format
                           ? "only the JSON event format is supported "
                             "(application/cloudevents+json, "
                             "application/cloudevents-batch+json)"
                           : "send a CloudEvent: binary mode (ce-* headers) or "
                             "application/cloudevents+json");
    return 0;
  }
  if (s->idem != HTTP_IDEM_OFF) {
    const char *key = ceb_headers_get(&r->headers, "Idempotency-Key");
    if (key) {
      if (http_idem_key_parse(key, r->idem_key) != CEB_OK) {
        http_reply_problem(&r->reply, 400, "idempotency.key_invalid",
                           "Idempotency-Key must be a UUID v4");
        return 0;
      }
      r->has_key = 1;
    } else if (s->idem == HTTP_IDEM_REQUIRED) {
      http_reply_problem(&r->reply, 400, "idempotency.key_missing",
                         "an Idempotency-Key header (UUID v4) is required");
      return 0;
    }
  }
  return 1;
}

/* ---- body ---- */

/* Returns 0 to abort the connection. A body over max_body (chunked: a
 * Content-Length over it is refused before) is read to its end and dropped,
 * so that the client gets its 413 (libmicrohttpd can queue a response only
 * once the request is complete); a sender that streams on past
 * BODY_DISCARD_FACTOR * max_body is cut off instead (and the body deadline
 * of http_listen bounds the time). */
static int append_body(http_req *r, const char *data, size_t n) {
  size_t max = r->src->max_body;
  if (r->too_large || r->len + n > max) {
    if (!r->too_large) {
      r->too_large = 1;
      free(r->body);
      r->body = NULL;
      r->discarded = r->len;
      r->len = r->cap = 0;
    }
    r->discarded += n;
    if (r->discarded <= BODY_DISCARD_FACTOR * max) return 1;
    http_guard_note(r->src->guard, r->conn, HTTP_CLOSE_BODY_TOO_LARGE);
    return 0;
  }
  if (r->len + n > r->cap) {
    /* the announced length at once: one allocation for most bodies; not
     * more than BODY_FIRST_MAX before the bytes arrive, so that slow
     * senders announcing max_body do not hold it each */
    size_t cap = r->cap                                           ? r->cap
                 : r->announced && r->announced <= BODY_FIRST_MAX ? r->announced
                                                                  : 4096;
    while (cap < r->len + n)
      cap *= 2;
    if (cap > max) cap = max;
    char *nb = realloc(r->body, cap);
    if (!nb) return 0;
    r->body = nb;
    r->cap = cap;
  }
  memcpy(r->body + r->len, data, n);
  r->len += n;
  return 1;
}

/* ---- last call ---- */

/* Returns 1 when suspended, 0 when r->reply is set. */
static int complete(http_req *r, const char *method, const char *url) {
  http_source *s = r->src;
  if (r->is_options) {
    handshake(r);
    return 0;
  }
  if (atomic_load(&s->draining)) {
    http_req_unavailable(r, "draining", "the intermediary is shutting down");
    return 0;
  }
  if (r->too_large) {
    http_reply_problem(&r->reply, 413, "too_large",
                       "the request body exceeds max_body");
    return 0;
  }
  if (s->wh_keys && !http_in_verify_webhook(r)) return 0;
  if (r->has_key) {
    http_idem_req q = idem_of(r);
    if (!http_idem_begin(&q, method, url, &r->headers, r->body, r->len,
                         &r->idem_reserved, &r->reply))
      return 0;
  }
  /* A mapped request goes to the program even when its webhook-id was
   * seen: the host dedupes what it makes (the ready meemoo mapping takes
   * the webhook-id as the event id) and the 202 counts it a duplicate. */
  if (s->mapped) return http_in_submit_mapped(r, method, url);
  ceb_event **events = NULL;
  size_t count = 0;
  int batch = 0;
  if (!http_in_decode(r, &events, &count, &batch)) return 0;
  if (!http_in_validate_all(r, events, count, batch) ||
      !http_in_authorise_types(r, events, count, batch)) {
    http_in_events_release(events, count, batch, 1);
    return 0;
  }
  if (r->webhook_seen) {
    http_in_reply_webhook_seen(r, events, count);
    http_in_events_release(events, count, batch, 1);
    return 0;
  }
  return http_in_submit(r, events, count, batch);
}

static enum MHD_Result keys_resumed(http_req *r) {
  http_source *s = r->src;
  pthread_mutex_lock(&s->lock);
  unlist(s, r);
  pthread_mutex_unlock(&s->lock);
  pthread_mutex_lock(&r->lock);
  int woken = r->keys_woken;
  pthread_mutex_unlock(&r->lock);
  r->phase = PHASE_BODY;
  http_guard_head_done(r->conn); /* the body's deadline starts now */
  if (!woken) {                  /* resumed by the daemon stopping */
    http_req_unavailable(r, "draining", "the intermediary is shutting down");
    return queue_reply(r);
  }
  if (r->route != HTTP_ROUTE_EVENTS) { /* a published GET */
    if (http_in_authenticate(r, 1) == 1 && http_in_rate_ok(r))
      http_in_publish_serve(r, r->route, r->get_url);
    return queue_reply(r);
  }
  if (http_in_authenticate(r, 1) != 1 || !after_auth(r)) return queue_reply(r);
  return MHD_YES;
}

enum MHD_Result http_source_handle(void *cls, struct MHD_Connection *conn,
                                   const char *url, const char *method,
                                   const char *version, const char *upload_data,
                                   size_t *upload_data_size, void **con_cls) {
  (void)version;
  http_source *s = cls;
  http_req *r = *con_cls;
  if (!r) {
    r = malloc(sizeof *r); /* not calloc: that skips malloc's tcache */
    if (!r) return MHD_NO;
    memset(r, 0, sizeof *r);
    atomic_init(&r->refs, 1);
    pthread_mutex_init(&r->lock, NULL);
    r->src = s;
    r->conn = conn;
    r->start_ns = mono_ns();
    *con_cls = r;
    http_guard_head_done(conn); /* the body's deadline starts */
    if (!first_call(r, url, method)) return queue_reply(r);
    return MHD_YES;
  }
  if (r->phase == PHASE_DONE) {
    *upload_data_size = 0;
    return MHD_YES;
  }
  /* resumed from the JWKS wait: libmicrohttpd calls again in the request
   * head's state (no body yet), where a response may still be queued */
  if (r->phase == PHASE_KEYS) return keys_resumed(r);
  if (*upload_data_size) {
    http_guard_body(conn, *upload_data_size);
    int ok = append_body(r, upload_data, *upload_data_size);
    *upload_data_size = 0;
    return ok ? MHD_YES : MHD_NO;
  }
  if (r->phase == PHASE_WAIT) { /* resumed */
    pthread_mutex_lock(&r->lock);
    int done = r->done;
    pthread_mutex_unlock(&r->lock);
    if (done)
      http_in_reply_submitted(r);
    else /* resumed by the daemon stopping, not by the callback */
      http_req_unavailable(r, "draining", "the intermediary is shutting down");
    return queue_reply(r);
  }
  /* complete: exempt from the deadlines now, unless already being closed
   * for missing one (then nothing may be submitted) */
  if (!http_guard_busy(conn)) return MHD_NO;
  if (complete(r, method, url)) return MHD_YES;
  return queue_reply(r);
}

void http_source_completed(void *cls, struct MHD_Connection *conn,
                           void **con_cls,
                           enum MHD_RequestTerminationCode toe) {
  (void)toe;
  http_source *s = cls;
  http_guard_request_done(conn); /* the next head's deadline starts */
  http_req *r = *con_cls;
  if (!r) return;
  *con_cls = NULL;
  if (r->idem_reserved) /* ended without a response: let the client retry */
    s->host->idem_abort(s->inst, r->has_client ? r->client : NULL, r->idem_key);
  char labels[32];
  snprintf(labels, sizeof labels, "code=\"%d\"", r->status ? r->status : 0);
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "http_requests_total", labels,
                  1);
  s->host->metric(s->inst, CEB_METRIC_HISTOGRAM,
                  "http_request_duration_seconds", NULL,
                  (double)(mono_ns() - r->start_ns) / 1e9);
  pthread_mutex_lock(&r->lock);
  r->closed = 1;
  pthread_mutex_unlock(&r->lock);
  pthread_mutex_lock(&s->lock);
  unlist(s, r);
  if (r->submitted) {
    s->pending--;
    pthread_cond_broadcast(&s->cond);
  }
  pthread_mutex_unlock(&s->lock);
  http_req_unref(r);
}

void http_source_resume_all(http_source *s) {
  pthread_mutex_lock(&s->lock);
  s->stopping = 1;
  for (http_req *r = s->suspended; r; r = r->next) {
    pthread_mutex_lock(&r->lock);
    if ((r->suspended || r->keys_suspended) && !r->closed) {
      r->suspended = r->keys_suspended = 0;
      MHD_resume_connection(r->conn);
    }
    pthread_mutex_unlock(&r->lock);
  }
  pthread_mutex_unlock(&s->lock);
}
