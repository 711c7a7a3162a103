/* Validation driver: walks the compiled tree for one instance, applies the
 * core and applicator keywords ($ref, $dynamicRef, allOf, anyOf, oneOf, not,
 * if/then/else), keeps the dynamic scope, the instance path and the
 * annotations unevaluatedItems / unevaluatedProperties need. */
#include "schema/ceb_schema_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Nesting of schema evaluations (recursive $ref on deep instances) and
 * total node evaluations per call: a schema built to branch exponentially
 * (anyOf over shared subschemas) cannot pin a core. */
#define CEBS_MAX_EVAL_DEPTH 200
#define CEBS_MAX_STEPS 1000000

static void error_va(cebs_ctx *c, const cebs_node *n, const char *kw,
                     const char *fmt, va_list ap) {
  ceb_schema_result *r = c->res;
  r->total++;
  if (r->count >= CEB_SCHEMA_MAX_ERRORS) return;
  ceb_schema_error *e = &r->errors[r->count++];
  snprintf(e->instance_path, sizeof e->instance_path, "%.*s", (int)c->ilen,
           c->ipath ? c->ipath : "");
  /* a false schema fails as a whole: its own location is the path */
  if (n->is_bool)
    snprintf(e->schema_path, sizeof e->schema_path, "%s", n->spath);
  else
    snprintf(e->schema_path, sizeof e->schema_path, "%s/%s", n->spath, kw);
  snprintf(e->keyword, sizeof e->keyword, "%s", kw);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
}

void cebs_error(cebs_ctx *c, const cebs_node *n, const char *kw,
                const char *fmt, ...) {
  if (c->quiet || !c->res) return;
  va_list ap;
  va_start(ap, fmt);
  error_va(c, n, kw, fmt, ap);
  va_end(ap);
}

/* Validation cannot complete: reported once, even inside a quiet branch. */
static void incomplete(cebs_ctx *c, const cebs_node *n, const char *fmt, ...) {
  if (c->incomplete) return;
  c->incomplete = true;
  if (!c->res) return;
  va_list ap;
  va_start(ap, fmt);
  error_va(c, n, "$ref", fmt, ap);
  va_end(ap);
}

static bool path_reserve(cebs_ctx *c, size_t extra) {
  if (c->ilen + extra + 1 <= c->icap) return true;
  size_t ncap = (c->icap ? c->icap * 2 : 128) + extra;
  char *p = realloc(c->ipath, ncap);
  if (!p) {
    c->oom = true;
    return false;
  }
  c->ipath = p;
  c->icap = ncap;
  return true;
}

size_t cebs_path_push_key(cebs_ctx *c, const char *key) {
  size_t prev = c->ilen, k = strlen(key);
  if (!path_reserve(c, 2 * k + 1)) return prev;
  c->ipath[c->ilen++] = '/';
  for (size_t i = 0; i < k; i++) {
    if (key[i] == '~')
      c->ipath[c->ilen++] = '~', c->ipath[c->ilen++] = '0';
    else if (key[i] == '/')
      c->ipath[c->ilen++] = '~', c->ipath[c->ilen++] = '1';
    else
      c->ipath[c->ilen++] = key[i];
  }
  return prev;
}

size_t cebs_path_push_index(cebs_ctx *c, size_t i) {
  char buf[32];
  snprintf(buf, sizeof buf, "%zu", i);
  return cebs_path_push_key(c, buf);
}

void cebs_path_pop(cebs_ctx *c, size_t prev) {
  c->ilen = prev;
}

void cebs_eval_mark_prop(cebs_ctx *c, cebs_eval *ev, const char *key) {
  if (!ev || ev->all_props) return;
  if (!ev->props && !(ev->props = json_object())) {
    c->oom = true;
    return;
  }
  if (json_object_set_new(ev->props, key, json_true()) != 0) c->oom = true;
}

void cebs_eval_mark_index(cebs_ctx *c, cebs_eval *ev, size_t i, size_t n) {
  if (!ev || ev->all_items || i >= n) return;
  if (!ev->bits) {
    if (!(ev->bits = calloc(n, 1))) {
      c->oom = true;
      return;
    }
    ev->nbits = n;
  }
  if (i < ev->nbits) ev->bits[i] = 1;
}

void cebs_eval_merge(cebs_ctx *c, cebs_eval *dst, const cebs_eval *src) {
  if (src->all_props) {
    dst->all_props = true;
  } else if (src->props && !dst->all_props) {
    const char *k;
    json_t *v;
    json_object_foreach(src->props, k, v) cebs_eval_mark_prop(c, dst, k);
  }
  if (src->all_items) dst->all_items = true;
  if (src->items > dst->items) dst->items = src->items;
  for (size_t i = 0; src->bits && i < src->nbits && !dst->all_items; i++)
    if (src->bits[i]) cebs_eval_mark_index(c, dst, i, src->nbits);
}

void cebs_eval_free(cebs_eval *ev) {
  json_decref(ev->props);
  free(ev->bits);
}

/* $dynamicRef: when the static target is bookended by a $dynamicAnchor of
 * the same name, the outermost resource in the dynamic scope that declares
 * that anchor wins. */
static const cebs_node *dynamic_target(const cebs_node *n,
                                       const cebs_scope *scope) {
  const cebs_node *t = n->dynamic_ref;
  if (!n->dynamic_name) return t;
  for (const cebs_scope *s = scope; s; s = s->up)
    for (size_t i = 0; s->res && i < s->res->ndyn; i++)
      if (strcmp(s->res->dyn[i].name, n->dynamic_name) == 0)
        t = s->res->dyn[i].node;
  return t;
}

static bool any_of(cebs_ctx *c, const cebs_node *n, json_t *inst, cebs_eval *ev,
                   const cebs_scope *scope) {
  bool any = false;
  c->quiet++;
  for (size_t i = 0; i < n->any_of.n; i++) {
    if (cebs_validate_node(c, n->any_of.v[i], inst, ev, scope)) {
      any = true;
      if (!ev) /* annotations need every branch; plain checks stop here */
        break;
    }
  }
  c->quiet--;
  if (!any)
    cebs_error(c, n, "anyOf", "does not match any of the %zu alternatives",
               n->any_of.n);
  return any;
}

static bool one_of(cebs_ctx *c, const cebs_node *n, json_t *inst, cebs_eval *ev,
                   const cebs_scope *scope) {
  size_t matched = 0, first = 0, second = 0;
  cebs_eval ce = {0};
  c->quiet++;
  for (size_t i = 0; i < n->one_of.n && matched < 2; i++) {
    if (cebs_validate_node(c, n->one_of.v[i], inst, ev ? &ce : NULL, scope)) {
      if (matched++ == 0)
        first = i;
      else
        second = i;
    }
  }
  c->quiet--;
  if (matched == 1 && ev) cebs_eval_merge(c, ev, &ce);
  cebs_eval_free(&ce);
  if (matched == 0)
    cebs_error(c, n, "oneOf", "does not match any of the %zu alternatives",
               n->one_of.n);
  else if (matched > 1)
    cebs_error(c, n, "oneOf", "matches more than one alternative (%zu and %zu)",
               first, second);
  return matched == 1;
}

static bool cond(cebs_ctx *c, const cebs_node *n, json_t *inst, cebs_eval *ev,
                 const cebs_scope *scope) {
  c->quiet++;
  bool r = cebs_validate_node(c, n->if_, inst, ev, scope);
  c->quiet--;
  const cebs_node *next = r ? n->then_ : n->else_;
  if (!next) return true;
  if (cebs_validate_node(c, next, inst, ev, scope)) return true;
  cebs_error(c, n, r ? "then" : "else", "does not match the \"%s\" schema",
             r ? "then" : "else");
  return false;
}

static bool unevaluated(cebs_ctx *c, const cebs_node *n, json_t *inst,
                        cebs_eval *ev, const cebs_scope *scope) {
  bool ok = true;
  if (n->unevaluated_items && json_is_array(inst) && !ev->all_items) {
    size_t cnt = json_array_size(inst);
    for (size_t i = ev->items; i < cnt; i++) {
      if (ev->bits && i < ev->nbits && ev->bits[i]) continue;
      size_t prev = cebs_path_push_index(c, i);
      bool r = cebs_validate_node(c, n->unevaluated_items,
                                  json_array_get(inst, i), NULL, scope);
      cebs_path_pop(c, prev);
      if (!r) {
        ok = false;
        if (c->quiet) return false;
      }
    }
    ev->all_items = true;
  }
  if (n->unevaluated_props && json_is_object(inst) && !ev->all_props) {
    const char *k;
    json_t *v;
    json_object_foreach(inst, k, v) {
      if (ev->props && json_object_get(ev->props, k)) continue;
      size_t prev = cebs_path_push_key(c, k);
      bool r = cebs_validate_node(c, n->unevaluated_props, v, NULL, scope);
      cebs_path_pop(c, prev);
      if (!r) {
        ok = false;
        if (c->quiet) return false;
      }
    }
    ev->all_props = true;
  }
  return ok;
}

static bool validate_object(cebs_ctx *c, const cebs_node *n, json_t *inst,
                            cebs_eval *ev, const cebs_scope *scope) {
  bool ok = true;
#define STEP(expr)                                                             \
  do {                                                                         \
    if (!(expr)) {                                                             \
      ok = false;                                                              \
      if (c->quiet) return false;                                              \
    }                                                                          \
  } while (0)
  if (n->ref) STEP(cebs_validate_node(c, n->ref, inst, ev, scope));
  if (n->dynamic_ref)
    STEP(cebs_validate_node(c, dynamic_target(n, scope), inst, ev, scope));
  STEP(cebs_kw_assert(c, n, inst));
  for (size_t i = 0; i < n->all_of.n; i++)
    STEP(cebs_validate_node(c, n->all_of.v[i], inst, ev, scope));
  if (n->any_of.n) STEP(any_of(c, n, inst, ev, scope));
  if (n->one_of.n) STEP(one_of(c, n, inst, ev, scope));
  if (n->not_) {
    c->quiet++;
    bool r = cebs_validate_node(c, n->not_, inst, NULL, scope);
    c->quiet--;
    if (r) cebs_error(c, n, "not", "must not match the \"not\" schema");
    STEP(!r);
  }
  if (n->if_) STEP(cond(c, n, inst, ev, scope));
  if (json_is_object(inst))
    STEP(cebs_kw_object(c, n, inst, ev, scope));
  else if (json_is_array(inst))
    STEP(cebs_kw_array(c, n, inst, ev, scope));
  if (n->needs_eval) STEP(unevaluated(c, n, inst, ev, scope));
#undef STEP
  return ok;
}

bool cebs_validate_node(cebs_ctx *c, const cebs_node *n, json_t *inst,
                        cebs_eval *ev, const cebs_scope *scope) {
  if (n->is_bool) {
    if (!n->bool_val) cebs_error(c, n, "false", "no value is allowed here");
    return n->bool_val;
  }
  if (c->incomplete) return false;
  if (++c->steps > CEBS_MAX_STEPS) {
    incomplete(c, n, "validation stopped after %d schema evaluations",
               CEBS_MAX_STEPS);
    return false;
  }
  if (c->depth >= CEBS_MAX_EVAL_DEPTH) {
    incomplete(c, n, "schema evaluation nested too deeply (%d levels)",
               CEBS_MAX_EVAL_DEPTH);
    return false;
  }
  c->depth++;
  cebs_scope sc;
  if (!scope || scope->res != n->res) {
    sc.res = n->res;
    sc.up = scope;
    scope = &sc;
  }
  cebs_eval le = {0};
  bool ok =
      validate_object(c, n, inst, ev || n->needs_eval ? &le : NULL, scope);
  if (ok && ev) cebs_eval_merge(c, ev, &le);
  cebs_eval_free(&le);
  c->depth--;
  return ok;
}

int ceb_schema_validate(const ceb_schema *s, json_t *instance,
                        ceb_schema_result *res) {
  if (!s || !instance) return CEB_EINVAL;
  if (res) memset(res, 0, sizeof *res);
  cebs_ctx c = {.s = s, .res = res};
  bool ok = cebs_validate_node(&c, s->root, instance, NULL, NULL);
  free(c.ipath);
  if (c.oom) return CEB_ENOMEM;
  if (res) res->valid = ok;
  if (c.incomplete) return CEB_ETOOLARGE;
  return ok ? 1 : 0;
}
