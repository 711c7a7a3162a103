/* The intermediary's request handling on libmicrohttpd threads.
 *
 * First call (headers read): path, method, draining, TLS client
 * certificate, size announced, authentication, rate limit, media type and
 * the Idempotency-Key format are checked, so most refusals happen before
 * the body is read. A token whose kid is unknown while the JWKS is being
 * refreshed suspends the connection (never the listener thread, which
 * serves every other connection) until the refresh ends or
 * oauth2.jwks_wait passes; then the head's checks go on. Body calls append to a
 * buffer capped at max_body. Last call: webhook signature, idempotency
 * reservation, decode, validate, authorise types, submit -- then the connection
 * is suspended until the host's submit callback (another thread) resumes it,
 * and only then is the 202 (or 503) queued.
 *
 * A request record is shared by the MHD thread and the host's callback
 * thread: `lock` guards the hand-over fields and `refs` keeps it alive until
 * both are done with it. */
#include "http_in_int.h"

#include "http_idem.h"
#include "http_in_ack.h"
#include "http_in_head.h"
#include "http_in_reply.h"
#include "http_in_util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define LOG(s, lvl, ...) CEB_LOG((s)->host, (s)->inst, lvl, __VA_ARGS__)

typedef enum req_phase {
  PHASE_BODY = 0, /* reading the body */
  PHASE_WAIT = 1, /* submitted: waiting for the durability callback */
  PHASE_DONE = 2, /* a response was queued */
  PHASE_KEYS = 3  /* head read; unknown kid: waiting for the JWKS refresh */
} req_phase;

/* Request headers held without copies (most requests have fewer). */
#define REQ_HEADERS_INLINE 12
#define WEBHOOK_ID_MAX 255
#define BODY_FIRST_MAX (64 * 1024)
#define BODY_DISCARD_FACTOR 16 /* read and dropped to answer 413 */

typedef struct http_req {
  atomic_int refs;
  struct http_req *next, *prev; /* src->suspended, under src->lock */
  int listed;
  http_source *src;
  struct MHD_Connection *conn;
  int64_t start_ns;
  req_phase phase;
  int is_options;

  /* names and values borrowed from libmicrohttpd, which keeps them until
   * the request completes; only the items array can be ours (heap when
   * more than REQ_HEADERS_INLINE) */
  ceb_headers headers;
  ceb_header headers_inline[REQ_HEADERS_INLINE];
  char *body;
  size_t len, cap;
  size_t announced; /* Content-Length, 0 when absent */
  int too_large;
  size_t discarded;

  char client[256]; /* "" when anonymous */
  int has_client;
  char idem_key[HTTP_IDEM_KEY_LEN + 1];
  int has_key;
  int idem_reserved;
  const char *webhook_id; /* the header's value once verified, or NULL */
  int webhook_seen;       /* webhook_id was accepted before: answer as a
                             duplicate, submit nothing */

  int submitted; /* counted in src->pending */
  char *ids;     /* JSON array of the submitted events' ids */
  size_t ids_len;
  http_reply reply;
  int status;

  /* hand-over with the submit and JWKS callbacks, under lock */
  pthread_mutex_t lock;
  int suspended, closed, done;
  int keys_suspended, keys_woken;
  int cb_status;
  size_t accepted, duplicates;
} http_req;

/* One per request: small enough for malloc's per-thread cache (larger
 * blocks take the slower path, with consolidations). */
_Static_assert(sizeof(http_req) <= 1024, "http_req outgrew the tcache");

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void req_unref(http_req *r) {
  if (atomic_fetch_sub(&r->refs, 1) != 1) return;
  if (r->headers.items != r->headers_inline) free(r->headers.items);
  free(r->body);
  free(r->ids);
  http_reply_clear(&r->reply);
  pthread_mutex_destroy(&r->lock);
  free(r);
}

static void metric_auth_failure(http_source *s, const char *reason) {
  char labels[96];
  snprintf(labels, sizeof labels, "reason=\"%s\"", reason);
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "http_auth_failures_total",
                  labels, 1);
}

/* ---- responses ---- */

static void set_retry_after(http_reply *rep, int seconds) {
  char v[24];
  snprintf(v, sizeof v, "%d", seconds < 1 ? 1 : seconds);
  http_reply_header(rep, "Retry-After", v);
}

static void reply_unavailable(http_req *r, const char *code,
                              const char *detail) {
  http_reply_problem(&r->reply, 503, code, detail);
  set_retry_after(&r->reply, r->src->retry_after_s);
}

/* Ends the idempotency reservation: 2xx and 4xx results are stored for
 * replay (the draft's rule), anything else releases the key so that the
 * client's retry is processed. */
static void idem_settle(http_req *r) {
  if (!r->idem_reserved) return;
  http_source *s = r->src;
  const char *client = r->has_client ? r->client : NULL;
  int st = r->reply.status;
  r->idem_reserved = 0;
  if (st >= 200 && st < 500) {
    int rc = s->host->idem_finish(s->inst, client, r->idem_key, st,
                                  r->reply.content_type, r->reply.body,
                                  r->reply.len);
    if (rc != CEB_OK)
      LOG(s, CEB_LOG_ERROR,
          "idempotency: cannot store the response for "
          "key %s: %s",
          r->idem_key, ceb_strerror(rc));
  } else {
    s->host->idem_abort(s->inst, client, r->idem_key);
  }
}

static enum MHD_Result queue_reply(http_req *r) {
  http_source *s = r->src;
  if (r->reply.status == 0)
    http_reply_problem(&r->reply, 500, "internal", "no response was built");
  idem_settle(r);
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

/* Resumes a request that waited for the JWKS (http_jwks_notify's
 * callback: a refresh finished, or oauth2.jwks_wait passed). */
static void on_keys(void *arg) {
  http_req *r = arg;
  pthread_mutex_lock(&r->lock);
  r->keys_woken = 1;
  if (r->keys_suspended && !r->closed) {
    r->keys_suspended = 0;
    MHD_resume_connection(r->conn);
  }
  pthread_mutex_unlock(&r->lock);
  req_unref(r);
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

/* Caller holds s->lock. */
static void enlist(http_source *s, http_req *r) {
  r->next = s->suspended;
  r->prev = NULL;
  if (s->suspended) s->suspended->prev = r;
  s->suspended = r;
  r->listed = 1;
}

/* An unknown kid while the JWKS is being refreshed: the connection is
 * suspended, never the listener thread, until the refresh ends or
 * oauth2.jwks_wait passes. 1 when suspended; 0 when the wake-up came
 * already or cannot be had (go on with the keys as they are). */
static int await_keys(http_req *r, uint64_t gen) {
  http_source *s = r->src;
  atomic_fetch_add(&r->refs, 1); /* the callback's */
  if (http_jwks_notify(s->jwks, gen, on_keys, r) != CEB_OK) {
    atomic_fetch_sub(&r->refs, 1);
    return 0;
  }
  pthread_mutex_lock(&s->lock);
  pthread_mutex_lock(&r->lock);
  int suspend = !r->keys_woken && !s->stopping;
  if (suspend) {
    r->keys_suspended = 1;
    r->phase = PHASE_KEYS;
    /* the wait (oauth2.jwks_wait) is ours, not a slow body; a connection
     * the guard is closing already is refused once resumed */
    http_guard_busy(r->conn);
    MHD_suspend_connection(r->conn);
    enlist(s, r);
  }
  pthread_mutex_unlock(&r->lock);
  pthread_mutex_unlock(&s->lock);
  return suspend;
}

/* 1 authenticated, 0 refused (r->reply set), 2 suspended waiting for the
 * JWKS. after_wait: the keys as they are, no new refresh or wait. */
static int authenticate(http_req *r, int after_wait) {
  http_source *s = r->src;
  if (!s->auth_oauth2) return 1;
  const char *authz = ceb_headers_get(&r->headers, "Authorization");
  char www[320];
  if (!authz || strncasecmp(authz, "Bearer ", 7) != 0) {
    metric_auth_failure(s, "missing");
    http_reply_problem(&r->reply, 401, "auth.missing",
                       "an OAuth2 bearer token is required");
    http_reply_header(&r->reply, "WWW-Authenticate",
                      "Bearer realm=\"cebridge\"");
    return 0;
  }
  const char *token = authz + 7;
  while (*token == ' ')
    token++;
  http_jwt_result res;
  uint64_t gen = 0;
  int st =
      http_jwt_verify_async(s->jwks, &s->rules, token, s->host->now_ms(s->inst),
                            &res, after_wait ? NULL : &gen);
  if (st == HTTP_JWKS_PENDING) {
    if (await_keys(r, gen)) return 2;
    st = http_jwt_verify_async(s->jwks, &s->rules, token,
                               s->host->now_ms(s->inst), &res, NULL);
  }
  if (st == CEB_OK) {
    snprintf(r->client, sizeof r->client, "%s", res.client);
    r->has_client = 1;
    return 1;
  }
  metric_auth_failure(s, res.reason);
  char code[64];
  snprintf(code, sizeof code, "auth.%s", res.reason);
  http_reply_problem(&r->reply, res.http_status, code, res.detail);
  /* RFC 6750 quoted-string: drop characters that would end it */
  char desc[sizeof res.detail];
  size_t k = 0;
  for (const char *p = res.detail; *p && k + 1 < sizeof desc; p++)
    if (*p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) desc[k++] = *p;
  desc[k] = '\0';
  snprintf(www, sizeof www,
           "Bearer realm=\"cebridge\", error=\"%s\", error_description=\"%s\"",
           res.oauth_error, desc);
  http_reply_header(&r->reply, "WWW-Authenticate", www);
  return 0;
}

static const char *client_types(http_source *s, const char *client) {
  for (size_t i = 0; i < s->nclients; i++)
    if (strcmp(s->clients[i].client, client) == 0)
      return s->clients[i].patterns;
  return NULL;
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
  http_reply_problem(&r->reply, 400, p.code, p.detail);
  return 0;
}

static int after_auth(http_req *r);

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
  if (strcmp(url, s->path) != 0) {
    http_reply_problem(&r->reply, 404, "not_found", "no such endpoint");
    return 0;
  }
  if (strcmp(method, "OPTIONS") == 0) {
    r->is_options = 1;
    return 1; /* answered when complete */
  }
  if (strcmp(method, "POST") != 0) {
    http_reply_problem(&r->reply, 405, "method_not_allowed",
                       "POST CloudEvents here (OPTIONS for the handshake)");
    http_reply_header(&r->reply, "Allow", "POST, OPTIONS");
    return 0;
  }
  if (atomic_load(&s->draining)) {
    reply_unavailable(r, "draining", "the intermediary is shutting down");
    return 0;
  }
  /* Refuse early under backpressure rather than read a body to refuse. */
  if (!s->host->accepting(s->inst)) {
    reply_unavailable(r, "backpressure",
                      "the bridge is not accepting events right now");
    return 0;
  }
  if (s->tls.client_ca && !http_tls_peer_verified(r->conn)) {
    metric_auth_failure(s, "client_certificate");
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
  int auth = authenticate(r, 0);
  if (auth != 1) return auth;
  return after_auth(r);
}

/* The checks of the request head after authentication. 1 to go on reading
 * the body, 0 when r->reply is set. */
static int after_auth(http_req *r) {
  http_source *s = r->src;
  if (s->nclients > 0 && !client_types(s, r->has_client ? r->client : "")) {
    http_reply_problem(&r->reply, 403, "client.not_allowed",
                       "this client may not send events here");
    return 0;
  }
  if (s->ratelimit) {
    char ip[64];
    if (!r->has_client) remote_ip(r, ip, sizeof ip);
    int64_t wait_ms = 0;
    if (!http_ratelimit_take(s->ratelimit, r->has_client ? r->client : ip,
                             s->host->now_ms(s->inst), &wait_ms)) {
      http_reply_problem(&r->reply, 429, "rate_limited",
                         "too many requests from this client");
      set_retry_after(&r->reply, (int)((wait_ms + 999) / 1000));
      return 0;
    }
  }
  const char *ct = ceb_headers_get(&r->headers, "Content-Type");
  if (ceb_http_mode_of(ct) == CEB_MODE_BINARY &&
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

static int verify_webhook(http_req *r) {
  http_source *s = r->src;
  const char *id = ceb_headers_get(&r->headers, "webhook-id");
  const char *ts = ceb_headers_get(&r->headers, "webhook-timestamp");
  const char *sig = ceb_headers_get(&r->headers, "webhook-signature");
  int64_t now_ms = s->host->now_ms(s->inst);
  int st = http_webhook_verify(s->wh_keys, id, ts, sig, r->body, r->len,
                               now_ms / 1000, s->wh_tolerance_ms / 1000);
  const char *code = NULL, *detail = NULL;
  if (st == CEB_EINVAL) {
    code = "webhook.signature_missing";
    detail = "webhook-id, webhook-timestamp and webhook-signature are "
             "required";
  } else if (st == CEB_ETIMEOUT) {
    code = "webhook.timestamp";
    detail = "webhook-timestamp is outside the tolerance window";
  } else if (st != CEB_OK) {
    code = "webhook.signature_invalid";
    detail = "no webhook-signature matches";
  }
  if (code) {
    metric_auth_failure(s, code + strlen("webhook."));
    http_reply_problem(&r->reply, 401, code, detail);
    return 0;
  }
  if (strlen(id) > WEBHOOK_ID_MAX) {
    http_reply_problem(&r->reply, 400, "webhook.id_invalid",
                       "webhook-id is too long");
    return 0;
  }
  /* Seen = accepted before within the window (ids are recorded in
   * queue_reply on 2xx only, once the events are durable, so a sender's
   * retry after a 503 or a refusal is processed). A retry of an accepted
   * request is answered as what it is, a duplicate: 202 with accepted 0,
   * which every sender takes as delivered, and nothing is submitted. */
  r->webhook_id = id;
  r->webhook_seen = http_replay_seen(s->wh_replay, id, now_ms);
  return 1;
}

/* The answer to a request whose webhook-id was accepted before: the 202 of
 * a request whose every event is a duplicate. */
static void reply_webhook_seen(http_req *r, ceb_event **events, size_t count) {
  size_t ids_len = 0, len = 0;
  char *ids = http_ack_ids(events, count, &ids_len);
  char *body = ids ? http_ack_body(0, count, ids, ids_len, &len) : NULL;
  free(ids);
  if (body)
    http_reply_take(&r->reply, 202, "application/json", body, len);
  else
    http_reply_problem(&r->reply, 500, "internal", "out of memory");
}

/* Returns 1 when processing goes on (NEW or no key), 0 when r->reply is set. */
static int idem_begin(http_req *r, const char *method, const char *url) {
  http_source *s = r->src;
  if (!r->has_key) return 1;
  char fp[HTTP_FINGERPRINT_LEN + 1];
  if (http_idem_fingerprint(method, url, &r->headers, r->body, r->len, fp) !=
      CEB_OK) {
    http_reply_problem(&r->reply, 500, "internal", "fingerprint failed");
    return 0;
  }
  ceb_idem_record rec = {sizeof rec};
  int st = s->host->idem_begin(s->inst, r->has_client ? r->client : NULL,
                               r->idem_key, fp, &rec);
  if (st != CEB_OK) {
    LOG(s, CEB_LOG_ERROR, "idempotency store: %s", ceb_strerror(st));
    reply_unavailable(r, "idempotency.unavailable",
                      "the idempotency store is unavailable");
    return 0;
  }
  int go_on = 0;
  switch (rec.state) {
  case CEB_IDEM_NEW:
    r->idem_reserved = 1;
    go_on = 1;
    break;
  case CEB_IDEM_REPLAY:
    http_reply_set(&r->reply, rec.http_status, rec.content_type, rec.body,
                   rec.body_len);
    http_reply_header(&r->reply, "Idempotent-Replayed", "true");
    break;
  case CEB_IDEM_IN_FLIGHT:
    http_reply_problem(&r->reply, 409, "idempotency.in_flight",
                       "a request with this Idempotency-Key is still being "
                       "processed");
    set_retry_after(&r->reply, 1);
    break;
  case CEB_IDEM_MISMATCH:
  default:
    http_reply_problem(&r->reply, 422, "idempotency.mismatch",
                       "this Idempotency-Key was used for a different "
                       "request");
    break;
  }
  ceb_free(rec.content_type);
  ceb_free(rec.body);
  return go_on;
}

/* Lists every element of a batch that does not decode. */
static void batch_errors(json_t *problem, const char *body, size_t len,
                         const ceb_error *first) {
  json_t *arr = json_loadb(body, len, 0, NULL);
  if (!json_is_array(arr)) {
    http_problem_add_error(problem, -1, NULL, first->code, first->message);
    json_decref(arr);
    return;
  }
  size_t i;
  json_t *el;
  json_array_foreach(arr, i, el) {
    char *text = json_dumps(el, JSON_COMPACT | JSON_ENCODE_ANY);
    ceb_event *ev = NULL;
    ceb_error err;
    ceb_error_clear(&err);
    if (text && ceb_json_decode(text, strlen(text), &ev, &err) != CEB_OK)
      http_problem_add_error(problem, (int)i, NULL, err.code, err.message);
    ceb_event_unref(ev);
    free(text);
  }
  json_decref(arr);
}

static void add_violations(json_t *problem, int index,
                           const ceb_violations *v) {
  for (size_t k = 0; k < v->count; k++)
    if (v->items[k].severity == CEB_SEV_ERROR)
      http_problem_add_error(problem, index, v->items[k].attribute,
                             v->items[k].code, v->items[k].message);
}

/* Frees the events array from decode(): the batch decoder's array belongs
 * to the SDK allocator, the single-event one to ours. unref: also drop the
 * events' references (not after a successful submit: the host has them). */
static void events_release(ceb_event **events, size_t count, int batch,
                           int unref) {
  if (batch) {
    if (unref)
      ceb_events_free(events, count);
    else
      ceb_free(events);
    return;
  }
  for (size_t i = 0; unref && i < count; i++)
    ceb_event_unref(events[i]);
  free(events);
}

static int decode(http_req *r, ceb_event ***events, size_t *count, int *batch) {
  const char *ct = ceb_headers_get(&r->headers, "Content-Type");
  ceb_error err;
  ceb_error_clear(&err);
  *batch = ceb_http_mode_of(ct) == CEB_MODE_BATCH;
  int st;
  if (*batch) {
    st = ceb_batch_decode(r->body ? r->body : "", r->len, events, count, &err);
  } else {
    ceb_event *ev = NULL;
    st = ceb_http_decode(&r->headers, r->body, r->len, &ev, &err);
    if (st == CEB_OK) {
      *events = malloc(sizeof **events);
      if (!*events) {
        ceb_event_unref(ev);
        st = CEB_ENOMEM;
      } else {
        (*events)[0] = ev;
        *count = 1;
      }
    }
  }
  if (st == CEB_OK && *count == 0) {
    ceb_free(*events);
    *events = NULL;
    http_reply_problem(&r->reply, 400, "batch.empty",
                       "the batch holds no event");
    return 0;
  }
  if (st == CEB_OK) return 1;
  if (st == CEB_ENOMEM) {
    http_reply_problem(&r->reply, 500, "internal", "out of memory");
    return 0;
  }
  json_t *p = http_problem_new(400, "event.malformed",
                               *batch ? "the batch is not a valid "
                                        "CloudEvents JSON batch"
                                      : "the request is not a valid "
                                        "CloudEvent");
  if (*batch)
    batch_errors(p, r->body ? r->body : "", r->len, &err);
  else
    http_problem_add_error(p, -1, NULL, err.code, err.message);
  http_reply_problem_json(&r->reply, p);
  json_decref(p);
  return 0;
}

/* CloudEvents rules of every event of a batch, so that the problem lists
 * each failing event. The SDK marks each event that passes
 * (ceb_event_checked): the host's validation then runs only the size limit
 * and the profile level's rules, and stops at the first failing event. */
static int validate_all(http_req *r, ceb_event **events, size_t count,
                        int batch) {
  /* one event: the host's validation reports all its violations */
  if (!batch) return 1;
  ceb_validate_opts vo = {sizeof vo, CEB_PROFILE_OFF, r->src->max_body};
  json_t *p = NULL;
  ceb_violations *v = malloc(sizeof *v);
  if (!v) {
    http_reply_problem(&r->reply, 500, "internal", "out of memory");
    return 0;
  }
  for (size_t i = 0; i < count; i++) {
    if (ceb_event_validate(events[i], &vo, v) == 0) continue;
    if (!p)
      p = http_problem_new(422, "event.invalid",
                           "the event breaks the CloudEvents rules");
    add_violations(p, batch ? (int)i : -1, v);
  }
  free(v);
  if (!p) return 1;
  http_reply_problem_json(&r->reply, p);
  json_decref(p);
  return 0;
}

static int authorise_types(http_req *r, ceb_event **events, size_t count,
                           int batch) {
  http_source *s = r->src;
  if (s->nclients == 0) return 1;
  const char *patterns = client_types(s, r->has_client ? r->client : "");
  json_t *p = NULL;
  for (size_t i = 0; i < count; i++) {
    const char *type = ceb_event_get(events[i], "type");
    if (patterns && type && http_pattern_match(patterns, type)) continue;
    if (!p)
      p = http_problem_new(403, "type.not_allowed",
                           "this client may not send events of this type");
    http_problem_add_error(p, batch ? (int)i : -1, "type", "type.not_allowed",
                           type ? type : "");
  }
  if (!p) return 1;
  http_reply_problem_json(&r->reply, p);
  json_decref(p);
  return 0;
}

static void on_submitted(void *arg, const ceb_submit_result *res) {
  http_req *r = arg;
  pthread_mutex_lock(&r->lock);
  r->done = 1;
  r->cb_status = res->status;
  r->accepted = res->accepted;
  r->duplicates = res->duplicates;
  if (r->suspended && !r->closed) {
    r->suspended = 0;
    MHD_resume_connection(r->conn);
  }
  pthread_mutex_unlock(&r->lock);
  req_unref(r);
}

static void reply_submitted(http_req *r) {
  if (r->cb_status != CEB_OK) {
    LOG(r->src, CEB_LOG_WARN, "submit failed after acceptance: %s",
        ceb_strerror(r->cb_status));
    reply_unavailable(r, "not_durable",
                      "the events could not be stored; retry later");
    return;
  }
  size_t len = 0;
  char *body =
      http_ack_body(r->accepted, r->duplicates, r->ids, r->ids_len, &len);
  if (body)
    http_reply_take(&r->reply, 202, "application/json", body, len);
  else
    http_reply_problem(&r->reply, 500, "internal", "out of memory");
}

static void reply_submit_error(http_req *r, int st, ceb_violations *v,
                               size_t failed, int batch) {
  if (st == CEB_EVALIDATION) {
    json_t *p = http_problem_new(422, "event.invalid",
                                 "the event breaks a validation rule "
                                 "(CloudEvents, profile or contract)");
    add_violations(p, batch ? (int)failed : -1, v);
    http_reply_problem_json(&r->reply, p);
    json_decref(p);
  } else if (st == CEB_ETOOLARGE) {
    http_reply_problem(&r->reply, 413, "event.too_large",
                       "an event exceeds the bridge's max_event_size");
  } else if (st == CEB_EBUSY) {
    reply_unavailable(r, "backpressure", "the bridge is busy; retry later");
  } else if (st == CEB_ESHUTDOWN) {
    reply_unavailable(r, "draining", "the bridge is shutting down");
  } else if (st == CEB_EINVAL) {
    http_reply_problem(&r->reply, 400, "event.rejected", ceb_strerror(st));
  } else if (st == CEB_EFORBIDDEN) {
    http_reply_problem(&r->reply, 403, "event.forbidden", ceb_strerror(st));
  } else {
    LOG(r->src, CEB_LOG_ERROR, "submit: %s", ceb_strerror(st));
    reply_unavailable(r, "unavailable", ceb_strerror(st));
  }
}

/* Returns 1 when the connection was suspended (await the callback). */
static int submit(http_req *r, ceb_event **events, size_t count, int batch) {
  http_source *s = r->src;
  /* kept as text for the 202: the events are the host's once submitted */
  r->ids = http_ack_ids(events, count, &r->ids_len);
  /* on the stack (about 9 KiB; libmicrohttpd threads have the default
   * stack): the host resets it and fills it during the call only */
  ceb_violations vbuf;
  ceb_violations *v = &vbuf;
  v->count = 0;
  size_t failed = 0;
  ceb_submit_opts opts = {sizeof opts, r->has_client ? r->client : NULL,
                          ceb_headers_get(&r->headers, "traceparent"), v,
                          &failed};
  if (!r->ids) {
    events_release(events, count, batch, 1);
    http_reply_problem(&r->reply, 500, "internal", "out of memory");
    return 0;
  }
  pthread_mutex_lock(&s->lock);
  s->pending++;
  pthread_mutex_unlock(&s->lock);
  r->submitted = 1;
  atomic_fetch_add(&r->refs, 1); /* the callback's */
  int st = s->host->submit(s->inst, events, count, &opts, on_submitted, r);
  if (st != CEB_OK) {
    atomic_fetch_sub(&r->refs, 1);
    pthread_mutex_lock(&s->lock);
    s->pending--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    r->submitted = 0;
    reply_submit_error(r, st, v, failed, batch);
    events_release(events, count, batch, 1);
    return 0;
  }
  /* the host holds the references now: free only the array */
  events_release(events, count, batch, 0);
  r->phase = PHASE_WAIT;
  pthread_mutex_lock(&s->lock);
  pthread_mutex_lock(&r->lock);
  int suspend = !r->done && !s->stopping;
  if (suspend) {
    r->suspended = 1;
    MHD_suspend_connection(r->conn);
    enlist(s, r);
  }
  int done = r->done;
  pthread_mutex_unlock(&r->lock);
  pthread_mutex_unlock(&s->lock);
  if (suspend) return 1;
  if (done)
    reply_submitted(r);
  else
    reply_unavailable(r, "draining", "the intermediary is shutting down");
  return 0;
}

/* Returns 1 when suspended, 0 when r->reply is set. */
static int complete(http_req *r, const char *method, const char *url) {
  http_source *s = r->src;
  if (r->is_options) {
    handshake(r);
    return 0;
  }
  if (atomic_load(&s->draining)) {
    reply_unavailable(r, "draining", "the intermediary is shutting down");
    return 0;
  }
  if (r->too_large) {
    http_reply_problem(&r->reply, 413, "too_large",
                       "the request body exceeds max_body");
    return 0;
  }
  if (s->wh_keys && !verify_webhook(r)) return 0;
  if (!idem_begin(r, method, url)) return 0;
  ceb_event **events = NULL;
  size_t count = 0;
  int batch = 0;
  if (!decode(r, &events, &count, &batch)) return 0;
  if (!validate_all(r, events, count, batch) ||
      !authorise_types(r, events, count, batch)) {
    events_release(events, count, batch, 1);
    return 0;
  }
  if (r->webhook_seen) {
    reply_webhook_seen(r, events, count);
    events_release(events, count, batch, 1);
    return 0;
  }
  return submit(r, events, count, batch);
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
    reply_unavailable(r, "draining", "the intermediary is shutting down");
    return queue_reply(r);
  }
  if (authenticate(r, 1) != 1 || !after_auth(r)) return queue_reply(r);
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
      reply_submitted(r);
    else /* resumed by the daemon stopping, not by the callback */
      reply_unavailable(r, "draining", "the intermediary is shutting down");
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
  req_unref(r);
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
