/* The intermediary's decode and submit of a request (http_in_req.h):
 * the body decoded (binary, structured or batch), every event of a batch
 * checked against the CloudEvents rules so that the problem lists each,
 * one submit for all, and the wait for the host's durability callback
 * (another thread), which resumes the suspended connection; then the 202
 * (or 503). */
#include "http_in_req.h"

#include "http_in_ack.h"
#include "http_in_doc.h"

#include <stdlib.h>
#include <string.h>

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

void http_in_events_release(ceb_event **events, size_t count, int batch,
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

int http_in_decode(http_req *r, ceb_event ***events, size_t *count,
                   int *batch) {
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

int http_in_validate_all(http_req *r, ceb_event **events, size_t count,
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

/* What the callback of submit_mapped_async said when it refused the
 * request (copied: the result is borrowed for the call). */
typedef struct http_refusal {
  int status, key_limited;
  size_t failed;
  int has_violations;
  ceb_violations violations;
  char reason[];
} http_refusal;

/* A copy of a refusal (ABI 1.4 members), or NULL: not refused, or no
 * memory (the reply is then the 503 of a failed submit). */
static http_refusal *refusal_of(const ceb_submit_result *res) {
  if (res->struct_size <
          offsetof(ceb_submit_result, failed_index) + sizeof(size_t) ||
      !res->refused)
    return NULL;
  const char *why = res->reason ? res->reason : "";
  size_t n = strlen(why) + 1;
  http_refusal *f = malloc(sizeof *f + n);
  if (!f) return NULL;
  f->status = res->status;
  f->key_limited = res->key_limited;
  f->failed = res->failed_index;
  f->has_violations = res->violations != NULL;
  if (res->violations)
    f->violations = *res->violations;
  else
    f->violations.count = 0;
  memcpy(f->reason, why, n);
  return f;
}

static void on_submitted(void *arg, const ceb_submit_result *res) {
  http_req *r = arg;
  http_refusal *refusal = refusal_of(res);
  pthread_mutex_lock(&r->lock);
  r->refusal = refusal;
  r->done = 1;
  r->cb_status = res->status;
  r->accepted = res->accepted;
  r->duplicates = res->duplicates;
  if (r->suspended && !r->closed) {
    r->suspended = 0;
    MHD_resume_connection(r->conn);
  }
  pthread_mutex_unlock(&r->lock);
  http_req_unref(r);
}

static void reply_refused(http_req *r, int st, const char *err, int key_limited,
                          ceb_violations *v, size_t failed, int batch,
                          int mapped);

void http_in_reply_submitted(http_req *r) {
  if (r->refusal) {
    http_refusal *f = r->refusal;
    reply_refused(r, f->status, f->reason, f->key_limited, &f->violations,
                  f->failed, 1, 1);
    return;
  }
  if (r->cb_status != CEB_OK) {
    LOG(r->src, CEB_LOG_WARN, "submit failed after acceptance: %s",
        ceb_strerror(r->cb_status));
    http_req_unavailable(r, "not_durable",
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
    http_req_unavailable(r, "backpressure", "the bridge is busy; retry later");
  } else if (st == CEB_ESHUTDOWN) {
    http_req_unavailable(r, "draining", "the bridge is shutting down");
  } else if (st == CEB_EINVAL) {
    http_reply_problem(&r->reply, 400, "event.rejected", ceb_strerror(st));
  } else if (st == CEB_EUNSUPPORTED && r->callback) {
    /* the host lost its callbacks route between the check and the submit
     * (never within one configuration) */
    http_reply_problem(&r->reply, 400, "callback.unsupported",
                       "X-Callback: this intermediary sends no callbacks");
  } else if (st == CEB_EFORBIDDEN) {
    http_reply_problem(&r->reply, 403, "event.forbidden", ceb_strerror(st));
  } else {
    LOG(r->src, CEB_LOG_ERROR, "submit: %s", ceb_strerror(st));
    http_req_unavailable(r, "unavailable", ceb_strerror(st));
  }
}

/* The reply to a submit that took nothing (returned st, or a refusal in
 * the callback of submit_mapped_async). */
static void reply_refused(http_req *r, int st, const char *err, int key_limited,
                          ceb_violations *v, size_t failed, int batch,
                          int mapped) {
  if (st == CEB_EMAPPING || (mapped && st == CEB_EINVAL))
    http_reply_problem(&r->reply, 400, "mapping.failed",
                       err && err[0] ? err : ceb_strerror(st));
  else if (st == CEB_EBUSY && key_limited)
    /* the client's own key is over the route's max_open_per_key: its
     * events wait for delivery; others keep flowing (429, not 503) */
    http_req_key_limited(r);
  else
    reply_submit_error(r, st, v, failed, batch);
}

/* Submits events (doc NULL), or the input document doc for the source's
 * map program to make the events of (ABI 1.2 submit_mapped; events NULL),
 * and suspends the connection until the durability callback. Consumes the
 * events. 1 when suspended; 0 when r->reply is set. */
static int submit_wait(http_req *r, ceb_event **events, size_t count, int batch,
                       const char *doc, size_t doc_len) {
  http_source *s = r->src;
  /* on the stack (about 9 KiB; libmicrohttpd threads have the default
   * stack): the host resets it and fills it during the call only */
  ceb_violations vbuf;
  ceb_violations *v = &vbuf;
  v->count = 0;
  size_t failed = 0;
  char err[512] = "";
  int key_limited = 0;
  ceb_submit_opts opts = {sizeof opts,
                          r->has_client ? r->client : NULL,
                          ceb_headers_get(&r->headers, "traceparent"),
                          v,
                          &failed,
                          &key_limited,
                          r->callback};
  pthread_mutex_lock(&s->lock);
  s->pending++;
  pthread_mutex_unlock(&s->lock);
  r->submitted = 1;
  atomic_fetch_add(&r->refs, 1); /* the callback's */
  int st;
  if (!doc)
    st = s->host->submit(s->inst, events, count, &opts, on_submitted, r);
  else if (CEB_HOST_HAS(s->host, submit_mapped_async))
    /* this thread goes on with the other connections while the program
     * runs; the refusals come in the callback (r->refusal) */
    st = s->host->submit_mapped_async(s->inst, doc, doc_len, &opts,
                                      on_submitted, r);
  else
    st = s->host->submit_mapped(s->inst, doc, doc_len, &opts, on_submitted, r,
                                err, sizeof err);
  if (st != CEB_OK) {
    atomic_fetch_sub(&r->refs, 1);
    pthread_mutex_lock(&s->lock);
    s->pending--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    r->submitted = 0;
    reply_refused(r, st, err, key_limited, v, failed, batch, doc != NULL);
    if (events) http_in_events_release(events, count, batch, 1);
    return 0;
  }
  /* the host holds the references now: free only the array */
  if (events) http_in_events_release(events, count, batch, 0);
  r->phase = PHASE_WAIT;
  pthread_mutex_lock(&s->lock);
  pthread_mutex_lock(&r->lock);
  int suspend = !r->done && !s->stopping;
  if (suspend) {
    r->suspended = 1;
    MHD_suspend_connection(r->conn);
    http_req_enlist(s, r);
  }
  int done = r->done;
  pthread_mutex_unlock(&r->lock);
  pthread_mutex_unlock(&s->lock);
  if (suspend) return 1;
  if (done)
    http_in_reply_submitted(r);
  else
    http_req_unavailable(r, "draining", "the intermediary is shutting down");
  return 0;
}

int http_in_submit(http_req *r, ceb_event **events, size_t count, int batch) {
  /* kept as text for the 202: the events are the host's once submitted */
  r->ids = http_ack_ids(events, count, &r->ids_len);
  if (!r->ids) {
    http_in_events_release(events, count, batch, 1);
    http_reply_problem(&r->reply, 500, "internal", "out of memory");
    return 0;
  }
  return submit_wait(r, events, count, batch, NULL, 0);
}

/* Collects the request's query arguments (libmicrohttpd decoded them);
 * "?flag" has no value: "". */
static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind,
                               const char *key, const char *value) {
  (void)kind;
  const char *v = value ? value : "";
  return ceb_headers_add(cls, key, v, strlen(v)) == CEB_OK ? MHD_YES : MHD_NO;
}

int http_in_submit_mapped(http_req *r, const char *method, const char *url) {
  http_source *s = r->src;
  ceb_headers query = {0};
  MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, add_arg, &query);
  http_in_doc_req in = {
      method,  url,   &query, &r->headers, r->has_client ? r->client : NULL,
      r->body, r->len};
  char *doc = NULL;
  size_t len = 0;
  int rc = http_in_doc_build(&in, &doc, &len);
  ceb_headers_clear(&query);
  if (rc != CEB_OK) {
    http_reply_problem(&r->reply, 500, "internal", "out of memory");
    return 0;
  }
  if (!CEB_HOST_HAS(s->host, submit_mapped)) { /* init refuses this */
    free(doc);
    http_reply_problem(&r->reply, 500, "internal", "no mapping service");
    return 0;
  }
  int suspended = submit_wait(r, NULL, 0, 1, doc, len);
  free(doc); /* borrowed by the host for the call only */
  return suspended;
}

void http_in_reply_webhook_seen(http_req *r, ceb_event **events, size_t count) {
  size_t ids_len = 0, len = 0;
  char *ids = http_ack_ids(events, count, &ids_len);
  char *body = ids ? http_ack_body(0, count, ids, ids_len, &len) : NULL;
  free(ids);
  if (body)
    http_reply_take(&r->reply, 202, "application/json", body, len);
  else
    http_reply_problem(&r->reply, 500, "internal", "out of memory");
}
