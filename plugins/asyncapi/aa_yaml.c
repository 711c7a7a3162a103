/* YAML (and JSON) text to jansson with libyaml's document API. */
#include "aa_doc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef struct conv {
  yaml_document_t *doc;
  size_t nodes;
  char *err;
  size_t errlen;
} conv;

static int is_plain(const yaml_node_t *n) {
  return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* YAML 1.2 core schema resolution of a plain scalar. */
static json_t *plain_scalar(const char *s, size_t len) {
  if (len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
      strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0)
    return json_null();
  if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
    return json_true();
  if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
    return json_false();
  char *end;
  const char *digits = s + (s[0] == '-' || s[0] == '+');
  if (*digits >= '0' && *digits <= '9') {
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*end && !errno && strncmp(digits, "0x", 2) != 0)
      return json_integer(v);
    errno = 0;
    double d = strtod(s, &end);
    if (!*end && !errno && isfinite(d) && !strpbrk(s, "xXpPnN"))
      return json_real(d);
  }
  return json_stringn(s, len);
}

static json_t *convert(conv *c, yaml_node_t *n, int depth) {
  if (!n) {
    snprintf(c->err, c->errlen, "dangling YAML node");
    return NULL;
  }
  if (depth > AA_YAML_MAX_DEPTH || ++c->nodes > AA_YAML_MAX_NODES) {
    snprintf(c->err, c->errlen,
             "line %zu column %zu: document nests or expands too far "
             "(aliases?)",
             n->start_mark.line + 1, n->start_mark.column + 1);
    return NULL;
  }
  switch (n->type) {
  case YAML_SCALAR_NODE: {
    const char *s = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    /* Quoted and block scalars are strings; plain ones resolve per the
     * core schema (libyaml tags every untagged scalar !!str, so the tag
     * cannot tell them apart). */
    if (!is_plain(n) || strlen(s) != len) return json_stringn(s, len);
    return plain_scalar(s, len);
  }
  case YAML_SEQUENCE_NODE: {
    json_t *a = json_array();
    for (yaml_node_item_t *it = n->data.sequence.items.start;
         a && it < n->data.sequence.items.top; it++) {
      json_t *v = convert(c, yaml_document_get_node(c->doc, *it), depth + 1);
      if (!v || json_array_append_new(a, v) != 0) {
        json_decref(a);
        return NULL;
      }
    }
    return a;
  }
  case YAML_MAPPING_NODE: {
    json_t *o = json_object();
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
         o && p < n->data.mapping.pairs.top; p++) {
      yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
      if (!k || k->type != YAML_SCALAR_NODE) {
        snprintf(c->err, c->errlen,
                 "line %zu column %zu: mapping key is not "
                 "a scalar",
                 n->start_mark.line + 1, n->start_mark.column + 1);
        json_decref(o);
        return NULL;
      }
      const char *key = (const char *)k->data.scalar.value;
      if (strlen(key) != k->data.scalar.length) {
        snprintf(c->err, c->errlen, "line %zu: key contains NUL",
                 k->start_mark.line + 1);
        json_decref(o);
        return NULL;
      }
      if (json_object_get(o, key)) {
        snprintf(c->err, c->errlen, "line %zu column %zu: duplicate key '%s'",
                 k->start_mark.line + 1, k->start_mark.column + 1, key);
        json_decref(o);
        return NULL;
      }
      json_t *v =
          convert(c, yaml_document_get_node(c->doc, p->value), depth + 1);
      if (!v || json_object_set_new(o, key, v) != 0) {
        json_decref(o);
        return NULL;
      }
    }
    return o;
  }
  default:
    snprintf(c->err, c->errlen, "empty YAML node");
    return NULL;
  }
}

json_t *aa_parse(const char *text, size_t len, char *err, size_t errlen) {
  size_t i = 0;
  while (i < len && strchr(" \t\r\n", text[i]))
    i++;
  if (i < len && (text[i] == '{' || text[i] == '[')) {
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (j) return j;
    /* Flow-style YAML also starts with '{': fall through to YAML. */
  }
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
  if (!yaml_parser_load(&parser, &doc)) {
    snprintf(err, errlen, "line %zu column %zu: %s%s%s",
             parser.problem_mark.line + 1, parser.problem_mark.column + 1,
             parser.problem ? parser.problem : "YAML error",
             parser.context ? " " : "", parser.context ? parser.context : "");
    yaml_parser_delete(&parser);
    return NULL;
  }
  json_t *out = NULL;
  yaml_node_t *root = yaml_document_get_root_node(&doc);
  if (!root) {
    snprintf(err, errlen, "empty document");
  } else {
    conv c = {.doc = &doc, .err = err, .errlen = errlen};
    out = convert(&c, root, 0);
  }
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return out;
}
