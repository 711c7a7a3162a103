/* The intermediary's input document (http_in_doc.h). */
#include "http_in_doc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include <ceb/status.h>

#include "input_doc.h"

/* Credentials the intermediary consumed: never handed to a program. */
static int withheld(const char *name) {
  return strcasecmp(name, "Authorization") == 0 ||
         strcasecmp(name, "Proxy-Authorization") == 0;
}

/* Appends len bytes to a growing buffer. */
static int append(char **buf, size_t *len, size_t *cap, const char *s,
                  size_t n) {
  if (*len + n + 1 > *cap) {
    size_t c = (*cap ? *cap * 2 : 256);
    while (c < *len + n + 1)
      c *= 2;
    char *b = realloc(*buf, c);
    if (!b) return CEB_ENOMEM;
    *buf = b;
    *cap = c;
  }
  memcpy(*buf + *len, s, n);
  *len += n;
  (*buf)[*len] = '\0';
  return CEB_OK;
}

/* headers: one member per lower-cased name, repeated fields joined. A
 * request has at most a few dozen fields (libmicrohttpd's head limit), so
 * the quadratic grouping is cheaper than a table. */
static int add_headers(json_t *doc, const ceb_headers *h) {
  json_t *map = json_object();
  if (!map || json_object_set_new(doc, "headers", map)) return CEB_ENOMEM;
  if (!h) return CEB_OK;
  char *joined = NULL, *name = NULL;
  size_t cap = 0;
  int rc = CEB_OK;
  for (size_t i = 0; i < h->count && rc == CEB_OK; i++) {
    const ceb_header *f = &h->items[i];
    int first = !withheld(f->name);
    for (size_t j = 0; j < i && first; j++)
      first = strcasecmp(h->items[j].name, f->name) != 0;
    if (!first) continue; /* joined with its first occurrence */
    size_t len = 0;
    rc = append(&joined, &len, &cap, f->value, f->value_len);
    for (size_t j = i + 1; j < h->count && rc == CEB_OK; j++)
      if (strcasecmp(h->items[j].name, f->name) == 0) {
        rc = append(&joined, &len, &cap, ", ", 2);
        if (rc == CEB_OK)
          rc = append(&joined, &len, &cap, h->items[j].value,
                      h->items[j].value_len);
      }
    if (rc != CEB_OK) break;
    free(name);
    name = strdup(f->name);
    if (!name) {
      rc = CEB_ENOMEM;
      break;
    }
    for (char *c = name; *c; c++)
      *c = (char)tolower((unsigned char)*c);
    rc = idoc_add_pair(map, NULL, name, joined, len);
  }
  free(joined);
  free(name);
  return rc;
}

/* query: a string per name, an array for a name given more than once. */
static int add_query(json_t *doc, const ceb_headers *q) {
  json_t *map = json_object();
  if (!map || json_object_set_new(doc, "query", map)) return CEB_ENOMEM;
  for (size_t i = 0; q && i < q->count; i++) {
    const ceb_header *a = &q->items[i];
    int b64 = 0;
    json_t *v = idoc_text(a->value, a->value_len, &b64);
    if (!v) return CEB_ENOMEM;
    /* a decoded name can be any bytes (%FF): an object key must be UTF-8 */
    int name_b64 = 0;
    json_t *kj = idoc_text(a->name, strlen(a->name), &name_b64);
    if (!kj) {
      json_decref(v);
      return CEB_ENOMEM;
    }
    const char *key = json_string_value(kj);
    json_t *had = json_object_get(map, key);
    int rc;
    if (!had) {
      rc = json_object_set_new(map, key, v);
    } else if (json_is_array(had)) {
      rc = json_array_append_new(had, v);
    } else {
      json_t *arr = json_pack("[O]", had);
      if (!arr) {
        json_decref(v);
        rc = -1;
      } else if (json_array_append_new(arr, v)) { /* consumes v */
        json_decref(arr);
        rc = -1;
      } else {
        rc = json_object_set_new(map, key, arr); /* consumes arr */
      }
    }
    json_decref(kj);
    if (rc) return CEB_ENOMEM;
  }
  return CEB_OK;
}

int http_in_doc_build(const http_in_doc_req *r, char **out, size_t *out_len) {
  json_t *doc = json_object();
  int rc = doc ? CEB_OK : CEB_ENOMEM;
  if (rc == CEB_OK) rc = idoc_set_str(doc, "method", r->method);
  if (rc == CEB_OK) rc = idoc_set_str(doc, "path", r->path);
  if (rc == CEB_OK) rc = add_query(doc, r->query);
  if (rc == CEB_OK) rc = add_headers(doc, r->headers);
  if (rc == CEB_OK) rc = idoc_set_str(doc, "client", r->client);
  if (rc == CEB_OK)
    rc = idoc_dump_payload(
        doc, "body", r->body ? r->body : "", r->len,
        r->headers ? ceb_headers_get(r->headers, "Content-Type") : NULL, out,
        out_len);
  json_decref(doc);
  return rc;
}
