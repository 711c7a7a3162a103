/* The intermediary's input document: what a request becomes for the
 * source's `map` program (include/ceb/plugin.h). Fields, in this order
 * (docs/integration-guide.md, "Input documents", is the reference):
 *
 *   method         "POST"
 *   path           the request path as routed, percent-decoded, no query
 *   query          object: each argument's decoded value as a string ("" for
 *                  a name without '='); a name given more than once: an
 *                  array of its values in order; a name or value that is
 *                  not UTF-8 (%FF): its base64
 *   headers        object: lower-cased names; a field given more than once
 *                  is one string of its values joined with ", " in order
 *                  (RFC 9110 5.3, what a proxy may do anyway); a value
 *                  that is not UTF-8 is its base64. Authorization and
 *                  Proxy-Authorization are left out: the intermediary
 *                  checked them, `client` names who it found, and a
 *                  credential has no place in an event
 *   client         the authenticated client identity, or null
 *   body           the body parsed as JSON when the Content-Type is a JSON
 *                  one (application/json, text/json, *+json) or absent and
 *                  it parses; else the body as a string when it is UTF-8;
 *                  else its base64 (input_doc.h)
 *   body_encoding  "json", "text" or "base64": which of the three
 *
 * Reentrant: everything is the caller's or borrowed for the call. */
#ifndef HTTP_IN_DOC_H
#define HTTP_IN_DOC_H

#include <stddef.h>

#include <ceb/codec.h>

typedef struct http_in_doc_req {
  const char *method;
  const char *path;
  const ceb_headers *query;   /* decoded arguments in order, or NULL */
  const ceb_headers *headers; /* as received (any case), in order */
  const char *client;         /* NULL: anonymous */
  const void *body;
  size_t len;
} http_in_doc_req;

/* Builds r's document. CEB_OK with *out malloc'd and NUL-terminated (free
 * with free()) and *out_len its length, or CEB_ENOMEM. */
int http_in_doc_build(const http_in_doc_req *r, char **out, size_t *out_len);

#endif
