#include "log/ceb_log_escape.h"

#include <ceb/codec.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Code points written as \uNNNN although they are well-formed UTF-8: C1
 * controls (some terminals act on them), the line/paragraph separators
 * (line breaks for many viewers) and the bidi overrides (which reorder
 * what a reader sees). */
static int escaped_cp(unsigned cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

static unsigned decode_cp(const unsigned char *p, size_t n) {
  if (n == 2) return ((p[0] & 0x1Fu) << 6) | (p[1] & 0x3Fu);
  if (n == 3)
    return ((p[0] & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
  return 0; /* 4-byte sequences are never escaped */
}

static int needs_quotes(const char *s, size_t len) {
  if (len == 0) return 1;
  for (size_t i = 0; i < len; i++)
    if (s[i] == ' ' || s[i] == '"' || s[i] == '=') return 1;
  return 0;
}

size_t ceb_log_escape(const char *s, size_t len, int quote, char *out) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *p = (const unsigned char *)s;
  size_t o = 0;
  quote = quote && needs_quotes(s, len);
  if (quote) out[o++] = '"';
  for (size_t i = 0; i < len;) {
    unsigned char c = p[i];
    size_t n = ceb_utf8_seq(p + i, len - i);
    if (n == 1 && c >= 0x20 && c != 0x7F) {
      if (c == '\\' || (quote && c == '"')) out[o++] = '\\';
      out[o++] = (char)c;
    } else if (n == 1 && (c == '\n' || c == '\r' || c == '\t')) {
      out[o++] = '\\';
      out[o++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
    } else if (n <= 1) { /* other C0, DEL, or not UTF-8 */
      out[o++] = '\\';
      out[o++] = 'x';
      out[o++] = hex[c >> 4];
      out[o++] = hex[c & 0xF];
      n = 1;
    } else if (n <= 3 && escaped_cp(decode_cp(p + i, n))) {
      /* 6 bytes for 2 or 3 input bytes: within 4 per byte */
      o += (size_t)sprintf(out + o, "\\u%04x", decode_cp(p + i, n));
    } else {
      memcpy(out + o, p + i, n);
      o += n;
    }
    i += n;
  }
  if (quote) out[o++] = '"';
  out[o] = '\0';
  return o;
}

char *ceb_log_escape_dup(const char *s, int quote) {
  size_t len = strlen(s);
  char *out = malloc(CEB_LOG_ESCAPED_MAX(len));
  if (out) ceb_log_escape(s, len, quote, out);
  return out;
}
