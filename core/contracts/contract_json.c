/* JSON Pointer, local $ref resolution and merge patches over jansson. */
#include "contracts/ceb_contract.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEREF_MAX_HOPS 64

json_t *ceb_json_pointer_get(json_t *doc, const char *ptr) {
  if (!doc || !ptr) return NULL;
  if (!*ptr) return doc;
  if (*ptr != '/') return NULL;
  json_t *cur = doc;
  const char *p = ptr + 1;
  char tok[512];
  for (;;) {
    size_t n = 0;
    for (; *p && *p != '/'; p++) {
      char c = *p;
      if (c == '~') {
        if (p[1] != '0' && p[1] != '1') return NULL;
        c = p[1] == '0' ? '~' : '/';
        p++;
      }
      if (n + 1 >= sizeof tok) return NULL;
      tok[n++] = c;
    }
    tok[n] = '\0';
    if (json_is_object(cur)) {
      cur = json_object_get(cur, tok);
    } else if (json_is_array(cur)) {
      char *end;
      unsigned long i = strtoul(tok, &end, 10);
      if (!n || *end || (n > 1 && tok[0] == '0')) return NULL;
      cur = json_array_get(cur, i);
    } else {
      return NULL;
    }
    if (!cur || !*p) return cur;
    p++;
  }
}

int ceb_json_pointer_append(char *buf, size_t size, const char *token) {
  size_t n = strlen(buf);
  if (n + 1 >= size) return -1;
  buf[n++] = '/';
  for (const char *t = token; *t; t++) {
    const char *rep = *t == '~' ? "~0" : *t == '/' ? "~1" : NULL;
    size_t need = rep ? 2 : 1;
    if (n + need >= size) return -1;
    if (rep) {
      buf[n++] = rep[0];
      buf[n++] = rep[1];
    } else {
      buf[n++] = *t;
    }
  }
  buf[n] = '\0';
  return 0;
}

/* A local reference's pointer ("#/a/b" -> "/a/b"), with %XX decoded as
 * URI fragments allow. -1 when it is not a local reference. */
static int local_pointer(const char *ref, char *out, size_t size) {
  if (ref[0] != '#') return -1;
  size_t n = 0;
  for (const char *p = ref + 1; *p; p++) {
    char c = *p;
    if (c == '%' && p[1] && p[2]) {
      char hex[3] = {p[1], p[2], 0};
      char *end;
      long v = strtol(hex, &end, 16);
      if (*end) return -1;
      c = (char)v;
      p += 2;
    }
    if (n + 1 >= size) return -1;
    out[n++] = c;
  }
  out[n] = '\0';
  return out[0] == '\0' || out[0] == '/' ? 0 : -1;
}

json_t *ceb_json_deref(json_t *doc, json_t *node, char *ptr, size_t ptr_size,
                       char *err, size_t errlen) {
  json_t *seen[DEREF_MAX_HOPS];
  int hops = 0;
  while (json_is_object(node) &&
         json_is_string(json_object_get(node, "$ref"))) {
    const char *ref = json_string_value(json_object_get(node, "$ref"));
    char target[1024];
    if (local_pointer(ref, target, sizeof target) != 0) {
      snprintf(err, errlen,
               "$ref '%s' at %s is not a local reference "
               "(the document is not bundled)",
               ref, ptr && *ptr ? ptr : "/");
      return NULL;
    }
    for (int i = 0; i < hops; i++)
      if (seen[i] == node) {
        snprintf(err, errlen, "$ref cycle through '%s'", ref);
        return NULL;
      }
    if (hops == DEREF_MAX_HOPS) {
      snprintf(err, errlen, "$ref chain longer than %d at '%s'", DEREF_MAX_HOPS,
               ref);
      return NULL;
    }
    seen[hops++] = node;
    json_t *next = ceb_json_pointer_get(doc, target);
    if (!next) {
      snprintf(err, errlen, "$ref '%s' points at nothing", ref);
      return NULL;
    }
    if (ptr && snprintf(ptr, ptr_size, "%s", target) >= (int)ptr_size) {
      snprintf(err, errlen, "$ref '%.200s' is too long", ref);
      return NULL;
    }
    node = next;
  }
  return node;
}

json_t *ceb_json_merge_patch(json_t *target, json_t *patch) {
  if (!json_is_object(patch)) return json_deep_copy(patch);
  json_t *out = json_is_object(target) ? json_deep_copy(target) : json_object();
  if (!out) return NULL;
  const char *k;
  json_t *v;
  json_object_foreach(patch, k, v) {
    if (json_is_null(v)) {
      json_object_del(out, k);
      continue;
    }
    json_t *merged = ceb_json_merge_patch(json_object_get(out, k), v);
    if (!merged || json_object_set_new(out, k, merged) != 0) {
      json_decref(out);
      return NULL;
    }
  }
  return out;
}

json_t *ceb_contract_apply_traits(int major, json_t *message,
                                  json_t *const *traits, size_t ntraits) {
  json_t *own = json_deep_copy(message);
  if (!own) return NULL;
  json_object_del(own, "traits");
  json_t *acc = major >= 3 ? json_object() : own;
  if (major >= 3 && !acc) {
    json_decref(own);
    return NULL;
  }
  for (size_t i = 0; i < ntraits; i++) {
    if (!json_is_object(traits[i])) continue;
    json_t *next = ceb_json_merge_patch(acc, traits[i]);
    json_decref(acc);
    if (!next) {
      if (major >= 3) json_decref(own);
      return NULL;
    }
    acc = next;
  }
  if (major < 3) return acc;
  /* 3.0: the message's own fields are applied last, so they always win. */
  json_t *out = ceb_json_merge_patch(acc, own);
  json_decref(acc);
  json_decref(own);
  return out;
}
