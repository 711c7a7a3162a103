/* AsyncAPI document loading for the asyncapi plugin: YAML or JSON text to
 * jansson, and bundling: every $ref that leaves the root document (relative
 * files, URLs, and local refs inside those) is copied into the root under
 * "x-ceb-bundled" and rewritten to a local "#/x-ceb-bundled/..." pointer,
 * so the result is one self-contained JSON document. Local refs of the root
 * stay as they are; recursive schemas stay recursive (a ref to a part being
 * bundled points at its slot instead of expanding again). A chain of refs
 * that only refer to each other is a cycle and an error.
 *
 * Not thread-safe per bundle call; no global state. */
#ifndef AA_DOC_H
#define AA_DOC_H

#include <stddef.h>

#include <jansson.h>

/* Nodes and depth a YAML document may expand to (aliases included). */
#define AA_YAML_MAX_NODES 1000000
#define AA_YAML_MAX_DEPTH 128

/* Parses YAML 1.2 (core schema scalars) or JSON text. Returns a new value,
 * or NULL with "line L column C: reason" in err. */
json_t *aa_parse(const char *text, size_t len, char *err, size_t errlen);

/* Fetches the document at an absolute URI without fragment (a file path or
 * an http(s) URL). Returns malloc'd bytes (*len set) or NULL with a reason
 * in err. */
typedef char *(*aa_fetch_fn)(void *arg, const char *uri, size_t *len, char *err,
                             size_t errlen);

typedef struct aa_bundle_stats {
  size_t documents; /* external documents read */
  size_t inlined;   /* parts copied into x-ceb-bundled */
  size_t recursive; /* refs left pointing at a part being bundled */
} aa_bundle_stats;

/* Bundles root (modified in place) whose retrieval URI is base. At most
 * max_docs external documents are read. 0, or -1 with a reason in err. */
int aa_bundle(json_t *root, const char *base, aa_fetch_fn fetch,
              void *fetch_arg, size_t max_docs, aa_bundle_stats *stats,
              char *err, size_t errlen);

/* Resolves ref against base (RFC 3986 §5.2 for URLs; directory-relative
 * for file paths), without the fragment. 0, or -1 when too long. */
int aa_uri_resolve(const char *base, const char *ref, char *out, size_t size);

#endif
