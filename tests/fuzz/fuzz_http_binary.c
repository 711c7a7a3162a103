/* Fuzz target: an HTTP request dump (headers, blank line, body) through the
 * dump parser and the HTTP binding decoder. A decoded event must encode in
 * binary mode and decode again to the same JSON rendering (after at most
 * one normalising trip: implied content type made explicit, data kind chosen
 * from the content type). */
#include <ceb/codec.h>
#include <ceb/validate.h>

#include "cli/http_dump.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *render(const ceb_event *ev, size_t *len) {
  char *json = NULL;
  /* binary data kinds always render; text is UTF-8 by construction */
  if (ceb_json_encode(ev, &json, len) != CEB_OK) return NULL;
  return json;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ceb_headers h = {0};
  size_t off;
  ceb_error err;
  const char *buf = (const char *)data;
  if (ceb_http_dump_parse(buf, size, &h, &off, &err) != CEB_OK) return 0;
  ceb_event *ev = NULL;
  if (ceb_http_decode(&h, buf + off, size - off, &ev, &err) == CEB_OK) {
    ceb_violations v;
    if (ceb_event_validate(ev, NULL, &v) != 0) {
      /* only valid events must survive the trip: an invalid one may not
       * (e.g. attributes "MyExt" and "myext" fold to one header name) */
      ceb_event_unref(ev);
      ceb_headers_clear(&h);
      return 0;
    }
    ceb_headers out = {0};
    char *body = NULL;
    size_t len;
    if (ceb_http_encode(ev, CEB_MODE_BINARY, &out, &body, &len) != CEB_OK)
      abort();
    ceb_event *again = NULL;
    if (ceb_http_decode(&out, body, len, &again, &err) != CEB_OK) abort();
    size_t l1 = 0, l2 = 0;
    char *j1 = render(ev, &l1), *j2 = render(again, &l2);
    /* both render or neither does (attribute values may be non-UTF-8
     * only if the decoder let them through, which it must not) */
    if (!j1 || !j2 || l1 != l2 || memcmp(j1, j2, l1) != 0) {
      /* the implied application/json may become explicit: compare again
       * after one more trip, which must be a fixed point */
      ceb_free(j1);
      j1 = j2;
      l1 = l2;
      ceb_headers o2 = {0};
      char *b2 = NULL;
      size_t bl2;
      ceb_event *third = NULL;
      if (ceb_http_encode(again, CEB_MODE_BINARY, &o2, &b2, &bl2) != CEB_OK ||
          ceb_http_decode(&o2, b2, bl2, &third, &err) != CEB_OK)
        abort();
      j2 = render(third, &l2);
      if (!j1 || !j2 || l1 != l2 || memcmp(j1, j2, l1) != 0) abort();
      ceb_event_unref(third);
      ceb_headers_clear(&o2);
      ceb_free(b2);
    }
    ceb_free(j1);
    ceb_free(j2);
    ceb_event_unref(again);
    ceb_headers_clear(&out);
    ceb_free(body);
    ceb_event_unref(ev);
  } else if (err.code[0] == '\0') {
    abort();
  }
  ceb_headers_clear(&h);
  return 0;
}
