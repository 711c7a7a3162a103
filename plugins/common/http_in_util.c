#include "http_in_util.h"

#include <ceb/ceb.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int http_b64url_decode(const char *text, size_t len, unsigned char **out,
                       size_t *out_len) {
  if (len % 4 == 1) return CEB_EINVAL;
  char *std = malloc(len + 3);
  if (!std) return CEB_ENOMEM;
  for (size_t i = 0; i < len; i++) {
    char c = text[i];
    if (c == '-')
      c = '+';
    else if (c == '_')
      c = '/';
    else if (c == '+' || c == '/' || c == '=')
      return free(std), CEB_EINVAL; /* not the url-safe alphabet */
    std[i] = c;
  }
  size_t n = len;
  while (n % 4)
    std[n++] = '=';
  std[n] = '\0';
  unsigned char *bin = NULL;
  size_t bin_len = 0;
  int st = ceb_base64_decode(std, n, &bin, &bin_len);
  free(std);
  if (st != CEB_OK) return CEB_EINVAL;
  unsigned char *copy = malloc(bin_len + 1);
  if (!copy) {
    ceb_free(bin);
    return CEB_ENOMEM;
  }
  memcpy(copy, bin, bin_len);
  copy[bin_len] = '\0';
  ceb_free(bin);
  *out = copy;
  *out_len = bin_len;
  return CEB_OK;
}

char *http_b64url_encode(const void *data, size_t len) {
  char *std = ceb_base64_encode(data, len);
  if (!std) return NULL;
  size_t n = strlen(std);
  char *out = malloc(n + 1);
  if (!out) {
    ceb_free(std);
    return NULL;
  }
  size_t j = 0;
  for (size_t i = 0; i < n && std[i] != '='; i++)
    out[j++] = std[i] == '+' ? '-' : std[i] == '/' ? '_' : std[i];
  out[j] = '\0';
  ceb_free(std);
  return out;
}

int http_file_read(const char *path, size_t max, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return errno == ENOENT ? CEB_ENOTFOUND : CEB_EIO;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  int st = buf ? CEB_OK : CEB_ENOMEM;
  while (st == CEB_OK) {
    if (n == cap) {
      if (cap >= max) {
        st = CEB_ETOOLARGE;
        break;
      }
      cap = cap * 2 > max ? max : cap * 2;
      char *nb = realloc(buf, cap + 1);
      if (!nb) {
        st = CEB_ENOMEM;
        break;
      }
      buf = nb;
    }
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (r == 0) {
      if (ferror(f)) st = CEB_EIO;
      break;
    }
  }
  fclose(f);
  if (st != CEB_OK) {
    free(buf);
    return st;
  }
  buf[n] = '\0';
  *out = buf;
  if (len) *len = n;
  return CEB_OK;
}

int http_file_write(const char *path, const char *text) {
  size_t n = strlen(path) + 8;
  char *tmp = malloc(n);
  if (!tmp) return CEB_ENOMEM;
  snprintf(tmp, n, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  int st = CEB_EIO;
  if (f) {
    int ok = fputs(text, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (ok && rename(tmp, path) == 0)
      st = CEB_OK;
    else
      unlink(tmp);
  }
  free(tmp);
  return st;
}

void http_hex(const unsigned char *in, size_t n, char *out) {
  static const char d[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = d[in[i] >> 4];
    out[2 * i + 1] = d[in[i] & 15];
  }
  out[2 * n] = '\0';
}

static int match_one(const char *p, size_t plen, const char *text) {
  size_t tlen = strlen(text);
  if (plen == 1 && p[0] == '*') return 1;
  if (plen > 0 && p[plen - 1] == '*')
    return tlen >= plen - 1 && memcmp(text, p, plen - 1) == 0;
  if (plen > 0 && p[0] == '*')
    return tlen >= plen - 1 &&
           memcmp(text + tlen - (plen - 1), p + 1, plen - 1) == 0;
  return tlen == plen && memcmp(text, p, plen) == 0;
}

int http_pattern_match(const char *patterns, const char *text) {
  if (!patterns || !text) return 0;
  const char *p = patterns;
  for (;;) {
    while (*p == ' ')
      p++;
    const char *e = strchr(p, '|');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    size_t m = n;
    while (m > 0 && p[m - 1] == ' ')
      m--;
    if (m > 0 && match_one(p, m, text)) return 1;
    if (!e) return 0;
    p = e + 1;
  }
}
