/* Compiles schema JSON into the immutable node tree: keyword values are
 * type-checked and copied, regexes precompiled, subschemas and $ref /
 * $dynamicRef targets linked as node pointers (cycles allowed: a node is
 * registered before its children are compiled). */
#include "schema/ceb_schema_comp.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;
  unsigned bit;
} type_names[] = {
    {"null", CEBS_T_NULL},       {"boolean", CEBS_T_BOOLEAN},
    {"object", CEBS_T_OBJECT},   {"array", CEBS_T_ARRAY},
    {"number", CEBS_T_NUMBER},   {"string", CEBS_T_STRING},
    {"integer", CEBS_T_INTEGER},
};

static void *bad_kw(cebs_comp *c, const cebs_node *n, const char *kw,
                    const char *what) {
  return cebs_comp_fail(c, CEB_EINVAL, "%s%s/%s: must be %s",
                        CEBS_SPATH_SHORT(n->spath), kw, what);
}

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

/* Non-negative integer (1.0 accepted); -1 when not one. */
static long long get_count(json_t *v) {
  if (!cebs_is_integer(v)) return -1;
  if (json_is_integer(v))
    return json_integer_value(v) < 0 ? -1 : json_integer_value(v);
  double d = json_real_value(v);
  return d < 0 ? -1 : d > 9.2e18 ? (long long)9.2e18 : (long long)d;
}

static cebs_node *child(cebs_comp *c, const cebs_sinfo *eff, json_t *j,
                        const char *spath, const char *kw, const char *key) {
  char *p1 = cebs_spath_join(spath, kw);
  char *p2 = p1 && key ? cebs_spath_join(p1, key) : NULL;
  cebs_node *r = NULL;
  if (!p1 || (key && !p2))
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
  else
    r = cebs_compile_node(c, j, eff, key ? p2 : p1);
  free(p1);
  free(p2);
  return r;
}

static int compile_list(cebs_comp *c, cebs_node *n, const cebs_sinfo *eff,
                        json_t *v, const char *kw, cebs_nodes *out,
                        bool nonempty) {
  if (!json_is_array(v) || (nonempty && json_array_size(v) == 0)) {
    bad_kw(c, n, kw,
           nonempty ? "a non-empty array of schemas" : "an array of schemas");
    return -1;
  }
  size_t cnt = json_array_size(v);
  out->v = calloc(cnt ? cnt : 1, sizeof *out->v);
  if (!out->v) {
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < cnt; i++) {
    char idx[32];
    snprintf(idx, sizeof idx, "%zu", i);
    if (!(out->v[i] = child(c, eff, json_array_get(v, i), n->spath, kw, idx)))
      return -1;
    out->n++;
  }
  return 0;
}

static int cmp_prop(const void *a, const void *b) {
  return strcmp(((const cebs_prop *)a)->name, ((const cebs_prop *)b)->name);
}

/* properties / dependentSchemas: object of schemas, sorted for lookup. */
static int compile_props(cebs_comp *c, cebs_node *n, const cebs_sinfo *eff,
                         json_t *v, const char *kw, cebs_prop **out,
                         size_t *nout) {
  if (!json_is_object(v)) {
    bad_kw(c, n, kw, "an object of schemas");
    return -1;
  }
  *out = calloc(json_object_size(v) + 1, sizeof **out);
  if (!*out) {
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    return -1;
  }
  const char *k;
  json_t *e;
  json_object_foreach(v, k, e) {
    cebs_prop *p = &(*out)[*nout];
    if (!(p->name = strdup(k))) {
      cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
      return -1;
    }
    (*nout)++;
    if (!(p->node = child(c, eff, e, n->spath, kw, k))) return -1;
  }
  qsort(*out, *nout, sizeof **out, cmp_prop);
  return 0;
}

static int compile_strings(cebs_comp *c, cebs_node *n, json_t *v,
                           const char *kw, char ***out, size_t *nout) {
  if (!json_is_array(v)) {
    bad_kw(c, n, kw, "an array of strings");
    return -1;
  }
  *out = calloc(json_array_size(v) + 1, sizeof **out);
  if (!*out) {
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    return -1;
  }
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    if (!json_is_string(e)) {
      bad_kw(c, n, kw, "an array of strings");
      return -1;
    }
    if (!((*out)[*nout] = strdup(json_string_value(e)))) {
      cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
      return -1;
    }
    (*nout)++;
  }
  return 0;
}

static int compile_type(cebs_comp *c, cebs_node *n, json_t *v) {
  json_t *one = json_is_string(v) ? v : NULL;
  size_t cnt = one ? 1 : json_is_array(v) ? json_array_size(v) : 0;
  if (!one && (!json_is_array(v) || cnt == 0)) {
    bad_kw(c, n, "type", "a type name or an array of type names");
    return -1;
  }
  for (size_t i = 0; i < cnt; i++) {
    json_t *e = one ? one : json_array_get(v, i);
    unsigned bit = 0;
    for (size_t t = 0; json_is_string(e) && t < 7; t++)
      if (strcmp(json_string_value(e), type_names[t].name) == 0)
        bit = type_names[t].bit;
    if (!bit) {
      bad_kw(c, n, "type", "a type name or an array of type names");
      return -1;
    }
    n->types |= bit;
  }
  return 0;
}

static int compile_number(cebs_comp *c, cebs_node *n, json_t *j, const char *kw,
                          cebs_num *out, bool positive) {
  json_t *v = json_object_get(j, kw);
  if (!v) return 0;
  if (!json_is_number(v) || (positive && json_number_value(v) <= 0) ||
      !isfinite(json_number_value(v))) {
    bad_kw(c, n, kw, positive ? "a number greater than 0" : "a number");
    return -1;
  }
  cebs_num_from_json(out, v);
  return 0;
}

static int compile_counts(cebs_comp *c, cebs_node *n, json_t *j) {
  static const struct {
    const char *kw;
    size_t off;
    bool d2020;
  } counts[] = {
      {"maxLength", offsetof(cebs_node, max_length), false},
      {"minLength", offsetof(cebs_node, min_length), false},
      {"maxItems", offsetof(cebs_node, max_items), false},
      {"minItems", offsetof(cebs_node, min_items), false},
      {"maxContains", offsetof(cebs_node, max_contains), true},
      {"minContains", offsetof(cebs_node, min_contains), true},
      {"maxProperties", offsetof(cebs_node, max_properties), false},
      {"minProperties", offsetof(cebs_node, min_properties), false},
  };
  for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
    long long *dst = (long long *)((char *)n + counts[i].off);
    *dst = -1;
    json_t *v = json_object_get(j, counts[i].kw);
    if (!v || (counts[i].d2020 && n->draft == CEB_SCHEMA_DRAFT7)) continue;
    if ((*dst = get_count(v)) < 0) {
      bad_kw(c, n, counts[i].kw, "a non-negative integer");
      return -1;
    }
  }
  return 0;
}

static int compile_regex_kw(cebs_comp *c, cebs_node *n, const char *kw,
                            const char *pattern, cebs_regex **out) {
  char msg[256];
  if (!(*out = cebs_regex_compile(pattern, msg, sizeof msg))) {
    cebs_comp_fail(c, CEB_EINVAL, "%s%s/%s: %s", CEBS_SPATH_SHORT(n->spath), kw,
                   msg);
    return -1;
  }
  return 0;
}

static int compile_assertions(cebs_comp *c, cebs_node *n, json_t *j) {
  json_t *v;
  if ((v = json_object_get(j, "type")) && compile_type(c, n, v) != 0) return -1;
  if ((v = json_object_get(j, "enum"))) {
    if (!json_is_array(v)) {
      bad_kw(c, n, "enum", "an array");
      return -1;
    }
    if (!(n->enum_ = json_deep_copy(v))) goto oom;
  }
  if ((v = json_object_get(j, "const"))) {
    n->has_const = true;
    if (!(n->const_ = json_deep_copy(v))) goto oom;
  }
  if (compile_number(c, n, j, "maximum", &n->maximum, false) ||
      compile_number(c, n, j, "exclusiveMaximum", &n->exclusive_maximum,
                     false) ||
      compile_number(c, n, j, "minimum", &n->minimum, false) ||
      compile_number(c, n, j, "exclusiveMinimum", &n->exclusive_minimum,
                     false) ||
      compile_number(c, n, j, "multipleOf", &n->multiple_of, true) ||
      compile_counts(c, n, j))
    return -1;
  if ((v = json_object_get(j, "pattern"))) {
    if (!json_is_string(v)) {
      bad_kw(c, n, "pattern", "a string");
      return -1;
    }
    if (compile_regex_kw(c, n, "pattern", json_string_value(v), &n->pattern))
      return -1;
  }
  if ((v = json_object_get(j, "uniqueItems"))) {
    if (!json_is_boolean(v)) {
      bad_kw(c, n, "uniqueItems", "a boolean");
      return -1;
    }
    n->unique_items = json_is_true(v);
  }
  if ((v = json_object_get(j, "required")) &&
      compile_strings(c, n, v, "required", &n->required, &n->nrequired))
    return -1;
  return 0;
oom:
  cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
  return -1;
}

static int compile_format(cebs_comp *c, cebs_node *n, json_t *j) {
  json_t *v = json_object_get(j, "format");
  if (!v) return 0;
  if (!json_is_string(v)) {
    bad_kw(c, n, "format", "a string");
    return -1;
  }
  n->format = cebs_format_lookup(json_string_value(v));
  return 0;
}

static int add_dep_required(cebs_comp *c, cebs_node *n, const char *kw,
                            const char *prop, json_t *v) {
  cebs_depreq *d = &n->dep_required[n->ndep_required];
  if (!(d->name = strdup(prop))) {
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    return -1;
  }
  n->ndep_required++;
  return compile_strings(c, n, v, kw, &d->req, &d->nreq);
}

/* dependentRequired / dependentSchemas (2020-12), dependencies (draft-07). */
static int compile_dependencies(cebs_comp *c, cebs_node *n,
                                const cebs_sinfo *eff, json_t *j) {
  json_t *v;
  const char *k;
  json_t *e;
  if (n->draft == CEB_SCHEMA_DRAFT7) {
    if (!(v = json_object_get(j, "dependencies"))) return 0;
    if (!json_is_object(v)) {
      bad_kw(c, n, "dependencies", "an object");
      return -1;
    }
    size_t cnt = json_object_size(v) + 1;
    n->dep_required = calloc(cnt, sizeof *n->dep_required);
    n->dep_schemas = calloc(cnt, sizeof *n->dep_schemas);
    if (!n->dep_required || !n->dep_schemas) {
      cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
      return -1;
    }
    json_object_foreach(v, k, e) {
      if (json_is_array(e)) {
        if (add_dep_required(c, n, "dependencies", k, e)) return -1;
      } else {
        cebs_prop *p = &n->dep_schemas[n->ndep_schemas];
        if (!(p->name = strdup(k))) {
          cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
          return -1;
        }
        n->ndep_schemas++;
        if (!(p->node = child(c, eff, e, n->spath, "dependencies", k)))
          return -1;
      }
    }
    return 0;
  }
  if (!eff->no_validation && (v = json_object_get(j, "dependentRequired"))) {
    if (!json_is_object(v)) {
      bad_kw(c, n, "dependentRequired", "an object of string arrays");
      return -1;
    }
    n->dep_required = calloc(json_object_size(v) + 1, sizeof *n->dep_required);
    if (!n->dep_required) {
      cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
      return -1;
    }
    json_object_foreach(v, k, e) {
      if (add_dep_required(c, n, "dependentRequired", k, e)) return -1;
    }
  }
  if ((v = json_object_get(j, "dependentSchemas")) &&
      compile_props(c, n, eff, v, "dependentSchemas", &n->dep_schemas,
                    &n->ndep_schemas))
    return -1;
  return 0;
}

static int compile_object_kws(cebs_comp *c, cebs_node *n, const cebs_sinfo *eff,
                              json_t *j) {
  json_t *v;
  if ((v = json_object_get(j, "properties")) &&
      compile_props(c, n, eff, v, "properties", &n->props, &n->nprops))
    return -1;
  if ((v = json_object_get(j, "patternProperties"))) {
    if (!json_is_object(v)) {
      bad_kw(c, n, "patternProperties", "an object of schemas");
      return -1;
    }
    n->patprops = calloc(json_object_size(v) + 1, sizeof *n->patprops);
    if (!n->patprops) {
      cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
      return -1;
    }
    const char *k;
    json_t *e;
    json_object_foreach(v, k, e) {
      cebs_patprop *p = &n->patprops[n->npatprops++];
      if (compile_regex_kw(c, n, "patternProperties", k, &p->re) ||
          !(p->node = child(c, eff, e, n->spath, "patternProperties", k)))
        return -1;
    }
  }
  static const struct {
    const char *kw;
    size_t off;
    bool d2020;
  } singles[] = {
      {"additionalProperties", offsetof(cebs_node, additional_props), false},
      {"propertyNames", offsetof(cebs_node, property_names), false},
      {"unevaluatedProperties", offsetof(cebs_node, unevaluated_props), true},
      {"contains", offsetof(cebs_node, contains), false},
      {"unevaluatedItems", offsetof(cebs_node, unevaluated_items), true},
      {"not", offsetof(cebs_node, not_), false},
      {"if", offsetof(cebs_node, if_), false},
      {"then", offsetof(cebs_node, then_), false},
      {"else", offsetof(cebs_node, else_), false},
  };
  for (size_t i = 0; i < sizeof singles / sizeof *singles; i++) {
    if (!(v = json_object_get(j, singles[i].kw)) ||
        (singles[i].d2020 && n->draft == CEB_SCHEMA_DRAFT7))
      continue;
    cebs_node **dst = (cebs_node **)((char *)n + singles[i].off);
    if (!(*dst = child(c, eff, v, n->spath, singles[i].kw, NULL))) return -1;
  }
  n->needs_eval = n->unevaluated_props || n->unevaluated_items;
  return compile_dependencies(c, n, eff, j);
}

static int compile_array_kws(cebs_comp *c, cebs_node *n, const cebs_sinfo *eff,
                             json_t *j) {
  json_t *items = json_object_get(j, "items");
  if (n->draft == CEB_SCHEMA_DRAFT7) {
    if (json_is_array(items)) {
      if (compile_list(c, n, eff, items, "items", &n->prefix_items, false))
        return -1;
      json_t *add = json_object_get(j, "additionalItems");
      if (add &&
          !(n->items = child(c, eff, add, n->spath, "additionalItems", NULL)))
        return -1;
    } else if (items &&
               !(n->items = child(c, eff, items, n->spath, "items", NULL))) {
      return -1;
    }
    return 0;
  }
  json_t *prefix = json_object_get(j, "prefixItems");
  if (prefix &&
      compile_list(c, n, eff, prefix, "prefixItems", &n->prefix_items, true))
    return -1;
  if (items && !(n->items = child(c, eff, items, n->spath, "items", NULL)))
    return -1;
  return 0;
}

static int compile_applicators(cebs_comp *c, cebs_node *n,
                               const cebs_sinfo *eff, json_t *j) {
  json_t *v;
  if ((v = json_object_get(j, "allOf")) &&
      compile_list(c, n, eff, v, "allOf", &n->all_of, true))
    return -1;
  if ((v = json_object_get(j, "anyOf")) &&
      compile_list(c, n, eff, v, "anyOf", &n->any_of, true))
    return -1;
  if ((v = json_object_get(j, "oneOf")) &&
      compile_list(c, n, eff, v, "oneOf", &n->one_of, true))
    return -1;
  return 0;
}

static cebs_node *compile_ref(cebs_comp *c, cebs_node *n, const cebs_sinfo *eff,
                              json_t *v, const char *kw, char **dyn_name) {
  if (!json_is_string(v)) return bad_kw(c, n, kw, "a URI reference string");
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
  if ((!eff->no_validation && compile_assertions(c, n, j)) ||
      compile_format(c, n, j) || compile_applicators(c, n, eff, j) ||
      compile_object_kws(c, n, eff, j) || compile_array_kws(c, n, eff, j))
    return -1;
  return 0;
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
