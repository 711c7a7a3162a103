/* The intermediary's authentication of a request (http_in_req.h): the
 * OAuth2 bearer token (JWT against the JWKS; an unknown kid while the key
 * set is refreshed suspends the connection, never the listener thread),
 * the Standard Webhooks signature, and the clients' allowed event types.
 * MHD thread, except on_keys (the JWKS thread). */
#include "http_in_req.h"

#include "http_in_util.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

void http_in_auth_failure(http_source *s, const char *reason) {
  char labels[96];
  snprintf(labels, sizeof labels, "reason=\"%s\"", reason);
  s->host->metric(s->inst, CEB_METRIC_COUNTER, "http_auth_failures_total",
                  labels, 1);
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
  http_req_unref(r);
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
    http_req_enlist(s, r);
  }
  pthread_mutex_unlock(&r->lock);
  pthread_mutex_unlock(&s->lock);
  return suspend;
}

int http_in_authenticate(http_req *r, int after_wait) {
  http_source *s = r->src;
  if (!s->auth_oauth2) return 1;
  const char *authz = ceb_headers_get(&r->headers, "Authorization");
  char www[320];
  if (!authz || strncasecmp(authz, "Bearer ", 7) != 0) {
    http_in_auth_failure(s, "missing");
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
  http_in_auth_failure(s, res.reason);
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

int http_in_verify_webhook(http_req *r) {
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
    http_in_auth_failure(s, code + strlen("webhook."));
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

const char *http_in_client_types(http_source *s, const char *client) {
  for (size_t i = 0; i < s->nclients; i++)
    if (strcmp(s->clients[i].client, client) == 0)
      return s->clients[i].patterns;
  return NULL;
}

int http_in_authorise_types(http_req *r, ceb_event **events, size_t count,
                            int batch) {
  http_source *s = r->src;
  if (s->nclients == 0) return 1;
  const char *patterns =
      http_in_client_types(s, r->has_client ? r->client : "");
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
