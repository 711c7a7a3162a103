/* The ceb_host table: every function a plugin may call. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "log/ceb_log.h"
#include "runtime/runtime_internal.h"
#include "runtime/runtime_job.h"

ceb_runtime *cebr_of(ceb_instance *inst) {
  if (!inst || !inst->rt) {
    ceb_log_error("runtime: host call with an instance the runtime does not "
                  "know");
    return NULL;
  }
  return inst->rt;
}

static void host_log(ceb_instance *inst, ceb_log_level level, const char *fmt,
                     ...) CEB_PRINTF(3, 4);
static void host_log(ceb_instance *inst, ceb_log_level level, const char *fmt,
                     ...) {
  va_list ap;
  int capture = inst ? atomic_load(&inst->capture) : CEB_CAPTURE_OFF;
  if (capture != CEB_CAPTURE_OFF && level == CEB_LOG_ERROR) {
    /* init's reasons: the bridge reports them with file:line */
    pthread_mutex_lock(&inst->capture_lock);
    size_t used = strlen(inst->init_error);
    if (used && used + 2 < sizeof inst->init_error) {
      memcpy(inst->init_error + used, "; ", 3);
      used += 2;
    }
    va_start(ap, fmt);
    if (used < sizeof inst->init_error)
      vsnprintf(inst->init_error + used, sizeof inst->init_error - used, fmt,
                ap);
    va_end(ap);
    pthread_mutex_unlock(&inst->capture_lock);
  }
  if (capture == CEB_CAPTURE_QUIET) return;
  va_start(ap, fmt);
  ceb_log_vwrite(level, inst ? inst->component : NULL, NULL, fmt, ap);
  va_end(ap);
}

static int host_accepting(ceb_instance *inst) {
  ceb_runtime *rt = cebr_of(inst);
  return rt ? ceb_runtime_ready(rt) : 0;
}

static void host_settle(ceb_instance *inst, ceb_delivery *d,
                        const ceb_settle_info *info) {
  ceb_runtime *rt = cebr_of(inst);
  if (rt) ceb_engine_settle(rt->engine, d, info);
}

static void host_metric(ceb_instance *inst, ceb_metric_kind kind,
                        const char *name, const char *labels, double value) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt || !rt->metrics || !name || !*name) return;
  char full[160], lab[512];
  snprintf(full, sizeof full, "cebridge_%s", name);
  snprintf(lab, sizeof lab, "%s%s%s", inst->labels,
           labels && *labels && inst->labels[0] ? "," : "",
           labels ? labels : "");
  switch (kind) {
  case CEB_METRIC_COUNTER:
    ceb_metrics_add(rt->metrics, full, lab, value);
    break;
  case CEB_METRIC_GAUGE:
    ceb_metrics_set(rt->metrics, full, lab, value);
    break;
  case CEB_METRIC_HISTOGRAM:
    ceb_metrics_observe(rt->metrics, full, lab, value);
    break;
  }
}

static int64_t host_now(ceb_instance *inst) {
  return cebr_now(inst ? inst->rt : NULL);
}

static int host_idem_begin(ceb_instance *inst, const char *client,
                           const char *key, const char *fingerprint,
                           ceb_idem_record *record) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt) return CEB_EINVAL;
  if (!record || record->struct_size < sizeof(ceb_idem_record))
    return CEB_EINVAL;
  ceb_idem_result r;
  int rc = ceb_store_idem_begin(rt->store, client, key, fingerprint,
                                cebr_now(rt), &r);
  if (rc != CEB_OK) return rc;
  record->state = (ceb_idem_state)r.state;
  record->http_status = r.http_status;
  record->content_type = r.content_type; /* malloc'd; ceb_free is free */
  record->body = r.body;
  record->body_len = r.body_len;
  return CEB_OK;
}

static int host_idem_finish(ceb_instance *inst, const char *client,
                            const char *key, int http_status,
                            const char *content_type, const char *body,
                            size_t body_len) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt) return CEB_EINVAL;
  return ceb_store_idem_finish(rt->store, client, key, http_status,
                               content_type, body, body_len, cebr_now(rt),
                               rt->idem_ttl_ms);
}

static void host_idem_abort(ceb_instance *inst, const char *client,
                            const char *key) {
  ceb_runtime *rt = cebr_of(inst);
  if (rt && ceb_store_idem_abort(rt->store, client, key) != CEB_OK)
    ceb_log_error("runtime: dropping an idempotency reservation failed");
}

static int host_contract_put(ceb_instance *inst, const char *name,
                             const char *version, const char *document,
                             size_t len, const char *provenance) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt) return CEB_EINVAL;
  if (inst->role != CEB_ROLE_CONTRACTS) return CEB_EFORBIDDEN;
  return ceb_store_contract_put(rt->store, name, version, document, len,
                                provenance, cebr_now(rt));
}

static int host_contract_get(ceb_instance *inst, const char *name,
                             const char *version, char **doc, size_t *len) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt || !name || !version || !doc || !len) return CEB_EINVAL;
  *doc = ceb_store_contract_get(rt->store, name, version, len);
  return *doc ? CEB_OK : CEB_ENOTFOUND;
}

/* The partner's view of the register: what the admin API's /v1/contracts
 * shows an operator, less provenance and conflicts. */
static int host_contract_list(ceb_instance *inst, const char *name, char **json,
                              size_t *len) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt || !json || !len) return CEB_EINVAL;
  *json = NULL;
  json_t *all = ceb_store_contract_list(rt->store, name);
  if (!all) return CEB_EIO;
  json_t *out = json_array();
  size_t i;
  json_t *e;
  json_array_foreach(all, i, e) {
    json_t *o = json_pack(
        "{s:O,s:O,s:O,s:O}", "name", json_object_get(e, "name"), "version",
        json_object_get(e, "version"), "sha256", json_object_get(e, "sha256"),
        "fetched_at", json_object_get(e, "fetched_at"));
    if (!o || json_array_append_new(out, o) != 0) {
      json_decref(out);
      out = NULL;
      break;
    }
  }
  json_decref(all);
  *json = out ? json_dumps(out, JSON_COMPACT) : NULL;
  json_decref(out);
  if (!*json) return CEB_ENOMEM;
  *len = strlen(*json);
  return CEB_OK;
}

/* The client's view of its own event (runtime_job.c). */
static int host_event_status(ceb_instance *inst, const char *client,
                             const char *id, char **json, size_t *len) {
  ceb_runtime *rt = cebr_of(inst);
  if (!rt || !id || !json || !len) return CEB_EINVAL;
  *json = NULL;
  json_t *o = NULL;
  int st = cebr_job_status(rt, client, id, &o);
  if (st != CEB_OK) return st;
  *json = json_dumps(o, JSON_COMPACT);
  json_decref(o);
  if (!*json) return CEB_ENOMEM;
  *len = strlen(*json);
  return CEB_OK;
}

/* ABI 1.3: whether a callbacks route takes inst's callbacks. */
static int host_callbacks(ceb_instance *inst) {
  ceb_runtime *rt = cebr_of(inst);
  return rt && cebr_callback_route(rt, inst->name) != NULL;
}

static const ceb_host k_host = {
    .struct_size = sizeof(ceb_host),
    .abi_major = CEB_ABI_MAJOR,
    .abi_minor = CEB_ABI_MINOR,
    .log = host_log,
    .submit = cebr_submit,
    .accepting = host_accepting,
    .settle = host_settle,
    .metric = host_metric,
    .now_ms = host_now,
    .idem_begin = host_idem_begin,
    .idem_finish = host_idem_finish,
    .idem_abort = host_idem_abort,
    .contract_put = host_contract_put,
    .queue_append = cebr_queue_append,
    .queue_fetch = cebr_queue_fetch,
    .queue_commit = cebr_queue_commit,
    .queue_stats = cebr_queue_stats,
    .queue_wake = cebr_queue_wake,
    .lead = cebr_lead,
    .submit_mapped = cebr_submit_mapped,
    .submit_mapped_batch = cebr_submit_mapped_batch,
    .contract_get = host_contract_get,
    .contract_list = host_contract_list,
    .event_status = host_event_status,
    .callbacks = host_callbacks,
    .submit_mapped_async = cebr_submit_mapped_async,
};

const ceb_host *cebr_host_table(void) {
  return &k_host;
}
