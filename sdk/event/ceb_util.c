/* Small helpers used across the SDK event files: error filling, UTF-8 check,
 * memory copy, ceb_free and the struct_size-checked readers of the ABI's
 * later members (ceb_delivery_encoded, ceb_delivery_mapped,
 * ceb_instance_mapped). */
#include "ceb_event_internal.h"

#include <ceb/plugin.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ceb_free(void *p) {
  free(p);
}

/* ABI 1.1 (plugin.h): a 1.0 host's delivery ends before the member. */
const char *ceb_delivery_encoded(const ceb_delivery *d, size_t *len) {
  size_t need = offsetof(ceb_delivery, encoded_len) + sizeof(size_t);
  if (!d || d->struct_size < need || !d->encoded) {
    if (len) *len = 0;
    return NULL;
  }
  if (len) *len = d->encoded_len;
  return d->encoded;
}

/* ABI 1.2: a 1.1 host's delivery ends before the member. */
const ceb_mapped_out *ceb_delivery_mapped(const ceb_delivery *d) {
  size_t need = offsetof(ceb_delivery, mapped) + sizeof(d->mapped);
  if (!d || d->struct_size < need) return NULL;
  return d->mapped;
}

/* ABI 1.2: a 1.1 host's info ends before the member. */
int ceb_instance_mapped(const ceb_instance_info *info) {
  size_t need = offsetof(ceb_instance_info, mapped) + sizeof(info->mapped);
  if (!info || info->struct_size < need) return 0;
  return info->mapped != 0;
}

int cebi_fail(ceb_error *err, int status, const char *code, const char *fmt,
              ...) {
  if (!err) return status;
  err->status = status;
  snprintf(err->code, sizeof err->code, "%s", code);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return status;
}

char *cebi_memdup(const void *p, size_t len) {
  char *c = malloc(len + 1);
  if (!c) return NULL;
  if (len) memcpy(c, p, len);
  c[len] = '\0';
  return c;
}

size_t ceb_utf8_seq(const unsigned char *s, size_t avail) {
  if (avail == 0) return 0;
  unsigned c = s[0], cp;
  if (c < 0x80) return 1;
  size_t n;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 1;
    cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 2;
    cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 3;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (avail <= n) return 0;
  for (size_t k = 1; k <= n; k++) {
    if ((s[k] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (s[k] & 0x3F);
  }
  /* Overlong forms, surrogates and values past U+10FFFF. */
  if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return n + 1;
}

int cebi_utf8_valid(const void *buf, size_t len) {
  const unsigned char *s = buf;
  size_t i = 0;
  while (i < len) {
    if (s[i] == 0) return 0;
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    size_t n = ceb_utf8_seq(s + i, len - i);
    if (!n) return 0;
    i += n;
  }
  return 1;
}
