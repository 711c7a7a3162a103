/* ceb_json_encode without a jansson tree: every accepted event is encoded
 * once for the journal, and building and dumping an object per event was
 * the largest cost of a source's submit (44 % of the Kafka source thread).
 * The output is byte for byte what jansson's compact dump of the same
 * object gives (test_json_codec compares them; the fuzz target checks the
 * round trip), so stored journals read the same either way. Untrusted JSON
 * data and events with an attribute named like a data member still go
 * through jansson (ceb_json_codec.c). */
#include "ceb_event_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jbuf {
  char *p;
  size_t len, cap;
  int failed;
} jbuf;

static void put(jbuf *b, const void *s, size_t n) {
  if (b->failed) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 512;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->failed = CEB_ENOMEM;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}

static void putc1(jbuf *b, char c) {
  put(b, &c, 1);
}

/* A JSON string as jansson writes it: '"' and '\' escaped, the control
 * characters as \b \f \n \r \t or \u00XX, everything else (UTF-8 included)
 * as is. Invalid UTF-8 (and NUL, which the decoder refuses) fails. */
static void put_string(jbuf *b, const char *s, size_t n) {
  if (!cebi_utf8_valid(s, n)) {
    if (!b->failed) b->failed = CEB_EINVAL;
    return;
  }
  putc1(b, '"');
  size_t run = 0; /* start of the bytes not yet written */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    put(b, s + run, i - run);
    run = i + 1;
    char esc[8];
    switch (c) {
    case '"':
      put(b, "\\\"", 2);
      break;
    case '\\':
      put(b, "\\\\", 2);
      break;
    case '\b':
      put(b, "\\b", 2);
      break;
    case '\f':
      put(b, "\\f", 2);
      break;
    case '\n':
      put(b, "\\n", 2);
      break;
    case '\r':
      put(b, "\\r", 2);
      break;
    case '\t':
      put(b, "\\t", 2);
      break;
    default:
      snprintf(esc, sizeof esc, "\\u%04X", c);
      put(b, esc, 6);
    }
  }
  put(b, s + run, n - run);
  putc1(b, '"');
}

/* An extension's value: booleans and integers as JSON literals when their
 * text is one (as ceb_json_codec.c's attr_value decides), else a string. */
static void put_value(jbuf *b, const char *value, ceb_attr_type type,
                      int context) {
  if (!context && type == CEB_ATTR_BOOLEAN &&
      (!strcmp(value, "true") || !strcmp(value, "false"))) {
    put(b, value, strlen(value));
    return;
  }
  if (!context && type == CEB_ATTR_INTEGER) {
    char *end;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (*value && !*end && errno == 0) {
      char num[32];
      int k = snprintf(num, sizeof num, "%lld", v);
      put(b, num, (size_t)k);
      return;
    }
  }
  put_string(b, value, strlen(value));
}

int cebi_json_write(const ceb_event *ev, char **out, size_t *out_len) {
  jbuf b = {0};
  putc1(&b, '{');
  size_t n = ceb_event_attr_count(ev);
  for (size_t i = 0; i < n; i++) {
    const char *name, *value;
    ceb_attr_type type;
    ceb_event_attr_at(ev, i, &name, &value, &type);
    if (i) putc1(&b, ',');
    put_string(&b, name, strlen(name));
    putc1(&b, ':');
    put_value(&b, value, type, ceb_attr_is_context(name));
  }
  size_t dlen;
  const char *data = ceb_event_data(ev, &dlen);
  const char *sep = n ? "," : "";
  switch (ceb_event_data_kind(ev)) {
  case CEB_DATA_NONE:
    break;
  case CEB_DATA_JSON: /* trusted: the caller checked */
    put(&b, sep, strlen(sep));
    put(&b, "\"data\":", 7);
    put(&b, data, dlen);
    break;
  case CEB_DATA_TEXT:
    put(&b, sep, strlen(sep));
    put(&b, "\"data\":", 7);
    put_string(&b, data, dlen);
    break;
  case CEB_DATA_BINARY: {
    char *b64 = ceb_base64_encode(data, dlen);
    if (!b64) {
      free(b.p);
      return CEB_ENOMEM;
    }
    put(&b, sep, strlen(sep));
    put(&b, "\"data_base64\":\"", 15);
    put(&b, b64, strlen(b64));
    putc1(&b, '"');
    free(b64);
    break;
  }
  }
  putc1(&b, '}');
  if (b.failed) {
    free(b.p);
    return b.failed;
  }
  b.p[b.len] = '\0';
  *out = b.p;
  if (out_len) *out_len = b.len;
  return CEB_OK;
}
