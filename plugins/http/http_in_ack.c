#include "http_in_ack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/codec.h>

static size_t put(char *out, size_t at, const char *text, size_t n) {
  if (out) memcpy(out + at, text, n);
  return at + n;
}

size_t http_json_quote(char *out, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  const unsigned char *p = (const unsigned char *)(s ? s : "");
  const unsigned char *end = p + strlen((const char *)p);
  size_t at = put(out, 0, "\"", 1);
  while (*p) {
    const unsigned char *run = p; /* bytes written as they are */
    while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
      p++;
    at = put(out, at, (const char *)run, (size_t)(p - run));
    if (!*p) break;
    unsigned char c = *p;
    if (c >= 0x80) {
      size_t n = ceb_utf8_seq(p, (size_t)(end - p));
      if (n) {
        at = put(out, at, (const char *)p, n);
        p += n;
      } else {
        at = put(out, at, "\\ufffd", 6);
        p++;
      }
      continue;
    }
    p++;
    switch (c) {
    case '"':
      at = put(out, at, "\\\"", 2);
      break;
    case '\\':
      at = put(out, at, "\\\\", 2);
      break;
    case '\b':
      at = put(out, at, "\\b", 2);
      break;
    case '\f':
      at = put(out, at, "\\f", 2);
      break;
    case '\n':
      at = put(out, at, "\\n", 2);
      break;
    case '\r':
      at = put(out, at, "\\r", 2);
      break;
    case '\t':
      at = put(out, at, "\\t", 2);
      break;
    default: {
      char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      at = put(out, at, u, 6);
    }
    }
  }
  return put(out, at, "\"", 1);
}

char *http_ack_ids(ceb_event *const *events, size_t count, size_t *len) {
  size_t n = 2 + (count ? count - 1 : 0); /* brackets, commas */
  for (size_t i = 0; i < count; i++)
    n += http_json_quote(NULL, ceb_event_get(events[i], "id"));
  char *text = malloc(n + 1);
  if (!text) return NULL;
  size_t at = put(text, 0, "[", 1);
  for (size_t i = 0; i < count; i++) {
    if (i) at = put(text, at, ",", 1);
    at += http_json_quote(text + at, ceb_event_get(events[i], "id"));
  }
  at = put(text, at, "]", 1);
  text[at] = '\0';
  *len = at;
  return text;
}

char *http_ack_body(size_t accepted, size_t duplicates, const char *ids,
                    size_t ids_len, size_t *len) {
  static const char head[] = "{\"status\":\"accepted\",\"accepted\":";
  char nums[96];
  int k = snprintf(nums, sizeof nums, "%zu,\"duplicates\":%zu%s", accepted,
                   duplicates, ids ? ",\"ids\":" : "");
  if (k < 0 || (size_t)k >= sizeof nums) return NULL;
  if (!ids) ids_len = 0;
  size_t n = sizeof head - 1 + (size_t)k + ids_len + 1;
  char *body = malloc(n + 1);
  if (!body) return NULL;
  size_t at = put(body, 0, head, sizeof head - 1);
  at = put(body, at, nums, (size_t)k);
  if (ids) at = put(body, at, ids, ids_len);
  at = put(body, at, "}", 1);
  body[at] = '\0';
  *len = at;
  return body;
}
