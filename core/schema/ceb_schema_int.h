/* Internal structures of the JSON Schema validator: the compiled node tree,
 * the evaluation state and helpers shared between the schema source files.
 * Nothing here is part of the host API (see ceb_schema.h). */
#ifndef CEB_SCHEMA_INT_H
#define CEB_SCHEMA_INT_H

#include "schema/ceb_schema.h"

#include <ceb/status.h>

#include <stdbool.h>
#include <stddef.h>

/* ---- regex (ceb_schema_regex.c) ---- */
typedef struct cebs_regex cebs_regex;
/* Compiles an ECMA-262 flavoured pattern with PCRE2 (UTF mode). NULL and a
 * message in err on failure. */
cebs_regex *cebs_regex_compile(const char *pattern, char *err, size_t errlen);
/* 1 match, 0 no match, <0 error, including a match that exceeds the
 * backtracking budget (callers treat it as no match). Thread-safe: the
 * compiled code and limits are shared read-only, match data is per call. */
int cebs_regex_search(const cebs_regex *re, const char *s, size_t len);
void cebs_regex_free(cebs_regex *re);

/* ---- values (ceb_schema_value.c) ---- */
/* JSON Schema equality: numbers by value (1 == 1.0), objects unordered. */
bool cebs_json_equal(json_t *a, json_t *b);
/* uniqueItems: finds two equal items of an array in O(n log n) (hashing
 * consistent with cebs_json_equal). 1 with the pair, 0 none, -1 no memory. */
int cebs_find_duplicate(json_t *arr, size_t *first, size_t *second);
/* Number of Unicode code points in UTF-8 text. */
size_t cebs_utf8_length(const char *s, size_t len);
/* 1 when the number is integral (1.0 is an integer). */
bool cebs_is_integer(json_t *v);

typedef struct cebs_num {
  bool set;
  bool is_int;
  json_int_t i;
  double d;
} cebs_num;
void cebs_num_from_json(cebs_num *n, json_t *v);
/* <0, 0, >0 like strcmp; exact for integer/integer. */
int cebs_num_cmp(json_t *v, const cebs_num *n);
/* Whether v is a multiple of n (n > 0). */
bool cebs_num_multiple(json_t *v, const cebs_num *n);

/* ---- formats (ceb_schema_format.c) ---- */
typedef enum cebs_format {
  CEBS_FMT_NONE = 0,
  CEBS_FMT_UNKNOWN,
  CEBS_FMT_DATE_TIME,
  CEBS_FMT_DATE,
  CEBS_FMT_TIME,
  CEBS_FMT_URI,
  CEBS_FMT_URI_REFERENCE,
  CEBS_FMT_UUID,
  CEBS_FMT_EMAIL,
  CEBS_FMT_IPV4,
  CEBS_FMT_IPV6,
  CEBS_FMT_REGEX,
  CEBS_FMT_IRI,
  CEBS_FMT_IRI_REFERENCE,
  CEBS_FMT_HOSTNAME,
  CEBS_FMT_JSON_POINTER,
  CEBS_FMT_RELATIVE_JSON_POINTER,
  CEBS_FMT_DURATION,
  CEBS_FMT_URI_TEMPLATE,
  CEBS_FMT_IDN_EMAIL,
} cebs_format;
cebs_format cebs_format_lookup(const char *name);
const char *cebs_format_name(cebs_format f);
/* True when the string is valid for the format (unknown formats pass). */
bool cebs_format_check(cebs_format f, const char *s, size_t len);

/* ---- URIs (ceb_schema_uri.c) ---- */
/* RFC 3986 reference resolution. Returns a malloc'd absolute (or as absolute
 * as the base allows) URI, NULL on allocation failure. */
char *cebs_uri_resolve(const char *base, const char *ref);
/* Splits at '#': returns malloc'd part before it; *frag points into uri
 * after the '#' (or NULL when there is none). */
char *cebs_uri_split(const char *uri, const char **frag);
/* Percent-decodes into a malloc'd string; NULL on bad encoding. */
char *cebs_pct_decode(const char *s);
/* Resolves an RFC 6901 JSON Pointer (already percent-decoded) in doc;
 * NULL when absent or malformed. */
json_t *cebs_json_pointer(json_t *doc, const char *ptr);

/* ---- hash map with byte keys (ceb_schema_map.c) ---- */
typedef struct cebs_map {
  struct cebs_map_ent *ents;
  size_t cap, len;
} cebs_map;
void *cebs_map_get(const cebs_map *m, const void *key, size_t klen);
/* Copies the key. Returns 0, or -1 on allocation failure. Replaces. */
int cebs_map_put(cebs_map *m, const void *key, size_t klen, void *val);
/* Frees the table and keys; calls free_val on values when non-NULL. */
void cebs_map_clear(cebs_map *m, void (*free_val)(void *));

/* ---- compiled tree ---- */
enum {
  CEBS_T_NULL = 1 << 0,
  CEBS_T_BOOLEAN = 1 << 1,
  CEBS_T_OBJECT = 1 << 2,
  CEBS_T_ARRAY = 1 << 3,
  CEBS_T_NUMBER = 1 << 4,
  CEBS_T_STRING = 1 << 5,
  CEBS_T_INTEGER = 1 << 6,
};

typedef struct cebs_node cebs_node;

typedef struct cebs_anchor {
  char *name;
  cebs_node *node;
} cebs_anchor;

/* A schema resource (a document root or a subschema with "$id"): the unit
 * of the dynamic scope. */
typedef struct cebs_resource {
  char *uri;
  cebs_anchor *dyn; /* $dynamicAnchor name -> node */
  size_t ndyn;
} cebs_resource;

typedef struct cebs_prop {
  char *name;
  cebs_node *node;
} cebs_prop;

typedef struct cebs_patprop {
  cebs_regex *re;
  cebs_node *node;
} cebs_patprop;

typedef struct cebs_depreq {
  char *name;
  char **req;
  size_t nreq;
} cebs_depreq;

typedef struct cebs_nodes {
  cebs_node **v;
  size_t n;
} cebs_nodes;

struct cebs_node {
  bool is_bool, bool_val;
  int draft;
  size_t idx;  /* position in ceb_schema.nodes */
  char *spath; /* "#/properties/a" or "uri#/..." */
  const cebs_resource *res;
  bool needs_eval; /* has unevaluatedItems/Properties */

  unsigned types; /* CEBS_T_* mask, 0 = no "type" */
  json_t *enum_;  /* owned deep copy */
  json_t *const_; /* owned deep copy; has_const tells null apart */
  bool has_const;
  cebs_num maximum, exclusive_maximum, minimum, exclusive_minimum, multiple_of;
  long long max_length, min_length, max_items, min_items, max_contains,
      min_contains, max_properties, min_properties; /* -1 = unset */
  cebs_regex *pattern;
  cebs_format format;
  bool unique_items;
  char **required;
  size_t nrequired;
  cebs_depreq *dep_required;
  size_t ndep_required;
  cebs_prop *dep_schemas;
  size_t ndep_schemas;

  cebs_prop *props; /* sorted by name */
  size_t nprops;
  cebs_patprop *patprops;
  size_t npatprops;
  cebs_node *additional_props, *property_names, *unevaluated_props;

  cebs_nodes prefix_items; /* 2020 prefixItems / draft-07 items array */
  cebs_node *items;        /* 2020 items / draft-07 items schema or
                              additionalItems after an array */
  cebs_node *contains, *unevaluated_items;

  cebs_nodes all_of, any_of, one_of;
  cebs_node *not_, *if_, *then_, *else_;
  cebs_node *ref;
  cebs_node *dynamic_ref;
  char *dynamic_name; /* set when the $dynamicRef target is bookended */
};

struct ceb_schema {
  cebs_node *root;
  int draft;
  bool assert_formats;
  /* every allocated node and resource, for freeing */
  cebs_node **nodes;
  size_t nnodes, capnodes;
  cebs_resource **resources;
  size_t nres, capres;
};

void cebs_node_free(cebs_node *n);

/* ---- evaluation (ceb_schema_validate.c, ceb_schema_kw_*.c) ---- */

/* Annotations gathered for unevaluatedItems / unevaluatedProperties. */
typedef struct cebs_eval {
  json_t *props; /* set (object) of evaluated property names */
  bool all_props;
  size_t items; /* items [0, items) evaluated */
  bool all_items;
  unsigned char *bits; /* per-index evaluated flags (contains) */
  size_t nbits;
} cebs_eval;

typedef struct cebs_scope {
  const cebs_resource *res;
  const struct cebs_scope *up;
} cebs_scope;

typedef struct cebs_ctx {
  const ceb_schema *s;
  ceb_schema_result *res;
  int quiet; /* >0: inside a branch whose errors are not reported */
  int depth;
  bool oom;
  size_t steps;    /* node evaluations so far (bounded) */
  bool incomplete; /* depth or step budget exhausted */
  char *ipath;     /* current instance path */
  size_t ilen, icap;
} cebs_ctx;

/* Validates inst against n; ev (may be NULL) receives annotations when the
 * result is valid. Returns true when valid. */
bool cebs_validate_node(cebs_ctx *c, const cebs_node *n, json_t *inst,
                        cebs_eval *ev, const cebs_scope *scope);
/* Records an error at the current instance path (no-op when quiet). */
void cebs_error(cebs_ctx *c, const cebs_node *n, const char *kw,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Pushes a property name / array index onto the instance path; returns the
 * previous length for cebs_path_pop. */
size_t cebs_path_push_key(cebs_ctx *c, const char *key);
size_t cebs_path_push_index(cebs_ctx *c, size_t i);
void cebs_path_pop(cebs_ctx *c, size_t prev);

void cebs_eval_mark_prop(cebs_ctx *c, cebs_eval *ev, const char *key);
void cebs_eval_mark_index(cebs_ctx *c, cebs_eval *ev, size_t i, size_t n);
void cebs_eval_merge(cebs_ctx *c, cebs_eval *dst, const cebs_eval *src);
void cebs_eval_free(cebs_eval *ev);

/* Assertions of the validation vocabulary (ceb_schema_kw_assert.c):
 * type, enum, const, numbers, strings, counts, required... */
bool cebs_kw_assert(cebs_ctx *c, const cebs_node *n, json_t *inst);
/* Applicators on arrays / objects (ceb_schema_kw_array.c, _object.c). */
bool cebs_kw_array(cebs_ctx *c, const cebs_node *n, json_t *inst, cebs_eval *ev,
                   const cebs_scope *scope);
bool cebs_kw_object(cebs_ctx *c, const cebs_node *n, json_t *inst,
                    cebs_eval *ev, const cebs_scope *scope);

#endif
