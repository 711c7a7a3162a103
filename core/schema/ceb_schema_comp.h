/* Compiler state shared by ceb_schema_registry.c (documents, resources,
 * identifiers, $ref resolution) and ceb_schema_compile.c (keywords). */
#ifndef CEB_SCHEMA_COMP_H
#define CEB_SCHEMA_COMP_H

#include "schema/ceb_schema_int.h"

#include <string.h>

/* Where a schema object sits: recorded for every subschema the registry
 * scan visits, keyed by the json_t pointer. */
typedef struct cebs_sinfo {
  char *base;  /* base URI in effect inside this schema (after its $id) */
  char *spath; /* "#/..." or "uri#/..." */
  cebs_resource *res;
  int draft;
  bool no_validation; /* validation vocabulary switched off */
} cebs_sinfo;

typedef struct cebs_pending_dyn {
  cebs_resource *res;
  char *name;
  json_t *schema;
} cebs_pending_dyn;

typedef struct cebs_comp {
  ceb_schema *s;
  const ceb_schema_opts *opts;
  int default_draft;
  cebs_map ids;       /* "abs-uri" and "abs-uri#anchor" -> json_t* */
  cebs_map info;      /* json_t* -> cebs_sinfo* */
  cebs_map nodes;     /* json_t* -> cebs_node* */
  cebs_map docs_seen; /* remote URIs already requested -> (void*)1 */
  json_t *owned;      /* array: remote documents kept alive while compiling */
  cebs_pending_dyn *dyn;
  size_t ndyn, capdyn;
  char *err;
  size_t errlen;
  int rc;            /* first error: CEB_EINVAL / CEB_ENOMEM */
  int depth;         /* compile nesting */
  int scan_depth;    /* registry scan nesting */
  bool forced_draft; /* opts->draft overrides the main root's $schema */
  bool main_added;
  char *main_uri;
  /* absolute URI of the main document */ /* the first document gets "#"
                                             schema paths */
} cebs_comp;

#define CEBS_MAX_DEPTH 256

/* Records the first error (printf style) and returns NULL for chaining. */
void *cebs_comp_fail(cebs_comp *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Registers a document: walks its subschemas, records sinfo, resources,
 * $id / $anchor / $dynamicAnchor identifiers. `uri` is its absolute
 * retrieval URI (may be ""). Returns 0 or -1 (error recorded). */
int cebs_registry_add(cebs_comp *c, json_t *doc, const char *uri, int draft);

/* Registers `sub`, a schema somewhere inside the already added main
 * document `doc` that the scan did not reach (e.g. an AsyncAPI payload under
 * "components"), with the document's base URI. 0 or -1. */
int cebs_registry_add_sub(cebs_comp *c, json_t *doc, json_t *sub,
                          const char *spath);

/* 7 or 2020 for a "$schema" URI; fallback when not recognised. */
int cebs_draft_from_uri(const char *uri, int fallback);

/* Resolves `ref` against `base` to a schema (and its sinfo, NULL when it
 * was not visited by the scan, e.g. a pointer into an unknown keyword).
 * Loads remote documents through opts. NULL with the error recorded when
 * unresolvable. *frag_out (may be NULL) receives a malloc'd fragment. */
json_t *cebs_registry_resolve(cebs_comp *c, const char *base, const char *ref,
                              int draft, cebs_sinfo **info, char **abs_out,
                              char **frag_out);

cebs_sinfo *cebs_registry_info(cebs_comp *c, json_t *schema);
void cebs_registry_free(cebs_comp *c);

/* Creates (or returns) the node compiled from `schema`. `inherit` gives the
 * base/resource/draft for schemas the scan did not visit. */
cebs_node *cebs_compile_node(cebs_comp *c, json_t *schema,
                             const cebs_sinfo *inherit, const char *spath);

/* Compiles the keywords of schema object j into n (ceb_schema_compile_kw.c),
 * except $ref / $dynamicRef. 0 or -1 (error recorded). */
int cebs_compile_keywords(cebs_comp *c, cebs_node *n, const cebs_sinfo *eff,
                          json_t *j);
/* Records "<path>/<kw>: must be <what>"; returns NULL. */
void *cebs_bad_kw(cebs_comp *c, const cebs_node *n, const char *kw,
                  const char *what);

/* Rejects in-place reference cycles (ceb_schema_cycles.c). 0 or -1. */
int cebs_check_cycles(cebs_comp *c);

/* Two printf "%s%s" arguments for a schema path in a message: long paths
 * (remote documents with long URIs) are cut to their last 100 bytes. */
#define CEBS_SPATH_SHORT(p)                                                    \
  (strlen(p) > 100 ? "..." : ""),                                              \
      ((p) + (strlen(p) > 100 ? strlen(p) - 100 : 0))

/* Path helper: malloc'd "<base>/<escaped key>". */
char *cebs_spath_join(const char *base, const char *key);

#endif
