/* The intermediary's side of callbacks (X-Callback, RIO Mapper design, seed
 * 001 §3.5; docs/integration-guide.md "Callbacks"): a client names, per
 * request, the URL its events' final status is posted to, or has a default
 * (clients.<client>.callback). The URL is checked here, before anything is
 * submitted (http_callback.h: https, or http to a loopback address; a
 * bounded length; no control characters), and handed to the host with the
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
    } else if (http_callback_url_check(url, why, sizeof why) == CEB_OK) {
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
