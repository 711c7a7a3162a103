/* Array applicators: prefixItems / items (2020-12), items array /
 * additionalItems (draft-07), contains with minContains / maxContains. */
#include "schema/ceb_schema_int.h"

static bool contains(cebs_ctx *c, const cebs_node *n, json_t *inst,
                     cebs_eval *ev, const cebs_scope *scope) {
  size_t cnt = json_array_size(inst), matched = 0;
  c->quiet++;
  for (size_t i = 0; i < cnt; i++) {
    if (cebs_validate_node(c, n->contains, json_array_get(inst, i), NULL,
                           scope)) {
      matched++;
      cebs_eval_mark_index(c, ev, i, cnt);
    }
  }
  c->quiet--;
  long long min = n->min_contains >= 0 ? n->min_contains : 1;
  if ((long long)matched < min) {
    if (n->min_contains >= 0)
      cebs_error(c, n, "minContains",
                 "must contain at least %lld matching items (has %zu)", min,
                 matched);
    else
      cebs_error(c, n, "contains", "must contain a matching item");
    return false;
  }
  if (n->max_contains >= 0 && (long long)matched > n->max_contains) {
    cebs_error(c, n, "maxContains",
               "must contain at most %lld matching items (has %zu)",
               n->max_contains, matched);
    return false;
  }
  return true;
}

bool cebs_kw_array(cebs_ctx *c, const cebs_node *n, json_t *inst, cebs_eval *ev,
                   const cebs_scope *scope) {
  bool ok = true;
  size_t cnt = json_array_size(inst);
  size_t np = n->prefix_items.n < cnt ? n->prefix_items.n : cnt;
  for (size_t i = 0; i < np; i++) {
    size_t prev = cebs_path_push_index(c, i);
    bool r = cebs_validate_node(c, n->prefix_items.v[i],
                                json_array_get(inst, i), NULL, scope);
    cebs_path_pop(c, prev);
    if (!r) {
      ok = false;
      if (c->quiet) return false;
    }
  }
  if (ev && ev->items < np) ev->items = np;
  if (n->items) {
    for (size_t i = n->prefix_items.n; i < cnt; i++) {
      size_t prev = cebs_path_push_index(c, i);
      bool r =
          cebs_validate_node(c, n->items, json_array_get(inst, i), NULL, scope);
      cebs_path_pop(c, prev);
      if (!r) {
        ok = false;
        if (c->quiet) return false;
      }
    }
    if (ev) ev->all_items = true;
  }
  if (n->contains && !contains(c, n, inst, ev, scope)) ok = false;
  return ok;
}
