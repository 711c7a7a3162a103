/* Callbacks (X-Callback, docs/integration-guide.md "Callbacks"): the
 * document a callbacks route sends for one event, made when its delivery is
 * claimed (ceb_engine_opts.callback_doc): the event's job status as
 * GET /v1/events/{id} serves it, posted to the client's URL with the event
 * id as the token header (X-Rio-Mapper-Token, as in the RIO Mapper design,
 * seed 001 §3.5). It is an egress object (include/ceb/plugin.h), so the
 * route's http sink sends it as any mapped delivery: signed per Standard
 * Webhooks over this body, Idempotency-Key / webhook-id stable per event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "runtime/runtime_internal.h"
#include "runtime/runtime_job.h"
#include "store/ceb_store.h"

char *cebr_callback_doc(void *arg, int64_t seq, const char *id, int *retry,
                        char *why, size_t whylen) {
  ceb_runtime *rt = arg;
  *retry = 0;
  int st = CEB_OK;
  char *url = ceb_store_callback_url(rt->store, seq, &st);
  if (!url) {
    *retry = st == CEB_EIO || st == CEB_ENOMEM;
    snprintf(why, whylen, "the event's callback URL cannot be read (%s)",
             ceb_strerror(st));
    return NULL;
  }
  json_t *status = NULL;
  st = cebr_job_status_seq(rt, seq, id ? id : "", &status);
  if (st != CEB_OK) {
    *retry = st == CEB_EIO || st == CEB_ENOMEM;
    snprintf(why, whylen, "the event's status cannot be read (%s)",
             ceb_strerror(st));
    free(url);
    return NULL;
  }
  json_t *doc = json_pack("{s:o,s:s,s:{s:s},s:s}", "body", status,
                          "content_type", "application/json", "headers",
                          "X-Rio-Mapper-Token", id ? id : "", "topic", url);
  free(url);
  char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  if (!text) {
    *retry = 1;
    snprintf(why, whylen, "out of memory");
  }
  return text;
}

const char *cebr_callback_route(ceb_runtime *rt, const char *source) {
  for (size_t r = 0; source && r < rt->nroutes; r++) {
    const ceb_route *route = rt->routes[r];
    if (!route->callbacks) continue;
    for (size_t f = 0; f < route->nfrom; f++)
      if (strcmp(route->from[f], source) == 0) return route->name;
  }
  return NULL;
}
