/* A response of the intermediary under construction: status, body and the
 * extra headers, and RFC 9457 problem details (application/problem+json)
 * with a stable `code` member and an optional `errors` array.
 * A reply is owned by one request; not thread-safe. */
#ifndef HTTP_IN_REPLY_H
#define HTTP_IN_REPLY_H

#include <ceb/ceb.h>
#include <jansson.h>

typedef struct http_reply {
  int status; /* 0: none yet */
  char *body; /* malloc'd (free() releases it: it may go to libmicrohttpd) */
  size_t len;
  const char *content_type; /* NULL: no Content-Type; ct_copy or static */
  char *ct_copy;            /* malloc'd copy of a caller's content type */
  ceb_headers headers;      /* extra response headers */
} http_reply;

/* Frees the members and resets to empty. */
void http_reply_clear(http_reply *r);
/* Sets status and a copy of the body with its content type (NULL: none). */
int http_reply_set(http_reply *r, int status, const char *content_type,
                   const char *body, size_t len);
/* Sets status and takes ownership of body (malloc'd, NUL-terminated at
 * len). static_type is not copied: a string that outlives the reply (a
 * literal), or NULL. */
void http_reply_take(http_reply *r, int status, const char *static_type,
                     char *body, size_t len);
/* Sets status and the compact JSON dump of j (j is not consumed);
 * static_type as for http_reply_take. */
int http_reply_set_json(http_reply *r, int status, const char *static_type,
                        const json_t *j);
/* Hands the body over (NULL when none) and empties it in r: for a
 * response that frees it with free(). */
char *http_reply_release_body(http_reply *r);
int http_reply_header(http_reply *r, const char *name, const char *value);
/* Sets Retry-After to `seconds` (at least 1). */
void http_reply_retry_after(http_reply *r, int seconds);

/* A new problem object {type, title, status, detail, code}; caller owns. */
json_t *http_problem_new(int status, const char *code, const char *detail);
/* Appends {index?, attribute?, code, message} to its errors array; index
 * < 0 and empty/NULL attribute are left out. */
void http_problem_add_error(json_t *problem, int index, const char *attribute,
                            const char *code, const char *message);
/* Sets r to the problem (status from the object). */
int http_reply_problem_json(http_reply *r, json_t *problem);
/* Shorthand: a problem without errors. */
int http_reply_problem(http_reply *r, int status, const char *code,
                       const char *detail);

#endif
