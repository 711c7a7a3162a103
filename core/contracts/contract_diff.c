/* Differences between two contract versions, breaking ones called out. */
#include "contracts/ceb_contracts.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIFF_MAX_DEPTH 32

typedef struct diff_ctx {
  json_t *da, *db; /* the documents, for $ref */
  FILE *out;
  size_t breaking;
  size_t changes;
} diff_ctx;

static void note(diff_ctx *x, int breaking, const char *msg, const char *path,
                 const char *what) {
  fprintf(x->out, "    %s %s: %s\n", breaking ? "BREAKING" : "changed ",
          path[0] ? path : "/", what);
  x->changes++;
  if (breaking) x->breaking++;
  (void)msg;
}

/* 1 when the JSON Schema "type" of s allows t ("integer" in "number"). */
static int allows_type(json_t *types, const char *t) {
  if (!types) return 1;
  if (json_is_string(types))
    return strcmp(json_string_value(types), t) == 0 ||
           (strcmp(t, "integer") == 0 &&
            strcmp(json_string_value(types), "number") == 0);
  size_t i;
  json_t *v;
  json_array_foreach(types, i, v) {
    if (json_is_string(v) && allows_type(v, t)) return 1;
  }
  return 0;
}

static void type_text(json_t *t, char *buf, size_t size) {
  char *s = t ? json_dumps(t, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
  snprintf(buf, size, "%s", s ? s : "any");
  free(s);
}

/* Bound keywords: lower bounds may not rise, upper bounds may not fall. */
static void compare_bounds(diff_ctx *x, const char *path, json_t *a,
                           json_t *b) {
  static const struct {
    const char *kw;
    int lower;
  } k[] = {{"minimum", 1},          {"exclusiveMinimum", 1}, {"minLength", 1},
           {"minItems", 1},         {"minProperties", 1},    {"maximum", 0},
           {"exclusiveMaximum", 0}, {"maxLength", 0},        {"maxItems", 0},
           {"maxProperties", 0},    {"multipleOf", 1}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    json_t *va = json_object_get(a, k[i].kw), *vb = json_object_get(b, k[i].kw);
    if (!json_is_number(vb)) continue;
    double nb = json_number_value(vb);
    char what[200];
    if (!json_is_number(va)) {
      snprintf(what, sizeof what, "narrower range: %s %g added", k[i].kw, nb);
      note(x, 1, NULL, path, what);
      continue;
    }
    double na = json_number_value(va);
    int narrower = strcmp(k[i].kw, "multipleOf") == 0
                       ? fmod(nb, na) != 0
                       : (k[i].lower ? nb > na : nb < na);
    if (na != nb) {
      snprintf(what, sizeof what, "%s%s %g -> %g",
               narrower ? "narrower range: " : "wider range: ", k[i].kw, na,
               nb);
      note(x, narrower, NULL, path, what);
    }
  }
}

static void compare_schema(diff_ctx *x, const char *path, json_t *a, json_t *b,
                           int depth);

static void compare_properties(diff_ctx *x, const char *path, json_t *a,
                               json_t *b, int depth) {
  json_t *pa = json_object_get(a, "properties");
  json_t *pb = json_object_get(b, "properties");
  const char *k;
  json_t *v;
  char sub[1024], what[256];
  json_object_foreach(pa, k, v) {
    snprintf(sub, sizeof sub, "%s/%s", path, k);
    json_t *w = json_object_get(pb, k);
    if (!w) {
      note(x, 1, NULL, sub, "property removed");
      continue;
    }
    compare_schema(x, sub, v, w, depth + 1);
  }
  json_object_foreach(pb, k, v) {
    if (!json_object_get(pa, k)) {
      snprintf(sub, sizeof sub, "%s/%s", path, k);
      note(x, 0, NULL, sub, "property added");
    }
  }
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(b, "required"), i, r) {
    if (!json_is_string(r)) continue;
    int had = 0;
    size_t j;
    json_t *q;
    json_array_foreach(json_object_get(a, "required"), j, q) {
      had |= json_equal(q, r);
    }
    if (!had) {
      snprintf(what, sizeof what, "new required property '%s'",
               json_string_value(r));
      note(x, 1, NULL, path, what);
    }
  }
  json_t *aa = json_object_get(a, "additionalProperties");
  json_t *ab = json_object_get(b, "additionalProperties");
  if (json_is_false(ab) && !json_is_false(aa))
    note(x, 1, NULL, path, "additional properties no longer allowed");
}

static void compare_enum(diff_ctx *x, const char *path, json_t *a, json_t *b) {
  json_t *ea = json_object_get(a, "enum"), *eb = json_object_get(b, "enum");
  char what[256];
  if (json_is_array(eb) && !json_is_array(ea)) {
    note(x, 1, NULL, path, "enum added (fewer values allowed)");
    return;
  }
  size_t i;
  json_t *v;
  json_array_foreach(ea, i, v) {
    int kept = 0;
    size_t j;
    json_t *w;
    json_array_foreach(eb, j, w) {
      kept |= json_equal(v, w);
    }
    if (json_is_array(eb) && !kept) {
      char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
      snprintf(what, sizeof what, "enum value %s removed", s ? s : "?");
      free(s);
      note(x, 1, NULL, path, what);
    }
  }
  json_t *ca = json_object_get(a, "const"), *cb = json_object_get(b, "const");
  if (cb && !json_equal(ca, cb)) note(x, 1, NULL, path, "const changed");
}

static void compare_schema(diff_ctx *x, const char *path, json_t *a, json_t *b,
                           int depth) {
  char err[256], what[512];
  a = ceb_json_deref(x->da, a, NULL, 0, err, sizeof err);
  b = ceb_json_deref(x->db, b, NULL, 0, err, sizeof err);
  if (!a || !b || depth > DIFF_MAX_DEPTH)
    return; /* recursive schemas: compared down to a bounded depth */
  if (json_is_boolean(a) || json_is_boolean(b)) {
    if (json_is_true(a) && !json_is_true(b))
      note(x, 1, NULL, path, "schema no longer accepts everything");
    return;
  }
  if (!json_is_object(a) || !json_is_object(b)) return;
  json_t *ta = json_object_get(a, "type"), *tb = json_object_get(b, "type");
  int narrowed = 0;
  if (tb) {
    static const char *all[] = {"null",   "boolean", "object", "array",
                                "number", "string",  "integer"};
    for (size_t i = 0; i < 7; i++)
      if (allows_type(ta, all[i]) && !allows_type(tb, all[i])) narrowed = 1;
  }
  if (!json_equal(ta, tb)) {
    char sa[96], sb[96];
    type_text(ta, sa, sizeof sa);
    type_text(tb, sb, sizeof sb);
    snprintf(what, sizeof what, "type changed from %s to %s", sa, sb);
    note(x, narrowed, NULL, path, what);
  }
  compare_enum(x, path, a, b);
  compare_bounds(x, path, a, b);
  static const char *strict[] = {"pattern", "format"};
  for (int i = 0; i < 2; i++) {
    json_t *va = json_object_get(a, strict[i]);
    json_t *vb = json_object_get(b, strict[i]);
    if (vb && !json_equal(va, vb)) {
      snprintf(what, sizeof what, "%s %s", strict[i], va ? "changed" : "added");
      note(x, 1, NULL, path, what);
    } else if (va && !vb) {
      snprintf(what, sizeof what, "%s removed", strict[i]);
      note(x, 0, NULL, path, what);
    }
  }
  compare_properties(x, path, a, b, depth);
  json_t *ia = json_object_get(a, "items"), *ib = json_object_get(b, "items");
  if (ia && ib) {
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/items", path);
    compare_schema(x, sub, ia, ib, depth + 1);
  } else if (ib && !ia) {
    note(x, 1, NULL, path, "items constrained");
  }
}

static void print_msg(FILE *out, char sign, const ceb_contract_msg *m) {
  fprintf(out, "%c %s (type %s, channel %s)\n", sign, m->name,
          m->ce_type ? m->ce_type : "-", m->channel ? m->channel : "-");
}

static void compare_text(diff_ctx *x, const char *what, const char *a,
                         const char *b, int breaking) {
  if ((a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0)) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s %s -> %s", what, a ? a : "-", b ? b : "-");
    note(x, breaking, NULL, "", buf);
  }
}

size_t ceb_contract_diff(const ceb_contract *a, const ceb_contract *b,
                         FILE *out) {
  diff_ctx x = {.da = a->doc, .db = b->doc, .out = out};
  fprintf(out, "%s@%s -> %s@%s\n", a->name, a->version, b->name, b->version);
  for (size_t i = 0; i < b->nmsgs; i++)
    if (!ceb_contract_find_name(a, b->msgs[i].name)) {
      print_msg(out, '+', &b->msgs[i]);
      x.changes++;
    }
  for (size_t i = 0; i < a->nmsgs; i++) {
    const ceb_contract_msg *ma = &a->msgs[i];
    const ceb_contract_msg *mb = ceb_contract_find_name(b, ma->name);
    if (!mb) {
      print_msg(out, '-', ma);
      fprintf(out, "    BREAKING message removed: its events are refused\n");
      x.changes++;
      x.breaking++;
      continue;
    }
    size_t before = x.changes;
    /* The message line comes first: collect its changes aside. */
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem) continue;
    diff_ctx sub = x;
    sub.out = mem;
    compare_text(&sub, "type", ma->ce_type, mb->ce_type, 1);
    compare_text(&sub, "content type", ma->content_type, mb->content_type, 1);
    compare_text(&sub, "channel", ma->channel, mb->channel, 0);
    json_t *pa = ma->payload_pointer
                     ? ceb_json_pointer_get(a->doc, ma->payload_pointer)
                     : NULL;
    json_t *pb = mb->payload_pointer
                     ? ceb_json_pointer_get(b->doc, mb->payload_pointer)
                     : NULL;
    if (pa && pb)
      compare_schema(&sub, "payload", pa, pb, 0);
    else if (pb && !pa)
      note(&sub, 1, NULL, "payload", "payload schema added");
    fclose(mem);
    x.changes = sub.changes;
    x.breaking = sub.breaking;
    if (x.changes > before) {
      print_msg(out, '~', mb);
      fwrite(buf, 1, len, out);
    }
    free(buf);
  }
  if (!x.changes)
    fprintf(out, "no differences in messages\n");
  else if (!x.breaking)
    fprintf(out, "%zu change(s), none breaking\n", x.changes);
  else
    fprintf(out, "%zu change(s), %zu BREAKING\n", x.changes, x.breaking);
  return x.breaking;
}
