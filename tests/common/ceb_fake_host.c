#include "ceb_fake_host.h"
#include "store/ceb_store.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include <jansson.h>

typedef struct ceb_fake_pending {
  struct ceb_fake_pending *next;
  ceb_submit_cb cb;
  void *arg;
  size_t count;
} ceb_fake_pending;

typedef struct ceb_fake_idem {
  struct ceb_fake_idem *next;
  char *client, *key, *fingerprint;
  int done;
  int status;
  char *content_type;
  char *body;
  size_t body_len;
} ceb_fake_idem;

typedef struct ceb_fake_contract {
  struct ceb_fake_contract *next;
  char *name, *version, *doc;
  size_t len;
} ceb_fake_contract;

static ceb_fake_host *fake_of(ceb_instance *inst) {
  return (ceb_fake_host *)inst->runtime_data;
}

static void fake_log(ceb_instance *inst, ceb_log_level level, const char *fmt,
                     ...) {
  static const char *const lv[] = {"ERROR", "WARN", "INFO", "DEBUG"};
  va_list ap;
  va_start(ap, fmt);
  char msg[2048];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s [%s] %s\n", lv[level & 3], inst->component, msg);
}

static void run_cb(ceb_fake_pending *p, int status) {
  ceb_submit_result r = {sizeof r, status, status == CEB_OK ? p->count : 0, 0};
  p->cb(p->arg, &r);
}

static void *committer_main(void *arg) {
  ceb_fake_host *f = arg;
  pthread_mutex_lock(&f->lock);
  for (;;) {
    while (!f->stop && !f->queue_head)
      pthread_cond_wait(&f->cond, &f->lock);
    if (!f->queue_head && f->stop)
      break;
    ceb_fake_pending *p = f->queue_head;
    f->queue_head = p->next;
    if (!f->queue_head)
      f->queue_tail = NULL;
    pthread_mutex_unlock(&f->lock);
    run_cb(p, CEB_OK);
    free(p);
    pthread_mutex_lock(&f->lock);
    f->ncommitted++;
    pthread_cond_broadcast(&f->cond);
  }
  pthread_mutex_unlock(&f->lock);
  return NULL;
}

static int fake_submit(ceb_instance *inst, ceb_event *const *events,
                       size_t count, const ceb_submit_opts *opts,
                       ceb_submit_cb cb, void *cb_arg) {
  ceb_fake_host *f = fake_of(inst);
  if (!events || count == 0 || !cb)
    return CEB_EINVAL;
  pthread_mutex_lock(&f->lock);
  if (f->mode == CEB_FAKE_REFUSE) {
    int st = f->refuse_status;
    pthread_mutex_unlock(&f->lock);
    return st;
  }
  ceb_fake_pending *p = calloc(1, sizeof *p);
  if (!p || (f->nevents + count > f->capevents &&
             !(f->capevents = (f->nevents + count) * 2,
               f->events = realloc(f->events, f->capevents * sizeof *f->events),
               f->clients =
                   realloc(f->clients, f->capevents * sizeof *f->clients),
               f->traces =
                   realloc(f->traces, f->capevents * sizeof *f->traces)))) {
    pthread_mutex_unlock(&f->lock);
    free(p);
    return CEB_ENOMEM;
  }
  /* The host takes over the caller's references on CEB_OK. */
  for (size_t i = 0; i < count; i++) {
    f->events[f->nevents] = events[i];
    f->clients[f->nevents] =
        opts && opts->client ? strdup(opts->client) : NULL;
    f->traces[f->nevents] =
        opts && opts->traceparent ? strdup(opts->traceparent) : NULL;
    f->nevents++;
  }
  f->nsubmits++;
  p->cb = cb;
  p->arg = cb_arg;
  p->count = count;
  if (f->mode == CEB_FAKE_COMMIT_HOLD) {
    p->next = f->pending;
    f->pending = p;
  } else {
    if (f->queue_tail)
      f->queue_tail->next = p;
    else
      f->queue_head = p;
    f->queue_tail = p;
  }
  pthread_cond_broadcast(&f->cond);
  pthread_mutex_unlock(&f->lock);
  return CEB_OK;
}

/* Keeps a copy of an input document (ceb_fake_doc); CEB_OK or
 * CEB_ENOMEM. */
static int record_doc(ceb_fake_host *f, const char *doc, size_t len) {
  pthread_mutex_lock(&f->lock);
  char *copy = malloc(len + 1);
  if (copy && f->ndocs == f->capdocs) {
    size_t cap = f->capdocs ? f->capdocs * 2 : 16;
    char **d = realloc(f->docs, cap * sizeof *d);
    if (d) {
      f->docs = d;
      f->capdocs = cap;
    }
  }
  if (!copy || f->ndocs == f->capdocs) {
    pthread_mutex_unlock(&f->lock);
    free(copy);
    return CEB_ENOMEM;
  }
  memcpy(copy, doc, len);
  copy[len] = '\0';
  f->docs[f->ndocs++] = copy;
  pthread_mutex_unlock(&f->lock);
  return CEB_OK;
}

/* ABI 1.2: records the document, runs the test's map function, then
 * continues as submit with what it made (nothing taken on a refusal). */
static int fake_submit_mapped(ceb_instance *inst, const char *doc, size_t len,
                              const ceb_submit_opts *opts, ceb_submit_cb cb,
                              void *cb_arg, char *err, size_t errlen) {
  ceb_fake_host *f = fake_of(inst);
  if (err && errlen)
    err[0] = '\0';
  if (!doc || !cb)
    return CEB_EINVAL;
  if (record_doc(f, doc, len) != CEB_OK)
    return CEB_ENOMEM;
  pthread_mutex_lock(&f->lock);
  ceb_fake_map_fn fn = f->map_fn;
  void *arg = f->map_arg;
  pthread_mutex_unlock(&f->lock);
  if (!fn) {
    if (err && errlen)
      snprintf(err, errlen, "the section has no map");
    return CEB_EINVAL;
  }
  ceb_event *evs[64];
  size_t n = 0;
  char why[512] = "";
  int st = fn(arg, doc, len, evs, 64, &n, why, sizeof why);
  if (st == CEB_OK && n == 0) {
    st = CEB_EMAPPING;
    snprintf(why, sizeof why, "the mapping output no event");
  }
  if (st == CEB_OK)
    st = fake_submit(inst, evs, n, opts, cb, cb_arg);
  if (st != CEB_OK) {
    for (size_t i = 0; i < n; i++)
      ceb_event_unref(evs[i]);
    if (err && errlen)
      snprintf(err, errlen, "%s", why);
  }
  return st;
}

/* ABI 1.3: each document as fake_submit_mapped maps it, the events of
 * every one mapped submitted as one unit (one nsubmits, one callback); a
 * document the map function refuses gets its status and reason. Only
 * when ceb_fake_host_batch_mapping enabled it. */
static int fake_submit_mapped_batch(ceb_instance *inst, ceb_mapped_doc *docs,
                                    size_t n, const ceb_submit_opts *opts,
                                    ceb_submit_cb cb, void *cb_arg) {
  ceb_fake_host *f = fake_of(inst);
  if (!docs || !n || !cb)
    return CEB_EINVAL;
  pthread_mutex_lock(&f->lock);
  ceb_fake_map_fn fn = f->map_fn;
  void *arg = f->map_arg;
  f->nmapped_batches++;
  pthread_mutex_unlock(&f->lock);
  ceb_event **all = calloc(n * 64, sizeof *all);
  size_t total = 0;
  int rc = all && fn ? CEB_OK : all ? CEB_EINVAL : CEB_ENOMEM;
  for (size_t i = 0; rc == CEB_OK && i < n; i++) {
    rc = record_doc(f, docs[i].doc, docs[i].len);
    if (rc != CEB_OK)
      break;
    size_t k = 0;
    docs[i].reason[0] = '\0';
    docs[i].status = fn(arg, docs[i].doc, docs[i].len, all + total, 64, &k,
                        docs[i].reason, sizeof docs[i].reason);
    if (docs[i].status == CEB_OK && k == 0) {
      docs[i].status = CEB_EMAPPING;
      snprintf(docs[i].reason, sizeof docs[i].reason,
               "mapping: the mapping output no event");
    }
    if (docs[i].status != CEB_OK) {
      for (size_t j = 0; j < k; j++)
        ceb_event_unref(all[total + j]);
      k = 0;
    }
    docs[i].nevents = k;
    total += k;
  }
  if (rc == CEB_OK && total)
    rc = fake_submit(inst, all, total, opts, cb, cb_arg);
  if (rc != CEB_OK) {
    for (size_t j = 0; j < total; j++)
      ceb_event_unref(all[j]);
    for (size_t i = 0; i < n; i++) {
      docs[i].status = rc;
      docs[i].nevents = 0;
    }
  }
  free(all);
  return rc;
}

/* ABI 1.4: as fake_submit_mapped, the outcome through the callback: a
 * refusal calls cb before returning (refused = 1, the reason), which the
 * host may do; a mapped document continues as submit. Only when
 * ceb_fake_host_async_mapping enabled it. */
static int fake_submit_mapped_async(ceb_instance *inst, const char *doc,
                                    size_t len, const ceb_submit_opts *opts,
                                    ceb_submit_cb cb, void *cb_arg) {
  ceb_fake_host *f = fake_of(inst);
  if (!doc || !cb)
    return CEB_EINVAL;
  pthread_mutex_lock(&f->lock);
  f->nmapped_async++;
  pthread_mutex_unlock(&f->lock);
  char why[512] = "";
  int st =
      fake_submit_mapped(inst, doc, len, opts, cb, cb_arg, why, sizeof why);
  if (st == CEB_OK || st == CEB_ENOMEM)
    return st;
  ceb_submit_result res = {.struct_size = sizeof res,
                           .status = st,
                           .refused = 1,
                           .key_limited = opts && opts->key_limited
                                              ? *opts->key_limited
                                              : 0,
                           .reason = why};
  cb(cb_arg, &res);
  return CEB_OK;
}

void ceb_fake_host_async_mapping(ceb_fake_host *f) {
  pthread_mutex_lock(&f->lock);
  f->host.submit_mapped_async = fake_submit_mapped_async;
  pthread_mutex_unlock(&f->lock);
}

size_t ceb_fake_mapped_async(ceb_fake_host *f) {
  pthread_mutex_lock(&f->lock);
  size_t n = f->nmapped_async;
  pthread_mutex_unlock(&f->lock);
  return n;
}

void ceb_fake_host_batch_mapping(ceb_fake_host *f) {
  pthread_mutex_lock(&f->lock);
  f->host.submit_mapped_batch = fake_submit_mapped_batch;
  pthread_mutex_unlock(&f->lock);
}

size_t ceb_fake_mapped_batches(ceb_fake_host *f) {
  pthread_mutex_lock(&f->lock);
  size_t n = f->nmapped_batches;
  pthread_mutex_unlock(&f->lock);
  return n;
}

void ceb_fake_set_map(ceb_fake_host *f, ceb_fake_map_fn fn, void *arg) {
  pthread_mutex_lock(&f->lock);
  f->map_fn = fn;
  f->map_arg = arg;
  pthread_mutex_unlock(&f->lock);
}

size_t ceb_fake_doc_count(ceb_fake_host *f) {
  pthread_mutex_lock(&f->lock);
  size_t n = f->ndocs;
  pthread_mutex_unlock(&f->lock);
  return n;
}

char *ceb_fake_doc(ceb_fake_host *f, size_t i) {
  pthread_mutex_lock(&f->lock);
  char *d = i < f->ndocs ? strdup(f->docs[i]) : NULL;
  pthread_mutex_unlock(&f->lock);
  return d;
}

static int fake_accepting(ceb_instance *inst) {
  ceb_fake_host *f = fake_of(inst);
  pthread_mutex_lock(&f->lock);
  int a = f->accepting;
  pthread_mutex_unlock(&f->lock);
  return a;
}

static void fake_settle(ceb_instance *inst, ceb_delivery *d,
                        const ceb_settle_info *info) {
  ceb_fake_host *f = fake_of(inst);
  pthread_mutex_lock(&f->lock);
  if (f->nsettles == f->capsettles) {
    f->capsettles = f->capsettles ? f->capsettles * 2 : 16;
    f->settles = realloc(f->settles, f->capsettles * sizeof *f->settles);
  }
  ceb_fake_settle *s = &f->settles[f->nsettles++];
  memset(s, 0, sizeof *s);
  const char *id = ceb_event_get(d->event, "id");
  snprintf(s->event_id, sizeof s->event_id, "%s", id ? id : "");
  snprintf(s->route, sizeof s->route, "%s", d->route ? d->route : "");
  s->attempt = d->attempt;
  s->info = *info;
  snprintf(s->reason, sizeof s->reason, "%s", info->reason ? info->reason : "");
  snprintf(s->detail, sizeof s->detail, "%s", info->detail ? info->detail : "");
  s->info.reason = NULL;
  s->info.detail = NULL;
  pthread_cond_broadcast(&f->cond);
  pthread_mutex_unlock(&f->lock);
}

static void fake_metric(ceb_instance *inst, ceb_metric_kind kind,
                        const char *name, const char *labels, double value) {
  ceb_fake_host *f = fake_of(inst);
  char full[256];
  snprintf(full, sizeof full, "cebridge_%s", name);
  if (kind == CEB_METRIC_COUNTER)
    ceb_metrics_add(f->metrics, full, labels, value);
  else if (kind == CEB_METRIC_GAUGE)
    ceb_metrics_set(f->metrics, full, labels, value);
  else
    ceb_metrics_observe(f->metrics, full, labels, value);
}

static int64_t fake_now(ceb_instance *inst) {
  ceb_fake_host *f = fake_of(inst);
  pthread_mutex_lock(&f->lock);
  int64_t c = f->clock_ms;
  pthread_mutex_unlock(&f->lock);
  if (c)
    return c;
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static ceb_fake_idem *idem_find(ceb_fake_host *f, const char *client,
                                const char *key) {
  for (ceb_fake_idem *r = f->idem; r; r = r->next)
    if (strcmp(r->client, client ? client : "") == 0 &&
        strcmp(r->key, key) == 0)
      return r;
  return NULL;
}

static int fake_idem_begin(ceb_instance *inst, const char *client,
                           const char *key, const char *fingerprint,
                           ceb_idem_record *rec) {
  ceb_fake_host *f = fake_of(inst);
  memset(rec, 0, sizeof *rec);
  rec->struct_size = sizeof *rec;
  pthread_mutex_lock(&f->lock);
  ceb_fake_idem *r = idem_find(f, client, key);
  if (!r) {
    r = calloc(1, sizeof *r);
    r->client = strdup(client ? client : "");
    r->key = strdup(key);
    r->fingerprint = strdup(fingerprint ? fingerprint : "");
    r->next = f->idem;
    f->idem = r;
    rec->state = CEB_IDEM_NEW;
  } else if (strcmp(r->fingerprint, fingerprint ? fingerprint : "") != 0) {
    rec->state = CEB_IDEM_MISMATCH;
  } else if (!r->done) {
    rec->state = CEB_IDEM_IN_FLIGHT;
  } else {
    rec->state = CEB_IDEM_REPLAY;
    rec->http_status = r->status;
    rec->content_type = r->content_type ? strdup(r->content_type) : NULL;
    rec->body = malloc(r->body_len + 1);
    memcpy(rec->body, r->body, r->body_len);
    rec->body[r->body_len] = '\0';
    rec->body_len = r->body_len;
  }
  pthread_mutex_unlock(&f->lock);
  return CEB_OK;
}

static int fake_idem_finish(ceb_instance *inst, const char *client,
                            const char *key, int http_status,
                            const char *content_type, const char *body,
                            size_t body_len) {
  ceb_fake_host *f = fake_of(inst);
  pthread_mutex_lock(&f->lock);
  ceb_fake_idem *r = idem_find(f, client, key);
  int st = CEB_ENOTFOUND;
  if (r && !r->done) {
    r->done = 1;
    r->status = http_status;
    r->content_type = content_type ? strdup(content_type) : NULL;
    r->body = malloc(body_len + 1);
    memcpy(r->body, body ? body : "", body_len);
    r->body_len = body_len;
    st = CEB_OK;
  }
  pthread_mutex_unlock(&f->lock);
  return st;
}

static int fake_contract_get(ceb_instance *inst, const char *name,
                             const char *version, char **doc, size_t *len) {
  ceb_fake_host *f = fake_of(inst);
  int st = CEB_ENOTFOUND;
  *doc = NULL;
  pthread_mutex_lock(&f->lock);
  for (ceb_fake_contract *c = f->contracts; c; c = c->next)
    if (strcmp(c->name, name) == 0 && strcmp(c->version, version) == 0) {
      *doc = malloc(c->len + 1);
      if (*doc) {
        memcpy(*doc, c->doc, c->len + 1);
        *len = c->len;
      }
      st = *doc ? CEB_OK : CEB_ENOMEM;
      break;
    }
  pthread_mutex_unlock(&f->lock);
  return st;
}

/* The host's listing shape (name, version, sha256, fetched_at), oldest
 * put first; sha256 is not computed here ("" ). */
static int fake_contract_list(ceb_instance *inst, const char *name,
                              char **json, size_t *len) {
  ceb_fake_host *f = fake_of(inst);
  json_t *a = json_array();
  pthread_mutex_lock(&f->lock);
  for (ceb_fake_contract *c = f->contracts; c; c = c->next)
    if (!name || strcmp(c->name, name) == 0)
      json_array_insert_new(a, 0,
                            json_pack("{s:s,s:s,s:s,s:i}", "name", c->name,
                                      "version", c->version, "sha256", "",
                                      "fetched_at", 0));
  pthread_mutex_unlock(&f->lock);
  *json = json_dumps(a, JSON_COMPACT);
  json_decref(a);
  if (!*json) return CEB_ENOMEM;
  *len = strlen(*json);
  return CEB_OK;
}

/* The job status of a submitted event as the fake knows it: "pending"
 * (it never delivers), for the client that submitted it only. */
static int fake_event_status(ceb_instance *inst, const char *client,
                             const char *id, char **json, size_t *len) {
  ceb_fake_host *f = fake_of(inst);
  int st = CEB_ENOTFOUND;
  *json = NULL;
  pthread_mutex_lock(&f->lock);
  for (size_t i = f->nevents; i-- > 0;) {
    const char *eid = ceb_event_get(f->events[i], "id");
    const char *c = f->clients[i] ? f->clients[i] : "";
    if (eid && strcmp(eid, id) == 0 && strcmp(c, client ? client : "") == 0) {
      json_t *o = json_pack("{s:s,s:s}", "id", id, "status", "pending");
      *json = o ? json_dumps(o, JSON_COMPACT) : NULL;
      json_decref(o);
      st = *json ? CEB_OK : CEB_ENOMEM;
      if (*json) *len = strlen(*json);
      break;
    }
  }
  pthread_mutex_unlock(&f->lock);
  return st;
}

static void idem_free(ceb_fake_idem *r) {
  free(r->client);
  free(r->key);
  free(r->fingerprint);
  free(r->content_type);
  free(r->body);
  free(r);
}

static void fake_idem_abort(ceb_instance *inst, const char *client,
                            const char *key) {
  ceb_fake_host *f = fake_of(inst);
  pthread_mutex_lock(&f->lock);
  for (ceb_fake_idem **pp = &f->idem; *pp; pp = &(*pp)->next) {
    ceb_fake_idem *r = *pp;
    if (!r->done && strcmp(r->client, client ? client : "") == 0 &&
        strcmp(r->key, key) == 0) {
      *pp = r->next;
      idem_free(r);
      break;
    }
  }
  pthread_mutex_unlock(&f->lock);
}

static int fake_contract_put(ceb_instance *inst, const char *name,
                             const char *version, const char *document,
                             size_t len, const char *provenance) {
  (void)provenance;
  ceb_fake_host *f = fake_of(inst);
  int st = CEB_OK;
  pthread_mutex_lock(&f->lock);
  for (ceb_fake_contract *c = f->contracts; c; c = c->next)
    if (strcmp(c->name, name) == 0 && strcmp(c->version, version) == 0) {
      st = (c->len == len && memcmp(c->doc, document, len) == 0)
               ? CEB_EDUPLICATE
               : CEB_ECONFLICT;
      break;
    }
  if (st == CEB_OK) {
    ceb_fake_contract *c = calloc(1, sizeof *c);
    c->name = strdup(name);
    c->version = strdup(version);
    c->doc = malloc(len + 1);
    memcpy(c->doc, document, len);
    c->doc[len] = '\0';
    c->len = len;
    c->next = f->contracts;
    f->contracts = c;
  }
  pthread_mutex_unlock(&f->lock);
  return st;
}

ceb_fake_host *ceb_fake_host_new(const char *name, uint32_t role) {
  ceb_fake_host *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  f->host = (ceb_host){
      .struct_size = sizeof(ceb_host),
      .abi_major = CEB_ABI_MAJOR,
      .abi_minor = CEB_ABI_MINOR,
      .log = fake_log,
      .submit = fake_submit,
      .accepting = fake_accepting,
      .settle = fake_settle,
      .metric = fake_metric,
      .now_ms = fake_now,
      .idem_begin = fake_idem_begin,
      .idem_finish = fake_idem_finish,
      .idem_abort = fake_idem_abort,
      .contract_put = fake_contract_put,
      .submit_mapped = fake_submit_mapped,
      .contract_get = fake_contract_get,
      .contract_list = fake_contract_list,
      .event_status = fake_event_status,
  };
  f->inst.name = strdup(name);
  f->inst.role = role;
  snprintf(f->inst.component, sizeof f->inst.component, "%s:test:%s",
           role == CEB_ROLE_SOURCE ? "source"
           : role == CEB_ROLE_SINK ? "sink"
                                   : "contracts",
           name);
  f->inst.runtime_data = f;
  f->metrics = ceb_metrics_new();
  f->accepting = 1;
  f->refuse_status = CEB_EBUSY;
  pthread_mutex_init(&f->lock, NULL);
  pthread_cond_init(&f->cond, NULL);
  pthread_create(&f->committer, NULL, committer_main, f);
  return f;
}

void ceb_fake_commit(ceb_fake_host *f, int status) {
  pthread_mutex_lock(&f->lock);
  ceb_fake_pending *p = f->pending, *rev = NULL;
  f->pending = NULL;
  pthread_mutex_unlock(&f->lock);
  while (p) { /* restore submit order */
    ceb_fake_pending *n = p->next;
    p->next = rev;
    rev = p;
    p = n;
  }
  while (rev) {
    ceb_fake_pending *n = rev->next;
    run_cb(rev, status);
    free(rev);
    pthread_mutex_lock(&f->lock);
    f->ncommitted++;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
    rev = n;
  }
}

void ceb_fake_host_free(ceb_fake_host *f) {
  if (!f)
    return;
  pthread_mutex_lock(&f->lock);
  f->stop = 1;
  pthread_cond_broadcast(&f->cond);
  pthread_mutex_unlock(&f->lock);
  pthread_join(f->committer, NULL);
  for (ceb_fake_pending *p = f->pending, *n; p; p = n) {
    n = p->next;
    free(p);
  }
  for (size_t i = 0; i < f->nevents; i++) {
    ceb_event_unref(f->events[i]);
    free(f->clients[i]);
    free(f->traces[i]);
  }
  free(f->events);
  free(f->clients);
  free(f->traces);
  for (size_t i = 0; i < f->ndocs; i++)
    free(f->docs[i]);
  free(f->docs);
  free(f->settles);
  for (ceb_fake_idem *r = f->idem, *n; r; r = n) {
    n = r->next;
    idem_free(r);
  }
  for (ceb_fake_contract *c = f->contracts, *n; c; c = n) {
    n = c->next;
    free(c->name);
    free(c->version);
    free(c->doc);
    free(c);
  }
  ceb_store_close(f->store); /* settles queued appends first */
  ceb_metrics_free(f->metrics);
  pthread_cond_destroy(&f->cond);
  pthread_mutex_destroy(&f->lock);
  free(f->inst.name);
  free(f);
}

#define LOCKED_READ(f, expr)                                                   \
  do {                                                                         \
    pthread_mutex_lock(&(f)->lock);                                            \
    size_t v_ = (expr);                                                        \
    pthread_mutex_unlock(&(f)->lock);                                          \
    return v_;                                                                 \
  } while (0)

size_t ceb_fake_event_count(ceb_fake_host *f) { LOCKED_READ(f, f->nevents); }
size_t ceb_fake_committed_count(ceb_fake_host *f) {
  LOCKED_READ(f, f->ncommitted);
}
size_t ceb_fake_settle_count(ceb_fake_host *f) { LOCKED_READ(f, f->nsettles); }

ceb_event *ceb_fake_event(ceb_fake_host *f, size_t i) {
  pthread_mutex_lock(&f->lock);
  ceb_event *ev = i < f->nevents ? ceb_event_ref(f->events[i]) : NULL;
  pthread_mutex_unlock(&f->lock);
  return ev;
}

void ceb_fake_event_client(ceb_fake_host *f, size_t i, char *buf, size_t n) {
  pthread_mutex_lock(&f->lock);
  snprintf(buf, n, "%s", i < f->nevents && f->clients[i] ? f->clients[i] : "");
  pthread_mutex_unlock(&f->lock);
}

void ceb_fake_event_trace(ceb_fake_host *f, size_t i, char *buf, size_t n) {
  pthread_mutex_lock(&f->lock);
  snprintf(buf, n, "%s", i < f->nevents && f->traces[i] ? f->traces[i] : "");
  pthread_mutex_unlock(&f->lock);
}

int ceb_fake_settle_get(ceb_fake_host *f, size_t i, ceb_fake_settle *out) {
  pthread_mutex_lock(&f->lock);
  int ok = i < f->nsettles;
  if (ok) {
    *out = f->settles[i];
    out->info.reason = out->reason;
    out->info.detail = out->detail;
  }
  pthread_mutex_unlock(&f->lock);
  return ok;
}

static int wait_count(ceb_fake_host *f, size_t *counter, size_t n,
                      int64_t timeout_ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += timeout_ms / 1000;
  dl.tv_nsec += (timeout_ms % 1000) * 1000000;
  if (dl.tv_nsec >= 1000000000) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000;
  }
  pthread_mutex_lock(&f->lock);
  int rc = 0;
  while (*counter < n && rc == 0)
    rc = pthread_cond_timedwait(&f->cond, &f->lock, &dl);
  int ok = *counter >= n;
  pthread_mutex_unlock(&f->lock);
  return ok;
}

int ceb_fake_wait_events(ceb_fake_host *f, size_t n, int64_t timeout_ms) {
  return wait_count(f, &f->nevents, n, timeout_ms);
}
int ceb_fake_wait_settles(ceb_fake_host *f, size_t n, int64_t timeout_ms) {
  return wait_count(f, &f->nsettles, n, timeout_ms);
}

ceb_delivery *ceb_fake_delivery_new(ceb_fake_host *f, ceb_event *ev,
                                    const char *route, const char *topic,
                                    uint32_t attempt) {
  ceb_delivery *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  d->struct_size = sizeof *d;
  d->event = ceb_event_ref(ev);
  d->route = route ? strdup(route) : NULL;
  d->topic = topic ? strdup(topic) : NULL;
  char key[320];
  const char *src = ceb_event_get(ev, "source"), *id = ceb_event_get(ev, "id");
  snprintf(key, sizeof key, "%s/%s/%s", route ? route : "",
           src ? src : "", id ? id : "");
  d->idempotency_key = strdup(key);
  d->attempt = attempt;
  d->deadline_ms = fake_now(&f->inst) + 15000;
  return d;
}

void ceb_fake_delivery_free(ceb_delivery *d) {
  if (!d)
    return;
  ceb_event_unref((ceb_event *)d->event);
  free((char *)d->route);
  free((char *)d->topic);
  free((char *)d->idempotency_key);
  free(d);
}
