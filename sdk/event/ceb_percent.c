/* Percent-encoding of header values per the CloudEvents HTTP binding
 * (section 3.1.3.2): space, '"', '%' and every byte outside printable ASCII
 * are encoded; decoding must yield valid UTF-8. */
#include "ceb_event_internal.h"

#include <stdlib.h>
#include <string.h>

static int must_encode(unsigned char c) {
  return c <= 0x20 || c >= 0x7F || c == '"' || c == '%';
}

char *ceb_percent_encode(const char *value) {
  if (!value) return NULL;
  static const char hex[] = "0123456789ABCDEF";
  size_t len = strlen(value), n = 0;
  for (size_t i = 0; i < len; i++)
    n += must_encode((unsigned char)value[i]) ? 3 : 1;
  char *out = malloc(n + 1), *o = out;
  if (!out) return NULL;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)value[i];
    if (must_encode(c)) {
      *o++ = '%';
      *o++ = hex[c >> 4];
      *o++ = hex[c & 15];
    } else {
      *o++ = (char)c;
    }
  }
  *o = '\0';
  return out;
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

int ceb_percent_decode(const char *value, char **out) {
  if (!value || !out) return CEB_EINVAL;
  *out = NULL;
  size_t len = strlen(value), n = 0;
  char *buf = malloc(len + 1);
  if (!buf) return CEB_ENOMEM;
  for (size_t i = 0; i < len; i++) {
    if (value[i] != '%') {
      buf[n++] = value[i];
      continue;
    }
    int hi = i + 1 < len ? hex_value(value[i + 1]) : -1;
    int lo = i + 2 < len ? hex_value(value[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      free(buf);
      return CEB_EINVAL;
    }
    buf[n++] = (char)(hi << 4 | lo);
    i += 2;
  }
  buf[n] = '\0';
  if (!cebi_utf8_valid(buf, n)) { /* also rejects %00 */
    free(buf);
    return CEB_EINVAL;
  }
  *out = buf;
  return CEB_OK;
}
