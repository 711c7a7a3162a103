/* The intermediary's side of callbacks (X-Callback, RIO Mapper design, seed
 * 001 §3.5; docs/integration-guide.md "Callbacks"): a client names, per
 * request, the URL its events' final status is posted to, or has a default
 * (clients.<client>.callback). The URL is checked here, before anything is
 * submitted (http_callback.h: https, or http to a loopback address; a
 * bounded length; no control characters; under callback_allow when it is
 * set), and handed to the host with the
 * submit (ceb_submit_opts.callback, ABI 1.3), which journals it with the
 * events. */
#include "http_in_req.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_callback.h"

int http_in_callback_default(http_source *s, const char *key,
                             const char *client, size_t client_len,
                             const char *url) {
  char why[160];
  if (http_callback_url_check(url, why, sizeof why) != CEB_OK) {
    LOG(s, CEB_LOG_ERROR, "%s (%s): not a callback URL: %s", key,
        ceb_config_origin(s->cfg, key), why);
    return CEB_ECONFIG;
  }
  http_client_types *nc =
      realloc(s->cb_defaults, (s->ncb_defaults + 1) * sizeof *nc);
  if (!nc) return CEB_ENOMEM;
  s->cb_defaults = nc;
  nc[s->ncb_defaults].client = strndup(client, client_len);
  nc[s->ncb_defaults].patterns = url;
  if (!nc[s->ncb_defaults].client) return CEB_ENOMEM;
  s->ncb_defaults++;
  return CEB_OK;
}

/* 1 when url lies under callback_allow (or there is none); else 0 with
 * the reason in why. */
static int allowed(const http_source *s, const char *url, char *why,
                   size_t whylen) {
  if (s->ncb_allow == 0) return 1;
  char norm[HTTP_CALLBACK_NORM_MAX];
  if (http_callback_url_norm(url, norm, sizeof norm, why, whylen) != CEB_OK)
    return 0;
  if (http_callback_url_allowed(norm, s->cb_allow, s->ncb_allow)) return 1;
  snprintf(why, whylen,
           "not under a URL this intermediary allows (callback_allow)");
  return 0;
}

int http_in_callback_allow_init(http_source *s) {
  const char *const *items = NULL;
  size_t n = ceb_config_list(s->cfg, "callback_allow", &items);
  if (n == 0) return CEB_OK;
  const char *origin = ceb_config_origin(s->cfg, "callback_allow");
  if (!(s->cb_allow = calloc(n, sizeof *s->cb_allow))) return CEB_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    char why[160] = "", norm[HTTP_CALLBACK_NORM_MAX];
    if (http_callback_url_check(items[i], why, sizeof why) != CEB_OK ||
        (strchr(items[i], '?') && snprintf(why, sizeof why, "has a query")) ||
        http_callback_url_norm(items[i], norm, sizeof norm, why,
                               sizeof why) != CEB_OK) {
      LOG(s, CEB_LOG_ERROR,
          "callback_allow (%s): item %zu is not a callback URL prefix: %s",
          origin, i + 1, why);
      return CEB_ECONFIG;
    }
    if (!(s->cb_allow[i] = strdup(norm))) return CEB_ENOMEM;
    s->ncb_allow++;
  }
  for (size_t i = 0; i < s->ncb_defaults; i++) {
    char why[160];
    if (!allowed(s, s->cb_defaults[i].patterns, why, sizeof why)) {
      LOG(s, CEB_LOG_ERROR, "clients.%s.callback: %s (%s)",
          s->cb_defaults[i].client, why, origin);
      return CEB_ECONFIG;
    }
  }
  return CEB_OK;
}

void http_in_callback_allow_free(http_source *s) {
  for (size_t i = 0; i < s->ncb_allow; i++)
    free(s->cb_allow[i]);
  free(s->cb_allow);
  s->cb_allow = NULL;
  s->ncb_allow = 0;
}

/* 1 when the host sends this source's callbacks (asked once: fixed for the
 * configuration). */
static int host_callbacks(http_source *s) {
  int v = __atomic_load_n(&s->callbacks, __ATOMIC_ACQUIRE);
  if (v == 0) {
    v = CEB_HOST_HAS(s->host, callbacks) && s->host->callbacks(s->inst) ? 1
                                                                        : -1;
    __atomic_store_n(&s->callbacks, v, __ATOMIC_RELEASE);
  }
  return v == 1;
}

int http_in_callback_of(http_req *r) {
  http_source *s = r->src;
  r->callback = NULL;
  const char *url = NULL;
  size_t seen = 0;
  for (size_t i = 0; i < r->headers.count; i++)
    if (strcasecmp(r->headers.items[i].name, "X-Callback") == 0) {
      url = r->headers.items[i].value;
      seen++;
    }
  if (seen > 1) {
    http_reply_problem(&r->reply, 400, "callback.invalid",
                       "X-Callback: one callback per request (the header "
                       "came more than once)");
    return 0;
  }
  if (url) {
    char why[160], detail[220];
    /* a value with a NUL cut it short: the length MHD saw counts */
    size_t len = 0;
    for (size_t i = 0; i < r->headers.count; i++)
      if (strcasecmp(r->headers.items[i].name, "X-Callback") == 0)
        len = r->headers.items[i].value_len;
    if (len != strlen(url)) {
      snprintf(why, sizeof why, "contains a control character");
    } else if (http_callback_url_check(url, why, sizeof why) != CEB_OK) {
      /* why says it */
    } else if (!allowed(s, url, why, sizeof why)) {
      /* why says it */
    } else {
      why[0] = '\0';
    }
    if (why[0]) {
      snprintf(detail, sizeof detail, "X-Callback: %s", why);
      http_reply_problem(&r->reply, 400, "callback.invalid", detail);
      return 0;
    }
    if (!host_callbacks(s)) {
      http_reply_problem(&r->reply, 400, "callback.unsupported",
                         "X-Callback: this intermediary sends no callbacks "
                         "(no route with callbacks = true takes its events)");
      return 0;
    }
    r->callback = url;
    return 1;
  }
  const char *client = r->has_client ? r->client : "";
  for (size_t i = 0; i < s->ncb_defaults; i++)
    if (strcmp(s->cb_defaults[i].client, client) == 0 && host_callbacks(s))
      r->callback = s->cb_defaults[i].patterns;
  return 1;
}
