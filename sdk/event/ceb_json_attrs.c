/* The attributes of a JSON event, read straight from the text: the common
 * case of string, integer, boolean and null members. Building a jansson
 * object of the attributes and walking it cost an allocation per member and
 * was the larger part of decoding an event once the data member was cut
 * out (ceb_json_split.c); every decode pays it: the HTTP, Kafka and MQTT
 * sources, and the engine for each claimed event.
 *
 * Like ceb_json_valid.c it answers only what it is sure of: -1 hands the
 * text to the jansson path (ceb_json_codec.c), which decides and words any
 * error. So it gives up on: escaped member names, duplicates, more than
 * MAX_MEMBERS members, objects or arrays or reals as values, integers of
 * 19+ digits, \u0000 and lone surrogates, a context attribute that is not a
 * string, specversion other than "1.0", data_base64, an empty name, and
 * anything the event model refuses. What it accepts, it decodes exactly as
 * the jansson path does (the unit test and fuzz target compare them). */
#include "ceb_event_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MEMBERS 64

typedef struct cur {
  const unsigned char *s;
  size_t n, i;
} cur;

typedef struct sbuf {
  char *p;
  size_t len, cap;
} sbuf;

static int sb_put(sbuf *b, const void *d, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    while (cap < b->len + n + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) return 0;
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, d, n);
  b->len += n;
  b->p[b->len] = '\0';
  return 1;
}

static void ws(cur *c) {
  while (c->i < c->n && (c->s[c->i] == ' ' || c->s[c->i] == '\t' ||
                         c->s[c->i] == '\n' || c->s[c->i] == '\r'))
    c->i++;
}

static int hex4(const unsigned char *p) {
  int v = 0;
  for (int k = 0; k < 4; k++) {
    unsigned char h = p[k];
    int d = h >= '0' && h <= '9'   ? h - '0'
            : h >= 'a' && h <= 'f' ? h - 'a' + 10
            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    v = v << 4 | d;
  }
  return v;
}

static int put_utf8(sbuf *b, unsigned cp) {
  unsigned char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (unsigned char)cp;
    n = 1;
  } else if (cp < 0x800) {
    u[0] = (unsigned char)(0xC0 | cp >> 6);
    u[1] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 2;
  } else if (cp < 0x10000) {
    u[0] = (unsigned char)(0xE0 | cp >> 12);
    u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    u[2] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 3;
  } else {
    u[0] = (unsigned char)(0xF0 | cp >> 18);
    u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    u[3] = (unsigned char)(0x80 | (cp & 0x3F));
    n = 4;
  }
  return sb_put(b, u, n);
}

/* c->s[c->i] is '"': decodes the string into b (cleared first). 0 when it
 * is not one this reader is sure of. *escaped when it held a backslash. */
static int string_read(cur *c, sbuf *b, int *escaped) {
  const unsigned char *s = c->s;
  size_t i = c->i + 1, n = c->n, run = i;
  b->len = 0;
  if (!sb_put(b, "", 0)) return 0;
  while (i < n) {
    unsigned char ch = s[i];
    if (ch == '"') {
      if (!sb_put(b, s + run, i - run)) return 0;
      c->i = i + 1;
      return 1;
    }
    if (ch < 0x20) return 0;
    if (ch >= 0x80) {
      size_t k = ceb_utf8_seq(s + i, n - i);
      if (!k) return 0;
      i += k;
      continue;
    }
    if (ch != '\\') {
      i++;
      continue;
    }
    if (escaped) *escaped = 1;
    if (!sb_put(b, s + run, i - run) || ++i >= n) return 0;
    ch = s[i];
    const char *simple = strchr("\"\\/bfnrt", ch);
    if (ch && simple) {
      static const char out[] = "\"\\/\b\f\n\r\t";
      if (!sb_put(b, &out[simple - "\"\\/bfnrt"], 1)) return 0;
      run = ++i;
      continue;
    }
    if (ch != 'u' || n - i <= 4) return 0;
    int v = hex4(s + i + 1);
    i += 5;
    if (v <= 0 || (v >= 0xDC00 && v <= 0xDFFF)) return 0;
    unsigned cp = (unsigned)v;
    if (v >= 0xD800 && v <= 0xDBFF) {
      if (n - i <= 6 || s[i] != '\\' || s[i + 1] != 'u') return 0;
      int lo = hex4(s + i + 2);
      if (lo < 0xDC00 || lo > 0xDFFF) return 0;
      cp = 0x10000 + (((unsigned)v - 0xD800) << 10) + ((unsigned)lo - 0xDC00);
      i += 6;
    }
    if (!put_utf8(b, cp)) return 0;
    run = i;
  }
  return 0;
}

static int word(cur *c, const char *w) {
  size_t len = strlen(w);
  if (c->n - c->i < len || memcmp(c->s + c->i, w, len) != 0) return 0;
  c->i += len;
  return 1;
}

/* An integer as jansson prints it back; 0 when not sure. */
static int integer_read(cur *c, char *out, size_t outlen) {
  const unsigned char *s = c->s;
  size_t i = c->i, n = c->n, start = i;
  if (i < n && s[i] == '-') i++;
  size_t d = i;
  if (i < n && s[i] == '0') {
    i++;
  } else {
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
  }
  if (i == d || i - d > 18) return 0;
  if (i < n && (s[i] == '.' || s[i] == 'e' || s[i] == 'E' ||
                (s[i] >= '0' && s[i] <= '9')))
    return 0;
  char num[24];
  memcpy(num, s + start, i - start);
  num[i - start] = '\0';
  snprintf(out, outlen, "%lld", strtoll(num, NULL, 10));
  c->i = i;
  return 1;
}

typedef struct member {
  size_t at, len;
} member;

int cebi_json_attrs_decode(const char *text, size_t len, size_t data_start,
                           size_t data_end, ceb_event **out) {
  cur c = {(const unsigned char *)text, len, 0};
  member seen[MAX_MEMBERS];
  size_t nseen = 0;
  sbuf name = {0}, val = {0};
  ceb_event *ev = ceb_event_new();
  int ok = ev != NULL;
  ws(&c);
  ok = ok && c.i < c.n && c.s[c.i] == '{';
  c.i++;
  ws(&c);
  while (ok) {
    int escaped = 0;
    if (c.i >= c.n || c.s[c.i] != '"' || nseen == MAX_MEMBERS) break;
    size_t at = c.i + 1;
    if (!string_read(&c, &name, &escaped) || escaped || name.len == 0) break;
    for (size_t k = 0; k < nseen && ok; k++)
      ok = !(seen[k].len == name.len &&
             memcmp(c.s + seen[k].at, name.p, name.len) == 0);
    if (!ok) break;
    seen[nseen++] = (member){at, name.len};
    ws(&c);
    if (c.i >= c.n || c.s[c.i] != ':') break;
    c.i++;
    ws(&c);
    if (strcmp(name.p, "data") == 0) {
      if (c.i != data_start) break; /* not the member the split found */
      c.i = data_end;
    } else if (strcmp(name.p, "data_base64") == 0) {
      break;
    } else {
      int ctx = ceb_attr_is_context(name.p);
      ceb_attr_type type = CEB_ATTR_STRING;
      const char *v = NULL;
      char num[32];
      unsigned char ch = c.i < c.n ? c.s[c.i] : 0;
      if (ch == '"') {
        if (!string_read(&c, &val, NULL)) break;
        v = val.p;
        if (ctx && strcmp(name.p, "specversion") == 0 && strcmp(v, "1.0"))
          break;
      } else if (ctx) {
        if (!word(&c, "null")) break; /* null unsets; else: an error */
      } else if (word(&c, "true")) {
        type = CEB_ATTR_BOOLEAN;
        v = "true";
      } else if (word(&c, "false")) {
        type = CEB_ATTR_BOOLEAN;
        v = "false";
      } else if (word(&c, "null")) {
        v = NULL;
      } else if (integer_read(&c, num, sizeof num)) {
        type = CEB_ATTR_INTEGER;
        v = num;
      } else {
        break;
      }
      if (v && ceb_event_set_typed(ev, name.p, type, v) != CEB_OK) break;
    }
    ws(&c);
    if (c.i < c.n && c.s[c.i] == ',') {
      c.i++;
      ws(&c);
      continue;
    }
    if (c.i < c.n && c.s[c.i] == '}') {
      c.i++;
      ws(&c);
      if (c.i == c.n) {
        free(name.p);
        free(val.p);
        *out = ev;
        return CEB_OK;
      }
    }
    break;
  }
  free(name.p);
  free(val.p);
  ceb_event_unref(ev);
  return -1;
}
