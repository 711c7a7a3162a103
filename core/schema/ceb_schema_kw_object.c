/* Object applicators: properties, patternProperties, additionalProperties,
 * propertyNames, dependentSchemas (and schema-form draft-07 dependencies). */
#include "schema/ceb_schema_int.h"

#include <stdlib.h>
#include <string.h>

static int cmp_key(const void *key, const void *p) {
  return strcmp(key, ((const cebs_prop *)p)->name);
}

#define STEP(cond)                                                             \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ok = false;                                                              \
      if (c->quiet) return false;                                              \
    }                                                                          \
  } while (0)

static bool child(cebs_ctx *c, const cebs_node *n, const char *key, json_t *v,
                  const cebs_scope *scope) {
  size_t prev = cebs_path_push_key(c, key);
  bool r = cebs_validate_node(c, n, v, NULL, scope);
  cebs_path_pop(c, prev);
  return r;
}

bool cebs_kw_object(cebs_ctx *c, const cebs_node *n, json_t *inst,
                    cebs_eval *ev, const cebs_scope *scope) {
  bool ok = true;
  const char *k;
  json_t *v;
  if (n->nprops || n->npatprops || n->additional_props) {
    json_object_foreach(inst, k, v) {
      bool seen = false;
      const cebs_prop *p =
          n->nprops ? bsearch(k, n->props, n->nprops, sizeof *n->props, cmp_key)
                    : NULL;
      if (p) {
        seen = true;
        STEP(child(c, p->node, k, v, scope));
      }
      for (size_t i = 0; i < n->npatprops; i++) {
        if (cebs_regex_search(n->patprops[i].re, k, strlen(k)) == 1) {
          seen = true;
          STEP(child(c, n->patprops[i].node, k, v, scope));
        }
      }
      if (!seen && n->additional_props) {
        seen = true;
        STEP(child(c, n->additional_props, k, v, scope));
      }
      if (seen) cebs_eval_mark_prop(c, ev, k);
    }
  }
  if (n->property_names) {
    json_object_foreach(inst, k, v) {
      json_t *name = json_string(k);
      if (!name) {
        c->oom = true;
        return false;
      }
      bool r = child(c, n->property_names, k, name, scope);
      json_decref(name);
      STEP(r);
    }
  }
  for (size_t i = 0; i < n->ndep_schemas; i++) {
    if (json_object_get(inst, n->dep_schemas[i].name))
      STEP(cebs_validate_node(c, n->dep_schemas[i].node, inst, ev, scope));
  }
  return ok;
}
