/* The contract register beyond the list: one version's document and the
 * diff between two versions (core/contracts' diff, the one `cebridge
 * contracts diff` prints), for the console and scripts.
 *   GET /v1/contracts/{name}/{version}
 *       {"name","version","sha256","provenance","fetched_at","document"}
 *   GET /v1/contracts/{name}/diff?from=A&to=B   (A, B: versions or pins)
 *       {"name","from","to","breaking","diff"}
 * MHD's threads; store read connections only. */
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/ceb_admin_internal.h"
#include "contracts/ceb_contracts.h"
#include "runtime/ceb_runtime.h"

/* The held version a version or pin spec ("1.2.0", "^1") of name
 * resolves to, malloc'd; NULL with a reason in err. */
static char *resolve(ceb_store *st, const char *name, const char *spec,
                     char *err, size_t errlen) {
  char pin[400];
  if (snprintf(pin, sizeof pin, "%s@%s", name, spec) >= (int)sizeof pin) {
    snprintf(err, errlen, "name or version too long");
    return NULL;
  }
  return ceb_contracts_resolve_pin(st, pin, err, errlen);
}

static int diff(const ceb_admin_view *view, struct MHD_Connection *c,
                ceb_store *st, const char *name) {
  const char *from = ceb_admin_arg(c, "from"), *to = ceb_admin_arg(c, "to");
  if (!from || !to)
    return ceb_admin_problem(c, 400, "missing_parameter",
                             "give from=VERSION and to=VERSION");
  char err[512] = "";
  char *va = resolve(st, name, from, err, sizeof err);
  char *vb = va ? resolve(st, name, to, err, sizeof err) : NULL;
  ceb_contract *a = NULL, *b = NULL;
  int rc = va && vb ? ceb_contracts_load_held(st, view->conf, name, va, 0, &a,
                                              err, sizeof err)
                    : CEB_ENOTFOUND;
  if (rc == CEB_OK)
    rc = ceb_contracts_load_held(st, view->conf, name, vb, 0, &b, err,
                                 sizeof err);
  int out;
  if (rc != CEB_OK) {
    out = ceb_admin_problem(c, rc == CEB_ENOTFOUND ? 404 : 422,
                            rc == CEB_ENOTFOUND ? "unknown_version"
                                                : "unusable_document",
                            err[0] ? err : "no such version in the register");
  } else {
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    size_t breaking = mem ? ceb_contract_diff(a, b, mem) : 0;
    if (mem) fclose(mem);
    out = text ? ceb_admin_reply_json(
                     c, 200,
                     json_pack("{s:s, s:s, s:s, s:I, s:s%}", "name", name,
                               "from", va, "to", vb, "breaking",
                               (json_int_t)breaking, "diff", text, len))
               : ceb_admin_problem(c, 500, "internal", "out of memory");
    free(text);
  }
  ceb_contract_free(a);
  ceb_contract_free(b);
  free(va);
  free(vb);
  return out;
}

static int document(struct MHD_Connection *c, ceb_store *st, const char *name,
                    const char *version) {
  size_t len = 0;
  char *doc = ceb_store_contract_get(st, name, version, &len);
  if (!doc)
    return ceb_admin_problem(c, 404, "unknown_version",
                             "no such contract version in the register");
  json_t *rows = ceb_store_contract_list(st, name), *row, *out = NULL;
  size_t i;
  json_array_foreach(rows, i, row) {
    const char *v = json_string_value(json_object_get(row, "version"));
    if (v && strcmp(v, version) == 0) out = json_deep_copy(row);
  }
  json_decref(rows);
  if (!out) out = json_pack("{s:s, s:s}", "name", name, "version", version);
  json_object_set_new(out, "document", json_stringn(doc, len));
  free(doc);
  if (!json_is_string(json_object_get(out, "document"))) {
    json_decref(out);
    return ceb_admin_problem(c, 500, "internal",
                             "the document is not UTF-8 text");
  }
  return ceb_admin_reply_json(c, 200, out);
}

int ceb_admin_contract_get(const ceb_admin_view *view, struct MHD_Connection *c,
                           const char *sub) {
  ceb_store *st = ceb_runtime_store(view->rt);
  const char *slash = strchr(sub, '/');
  if (!slash || slash == sub || !slash[1] || strchr(slash + 1, '/'))
    return ceb_admin_problem(c, 404, "not_found",
                             "use /v1/contracts/{name}/{version} or "
                             "/v1/contracts/{name}/diff?from=&to=");
  char name[256], version[128];
  if ((size_t)(slash - sub) >= sizeof name ||
      strlen(slash + 1) >= sizeof version)
    return ceb_admin_problem(c, 400, "bad_parameter",
                             "contract name or version too long");
  snprintf(name, sizeof name, "%.*s", (int)(slash - sub), sub);
  snprintf(version, sizeof version, "%s", slash + 1);
  if (strcmp(version, "diff") == 0) return diff(view, c, st, name);
  return document(c, st, name, version);
}
