/* Strict JSON into libjq values (mapper_json_in.h). */
#include "mapping/mapper_json_in.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Below libjq's own nesting limit (256): deeper texts go to libjq, which
 * refuses them with its message. */
#define DEPTH_MAX 200
/* Longest number text read here (longer: libjq). */
#define NUMBER_MAX 64

typedef struct reader {
  const unsigned char *p, *end;
  int depth;
  char *buf; /* a string's unescaped bytes */
  size_t cap;
} reader;

static void skip_ws(reader *r) {
  while (r->p < r->end &&
         (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
    r->p++;
}

/* Length of the valid UTF-8 sequence at s (RFC 3629: no overlongs, no
 * surrogates, at most U+10FFFF), or 0. */
static size_t utf8_len(const unsigned char *s, const unsigned char *end) {
  unsigned char c = s[0];
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if ((size_t)(end - s) < n) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
      (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
    return 0;
  return n;
}

static int hex4(const unsigned char *s, uint32_t *out) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    unsigned char c = s[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (uint32_t)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (uint32_t)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (uint32_t)(c - 'A' + 10);
    else
      return 0;
  }
  *out = v;
  return 1;
}

static int buf_room(reader *r, size_t need) {
  if (need <= r->cap) return 1;
  size_t cap = r->cap ? r->cap * 2 : 256;
  while (cap < need)
    cap *= 2;
  char *b = realloc(r->buf, cap);
  if (!b) return 0;
  r->buf = b;
  r->cap = cap;
  return 1;
}

/* A string (r->p at its opening quote) into *out. 0: hand on. */
static int read_string(reader *r, jv *out) {
  const unsigned char *s = ++r->p;
  /* the common case: no escape, all of it taken as it is */
  while (r->p < r->end && *r->p != '"' && *r->p != '\\') {
    if (*r->p >= 0x20 && *r->p < 0x80) { /* plain ASCII: most bytes */
      r->p++;
      continue;
    }
    if (*r->p < 0x20) return 0;
    size_t n = utf8_len(r->p, r->end);
    if (!n) return 0;
    r->p += n;
  }
  if (r->p >= r->end) return 0;
  if (*r->p == '"') {
    *out = jv_string_sized((const char *)s, (int)(r->p - s));
    r->p++;
    return 1;
  }
  /* escapes: unescaped into r->buf (never longer than the text) */
  if (!buf_room(r, (size_t)(r->end - s))) return 0;
  size_t len = (size_t)(r->p - s);
  memcpy(r->buf, s, len);
  while (r->p < r->end && *r->p != '"') {
    unsigned char c = *r->p;
    if (c < 0x20) return 0;
    if (c != '\\') {
      size_t n = utf8_len(r->p, r->end);
      if (!n) return 0;
      memcpy(r->buf + len, r->p, n);
      len += n;
      r->p += n;
      continue;
    }
    if (r->end - r->p < 2) return 0;
    c = r->p[1];
    r->p += 2;
    char e = 0;
    switch (c) {
    case '"':
      e = '"';
      break;
    case '\\':
      e = '\\';
      break;
    case '/':
      e = '/';
      break;
    case 'b':
      e = '\b';
      break;
    case 'f':
      e = '\f';
      break;
    case 'n':
      e = '\n';
      break;
    case 'r':
      e = '\r';
      break;
    case 't':
      e = '\t';
      break;
    case 'u':
      break;
    default:
      return 0;
    }
    if (c != 'u') {
      r->buf[len++] = e;
      continue;
    }
    uint32_t cp, lo;
    if (r->end - r->p < 4 || !hex4(r->p, &cp)) return 0;
    r->p += 4;
    if (cp >= 0xdc00 && cp <= 0xdfff) return 0; /* a lone low half */
    if (cp >= 0xd800 && cp <= 0xdbff) {
      if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
          !hex4(r->p + 2, &lo) || lo < 0xdc00 || lo > 0xdfff)
        return 0; /* a lone high half: libjq's replacement rules */
      r->p += 6;
      cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    /* "\uXXXX" is 6 bytes of text for at most 3 of UTF-8, a pair 12 for
     * 4: the buffer (the text's length) always has room */
    char *o = r->buf + len;
    if (cp < 0x80) {
      o[0] = (char)cp;
      len += 1;
    } else if (cp < 0x800) {
      o[0] = (char)(0xc0 | (cp >> 6));
      o[1] = (char)(0x80 | (cp & 0x3f));
      len += 2;
    } else if (cp < 0x10000) {
      o[0] = (char)(0xe0 | (cp >> 12));
      o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
      o[2] = (char)(0x80 | (cp & 0x3f));
      len += 3;
    } else {
      o[0] = (char)(0xf0 | (cp >> 18));
      o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
      o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
      o[3] = (char)(0x80 | (cp & 0x3f));
      len += 4;
    }
  }
  if (r->p >= r->end) return 0;
  r->p++;
  *out = jv_string_sized(r->buf, (int)len);
  return 1;
}

/* RFC 8259's number grammar, then strtod (correctly rounded, as libjq's
 * own jvp_strtod). */
static int read_number(reader *r, jv *out) {
  const unsigned char *s = r->p, *q = s;
  if (q < r->end && *q == '-') q++;
  if (q >= r->end) return 0;
  if (*q == '0') {
    q++;
  } else if (*q >= '1' && *q <= '9') {
    while (q < r->end && *q >= '0' && *q <= '9')
      q++;
  } else {
    return 0;
  }
  if (q < r->end && *q == '.') {
    q++;
    if (q >= r->end || *q < '0' || *q > '9') return 0;
    while (q < r->end && *q >= '0' && *q <= '9')
      q++;
  }
  if (q < r->end && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < r->end && (*q == '+' || *q == '-')) q++;
    if (q >= r->end || *q < '0' || *q > '9') return 0;
    while (q < r->end && *q >= '0' && *q <= '9')
      q++;
  }
  size_t n = (size_t)(q - s);
  if (n >= NUMBER_MAX) return 0;
  char tmp[NUMBER_MAX];
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  *out = jv_number(strtod(tmp, NULL));
  r->p = q;
  return 1;
}

static int read_literal(reader *r, const char *word, size_t n, jv v, jv *out) {
  if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) return 0;
  r->p += n;
  *out = v;
  return 1;
}

static int read_value(reader *r, jv *out);

static int read_array(reader *r, jv *out) {
  r->p++;
  jv a = jv_array();
  skip_ws(r);
  if (r->p < r->end && *r->p == ']') {
    r->p++;
    *out = a;
    return 1;
  }
  for (;;) {
    jv v;
    if (!read_value(r, &v)) break;
    a = jv_array_append(a, v);
    skip_ws(r);
    if (r->p >= r->end) break;
    if (*r->p == ',') {
      r->p++;
      continue;
    }
    if (*r->p != ']') break;
    r->p++;
    *out = a;
    return 1;
  }
  jv_free(a);
  return 0;
}

static int read_object(reader *r, jv *out) {
  r->p++;
  jv o = jv_object();
  skip_ws(r);
  if (r->p < r->end && *r->p == '}') {
    r->p++;
    *out = o;
    return 1;
  }
  for (;;) {
    jv k, v;
    skip_ws(r);
    if (r->p >= r->end || *r->p != '"' || !read_string(r, &k)) break;
    skip_ws(r);
    if (r->p >= r->end || *r->p != ':') {
      jv_free(k);
      break;
    }
    r->p++;
    if (!read_value(r, &v)) {
      jv_free(k);
      break;
    }
    o = jv_object_set(o, k, v);
    skip_ws(r);
    if (r->p >= r->end) break;
    if (*r->p == ',') {
      r->p++;
      continue;
    }
    if (*r->p != '}') break;
    r->p++;
    *out = o;
    return 1;
  }
  jv_free(o);
  return 0;
}

static int read_value(reader *r, jv *out) {
  skip_ws(r);
  if (r->p >= r->end) return 0;
  int ok;
  switch (*r->p) {
  case '{':
  case '[':
    if (++r->depth > DEPTH_MAX) return 0;
    ok = *r->p == '{' ? read_object(r, out) : read_array(r, out);
    r->depth--;
    return ok;
  case '"':
    return read_string(r, out);
  case 't':
    return read_literal(r, "true", 4, jv_true(), out);
  case 'f':
    return read_literal(r, "false", 5, jv_false(), out);
  case 'n':
    return read_literal(r, "null", 4, jv_null(), out);
  default:
    return read_number(r, out);
  }
}

int cebm_json_read_strict(const char *text, size_t len, jv *out) {
  /* libjq reads lengths as int */
  if (!text || len > (size_t)INT32_MAX) return 0;
  reader r = {(const unsigned char *)text, (const unsigned char *)text + len, 0,
              NULL, 0};
  jv v;
  int ok = read_value(&r, &v);
  free(r.buf);
  if (!ok) return 0;
  skip_ws(&r);
  if (r.p != r.end) { /* more than one value: libjq says what */
    jv_free(v);
    return 0;
  }
  *out = v;
  return 1;
}

jv cebm_json_read(const char *text, size_t len) {
  jv v;
  if (cebm_json_read_strict(text, len, &v)) return v;
  return jv_parse_sized(text, (int)len);
}
