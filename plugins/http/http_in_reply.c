#include "http_in_reply.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROBLEM_TYPE_BASE "urn:cebridge:problem:"

void http_reply_clear(http_reply *r) {
  free(r->body);
  free(r->ct_copy);
  ceb_headers_clear(&r->headers);
  r->body = NULL;
  r->ct_copy = NULL;
  r->content_type = NULL;
  r->len = 0;
  r->status = 0;
}

void http_reply_take(http_reply *r, int status, const char *static_type,
                     char *body, size_t len) {
  free(r->body);
  free(r->ct_copy);
  r->body = body;
  r->len = len;
  r->ct_copy = NULL;
  r->content_type = static_type;
  r->status = status;
}

int http_reply_set(http_reply *r, int status, const char *content_type,
                   const char *body, size_t len) {
  char *b = malloc(len + 1);
  char *ct = content_type ? strdup(content_type) : NULL;
  if (!b || (content_type && !ct)) {
    free(b);
    free(ct);
    return CEB_ENOMEM;
  }
  if (len) memcpy(b, body, len);
  b[len] = '\0';
  http_reply_take(r, status, ct, b, len);
  r->ct_copy = ct;
  return CEB_OK;
}

int http_reply_set_json(http_reply *r, int status, const char *static_type,
                        const json_t *j) {
  /* jansson allocates with malloc (no json_set_alloc_funcs here) */
  char *text = json_dumps(j, JSON_COMPACT);
  if (!text) return CEB_ENOMEM;
  http_reply_take(r, status, static_type, text, strlen(text));
  return CEB_OK;
}

char *http_reply_release_body(http_reply *r) {
  char *b = r->body;
  r->body = NULL;
  r->len = 0;
  return b;
}

int http_reply_header(http_reply *r, const char *name, const char *value) {
  return ceb_headers_add(&r->headers, name, value, strlen(value));
}

void http_reply_retry_after(http_reply *r, int seconds) {
  char v[24];
  snprintf(v, sizeof v, "%d", seconds < 1 ? 1 : seconds);
  http_reply_header(r, "Retry-After", v);
}

static const char *title_of(int status) {
  switch (status) {
  case 400:
    return "Bad Request";
  case 401:
    return "Unauthorized";
  case 403:
    return "Forbidden";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 409:
    return "Conflict";
  case 413:
    return "Content Too Large";
  case 415:
    return "Unsupported Media Type";
  case 422:
    return "Unprocessable Content";
  case 429:
    return "Too Many Requests";
  case 500:
    return "Internal Server Error";
  case 503:
    return "Service Unavailable";
  default:
    return "Error";
  }
}

json_t *http_problem_new(int status, const char *code, const char *detail) {
  char type[128];
  snprintf(type, sizeof type, PROBLEM_TYPE_BASE "%s", code);
  return json_pack("{s:s, s:s, s:i, s:s, s:s}", "type", type, "title",
                   title_of(status), "status", status, "detail",
                   detail ? detail : title_of(status), "code", code);
}

void http_problem_add_error(json_t *problem, int index, const char *attribute,
                            const char *code, const char *message) {
  if (!problem) return;
  json_t *errs = json_object_get(problem, "errors");
  if (!errs) {
    errs = json_array();
    if (json_object_set_new(problem, "errors", errs) != 0) return;
  }
  json_t *e = json_object();
  if (!e) return;
  if (index >= 0) json_object_set_new(e, "index", json_integer(index));
  if (attribute && *attribute)
    json_object_set_new(e, "attribute", json_string(attribute));
  json_object_set_new(e, "code", json_string(code ? code : "invalid"));
  json_object_set_new(e, "message", json_string(message ? message : ""));
  json_array_append_new(errs, e);
}

int http_reply_problem_json(http_reply *r, json_t *problem) {
  if (!problem) return CEB_ENOMEM;
  int status = (int)json_integer_value(json_object_get(problem, "status"));
  return http_reply_set_json(r, status, "application/problem+json", problem);
}

int http_reply_problem(http_reply *r, int status, const char *code,
                       const char *detail) {
  json_t *p = http_problem_new(status, code, detail);
  int st = http_reply_problem_json(r, p);
  json_decref(p);
  return st;
}
