/* Checks that a text is JSON the way jansson reads it (JSON_DECODE_ANY |
 * JSON_REJECT_DUPLICATES), without building a tree: the sources validate
 * every JSON payload they accept, and jansson's tree (an allocation per
 * member and value, then freeing it all) was a fifth of the MQTT receive
 * thread and of the HTTP listener's time.
 *
 * The answer is one-sided: 1 means jansson accepts the text; 0 means "not
 * sure", and the caller asks jansson, which also words the error. So
 * whatever is rare or subtle answers 0 instead of being re-implemented:
 * integers of 19+ digits (overflow), reals whose exponent could overflow,
 * \u0000 and lone surrogate escapes, escaped member names or more than 64
 * in one object (duplicate checks), nesting past 64. The fuzz target
 * fuzz_json_valid checks the one side against jansson. */
#include "ceb_event_internal.h"

#include <string.h>

#define MAX_DEPTH 64
#define MAX_KEYS 64 /* per object; duplicates checked pairwise up to it */

typedef struct scan {
  const unsigned char *s;
  size_t n, i;
} scan;

static void skip_ws(scan *p) {
  while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' ||
                         p->s[p->i] == '\n' || p->s[p->i] == '\r'))
    p->i++;
}

static int hexval(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* p->s[p->i] is '"'. Moves past the closing quote; *escaped when the
 * string holds a backslash. */
static int string_ok(scan *p, int *escaped) {
  const unsigned char *s = p->s;
  size_t i = p->i + 1, n = p->n;
  while (i < n) {
    unsigned char c = s[i];
    if (c == '"') {
      p->i = i + 1;
      return 1;
    }
    if (c < 0x20) return 0;
    if (c == '\\') {
      if (escaped) *escaped = 1;
      if (++i >= n) return 0;
      c = s[i];
      if (c == 'u') {
        if (n - i <= 4) return 0;
        int v = 0;
        for (int k = 1; k <= 4; k++) {
          int h = hexval(s[i + k]);
          if (h < 0) return 0;
          v = v << 4 | h;
        }
        i += 5;
        if (v == 0 || (v >= 0xDC00 && v <= 0xDFFF)) return 0;
        if (v >= 0xD800 && v <= 0xDBFF) { /* needs its low half next */
          if (n - i <= 6 || s[i] != '\\' || s[i + 1] != 'u') return 0;
          int lo = 0;
          for (int k = 2; k <= 5; k++) {
            int h = hexval(s[i + k]);
            if (h < 0) return 0;
            lo = lo << 4 | h;
          }
          if (lo < 0xDC00 || lo > 0xDFFF) return 0;
          i += 6;
        }
        continue;
      }
      if (!strchr("\"\\/bfnrt", c) || c == '\0') return 0;
      i++;
      continue;
    }
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t k = ceb_utf8_seq(s + i, n - i);
    if (!k) return 0;
    i += k;
  }
  return 0;
}

static int is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

static int number_ok(scan *p) {
  const unsigned char *s = p->s;
  size_t i = p->i, n = p->n;
  if (i < n && s[i] == '-') i++;
  size_t int_start = i;
  if (i < n && s[i] == '0') {
    i++;
    if (i < n && is_digit(s[i])) return 0;
  } else if (i < n && is_digit(s[i])) {
    while (i < n && is_digit(s[i]))
      i++;
  } else {
    return 0;
  }
  size_t int_digits = i - int_start;
  int real = 0;
  if (i < n && s[i] == '.') {
    real = 1;
    if (++i >= n || !is_digit(s[i])) return 0;
    while (i < n && is_digit(s[i]))
      i++;
  }
  long exp = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    real = 1;
    i++;
    int neg = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    if (i >= n || !is_digit(s[i])) return 0;
    while (i < n && is_digit(s[i])) {
      if (exp < 100000) exp = exp * 10 + (s[i] - '0');
      i++;
    }
    if (neg) exp = -exp;
  }
  /* jansson refuses integers past 64 bits and reals that overflow to
   * infinity: leave anything near either to it */
  if (!real && int_digits > 18) return 0;
  if (real && (long)int_digits + exp > 300) return 0;
  p->i = i;
  return 1;
}

static int literal_ok(scan *p, const char *word) {
  size_t len = strlen(word);
  if (p->n - p->i < len || memcmp(p->s + p->i, word, len) != 0) return 0;
  p->i += len;
  return 1;
}

typedef struct key {
  size_t at, len;
} key;

static int value_ok(scan *p, int depth);

/* After an object member or array item: 1 at ',' (another follows), 2 at
 * `close` (the container ends), 0 for anything else. */
static int after_item(scan *p, char close) {
  skip_ws(p);
  if (p->i < p->n && p->s[p->i] == ',') {
    p->i++;
    skip_ws(p);
    return 1;
  }
  if (p->i < p->n && p->s[p->i] == close) {
    p->i++;
    return 2;
  }
  return 0;
}

static int object_ok(scan *p, int depth) {
  key keys[MAX_KEYS];
  size_t nkeys = 0;
  p->i++; /* '{' */
  skip_ws(p);
  if (p->i < p->n && p->s[p->i] == '}') {
    p->i++;
    return 1;
  }
  for (;;) {
    if (p->i >= p->n || p->s[p->i] != '"' || nkeys == MAX_KEYS) return 0;
    size_t at = p->i + 1;
    int escaped = 0;
    if (!string_ok(p, &escaped) || escaped) return 0;
    size_t len = p->i - 1 - at;
    for (size_t k = 0; k < nkeys; k++)
      if (keys[k].len == len && memcmp(p->s + keys[k].at, p->s + at, len) == 0)
        return 0; /* a duplicate: jansson refuses it */
    keys[nkeys++] = (key){at, len};
    skip_ws(p);
    if (p->i >= p->n || p->s[p->i] != ':') return 0;
    p->i++;
    skip_ws(p);
    if (!value_ok(p, depth + 1)) return 0;
    int next = after_item(p, '}');
    if (next != 1) return next == 2;
  }
}

static int array_ok(scan *p, int depth) {
  p->i++; /* '[' */
  skip_ws(p);
  if (p->i < p->n && p->s[p->i] == ']') {
    p->i++;
    return 1;
  }
  for (;;) {
    if (!value_ok(p, depth + 1)) return 0;
    int next = after_item(p, ']');
    if (next != 1) return next == 2;
  }
}

static int value_ok(scan *p, int depth) {
  if (p->i >= p->n || depth > MAX_DEPTH) return 0;
  switch (p->s[p->i]) {
  case '{':
    return object_ok(p, depth);
  case '[':
    return array_ok(p, depth);
  case '"':
    return string_ok(p, NULL);
  case 't':
    return literal_ok(p, "true");
  case 'f':
    return literal_ok(p, "false");
  case 'n':
    return literal_ok(p, "null");
  default:
    return number_ok(p);
  }
}

int cebi_json_valid(const void *text, size_t len) {
  scan p = {text, len, 0};
  if (!text) return 0;
  skip_ws(&p);
  if (!value_ok(&p, 0)) return 0;
  skip_ws(&p);
  return p.i == p.n;
}

int ceb_json_valid(const char *text, size_t len) {
  return text || len == 0 ? cebi_json_valid(text ? text : "", len) : 0;
}
