/* Checking one event against a loaded contract (the runtime's hook). */
#include "contracts/ceb_contract.h"

#include <ceb/codec.h>
#include <ceb/semver.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void ceb_contract_violation(ceb_violations *v, const char *code,
                            const char *attribute, const char *fmt, ...) {
  v->errors++;
  if (v->count >= CEB_MAX_VIOLATIONS) {
    v->truncated = 1;
    return;
  }
  ceb_violation *it = &v->items[v->count++];
  it->code = code;
  it->severity = CEB_SEV_ERROR;
  snprintf(it->attribute, sizeof it->attribute, "%s", attribute);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(it->message, sizeof it->message, fmt, ap);
  va_end(ap);
}

/* The last dotted version in a dataschema URI ("…/duo/1.2.0",
 * "…?version=1.2", "…/v1.2.0/…"), or -1. */
static int dataschema_version(const char *uri, ceb_semver *out) {
  int found = -1;
  for (const char *p = uri; *p; p++) {
    if (!(*p >= '0' && *p <= '9') ||
        (p > uri && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.')))
      continue;
    char tok[64];
    size_t n = strspn(p, "0123456789.");
    if (n >= sizeof tok) continue;
    memcpy(tok, p, n);
    tok[n] = '\0';
    while (n && tok[n - 1] == '.')
      tok[--n] = '\0';
    ceb_semver v;
    if (strchr(tok, '.') && ceb_semver_parse(tok, 1, &v) == 0) {
      *out = v;
      found = 0;
    }
  }
  return found;
}

static void check_dataschema(const ceb_contract *c, const char *ds,
                             ceb_violations *v) {
  ceb_semver named, held;
  if (dataschema_version(ds, &named) != 0)
    return; /* names no version: nothing to compare */
  if (ceb_semver_parse(c->version, 1, &held) != 0) return;
  /* Data written for an older minor of the same major reads under the
   * held version; a newer minor or another major may not. */
  if (named.major != held.major || ceb_semver_cmp(&named, &held) > 0)
    ceb_contract_violation(v, "contract.dataschema", "dataschema",
                           "dataschema %s names version %ld.%ld.%ld, not "
                           "compatible with %s@%s",
                           ds, named.major, named.minor, named.patch, c->name,
                           c->version);
}

/* The JSON instance to validate: the data, or the whole event when the
 * message describes a structured CloudEvent. NULL with *why set when the
 * data is not JSON. */
static json_t *instance_of(const ceb_contract_msg *m, const ceb_event *ev,
                           const char **why) {
  if (m->envelope) {
    char *text = NULL;
    size_t len = 0;
    if (ceb_json_encode(ev, &text, &len) != CEB_OK) {
      *why = "the event cannot be rendered as JSON";
      return NULL;
    }
    json_t *j = json_loadb(text, len, 0, NULL);
    ceb_free(text);
    if (!j) *why = "the event cannot be rendered as JSON";
    return j;
  }
  size_t len = 0;
  const void *data = ceb_event_data(ev, &len);
  switch (ceb_event_data_kind(ev)) {
  case CEB_DATA_NONE:
    return json_null();
  case CEB_DATA_JSON: {
    json_t *j = json_loadb(data, len, JSON_DECODE_ANY, NULL);
    if (!j) *why = "data is not valid JSON";
    return j;
  }
  default:
    *why = "data is not JSON";
    return NULL;
  }
}

/* 1 valid, 0 invalid (violations added when report), < 0 error. */
static int check_payload(const ceb_contract *c, const ceb_contract_msg *m,
                         const ceb_event *ev, ceb_violations *v, int report) {
  if (!m->payload) {
    if (m->compile_failed) {
      if (report)
        ceb_contract_violation(v, "contract.payload", "data",
                               "message %s of %s@%s: %s", m->name, c->name,
                               c->version, m->note ? m->note : "");
      return 0;
    }
    return 1; /* no JSON Schema payload: nothing to check */
  }
  const char *why = NULL;
  json_t *inst = instance_of(m, ev, &why);
  if (!inst) {
    if (report)
      ceb_contract_violation(v, "contract.payload", "data",
                             "message %s of %s@%s: %s", m->name, c->name,
                             c->version, why ? why : "out of memory");
    return 0;
  }
  ceb_schema_result *res = calloc(1, sizeof *res);
  if (!res) {
    json_decref(inst);
    return CEB_ENOMEM;
  }
  int ok = ceb_schema_validate(m->payload, inst, res);
  json_decref(inst);
  if (ok != 1 && report) {
    for (size_t i = 0; i < res->count; i++) {
      const ceb_schema_error *e = &res->errors[i];
      ceb_contract_violation(v, "contract.payload", "data", "%s: %s (%s)",
                             e->instance_path[0] ? e->instance_path : "/",
                             e->message, e->schema_path);
    }
    if (!res->count)
      ceb_contract_violation(v, "contract.payload", "data",
                             "data does not match message %s", m->name);
  }
  free(res);
  return ok == 1 ? 1 : ok < 0 && ok != CEB_ETOOLARGE ? ok : 0;
}

int ceb_contract_check(const ceb_contract *c, const ceb_event *ev,
                       ceb_violations *v) {
  size_t before = v->errors;
  const char *type = ceb_event_get(ev, "type");
  size_t from = 0;
  const ceb_contract_msg *first = ceb_contract_find_type(c, type, &from);
  if (!first) {
    ceb_contract_violation(v, "contract.type_unknown", "type",
                           "type %s is not a message of contract %s@%s",
                           type ? type : "(none)", c->name, c->version);
    return CEB_EVALIDATION;
  }
  const char *ds = ceb_event_get(ev, "dataschema");
  if (ds) check_dataschema(c, ds, v);
  /* Several messages may carry the type (one per channel): any will do;
   * the first one's errors are reported. */
  int ok = 0;
  for (const ceb_contract_msg *m = first; m && ok != 1;
       m = ceb_contract_find_type(c, type, &from)) {
    ok = check_payload(c, m, ev, v, 0);
    if (ok < 0) {
      ceb_contract_violation(v, "contract.payload", "data",
                             "checking data failed: %s", ceb_strerror(ok));
      return CEB_EVALIDATION;
    }
  }
  if (ok != 1) check_payload(c, first, ev, v, 1);
  return v->errors > before ? CEB_EVALIDATION : CEB_OK;
}
