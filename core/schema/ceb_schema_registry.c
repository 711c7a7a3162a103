/* The compiler's registry: documents, schema resources and identifiers
 * ($id, draft-07 "#name" ids, $anchor, $dynamicAnchor), remote documents
 * loaded through the caller's resources / resolver, and $ref resolution to
 * the referenced schema JSON. */
#include "schema/ceb_schema_comp.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *cebs_comp_fail(cebs_comp *c, int rc, const char *fmt, ...) {
  if (c->rc == 0) {
    c->rc = rc;
    if (c->err && c->errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(c->err, c->errlen, fmt, ap);
      va_end(ap);
    }
  }
  return NULL;
}

char *cebs_spath_join(const char *base, const char *key) {
  size_t n = strlen(base), k = strlen(key);
  char *out = malloc(n + 2 * k + 2), *o;
  if (!out) return NULL;
  memcpy(out, base, n);
  o = out + n;
  *o++ = '/';
  for (const char *p = key; *p; p++) {
    if (*p == '~')
      *o++ = '~', *o++ = '0';
    else if (*p == '/')
      *o++ = '~', *o++ = '1';
    else
      *o++ = *p;
  }
  *o = '\0';
  return out;
}

int cebs_draft_from_uri(const char *uri, int fallback) {
  if (strstr(uri, "draft-07") || strstr(uri, "draft-06") ||
      strstr(uri, "draft-04"))
    return CEB_SCHEMA_DRAFT7;
  if (strstr(uri, "2020-12") || strstr(uri, "2019-09"))
    return CEB_SCHEMA_DRAFT2020;
  return fallback;
}

static cebs_resource *res_new(cebs_comp *c, const char *uri) {
  ceb_schema *s = c->s;
  if (s->nres == s->capres) {
    size_t ncap = s->capres ? s->capres * 2 : 8;
    cebs_resource **v = realloc(s->resources, ncap * sizeof *v);
    if (!v) return cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    s->resources = v;
    s->capres = ncap;
  }
  cebs_resource *r = calloc(1, sizeof *r);
  if (!r || !(r->uri = strdup(uri))) {
    free(r);
    return cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
  }
  s->resources[s->nres++] = r;
  return r;
}

static int put_id(cebs_comp *c, const char *abs, const char *anchor,
                  json_t *j) {
  char *key;
  if (asprintf(&key, "%s%s%s", abs, anchor ? "#" : "", anchor ? anchor : "") <
      0) {
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    return -1;
  }
  int rc = 0;
  /* the first registration of an identifier wins (duplicates are a schema
   * author's error; keep the outermost) */
  if (!cebs_map_get(&c->ids, key, strlen(key)) &&
      cebs_map_put(&c->ids, key, strlen(key), j) != 0) {
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    rc = -1;
  }
  free(key);
  return rc;
}

static int add_pending_dyn(cebs_comp *c, cebs_resource *res, const char *name,
                           json_t *j) {
  if (c->ndyn == c->capdyn) {
    size_t ncap = c->capdyn ? c->capdyn * 2 : 8;
    cebs_pending_dyn *v = realloc(c->dyn, ncap * sizeof *v);
    if (!v) goto oom;
    c->dyn = v;
    c->capdyn = ncap;
  }
  char *nm = strdup(name);
  if (!nm) goto oom;
  c->dyn[c->ndyn++] = (cebs_pending_dyn){res, nm, j};
  return 0;
oom:
  cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
  return -1;
}

static void sinfo_free(void *p) {
  cebs_sinfo *si = p;
  free(si->base);
  free(si->spath);
  free(si);
}

static int put_info(cebs_comp *c, json_t *j, const char *base,
                    const char *spath, cebs_resource *res, int draft,
                    bool no_validation) {
  cebs_sinfo *si = calloc(1, sizeof *si);
  if (!si || !(si->base = strdup(base)) || !(si->spath = strdup(spath))) {
    if (si) free(si->base);
    free(si);
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    return -1;
  }
  si->res = res;
  si->draft = draft;
  si->no_validation = no_validation;
  cebs_sinfo *old = cebs_map_get(&c->info, &j, sizeof j);
  if (cebs_map_put(&c->info, &j, sizeof j, si) != 0) {
    sinfo_free(si);
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    return -1;
  }
  if (old) sinfo_free(old);
  return 0;
}

/* What a subschema inherits from its parent during the scan. */
typedef struct scan_env {
  const char *base;
  cebs_resource *res;
  int draft;
  bool no_validation; /* the meta-schema leaves out the validation vocab */
  bool may_switch;    /* "$schema" here may change the draft */
} scan_env;

static int scan(cebs_comp *c, json_t *j, scan_env env, const char *spath,
                bool is_root);

static int scan_child(cebs_comp *c, json_t *j, scan_env env, const char *spath,
                      const char *kw, const char *key) {
  char *p1 = cebs_spath_join(spath, kw);
  char *p2 = p1 && key ? cebs_spath_join(p1, key) : NULL;
  int rc;
  if (!p1 || (key && !p2)) {
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    rc = -1;
  } else {
    env.may_switch = true;
    rc = scan(c, j, env, key ? p2 : p1, false);
  }
  free(p1);
  free(p2);
  return rc;
}

static const char *const single_kws[] = {"additionalItems",
                                         "additionalProperties",
                                         "contains",
                                         "propertyNames",
                                         "not",
                                         "if",
                                         "then",
                                         "else",
                                         "unevaluatedItems",
                                         "unevaluatedProperties",
                                         "items"};
static const char *const array_kws[] = {"allOf", "anyOf", "oneOf",
                                        "prefixItems", "items"};
static const char *const map_kws[] = {
    "properties",  "patternProperties", "$defs",
    "definitions", "dependentSchemas",  "dependencies"};

static json_t *load_remote(cebs_comp *c, const char *abs, int draft);

#define VOCAB_VALIDATION                                                       \
  "https://json-schema.org/draft/2020-12/vocab/validation"

/* A 2020-12 "$schema" naming a custom meta-schema: its "$vocabulary" says
 * whether the validation vocabulary applies. Returns true when it does not. */
static bool lacks_validation_vocab(cebs_comp *c, const char *metauri) {
  if (strcmp(metauri, "https://json-schema.org/draft/2020-12/schema") == 0)
    return false;
  const char *frag;
  char *abs = cebs_uri_split(metauri, &frag);
  if (!abs) return false;
  json_t *meta = cebs_map_get(&c->ids, abs, strlen(abs));
  if (!meta) meta = load_remote(c, abs, CEB_SCHEMA_DRAFT2020);
  free(abs);
  json_t *vocab =
      json_is_object(meta) ? json_object_get(meta, "$vocabulary") : NULL;
  return json_is_object(vocab) && !json_object_get(vocab, VOCAB_VALIDATION);
}

static int scan_object(cebs_comp *c, json_t *j, scan_env env, const char *spath,
                       bool is_root) {
  json_t *sch = json_object_get(j, "$schema");
  json_t *id = json_object_get(j, "$id");
  if (json_is_string(sch) && (is_root || json_is_string(id))) {
    if (env.may_switch)
      env.draft = cebs_draft_from_uri(json_string_value(sch), env.draft);
    if (env.draft == CEB_SCHEMA_DRAFT2020)
      env.no_validation = lacks_validation_vocab(c, json_string_value(sch));
    if (c->rc) return -1;
  }
  bool ref_only = env.draft == CEB_SCHEMA_DRAFT7 && json_object_get(j, "$ref");
  char *nbase = NULL;
  int rc = -1;
  if (json_is_string(id) && !ref_only) {
    const char *ids = json_string_value(id);
    if (env.draft == CEB_SCHEMA_DRAFT7 && ids[0] == '#') {
      if (put_id(c, env.base, ids + 1, j) != 0) return -1;
    } else {
      char *full = cebs_uri_resolve(env.base, ids);
      const char *frag;
      nbase = full ? cebs_uri_split(full, &frag) : NULL;
      if (!nbase) {
        free(full);
        cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
        return -1;
      }
      int r = put_id(c, nbase, NULL, j);
      if (r == 0 && env.draft == CEB_SCHEMA_DRAFT7 && frag && *frag)
        r = put_id(c, nbase, frag, j);
      free(full);
      if (r != 0 || !(env.res = res_new(c, nbase))) goto out;
      env.base = nbase;
    }
  }
  if (env.draft == CEB_SCHEMA_DRAFT2020) {
    json_t *a = json_object_get(j, "$anchor");
    if (json_is_string(a) && put_id(c, env.base, json_string_value(a), j) != 0)
      goto out;
    a = json_object_get(j, "$dynamicAnchor");
    if (json_is_string(a) &&
        (put_id(c, env.base, json_string_value(a), j) != 0 ||
         add_pending_dyn(c, env.res, json_string_value(a), j) != 0))
      goto out;
  }
  if (put_info(c, j, env.base, spath, env.res, env.draft, env.no_validation) !=
      0)
    goto out;
  rc = 0;
  if (ref_only) goto out; /* draft-07: siblings of $ref are ignored */
  for (size_t i = 0; i < sizeof single_kws / sizeof *single_kws && !rc; i++) {
    json_t *v = json_object_get(j, single_kws[i]);
    if (v && (json_is_object(v) || json_is_boolean(v)))
      rc = scan_child(c, v, env, spath, single_kws[i], NULL);
  }
  for (size_t i = 0; i < sizeof array_kws / sizeof *array_kws && !rc; i++) {
    json_t *v = json_object_get(j, array_kws[i]);
    size_t k;
    json_t *e;
    char idx[32];
    if (!json_is_array(v)) continue;
    json_array_foreach(v, k, e) {
      snprintf(idx, sizeof idx, "%zu", k);
      if ((rc = scan_child(c, e, env, spath, array_kws[i], idx))) break;
    }
  }
  for (size_t i = 0; i < sizeof map_kws / sizeof *map_kws && !rc; i++) {
    json_t *v = json_object_get(j, map_kws[i]), *e;
    const char *k;
    if (!json_is_object(v)) continue;
    json_object_foreach(v, k, e) {
      if ((rc = scan_child(c, e, env, spath, map_kws[i], k))) break;
    }
  }
out:
  free(nbase);
  return rc;
}

static int scan(cebs_comp *c, json_t *j, scan_env env, const char *spath,
                bool is_root) {
  if (json_is_boolean(j))
    return put_info(c, j, env.base, spath, env.res, env.draft,
                    env.no_validation);
  if (!json_is_object(j))
    return 0; /* not a schema; reported if a keyword uses it */
  if (++c->scan_depth > CEBS_MAX_DEPTH) {
    c->scan_depth--;
    cebs_comp_fail(c, CEB_EINVAL, "%s%s: schema nested too deeply",
                   CEBS_SPATH_SHORT(spath));
    return -1;
  }
  int rc = scan_object(c, j, env, spath, is_root);
  c->scan_depth--;
  return rc;
}

int cebs_registry_add(cebs_comp *c, json_t *doc, const char *uri, int draft) {
  const char *frag;
  char *abs = cebs_uri_split(uri, &frag);
  char *spath = NULL;
  int rc = -1;
  bool main_doc = !c->main_added;
  c->main_added = true;
  if (!abs || (main_doc && !(c->main_uri = strdup(abs))) ||
      asprintf(&spath, "%s#", main_doc ? "" : abs) < 0) {
    spath = NULL;
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    goto out;
  }
  cebs_resource *res = res_new(c, abs);
  if (!res || put_id(c, abs, NULL, doc) != 0) goto out;
  scan_env env = {.base = abs,
                  .res = res,
                  .draft = draft,
                  .may_switch = !(main_doc && c->forced_draft)};
  rc = scan(c, doc, env, spath, true);
out:
  free(abs);
  free(spath);
  return rc;
}

int cebs_registry_add_sub(cebs_comp *c, json_t *doc, json_t *sub,
                          const char *spath) {
  if (cebs_registry_info(c, sub))
    return 0; /* the document scan already reached it */
  cebs_sinfo *root = cebs_registry_info(c, doc);
  if (!root) {
    cebs_comp_fail(c, CEB_EINVAL, "the document is not a JSON object");
    return -1;
  }
  scan_env env = {.base = root->base,
                  .res = root->res,
                  .draft = root->draft,
                  .no_validation = root->no_validation,
                  .may_switch = !c->forced_draft};
  return scan(c, sub, env, spath, true);
}

/* Bounds on external loading: a resolver that answers every URI (or a
 * schema whose refs build ever longer URIs) cannot make compile run away. */
#define CEBS_MAX_DOCS 256
#define CEBS_MAX_URI 2048

static json_t *load_remote(cebs_comp *c, const char *abs, int draft) {
  if (strlen(abs) > CEBS_MAX_URI)
    return cebs_comp_fail(c, CEB_EINVAL, "$ref URI longer than %d bytes",
                          CEBS_MAX_URI);
  if (json_array_size(c->owned) >= CEBS_MAX_DOCS)
    return cebs_comp_fail(c, CEB_EINVAL,
                          "more than %d external schema documents (at %.200s)",
                          CEBS_MAX_DOCS, abs);
  if (cebs_map_get(&c->docs_seen, abs, strlen(abs))) return NULL;
  if (cebs_map_put(&c->docs_seen, abs, strlen(abs), (void *)1) != 0)
    return cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
  json_t *doc = NULL;
  if (c->opts && c->opts->resources)
    doc = json_incref(json_object_get(c->opts->resources, abs));
  if (!doc && c->opts && c->opts->resolve)
    doc = c->opts->resolve(c->opts->resolve_arg, abs);
  if (!doc) return NULL;
  if (json_array_append_new(c->owned, doc) != 0)
    return cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
  if (cebs_registry_add(c, doc, abs, draft) != 0) return NULL;
  return cebs_map_get(&c->ids, abs, strlen(abs));
}

json_t *cebs_registry_resolve(cebs_comp *c, const char *base, const char *ref,
                              int draft, cebs_sinfo **info, char **abs_out,
                              char **frag_out) {
  char *full = cebs_uri_resolve(base, ref), *abs = NULL, *dec = NULL;
  const char *frag = NULL;
  json_t *target = NULL;
  *info = NULL;
  if (!full || !(abs = cebs_uri_split(full, &frag))) {
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    goto out;
  }
  json_t *root = cebs_map_get(&c->ids, abs, strlen(abs));
  if (!root) root = load_remote(c, abs, draft);
  if (!root) {
    if (!c->rc)
      cebs_comp_fail(c, CEB_EINVAL,
                     "unresolvable $ref \"%s\": no schema known as \"%s\"", ref,
                     abs);
    goto out;
  }
  if (!frag || !*frag) {
    target = root;
  } else if (frag[0] == '/') {
    if (!(dec = cebs_pct_decode(frag)))
      cebs_comp_fail(c, CEB_EINVAL, "bad percent-encoding in $ref \"%s\"", ref);
    else
      target = cebs_json_pointer(root, dec);
  } else {
    char *key;
    if (asprintf(&key, "%s#%s", abs, frag) < 0) {
      cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
      goto out;
    }
    target = cebs_map_get(&c->ids, key, strlen(key));
    free(key);
  }
  if (!target) {
    cebs_comp_fail(c, CEB_EINVAL, "unresolvable $ref \"%s\" (%s)", ref, full);
    goto out;
  }
  *info = cebs_map_get(&c->info, &target, sizeof target);
  if (frag_out && !(*frag_out = strdup(frag ? frag : ""))) {
    cebs_comp_fail(c, CEB_ENOMEM, "out of memory");
    target = NULL;
    goto out;
  }
  if (abs_out) {
    *abs_out = abs;
    abs = NULL;
  }
out:
  free(full);
  free(abs);
  free(dec);
  return target;
}

cebs_sinfo *cebs_registry_info(cebs_comp *c, json_t *schema) {
  return cebs_map_get(&c->info, &schema, sizeof schema);
}

void cebs_registry_free(cebs_comp *c) {
  cebs_map_clear(&c->ids, NULL);
  cebs_map_clear(&c->info, sinfo_free);
  cebs_map_clear(&c->nodes, NULL);
  cebs_map_clear(&c->docs_seen, NULL);
  for (size_t i = 0; i < c->ndyn; i++)
    free(c->dyn[i].name);
  free(c->dyn);
  json_decref(c->owned);
  free(c->main_uri);
}
