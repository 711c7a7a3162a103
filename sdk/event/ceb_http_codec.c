/* HTTP protocol binding (CloudEvents 1.0.2 http-protocol-binding.md):
 * binary mode with percent-encoded ce-* headers, structured mode with an
 * application/cloudevents+json body. */
#include "ceb_event_internal.h"

#include <stdlib.h>
#include <string.h>

static const cebi_binding k_http = {"ce-", 1, 1, NULL, "http"};

int ceb_http_decode(const ceb_headers *headers, const void *body, size_t len,
                    ceb_event **out, ceb_error *err) {
  ceb_error_clear(err);
  if (!out || (!body && len))
    return cebi_fail(err, CEB_EINVAL, "ce.arg", "invalid argument");
  *out = NULL;
  const char *ct = ceb_headers_get(headers, "content-type");
  switch (ceb_http_mode_of(ct)) {
  case CEB_MODE_STRUCTURED:
    return ceb_json_decode(body, len, out, err);
  case CEB_MODE_BATCH:
    return cebi_fail(err, CEB_EINVAL, "http.batch",
                     "a batch request holds several events: use "
                     "ceb_batch_decode");
  default:
    return cebi_binary_decode(&k_http, headers, ct, body, len, out, err);
  }
}

int ceb_http_encode(const ceb_event *ev, ceb_mode mode, ceb_headers *headers,
                    char **body, size_t *len) {
  if (!ev || !headers || !body || !len) return CEB_EINVAL;
  *body = NULL;
  *len = 0;
  if (mode == CEB_MODE_STRUCTURED) {
    char *json;
    size_t n;
    int rc = ceb_json_encode(ev, &json, &n);
    if (rc != CEB_OK) return rc;
    static const char ct[] = "application/cloudevents+json";
    if ((rc = ceb_headers_add(headers, "Content-Type", ct, strlen(ct))) !=
        CEB_OK) {
      free(json);
      return rc;
    }
    *body = json;
    *len = n;
    return CEB_OK;
  }
  if (mode != CEB_MODE_BINARY) return CEB_EINVAL;
  size_t first = headers->count;
  char *ct;
  int rc = cebi_binary_encode(&k_http, ev, headers, &ct, body, len);
  if (rc == CEB_OK && ct)
    rc = ceb_headers_add(headers, "Content-Type", ct, strlen(ct));
  free(ct);
  if (rc != CEB_OK) {
    while (headers->count > first) {
      headers->count--;
      free(headers->items[headers->count].name);
      free(headers->items[headers->count].value);
    }
    free(*body);
    *body = NULL;
    *len = 0;
  }
  return rc;
}
