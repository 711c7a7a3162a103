/* Standard base64 (RFC 4648 section 4, with padding). Decoding is strict:
 * no whitespace, no missing padding, no data after padding. */
#include "ceb_event_internal.h"

#include <stdint.h>
#include <stdlib.h>

static const char k_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *ceb_base64_encode(const void *data, size_t len) {
  if (!data && len) return NULL;
  if (len > (SIZE_MAX - 1) / 4 * 3 - 3) return NULL;
  const unsigned char *in = data;
  size_t out_len = (len + 2) / 3 * 4;
  char *out = malloc(out_len + 1), *o = out;
  if (!out) return NULL;
  size_t i = 0;
  for (; i + 2 < len; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
    *o++ = k_alphabet[v >> 18 & 63];
    *o++ = k_alphabet[v >> 12 & 63];
    *o++ = k_alphabet[v >> 6 & 63];
    *o++ = k_alphabet[v & 63];
  }
  if (i < len) {
    uint32_t v = (uint32_t)in[i] << 16;
    if (i + 1 < len) v |= (uint32_t)in[i + 1] << 8;
    *o++ = k_alphabet[v >> 18 & 63];
    *o++ = k_alphabet[v >> 12 & 63];
    *o++ = i + 1 < len ? k_alphabet[v >> 6 & 63] : '=';
    *o++ = '=';
  }
  *o = '\0';
  return out;
}

static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

int ceb_base64_decode(const char *text, size_t text_len, unsigned char **out,
                      size_t *out_len) {
  if (!out || !out_len || (!text && text_len)) return CEB_EINVAL;
  *out = NULL;
  *out_len = 0;
  if (text_len % 4 != 0) return CEB_EINVAL;
  size_t pad = 0;
  if (text_len && text[text_len - 1] == '=')
    pad = text_len >= 2 && text[text_len - 2] == '=' ? 2 : 1;
  unsigned char *buf = malloc(text_len / 4 * 3 + 1);
  if (!buf) return CEB_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < text_len; i += 4) {
    int last = i + 4 == text_len;
    int v[4];
    for (int k = 0; k < 4; k++) {
      unsigned char c = (unsigned char)text[i + k];
      if (c == '=' && last && k >= 4 - (int)pad) {
        v[k] = 0;
        continue;
      }
      v[k] = b64_value(c);
      if (v[k] < 0) {
        free(buf);
        return CEB_EINVAL;
      }
    }
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 |
                 (uint32_t)v[2] << 6 | (uint32_t)v[3];
    buf[n++] = (unsigned char)(w >> 16);
    if (!last || pad < 2) buf[n++] = (unsigned char)(w >> 8);
    if (!last || pad < 1) buf[n++] = (unsigned char)w;
  }
  buf[n] = '\0';
  *out = buf;
  *out_len = n;
  return CEB_OK;
}
