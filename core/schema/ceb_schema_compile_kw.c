/* Compiles the keywords of one schema object into its node: values are
 * type-checked (a bad value is a compile error naming its schema path) and
 * copied, regexes precompiled, subschemas compiled into child nodes. */
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

void *cebs_bad_kw(cebs_comp *c, const cebs_node *n, const char *kw,
                  const char *what) {
  return cebs_comp_fail(c, CEB_EINVAL, "%s%s/%s: must be %s",
                        CEBS_SPATH_SHORT(n->spath), kw, what);
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
    cebs_bad_kw(c, n, kw,
                nonempty ? "a non-empty array of schemas"
                         : "an array of schemas");
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
    cebs_bad_kw(c, n, kw, "an object of schemas");
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
    cebs_bad_kw(c, n, kw, "an array of strings");
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
      cebs_bad_kw(c, n, kw, "an array of strings");
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
    cebs_bad_kw(c, n, "type", "a type name or an array of type names");
    return -1;
  }
  for (size_t i = 0; i < cnt; i++) {
    json_t *e = one ? one : json_array_get(v, i);
    unsigned bit = 0;
    for (size_t t = 0; json_is_string(e) && t < 7; t++)
      if (strcmp(json_string_value(e), type_names[t].name) == 0)
        bit = type_names[t].bit;
    if (!bit) {
      cebs_bad_kw(c, n, "type", "a type name or an array of type names");
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
    cebs_bad_kw(c, n, kw, positive ? "a number greater than 0" : "a number");
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
      cebs_bad_kw(c, n, counts[i].kw, "a non-negative integer");
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
      cebs_bad_kw(c, n, "enum", "an array");
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
      cebs_bad_kw(c, n, "pattern", "a string");
      return -1;
    }
    if (compile_regex_kw(c, n, "pattern", json_string_value(v), &n->pattern))
      return -1;
  }
  if ((v = json_object_get(j, "uniqueItems"))) {
    if (!json_is_boolean(v)) {
      cebs_bad_kw(c, n, "uniqueItems", "a boolean");
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
    cebs_bad_kw(c, n, "format", "a string");
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
      cebs_bad_kw(c, n, "dependencies", "an object");
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
      cebs_bad_kw(c, n, "dependentRequired", "an object of string arrays");
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
      cebs_bad_kw(c, n, "patternProperties", "an object of schemas");
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

int cebs_compile_keywords(cebs_comp *c, cebs_node *n, const cebs_sinfo *eff,
                          json_t *j) {
  if ((!eff->no_validation && compile_assertions(c, n, j)) ||
      compile_format(c, n, j) || compile_applicators(c, n, eff, j) ||
      compile_object_kws(c, n, eff, j) || compile_array_kws(c, n, eff, j))
    return -1;
  return 0;
}
