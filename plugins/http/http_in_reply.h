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
  char *body; /* malloc'd */
  size_t len;
  char *content_type;  /* malloc'd; NULL: no Content-Type */
  ceb_headers headers; /* extra response headers */
} http_reply;

/* Frees the members and resets to empty. */
void http_reply_clear(http_reply *r);
/* Sets status and a copy of the body with its content type (NULL: none). */
int http_reply_set(http_reply *r, int status, const char *content_type,
                   const char *body, size_t len);
/* Sets status and the compact JSON dump of j (j is not consumed). */
int http_reply_set_json(http_reply *r, int status, const char *content_type,
                        const json_t *j);
int http_reply_header(http_reply *r, const char *name, const char *value);

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
