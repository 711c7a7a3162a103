/* Assertions of the validation vocabulary: type, enum, const, numeric
 * bounds, multipleOf, string length (code points), pattern, format, and the
 * count-type checks on arrays and objects (items, uniqueItems, properties,
 * required, dependentRequired / array-form dependencies). */
#include "schema/ceb_schema_int.h"

#include <stdio.h>
#include <string.h>

static unsigned type_bits(json_t *v) {
  switch (json_typeof(v)) {
  case JSON_NULL:
    return CEBS_T_NULL;
  case JSON_TRUE:
  case JSON_FALSE:
    return CEBS_T_BOOLEAN;
  case JSON_OBJECT:
    return CEBS_T_OBJECT;
  case JSON_ARRAY:
    return CEBS_T_ARRAY;
  case JSON_STRING:
    return CEBS_T_STRING;
  case JSON_INTEGER:
    return CEBS_T_NUMBER | CEBS_T_INTEGER;
  case JSON_REAL:
    return CEBS_T_NUMBER | (cebs_is_integer(v) ? CEBS_T_INTEGER : 0);
  }
  return 0;
}

static const char *type_name(json_t *v) {
  static const char *names[] = {"object", "array",   "string",  "integer",
                                "number", "boolean", "boolean", "null"};
  return names[json_typeof(v)];
}

static void num_text(const cebs_num *n, char *buf, size_t len) {
  if (n->is_int)
    snprintf(buf, len, "%" JSON_INTEGER_FORMAT, n->i);
  else
    snprintf(buf, len, "%.17g", n->d);
}

#define STEP(cond)                                                             \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ok = false;                                                              \
      if (c->quiet) return false;                                              \
    }                                                                          \
  } while (0)

static bool check_number(cebs_ctx *c, const cebs_node *n, json_t *inst) {
  bool ok = true;
  char b[40];
  if (n->maximum.set && cebs_num_cmp(inst, &n->maximum) > 0) {
    num_text(&n->maximum, b, sizeof b);
    cebs_error(c, n, "maximum", "must be <= %s", b);
    STEP(false);
  }
  if (n->exclusive_maximum.set &&
      cebs_num_cmp(inst, &n->exclusive_maximum) >= 0) {
    num_text(&n->exclusive_maximum, b, sizeof b);
    cebs_error(c, n, "exclusiveMaximum", "must be < %s", b);
    STEP(false);
  }
  if (n->minimum.set && cebs_num_cmp(inst, &n->minimum) < 0) {
    num_text(&n->minimum, b, sizeof b);
    cebs_error(c, n, "minimum", "must be >= %s", b);
    STEP(false);
  }
  if (n->exclusive_minimum.set &&
      cebs_num_cmp(inst, &n->exclusive_minimum) <= 0) {
    num_text(&n->exclusive_minimum, b, sizeof b);
    cebs_error(c, n, "exclusiveMinimum", "must be > %s", b);
    STEP(false);
  }
  if (n->multiple_of.set && !cebs_num_multiple(inst, &n->multiple_of)) {
    num_text(&n->multiple_of, b, sizeof b);
    cebs_error(c, n, "multipleOf", "must be a multiple of %s", b);
    STEP(false);
  }
  return ok;
}

static bool check_string(cebs_ctx *c, const cebs_node *n, json_t *inst) {
  bool ok = true;
  const char *s = json_string_value(inst);
  size_t blen = json_string_length(inst);
  if (n->max_length >= 0 || n->min_length >= 0) {
    long long len = (long long)cebs_utf8_length(s, blen);
    if (n->max_length >= 0 && len > n->max_length) {
      cebs_error(c, n, "maxLength", "must be at most %lld characters long",
                 n->max_length);
      STEP(false);
    }
    if (n->min_length >= 0 && len < n->min_length) {
      cebs_error(c, n, "minLength", "must be at least %lld characters long",
                 n->min_length);
      STEP(false);
    }
  }
  int m = n->pattern ? cebs_regex_search(n->pattern, s, blen) : 1;
  if (m != 1) {
    cebs_error(c, n, "pattern", "%s",
               m == 0 ? "does not match the pattern"
                      : "cannot be matched: the pattern exceeds its "
                        "backtracking limit");
    STEP(false);
  }
  if (n->format > CEBS_FMT_UNKNOWN && c->s->assert_formats &&
      !cebs_format_check(n->format, s, blen)) {
    cebs_error(c, n, "format", "is not a valid %s",
               cebs_format_name(n->format));
    STEP(false);
  }
  return ok;
}

static bool check_array(cebs_ctx *c, const cebs_node *n, json_t *inst) {
  bool ok = true;
  long long cnt = (long long)json_array_size(inst);
  if (n->max_items >= 0 && cnt > n->max_items) {
    cebs_error(c, n, "maxItems", "must have at most %lld items", n->max_items);
    STEP(false);
  }
  if (n->min_items >= 0 && cnt < n->min_items) {
    cebs_error(c, n, "minItems", "must have at least %lld items", n->min_items);
    STEP(false);
  }
  if (n->unique_items) {
    size_t a, b;
    int dup = cebs_find_duplicate(inst, &a, &b);
    if (dup < 0) {
      c->oom = true;
      return false;
    }
    if (dup) {
      cebs_error(c, n, "uniqueItems", "items %zu and %zu are equal", a, b);
      STEP(false);
    }
  }
  return ok;
}

static bool check_object(cebs_ctx *c, const cebs_node *n, json_t *inst) {
  bool ok = true;
  long long cnt = (long long)json_object_size(inst);
  if (n->max_properties >= 0 && cnt > n->max_properties) {
    cebs_error(c, n, "maxProperties", "must have at most %lld properties",
               n->max_properties);
    STEP(false);
  }
  if (n->min_properties >= 0 && cnt < n->min_properties) {
    cebs_error(c, n, "minProperties", "must have at least %lld properties",
               n->min_properties);
    STEP(false);
  }
  for (size_t i = 0; i < n->nrequired; i++) {
    if (!json_object_get(inst, n->required[i])) {
      cebs_error(c, n, "required", "property \"%.200s\" is required",
                 n->required[i]);
      STEP(false);
    }
  }
  const char *kw =
      n->draft == CEB_SCHEMA_DRAFT7 ? "dependencies" : "dependentRequired";
  for (size_t i = 0; i < n->ndep_required; i++) {
    const cebs_depreq *d = &n->dep_required[i];
    if (!json_object_get(inst, d->name)) continue;
    for (size_t k = 0; k < d->nreq; k++) {
      if (!json_object_get(inst, d->req[k])) {
        cebs_error(c, n, kw, "property \"%.100s\" is required by \"%.100s\"",
                   d->req[k], d->name);
        STEP(false);
      }
    }
  }
  return ok;
}

bool cebs_kw_assert(cebs_ctx *c, const cebs_node *n, json_t *inst) {
  bool ok = true;
  if (n->types && !(n->types & type_bits(inst))) {
    cebs_error(c, n, "type", "%s is not an allowed type", type_name(inst));
    STEP(false);
  }
  if (n->enum_) {
    bool found = false;
    size_t i;
    json_t *e;
    json_array_foreach(n->enum_, i, e) {
      if (cebs_json_equal(inst, e)) {
        found = true;
        break;
      }
    }
    if (!found) cebs_error(c, n, "enum", "is not one of the allowed values");
    STEP(found);
  }
  if (n->has_const && !cebs_json_equal(inst, n->const_)) {
    cebs_error(c, n, "const", "is not the required value");
    STEP(false);
  }
  switch (json_typeof(inst)) {
  case JSON_INTEGER:
  case JSON_REAL:
    STEP(check_number(c, n, inst));
    break;
  case JSON_STRING:
    STEP(check_string(c, n, inst));
    break;
  case JSON_ARRAY:
    STEP(check_array(c, n, inst));
    break;
  case JSON_OBJECT:
    STEP(check_object(c, n, inst));
    break;
  default:
    break;
  }
  return ok;
}
