/* JSON text of libjq values (mapper_json_out.h). */
#include "mapping/mapper_json_out.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(cebm_text *t, size_t need) {
  if (t->len + need <= t->cap) return 0;
  size_t cap = t->cap ? t->cap : 1024;
  while (cap < t->len + need)
    cap *= 2;
  char *p = realloc(t->p, cap);
  if (!p) return -1;
  t->p = p;
  t->cap = cap;
  return 0;
}

static int put(cebm_text *t, const char *s, size_t n) {
  if (grow(t, n)) return -1;
  memcpy(t->p + t->len, s, n);
  t->len += n;
  return 0;
}

/* A string as jq 1.6's jvp_dump_string writes it without JV_PRINT_ASCII:
 * '"' and '\\' escaped, \b \t \n \f \r by name, other bytes below 0x20 and
 * DEL as \u00xx (lower-case hex), everything else (jq's strings are valid
 * UTF-8) as it is. */
static int put_string(cebm_text *t, const char *s, size_t n) {
  /* at most 6 bytes per input byte, plus the quotes */
  if (grow(t, n * 6 + 2)) return -1;
  char *o = t->p + t->len;
  *o++ = '"';
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) {
      *o++ = (char)c;
      continue;
    }
    *o++ = '\\';
    switch (c) {
    case '"':
      *o++ = '"';
      break;
    case '\\':
      *o++ = '\\';
      break;
    case '\b':
      *o++ = 'b';
      break;
    case '\t':
      *o++ = 't';
      break;
    case '\n':
      *o++ = 'n';
      break;
    case '\f':
      *o++ = 'f';
      break;
    case '\r':
      *o++ = 'r';
      break;
    default: {
      static const char hex[] = "0123456789abcdef";
      *o++ = 'u';
      *o++ = '0';
      *o++ = '0';
      *o++ = hex[c >> 4];
      *o++ = hex[c & 15];
    }
    }
  }
  *o++ = '"';
  t->len = (size_t)(o - t->p);
  return 0;
}

/* A number: a small integer (the usual case: ids, counts, epochs) printed
 * here, which is what jq's shortest round-trip format gives for it; any
 * other (fractions, exponents, -0, NaN as null, infinities) by libjq. */
static int put_number(cebm_text *t, double d) {
  if (d == floor(d) && fabs(d) < 1e15 && !(d == 0 && signbit(d))) {
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%lld", (long long)d);
    return put(t, buf, (size_t)n);
  }
  jv s = jv_dump_string(jv_number(d), 0);
  int rc =
      put(t, jv_string_value(s), (size_t)jv_string_length_bytes(jv_copy(s)));
  jv_free(s);
  return rc;
}

int cebm_json_write(cebm_text *t, jv v) {
  int rc = 0;
  switch (jv_get_kind(v)) {
  case JV_KIND_NULL:
    rc = put(t, "null", 4);
    break;
  case JV_KIND_FALSE:
    rc = put(t, "false", 5);
    break;
  case JV_KIND_TRUE:
    rc = put(t, "true", 4);
    break;
  case JV_KIND_NUMBER:
    rc = put_number(t, jv_number_value(v));
    break;
  case JV_KIND_STRING:
    rc = put_string(t, jv_string_value(v),
                    (size_t)jv_string_length_bytes(jv_copy(v)));
    break;
  case JV_KIND_ARRAY: {
    int n = jv_array_length(jv_copy(v));
    rc = put(t, "[", 1);
    for (int i = 0; i < n && !rc; i++) {
      if (i) rc = put(t, ",", 1);
      if (!rc) rc = cebm_json_write(t, jv_array_get(jv_copy(v), i));
    }
    if (!rc) rc = put(t, "]", 1);
    break;
  }
  case JV_KIND_OBJECT: {
    rc = put(t, "{", 1);
    int first = 1;
    for (int i = jv_object_iter(v); !rc && jv_object_iter_valid(v, i);
         i = jv_object_iter_next(v, i)) {
      if (!first) rc = put(t, ",", 1);
      first = 0;
      jv key = jv_object_iter_key(v, i);
      if (!rc)
        rc = put_string(t, jv_string_value(key),
                        (size_t)jv_string_length_bytes(jv_copy(key)));
      jv_free(key);
      if (!rc) rc = put(t, ":", 1);
      if (!rc) rc = cebm_json_write(t, jv_object_iter_value(v, i));
    }
    if (!rc) rc = put(t, "}", 1);
    break;
  }
  default:
    rc = -1; /* invalid: the caller's bug */
  }
  jv_free(v);
  return rc;
}

int cebm_json_write_nul(cebm_text *t) {
  return put(t, "", 1);
}
