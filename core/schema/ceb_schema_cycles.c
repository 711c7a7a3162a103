/* Compile-time rejection of in-place reference cycles: a loop of $ref /
 * $dynamicRef / allOf / anyOf / oneOf / not / if / then / else /
 * dependentSchemas edges evaluates the same instance location forever
 * (e.g. {"$ref": "#"}), so such a schema is invalid. Cycles through
 * properties / items and friends are fine: they descend into the instance. */
#include "schema/ceb_schema_comp.h"

#include <stdlib.h>
#include <string.h>

/* The k-th in-place edge of n, or NULL past the last one. */
static const cebs_node *edge(const ceb_schema *s, const cebs_node *n,
                             size_t k) {
  const cebs_node *fixed[] = {n->ref, n->dynamic_ref, n->not_,
                              n->if_, n->then_,       n->else_};
  static const cebs_node none = {.is_bool = true}; /* an absent keyword */
  size_t nf = sizeof fixed / sizeof *fixed;
  if (k < nf) return fixed[k] ? fixed[k] : &none;
  k -= nf;
  const cebs_nodes *lists[] = {&n->all_of, &n->any_of, &n->one_of};
  for (size_t i = 0; i < 3; i++) {
    if (k < lists[i]->n) return lists[i]->v[k];
    k -= lists[i]->n;
  }
  if (k < n->ndep_schemas) return n->dep_schemas[k].node;
  k -= n->ndep_schemas;
  /* a $dynamicRef may land on any same-named $dynamicAnchor */
  for (size_t r = 0; n->dynamic_name && r < s->nres; r++) {
    const cebs_resource *res = s->resources[r];
    for (size_t a = 0; a < res->ndyn; a++) {
      if (strcmp(res->dyn[a].name, n->dynamic_name) != 0) continue;
      if (k == 0) return res->dyn[a].node;
      k--;
    }
  }
  return NULL;
}

int cebs_check_cycles(cebs_comp *c) {
  ceb_schema *s = c->s;
  size_t nn = s->nnodes;
  /* 0 unvisited, 1 on the DFS stack, 2 done */
  unsigned char *color = calloc(nn ? nn : 1, 1);
  struct frame {
    const cebs_node *n;
    size_t next;
  } *stack = malloc((nn ? nn : 1) * sizeof *stack);
  int rc = 0;
  if (!color || !stack) {
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    rc = -1;
    goto out;
  }
  for (size_t root = 0; root < nn && rc == 0; root++) {
    if (color[root]) continue;
    size_t sp = 0;
    stack[sp++] = (struct frame){s->nodes[root], 0};
    color[root] = 1;
    while (sp > 0) {
      struct frame *f = &stack[sp - 1];
      const cebs_node *e = edge(s, f->n, f->next++);
      if (!e) {
        color[f->n->idx] = 2;
        sp--;
        continue;
      }
      if (e->is_bool) continue;
      if (color[e->idx] == 1) {
        cebs_comp_fail(c, CEB_EINVAL,
                       "%s: reference cycle that never descends into the "
                       "instance (through %s)",
                       e->spath, f->n->spath);
        rc = -1;
        break;
      }
      if (color[e->idx] == 0) {
        color[e->idx] = 1;
        stack[sp++] = (struct frame){e, 0};
      }
    }
  }
out:
  free(color);
  free(stack);
  return rc;
}
