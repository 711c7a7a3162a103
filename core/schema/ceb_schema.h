/* JSON Schema validator (draft-07 and 2020-12) on jansson + PCRE2.
 *
 * A schema is compiled once into an immutable tree of nodes (regexes
 * precompiled, $ref resolved to node pointers, cycles allowed) and then
 * validated any number of times without touching the schema JSON again.
 *
 * Threading: ceb_schema_compile and ceb_schema_free are not thread-safe for
 * the same object; a compiled ceb_schema may be used by ceb_schema_validate
 * from any number of threads at once (all per-call state, including PCRE2
 * match data, lives on the caller's stack or in per-call allocations). */
#ifndef CEB_SCHEMA_H
#define CEB_SCHEMA_H

#include <ceb/status.h>
#include <jansson.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ceb_schema ceb_schema;

enum {
  CEB_SCHEMA_DRAFT_AUTO = 0,
  CEB_SCHEMA_DRAFT7 = 7,
  CEB_SCHEMA_DRAFT2020 = 2020
};

/* Resolver for external references: given an absolute URI without fragment,
 * returns a NEW reference to the document (the compiler takes it), or NULL
 * when unknown. Called only during ceb_schema_compile, on its thread. */
typedef json_t *(*ceb_schema_resolve_fn)(void *arg, const char *uri);

typedef struct ceb_schema_opts {
  /* CEB_SCHEMA_DRAFT7 or CEB_SCHEMA_DRAFT2020 forces a draft; AUTO takes it
   * from the root "$schema", else 2020-12. */
  int draft;
  /* Non-zero: "format" is an assertion for date-time, date, time, duration,
   * uri, uri-reference, iri, iri-reference, uri-template, uuid, email,
   * idn-email, hostname, ipv4, ipv6, json-pointer, relative-json-pointer and
   * regex; other formats pass. Zero (default, per 2020-12): annotation. */
  int assert_formats;
  /* Optional: documents known up front, an object mapping absolute URI ->
   * schema (borrowed; only read during compile). Looked up before resolve. */
  json_t *resources;
  ceb_schema_resolve_fn resolve; /* optional */
  void *resolve_arg;
  /* Optional JSON Pointer (RFC 6901, not URI-encoded), e.g.
   * "/components/schemas/Order": compile the schema at that place inside
   * the `schema` document, with refs resolved against the whole document
   * ("#/components/..." works). NULL or "": the document itself. */
  const char *pointer;
} ceb_schema_opts;

/* Compiles `schema` (borrowed; not referenced after return; see
 * opts->pointer to compile a schema embedded in a larger document). `base_uri`
 * is the retrieval URI of the document (NULL: none, relative refs resolve
 * against "" unless the root has an absolute "$id"). `opts` may be NULL.
 * On success *out owns a new schema (free with ceb_schema_free) and CEB_OK is
 * returned. On failure returns CEB_EINVAL (bad schema: invalid regex,
 * unresolvable $ref, wrong keyword type...) or CEB_ENOMEM with a message in
 * err (may be NULL). */
int ceb_schema_compile(json_t *schema, const char *base_uri,
                       const ceb_schema_opts *opts, ceb_schema **out, char *err,
                       size_t errlen);

#define CEB_SCHEMA_MAX_ERRORS 16

typedef struct ceb_schema_error {
  char instance_path[256]; /* JSON Pointer into the instance, "" = root */
  char schema_path[256];   /* "#/properties/a/type" (URI-prefixed if the
                              failing keyword lives in another document) */
  char keyword[32];
  char message[256];
} ceb_schema_error;

typedef struct ceb_schema_result {
  int valid;
  size_t count; /* errors stored (<= CEB_SCHEMA_MAX_ERRORS) */
  size_t total; /* errors found (count may be capped) */
  ceb_schema_error errors[CEB_SCHEMA_MAX_ERRORS];
} ceb_schema_result;

/* Validates `instance` (borrowed, not modified). Returns 1 when valid, 0 when
 * invalid, CEB_EINVAL on NULL arguments, CEB_ENOMEM on allocation failure,
 * CEB_ETOOLARGE when validation could not complete (evaluation nested more
 * than 200 levels, or more than a million schema evaluations): res then says
 * invalid, with the reason as an error.
 * `res` (may be NULL) receives the outcome and the first errors, in
 * evaluation order. Errors inside anyOf/oneOf/not/if/contains branches are
 * summarised by the applicator's own error. Thread-safe (see above). */
int ceb_schema_validate(const ceb_schema *s, json_t *instance,
                        ceb_schema_result *res);

/* The draft the root was compiled as (7 or 2020). */
int ceb_schema_draft(const ceb_schema *s);

/* Frees a compiled schema; NULL is ignored. */
void ceb_schema_free(ceb_schema *s);

#ifdef __cplusplus
}
#endif
#endif
