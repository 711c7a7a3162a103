/* ceb_host.submit_mapped (ABI 1.2): a source's ingress mapping. The
 * section's jq program turns the transport's input document into one or
 * more CloudEvents in the JSON format; they are decoded with the SDK's
 * codec (ceb_json_decode, the same checks as a structured-mode body) and
 * submitted exactly as submit() would (validation, filters, contracts,
 * dedupe, journal). Anything the program gets wrong is CEB_EMAPPING with
 * the reason, and nothing is taken. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/ceb.h>

#include "log/ceb_log.h"
#include "runtime/runtime_internal.h"

/* The output's first characters for a reason, control characters and
 * quotes kept out (the reason goes into logs and problem+json). */
static void excerpt(const char *s, char *out, size_t cap) {
  size_t n = 0;
  for (; *s && n + 4 < cap && n < 60; s++)
    out[n++] = (unsigned char)*s < 0x20 ? ' ' : *s;
  if (*s && n + 4 < cap) {
    memcpy(out + n, "...", 3);
    n += 3;
  }
  out[n] = '\0';
}

int cebr_mapping_error(ceb_runtime *rt, ceb_instance *inst, char *err,
                       size_t errlen, const char *fmt, ...) {
  char msg[600];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (err && errlen) snprintf(err, errlen, "mapping: %s", msg);
  cebr_reject_metric(rt, inst, "mapping");
  ceb_log_write(CEB_LOG_INFO, inst->component, NULL,
                "message refused by the mapping: %s", msg);
  return CEB_EMAPPING;
}

int cebr_map_decode(ceb_runtime *rt, ceb_instance *inst, const ceb_map_req *r,
                    ceb_event **events, char *err, size_t errlen) {
  size_t i = 0;
  for (const char *o = ceb_map_output(r, NULL); o;
       o = ceb_map_output(r, o), i++) {
    char ex[80];
    if (*o != '{') {
      excerpt(o, ex, sizeof ex);
      return cebr_mapping_error(
          rt, inst, err, errlen,
          "output %zu is not a JSON object (a CloudEvent in "
          "the JSON format): %s",
          i + 1, ex);
    }
    ceb_error e;
    ceb_error_clear(&e);
    if (ceb_json_decode(o, strlen(o), &events[i], &e) != CEB_OK)
      return cebr_mapping_error(rt, inst, err, errlen,
                                "output %zu is not a CloudEvent: %s (%s)",
                                i + 1, e.message, e.code);
  }
  return CEB_OK;
}

int cebr_mapped_submit(ceb_runtime *rt, ceb_instance *inst, ceb_map_req *r,
                       ceb_submit_opts *o, ceb_submit_cb cb, void *cb_arg,
                       char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (r->status == CEB_EIO) {
    /* no worker: not the message's fault, try again later (503) */
    if (err && errlen) snprintf(err, errlen, "mapping: %s", r->reason);
    ceb_log_write(CEB_LOG_ERROR, inst->component, NULL, "mapping: %s",
                  r->reason);
    return CEB_EIO;
  }
  if (r->status != CEB_OK)
    return cebr_mapping_error(rt, inst, err, errlen, "%s", r->reason);
  if (r->nout == 0) {
    ceb_map_req_clear(r);
    return cebr_mapping_error(rt, inst, err, errlen,
                              "the program output no event (an empty array, or "
                              "empty)");
  }
  ceb_event **events = calloc(r->nout, sizeof *events);
  if (!events) {
    ceb_map_req_clear(r);
    return CEB_ENOMEM;
  }
  size_t n = r->nout;
  int rc = cebr_map_decode(rt, inst, r, events, err, errlen);
  ceb_map_req_clear(r);
  if (rc == CEB_OK) {
    o->violations->count = 0;
    rc = cebr_submit(inst, events, n, o, cb, cb_arg);
    if (rc == CEB_OK) {
      free(events);
      return CEB_OK;
    }
    if (err && errlen) {
      if ((rc == CEB_EVALIDATION || rc == CEB_ETOOLARGE) &&
          o->violations->count)
        snprintf(err, errlen, "event %zu of the mapping: %s: %s",
                 *o->failed_index + 1, o->violations->items[0].code,
                 o->violations->items[0].message);
      else
        snprintf(err, errlen, "%s", ceb_strerror(rc));
    }
  }
  for (size_t i = 0; i < n; i++)
    ceb_event_unref(events[i]);
  free(events);
  return rc;
}

int cebr_mapped_refusal(ceb_runtime *rt, ceb_instance *inst, char *err,
                        size_t errlen) {
  if (err && errlen) snprintf(err, errlen, "not accepting now");
  (void)inst;
  return atomic_load(&rt->draining) || !rt->started ? CEB_ESHUTDOWN
         : !ceb_store_writable(rt->store, NULL, 0)  ? CEB_EIO
                                                    : CEB_EBUSY;
}

int cebr_submit_mapped(ceb_instance *inst, const char *doc, size_t len,
                       const ceb_submit_opts *opts, ceb_submit_cb cb,
                       void *cb_arg, char *err, size_t errlen) {
  if (err && errlen) err[0] = '\0';
  ceb_runtime *rt = cebr_of(inst);
  if (!rt || !doc || !cb || inst->role != CEB_ROLE_SOURCE) {
    if (err && errlen) snprintf(err, errlen, "submit_mapped: bad arguments");
    return CEB_EINVAL;
  }
  rt_inst *d = inst->runtime_data;
  if (!d || d->map_prog < 0 || !rt->mapper) {
    if (err && errlen)
      snprintf(err, errlen, "submit_mapped: [source %s] has no map",
               inst->name);
    return CEB_EINVAL;
  }
  /* the cheap refusals first: no program runs for a message that cannot
   * be taken anyway */
  if (!ceb_runtime_ready(rt)) return cebr_mapped_refusal(rt, inst, err, errlen);
  ceb_map_req r = {.program = (uint32_t)d->map_prog,
                   .flags = CEB_MAP_EXPAND,
                   .input = doc,
                   .input_len = len};
  int rc = ceb_mapper_run(rt->mapper, &r, 1);
  if (rc != CEB_OK) return rc;
  /* our own outputs: a summary of the first violation for err */
  ceb_violations local;
  size_t failed = 0;
  ceb_submit_opts o = {.struct_size = sizeof o};
  /* the caller's members as far as its struct_size reaches (a plugin
   * built before 1.2 has no key_limited) */
  if (opts && opts->struct_size >= offsetof(ceb_submit_opts, key_limited))
    memcpy(&o, opts,
           opts->struct_size < sizeof o ? opts->struct_size : sizeof o);
  o.struct_size = sizeof o;
  if (!o.violations) o.violations = &local;
  if (!o.failed_index) o.failed_index = &failed;
  return cebr_mapped_submit(rt, inst, &r, &o, cb, cb_arg, err, errlen);
}
