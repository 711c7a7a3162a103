/* Bundling external $refs into one self-contained document. */
#include "aa_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUNDLE_KEY "x-ceb-bundled"
#define MAX_DEPTH 256
#define MAX_SLOTS 10000
#define REF_MAX_HOPS 64

typedef struct slot {
  char *key;  /* absolute-uri#fragment */
  char *name; /* key under x-ceb-bundled */
  int done;
} slot;

typedef struct cached {
  char *uri;
  json_t *doc;
} cached;

typedef struct bctx {
  json_t *root, *bag;
  const char *root_uri;
  aa_fetch_fn fetch;
  void *arg;
  size_t max_docs;
  cached *docs;
  size_t ndocs;
  slot *slots;
  size_t nslots;
  aa_bundle_stats *stats;
  char *err;
  size_t errlen;
} bctx;

/* Pointer lookup with URI-fragment %XX decoding. */
static json_t *fragment_get(json_t *doc, const char *frag) {
  char ptr[2048];
  size_t n = 0;
  for (const char *p = frag; *p; p++) {
    char c = *p;
    if (c == '%' && p[1] && p[2]) {
      char hex[3] = {p[1], p[2], 0};
      c = (char)strtol(hex, NULL, 16);
      p += 2;
    }
    if (n + 1 >= sizeof ptr) return NULL;
    ptr[n++] = c;
  }
  ptr[n] = '\0';
  if (!ptr[0]) return doc;
  if (ptr[0] != '/') return NULL;
  json_t *cur = doc;
  char *save = NULL;
  /* strtok_r drops empty tokens; keys "" are not used by AsyncAPI refs. */
  for (char *t = strtok_r(ptr + 1, "/", &save); t && cur;
       t = strtok_r(NULL, "/", &save)) {
    char tok[1024];
    size_t k = 0;
    for (char *q = t; *q && k + 1 < sizeof tok; q++) {
      if (q[0] == '~' && (q[1] == '0' || q[1] == '1')) {
        tok[k++] = q[1] == '0' ? '~' : '/';
        q++;
      } else {
        tok[k++] = *q;
      }
    }
    tok[k] = '\0';
    if (json_is_object(cur)) {
      cur = json_object_get(cur, tok);
    } else if (json_is_array(cur)) {
      char *end;
      unsigned long i = strtoul(tok, &end, 10);
      cur = *end || !k ? NULL : json_array_get(cur, i);
    } else {
      cur = NULL;
    }
  }
  return cur;
}

static json_t *load_doc(bctx *x, const char *uri) {
  for (size_t i = 0; i < x->ndocs; i++)
    if (strcmp(x->docs[i].uri, uri) == 0) return x->docs[i].doc;
  if (x->ndocs >= x->max_docs) {
    snprintf(x->err, x->errlen, "more than %zu referenced documents",
             x->max_docs);
    return NULL;
  }
  size_t len = 0;
  char why[256] = "";
  char *text = x->fetch(x->arg, uri, &len, why, sizeof why);
  if (!text) {
    snprintf(x->err, x->errlen, "cannot read %s: %s", uri, why);
    return NULL;
  }
  json_t *doc = aa_parse(text, len, why, sizeof why);
  free(text);
  if (!doc) {
    snprintf(x->err, x->errlen, "%s: %s", uri, why);
    return NULL;
  }
  cached *n = realloc(x->docs, (x->ndocs + 1) * sizeof *n);
  if (!n) {
    json_decref(doc);
    snprintf(x->err, x->errlen, "out of memory");
    return NULL;
  }
  x->docs = n;
  x->docs[x->ndocs].uri = strdup(uri);
  x->docs[x->ndocs++].doc = doc;
  x->stats->documents++;
  return doc;
}

/* A readable, machine-independent slot name: the referenced document's
 * path below the directory it shares with the root, plus the fragment,
 * with pointer-unsafe characters replaced. */
static char *slot_name(bctx *x, const char *uri, const char *frag) {
  size_t common = 0;
  for (size_t i = 0; uri[i] && uri[i] == x->root_uri[i]; i++)
    if (uri[i] == '/') common = i + 1;
  /* The fragment's last token alone when it is free ("commentLiked"),
   * else qualified by the document. */
  const char *last = strrchr(frag, '/');
  last = last ? last + 1 : frag;
  char raw[1024];
  if (*last && !json_object_get(x->bag, last))
    snprintf(raw, sizeof raw, "%s", last);
  else
    snprintf(raw, sizeof raw, "%s%s%s", uri + common, *frag ? "-" : "",
             frag + (*frag == '/'));
  for (char *p = raw; *p; p++)
    if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
        !(*p >= '0' && *p <= '9') && *p != '.' && *p != '-' && *p != '_')
      *p = '_';
  char name[1100];
  snprintf(name, sizeof name, "%s", raw);
  for (int n = 2; json_object_get(x->bag, name); n++)
    snprintf(name, sizeof name, "%s~%d", raw, n);
  /* '~' would need escaping in a pointer: use a plain suffix instead. */
  for (char *p = name; *p; p++)
    if (*p == '~') *p = '.';
  return strdup(name);
}

static int walk(bctx *x, json_t *node, const char *base, int in_root,
                int depth);

/* Rewrites the $ref of node (which leaves the root document). */
static int bundle_ref(bctx *x, json_t *node, const char *ref,
                      const char *base) {
  char uri[4096];
  if (aa_uri_resolve(base, ref, uri, sizeof uri) != 0) {
    snprintf(x->err, x->errlen, "$ref '%.200s' is too long", ref);
    return -1;
  }
  const char *hash = strchr(ref, '#');
  const char *frag = hash ? hash + 1 : "";
  if (strcmp(uri, x->root_uri) == 0) {
    /* Back into the root: a local ref. */
    char local[2048];
    snprintf(local, sizeof local, "#%s", frag);
    return json_object_set_new(node, "$ref", json_string(local));
  }
  char key[8192];
  snprintf(key, sizeof key, "%s#%s", uri, frag);
  slot *s = NULL;
  for (size_t i = 0; i < x->nslots; i++)
    if (strcmp(x->slots[i].key, key) == 0) s = &x->slots[i];
  if (!s) {
    json_t *doc = load_doc(x, uri);
    if (!doc) return -1;
    json_t *target = fragment_get(doc, frag);
    if (!target) {
      snprintf(x->err, x->errlen,
               "$ref '%.200s' (from %.200s): nothing at "
               "#%.200s in %.200s",
               ref, base, frag, uri);
      return -1;
    }
    if (x->nslots == MAX_SLOTS) {
      snprintf(x->err, x->errlen, "more than %d bundled parts", MAX_SLOTS);
      return -1;
    }
    slot *n = realloc(x->slots, (x->nslots + 1) * sizeof *n);
    if (!n) return -1;
    x->slots = n;
    s = &x->slots[x->nslots++];
    s->key = strdup(key);
    s->name = slot_name(x, uri, frag);
    s->done = 0;
    if (!s->key || !s->name) return -1;
    json_t *copy = json_deep_copy(target);
    if (!copy || json_object_set_new(x->bag, s->name, copy) != 0) return -1;
    x->stats->inlined++;
    size_t idx = (size_t)(s - x->slots);
    char name[1100];
    snprintf(name, sizeof name, "%s", s->name);
    if (walk(x, copy, uri, 0, 1) != 0) return -1;
    x->slots[idx].done = 1; /* the array may have moved */
    char local[1200];
    snprintf(local, sizeof local, "#/" BUNDLE_KEY "/%s", name);
    return json_object_set_new(node, "$ref", json_string(local));
  }
  if (!s->done) x->stats->recursive++;
  char local[1200];
  snprintf(local, sizeof local, "#/" BUNDLE_KEY "/%s", s->name);
  return json_object_set_new(node, "$ref", json_string(local));
}

static int walk(bctx *x, json_t *node, const char *base, int in_root,
                int depth) {
  if (depth > MAX_DEPTH) {
    snprintf(x->err, x->errlen, "document nests deeper than %d", MAX_DEPTH);
    return -1;
  }
  if (json_is_array(node)) {
    size_t i;
    json_t *v;
    json_array_foreach(node, i, v) {
      if (walk(x, v, base, in_root, depth + 1) != 0) return -1;
    }
    return 0;
  }
  if (!json_is_object(node)) return 0;
  json_t *r = json_object_get(node, "$ref");
  if (json_is_string(r)) {
    const char *ref = json_string_value(r);
    if (!(in_root && ref[0] == '#')) {
      char copy[4096];
      if (snprintf(copy, sizeof copy, "%s", ref) >= (int)sizeof copy) {
        snprintf(x->err, x->errlen, "$ref is too long");
        return -1;
      }
      if (bundle_ref(x, node, copy, base) != 0) {
        if (!x->err[0]) snprintf(x->err, x->errlen, "out of memory");
        return -1;
      }
    }
  }
  const char *k;
  json_t *v;
  json_object_foreach(node, k, v) {
    if (strcmp(k, "$ref") == 0) continue;
    if (in_root && depth == 0 && strcmp(k, BUNDLE_KEY) == 0)
      continue; /* walked as the slots are filled */
    if (walk(x, v, base, in_root, depth + 1) != 0) return -1;
  }
  return 0;
}

/* Every local ref of the bundled document must reach a non-ref value. */
static int check_refs(bctx *x, json_t *node, int depth) {
  if (depth > MAX_DEPTH) return 0;
  if (json_is_array(node)) {
    size_t i;
    json_t *v;
    json_array_foreach(node, i, v) {
      if (check_refs(x, v, depth + 1) != 0) return -1;
    }
    return 0;
  }
  if (!json_is_object(node)) return 0;
  json_t *cur = node;
  json_t *seen[REF_MAX_HOPS];
  int hops = 0;
  while (json_is_object(cur) && json_is_string(json_object_get(cur, "$ref"))) {
    const char *ref = json_string_value(json_object_get(cur, "$ref"));
    if (ref[0] != '#')
      break; /* JSON Schema $id-relative refs are left to the compiler */
    for (int i = 0; i < hops; i++)
      if (seen[i] == cur) {
        snprintf(x->err, x->errlen,
                 "$ref cycle: '%.200s' refers back to "
                 "itself through refs only",
                 ref);
        return -1;
      }
    if (hops == REF_MAX_HOPS) {
      snprintf(x->err, x->errlen, "$ref chain longer than %d", REF_MAX_HOPS);
      return -1;
    }
    seen[hops++] = cur;
    json_t *next = fragment_get(x->root, ref + 1);
    if (!next) {
      snprintf(x->err, x->errlen, "$ref '%.200s' points at nothing", ref);
      return -1;
    }
    cur = next;
  }
  const char *k;
  json_t *v;
  json_object_foreach(node, k, v) {
    if (check_refs(x, v, depth + 1) != 0) return -1;
  }
  return 0;
}

int aa_bundle(json_t *root, const char *base, aa_fetch_fn fetch,
              void *fetch_arg, size_t max_docs, aa_bundle_stats *stats,
              char *err, size_t errlen) {
  aa_bundle_stats local;
  if (!stats) stats = &local;
  memset(stats, 0, sizeof *stats);
  err[0] = '\0';
  if (!json_is_object(root)) {
    snprintf(err, errlen, "the document is not an object");
    return -1;
  }
  bctx x = {.root = root,
            .root_uri = base,
            .fetch = fetch,
            .arg = fetch_arg,
            .max_docs = max_docs,
            .stats = stats,
            .err = err,
            .errlen = errlen};
  x.bag = json_object();
  int rc = x.bag ? walk(&x, root, base, 1, 0) : -1;
  if (rc == 0 && json_object_size(x.bag)) {
    json_t *old = json_object_get(root, BUNDLE_KEY);
    if (json_is_object(old)) /* re-bundling a bundled document */
      json_object_update_missing(x.bag, old);
    rc = json_object_set(root, BUNDLE_KEY, x.bag);
  }
  if (rc == 0) rc = check_refs(&x, root, 0);
  if (rc != 0 && !err[0]) snprintf(err, errlen, "out of memory");
  json_decref(x.bag);
  for (size_t i = 0; i < x.ndocs; i++) {
    free(x.docs[i].uri);
    json_decref(x.docs[i].doc);
  }
  free(x.docs);
  for (size_t i = 0; i < x.nslots; i++) {
    free(x.slots[i].key);
    free(x.slots[i].name);
  }
  free(x.slots);
  return rc == 0 ? 0 : -1;
}
