/* Compiles schema JSON into the immutable node tree (keywords in
 * ceb_schema_compile_kw.c): $ref / $dynamicRef targets are linked as node
 * pointers (cycles allowed: a node is registered before its children are
 * compiled), then dynamic anchors and reference cycles are checked. Also the
 * public compile / free entry points. */
#include "schema/ceb_schema_comp.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_node(cebs_comp *c, cebs_node *n) {
  ceb_schema *s = c->s;
  if (s->nnodes == s->capnodes) {
    size_t ncap = s->capnodes ? s->capnodes * 2 : 32;
    cebs_node **v = realloc(s->nodes, ncap * sizeof *v);
    if (!v) return -1;
    s->nodes = v;
    s->capnodes = ncap;
  }
  n->idx = s->nnodes;
  s->nodes[s->nnodes++] = n;
  return 0;
}

/* Resolves a $ref / $dynamicRef value and compiles its target. For
 * $dynamicRef, *dyn_name receives the anchor name when the target is
 * bookended by a $dynamicAnchor of that name (dynamic resolution applies). */
static cebs_node *compile_ref(cebs_comp *c, cebs_node *n, const cebs_sinfo *eff,
                              json_t *v, const char *kw, char **dyn_name) {
  if (!json_is_string(v))
    return cebs_bad_kw(c, n, kw, "a URI reference string");
  cebs_sinfo *ti;
  char *frag = NULL, *abs = NULL;
  json_t *target = cebs_registry_resolve(c, eff->base, json_string_value(v),
                                         n->draft, &ti, &abs, &frag);
  if (!target) {
    free(frag);
    if (c->rc == CEB_EINVAL && c->err && c->errlen) {
      /* prefix the location of the failing reference */
      char tmp[512];
      snprintf(tmp, sizeof tmp, "%s%s/%s: %s", CEBS_SPATH_SHORT(n->spath), kw,
               c->err);
      snprintf(c->err, c->errlen, "%s", tmp);
    }
    return NULL;
  }
  char *tpath = NULL;
  bool in_main = c->main_uri && strcmp(abs, c->main_uri) == 0;
  if (!ti && asprintf(&tpath, "%s#%s", in_main ? "" : abs, frag) < 0) {
    free(frag);
    free(abs);
    return cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
  }
  free(abs);
  cebs_node *r = cebs_compile_node(c, target, ti ? ti : eff, tpath);
  free(tpath);
  if (r && dyn_name && frag[0] && frag[0] != '/') {
    json_t *da = json_object_get(target, "$dynamicAnchor");
    if (json_is_string(da) && strcmp(json_string_value(da), frag) == 0) {
      *dyn_name = frag;
      frag = NULL;
    }
  }
  free(frag);
  return r;
}

static int compile_object(cebs_comp *c, cebs_node *n, const cebs_sinfo *eff,
                          json_t *j) {
  json_t *ref = json_object_get(j, "$ref");
  if (ref) {
    if (!(n->ref = compile_ref(c, n, eff, ref, "$ref", NULL))) return -1;
    if (n->draft == CEB_SCHEMA_DRAFT7)
      return 0; /* siblings of $ref are ignored in draft-07 */
  }
  json_t *dref = json_object_get(j, "$dynamicRef");
  if (dref && n->draft == CEB_SCHEMA_DRAFT2020 &&
      !(n->dynamic_ref =
            compile_ref(c, n, eff, dref, "$dynamicRef", &n->dynamic_name)))
    return -1;
  return cebs_compile_keywords(c, n, eff, j);
}

cebs_node *cebs_compile_node(cebs_comp *c, json_t *j, const cebs_sinfo *inherit,
                             const char *spath) {
  if (c->rc) return NULL;
  cebs_node *n = cebs_map_get(&c->nodes, &j, sizeof j);
  if (n) return n;
  cebs_sinfo *si = cebs_registry_info(c, j);
  cebs_sinfo eff = si ? *si : *inherit;
  if (!si) eff.spath = (char *)spath;
  if (!json_is_object(j) && !json_is_boolean(j))
    return cebs_comp_fail(c, CEB_EINVAL,
                          "%s: a schema must be an object or a boolean",
                          eff.spath);
  if (!(n = calloc(1, sizeof *n)) || !(n->spath = strdup(eff.spath)) ||
      add_node(c, n) != 0) {
    if (n) free(n->spath);
    free(n);
    return cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
  }
  n->draft = eff.draft;
  n->res = eff.res;
  n->max_length = n->min_length = n->max_items = n->min_items = -1;
  n->max_contains = n->min_contains = n->max_properties = -1;
  n->min_properties = -1;
  if (cebs_map_put(&c->nodes, &j, sizeof j, n) != 0)
    return cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
  if (json_is_boolean(j)) {
    n->is_bool = true;
    n->bool_val = json_is_true(j);
    return n;
  }
  if (++c->depth > CEBS_MAX_DEPTH) {
    c->depth--;
    return cebs_comp_fail(c, CEB_EINVAL, "%s%s: schema nested too deeply",
                          CEBS_SPATH_SHORT(n->spath));
  }
  int rc = compile_object(c, n, &eff, j);
  c->depth--;
  return rc ? NULL : n;
}

void cebs_node_free(cebs_node *n) {
  if (!n) return;
  free(n->spath);
  json_decref(n->enum_);
  json_decref(n->const_);
  cebs_regex_free(n->pattern);
  for (size_t i = 0; i < n->nrequired; i++)
    free(n->required[i]);
  free(n->required);
  for (size_t i = 0; i < n->ndep_required; i++) {
    for (size_t k = 0; k < n->dep_required[i].nreq; k++)
      free(n->dep_required[i].req[k]);
    free(n->dep_required[i].req);
    free(n->dep_required[i].name);
  }
  free(n->dep_required);
  for (size_t i = 0; i < n->ndep_schemas; i++)
    free(n->dep_schemas[i].name);
  free(n->dep_schemas);
  for (size_t i = 0; i < n->nprops; i++)
    free(n->props[i].name);
  free(n->props);
  for (size_t i = 0; i < n->npatprops; i++)
    cebs_regex_free(n->patprops[i].re);
  free(n->patprops);
  free(n->prefix_items.v);
  free(n->all_of.v);
  free(n->any_of.v);
  free(n->one_of.v);
  free(n->dynamic_name);
  free(n);
}

void ceb_schema_free(ceb_schema *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nnodes; i++)
    cebs_node_free(s->nodes[i]);
  free(s->nodes);
  for (size_t i = 0; i < s->nres; i++) {
    for (size_t k = 0; k < s->resources[i]->ndyn; k++)
      free(s->resources[i]->dyn[k].name);
    free(s->resources[i]->dyn);
    free(s->resources[i]->uri);
    free(s->resources[i]);
  }
  free(s->resources);
  free(s);
}

int ceb_schema_draft(const ceb_schema *s) {
  return s ? s->draft : 0;
}

/* Compiles every $dynamicAnchor (a $dynamicRef may land on any of them
 * through the dynamic scope) and attaches them to their resource. */
static int compile_dynamic_anchors(cebs_comp *c) {
  for (size_t i = 0; i < c->ndyn; i++) { /* c->ndyn may grow meanwhile */
    cebs_pending_dyn d = c->dyn[i];
    cebs_sinfo *si = cebs_registry_info(c, d.schema);
    cebs_node *n = cebs_compile_node(c, d.schema, si, si ? si->spath : "#");
    if (!n) return -1;
    cebs_resource *r = d.res;
    cebs_anchor *v = realloc(r->dyn, (r->ndyn + 1) * sizeof *v);
    if (!v) {
      cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
      return -1;
    }
    r->dyn = v;
    if (!(v[r->ndyn].name = strdup(d.name))) {
      cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
      return -1;
    }
    v[r->ndyn++].node = n;
  }
  return 0;
}

int ceb_schema_compile(json_t *schema, const char *base_uri,
                       const ceb_schema_opts *opts, ceb_schema **out, char *err,
                       size_t errlen) {
  if (err && errlen) err[0] = '\0';
  if (!out) return CEB_EINVAL;
  *out = NULL;
  cebs_comp c = {.opts = opts,
                 .err = err,
                 .errlen = errlen,
                 .forced_draft = opts && opts->draft};
  if (!schema) {
    cebs_comp_fail(&c, CEB_EINVAL, "no schema given");
    return c.rc;
  }
  int draft = opts && opts->draft ? opts->draft : 0;
  if (draft && draft != CEB_SCHEMA_DRAFT7 && draft != CEB_SCHEMA_DRAFT2020) {
    cebs_comp_fail(&c, CEB_EINVAL, "unsupported draft %d (use 7 or 2020)",
                   draft);
    return c.rc;
  }
  json_t *root = schema;
  const char *ptr = opts && opts->pointer ? opts->pointer : "";
  if (*ptr && !(root = cebs_json_pointer(schema, ptr))) {
    cebs_comp_fail(&c, CEB_EINVAL, "no schema at \"%s\" in the document", ptr);
    return c.rc;
  }
  if (!draft) {
    draft = CEB_SCHEMA_DRAFT2020;
    json_t *where[] = {schema, root};
    for (size_t i = 0; i < 2; i++) {
      json_t *sch = json_is_object(where[i])
                        ? json_object_get(where[i], "$schema")
                        : NULL;
      if (json_is_string(sch))
        draft = cebs_draft_from_uri(json_string_value(sch), draft);
    }
  }
  if (!(c.s = calloc(1, sizeof *c.s)) || !(c.owned = json_array())) {
    free(c.s);
    json_decref(c.owned);
    cebs_comp_fail(&c, CEB_ENOMEM, "out of memory");
    return c.rc;
  }
  c.s->draft = draft;
  c.s->assert_formats = opts && opts->assert_formats;
  char *rpath = NULL;
  if (asprintf(&rpath, "#%s", ptr) < 0) {
    rpath = NULL;
    cebs_comp_fail(&c, CEB_ENOMEM, "out of memory");
  } else if (cebs_registry_add(&c, schema, base_uri ? base_uri : "", draft) ==
                 0 &&
             (root == schema ||
              cebs_registry_add_sub(&c, schema, root, rpath) == 0)) {
    cebs_sinfo *si = cebs_registry_info(&c, root);
    if (si)
      c.s->root = cebs_compile_node(&c, root, si, rpath);
    else
      cebs_comp_fail(&c, CEB_EINVAL,
                     "%s: a schema must be an object or a "
                     "boolean",
                     rpath);
    if (c.s->root && compile_dynamic_anchors(&c) == 0) cebs_check_cycles(&c);
  }
  free(rpath);
  cebs_registry_free(&c);
  if (c.rc) {
    ceb_schema_free(c.s);
    return c.rc;
  }
  *out = c.s;
  return CEB_OK;
}
