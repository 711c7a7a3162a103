/* Raw HTTP request dump parser (see ceb_http_dump.h). */
#include "cli/http_dump.h"

#include <stdio.h>
#include <string.h>

static int is_tchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9'))
    return 1;
  return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int fail(ceb_error *err, ceb_headers *h, const char *code, int line,
                const char *what) {
  ceb_headers_clear(h);
  if (err) {
    err->status = CEB_EINVAL;
    err->index = -1;
    snprintf(err->code, sizeof err->code, "%s", code);
    snprintf(err->message, sizeof err->message, "line %d: %s", line, what);
  }
  return CEB_EINVAL;
}

/* "METHOD SP target SP HTTP/" */
static int is_request_line(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && s[i] >= 'A' && s[i] <= 'Z')
    i++;
  if (i == 0 || i >= n || s[i] != ' ') return 0;
  const char *sp = memchr(s + i + 1, ' ', n - i - 1);
  return sp && (size_t)(s + n - sp) > 5 && memcmp(sp + 1, "HTTP/", 5) == 0;
}

int ceb_http_dump_parse(const char *buf, size_t len, ceb_headers *headers,
                        size_t *body_offset, ceb_error *err) {
  ceb_error_clear(err);
  if ((!buf && len) || !headers || !body_offset) return CEB_EINVAL;
  size_t pos = 0;
  /* a UTF-8 byte order mark, as editors sometimes write */
  if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) pos = 3;
  for (int line = 1; pos < len; line++) {
    const char *s = buf + pos;
    const char *nl = memchr(s, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - s) : len - pos;
    size_t next = pos + n + (nl ? 1 : 0);
    if (n && s[n - 1] == '\r') n--;
    if (n == 0) { /* blank line: the body follows */
      *body_offset = next;
      return CEB_OK;
    }
    if (line == 1 && is_request_line(s, n)) {
      pos = next;
      continue;
    }
    if (s[0] == ' ' || s[0] == '\t')
      return fail(err, headers, "http.dump.folding", line,
                  "obsolete header line folding is not supported");
    size_t k = 0;
    while (k < n && is_tchar((unsigned char)s[k]))
      k++;
    if (k == 0 || k >= n || s[k] != ':')
      return fail(err, headers, "http.dump.header", line,
                  "expected 'Name: value'");
    char name[256];
    if (k >= sizeof name)
      return fail(err, headers, "http.dump.header", line,
                  "header name too long");
    memcpy(name, s, k);
    name[k] = '\0';
    size_t vs = k + 1, ve = n;
    while (vs < ve && (s[vs] == ' ' || s[vs] == '\t'))
      vs++;
    while (ve > vs && (s[ve - 1] == ' ' || s[ve - 1] == '\t'))
      ve--;
    if (memchr(s + vs, '\0', ve - vs))
      return fail(err, headers, "http.dump.header", line,
                  "NUL byte in a header value");
    if (ceb_headers_add(headers, name, s + vs, ve - vs) != CEB_OK)
      return fail(err, headers, "http.dump.nomem", line, "out of memory");
    pos = next;
  }
  *body_offset = len; /* headers only */
  return CEB_OK;
}
