/* RFC 3986 URI and URI-reference syntax checks (ASCII only, no IRIs). */
#include "ceb_event_internal.h"

#include <ceb/validate.h>

#include <string.h>

static int is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(char c) {
  return c >= '0' && c <= '9';
}

static int is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_unreserved(char c) {
  return is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' ||
         c == '~';
}

static int is_sub_delim(char c) {
  return c && strchr("!$&'()*+,;=", c) != NULL;
}

/* Checks [s, e) is made of unreserved, sub-delims, pct-encoded and the
 * characters in `extra`. */
static int chars_ok(const char *s, const char *e, const char *extra) {
  for (const char *p = s; p < e; p++) {
    if (*p == '%') {
      if (e - p < 3 || !is_hex(p[1]) || !is_hex(p[2])) return 0;
      p += 2;
    } else if (!is_unreserved(*p) && !is_sub_delim(*p) &&
               !(*p && strchr(extra, *p))) {
      return 0;
    }
  }
  return 1;
}

static int host_ok(const char *s, const char *e) {
  if (s < e && *s == '[') { /* IP-literal: IPv6 or IPvFuture, loosely */
    if (e[-1] != ']' || e - s < 3) return 0;
    for (const char *p = s + 1; p < e - 1; p++)
      if (!is_hex(*p) && *p != ':' && *p != '.' && *p != 'v' && *p != 'V' &&
          !is_unreserved(*p) && !is_sub_delim(*p))
        return 0;
    return 1;
  }
  return chars_ok(s, e, ""); /* reg-name, which also covers IPv4 */
}

static int authority_ok(const char *s, const char *e) {
  const char *at = NULL;
  for (const char *p = s; p < e; p++)
    if (*p == '@') at = p;
  if (at) {
    if (!chars_ok(s, at, ":")) return 0;
    s = at + 1;
  }
  /* port: digits after the last ':' outside an IP literal */
  const char *colon = NULL;
  for (const char *p = e; p > s; p--) {
    if (p[-1] == ']') break;
    if (p[-1] == ':') {
      colon = p - 1;
      break;
    }
  }
  if (colon) {
    for (const char *p = colon + 1; p < e; p++)
      if (!is_digit(*p)) return 0;
    e = colon;
  }
  return host_ok(s, e);
}

/* Validates a URI-reference; *has_scheme tells whether it is a URI. */
static int parse(const char *uri, int *has_scheme) {
  *has_scheme = 0;
  const char *end = uri + strlen(uri);
  const char *frag = strchr(uri, '#');
  if (frag) {
    if (!chars_ok(frag + 1, end, ":@/?")) return 0;
    end = frag;
  }
  const char *query = memchr(uri, '?', (size_t)(end - uri));
  if (query) {
    if (!chars_ok(query + 1, end, ":@/?")) return 0;
    end = query;
  }
  const char *p = uri;
  if (is_alpha(*p)) {
    const char *q = p + 1;
    while (q < end && (is_alpha(*q) || is_digit(*q) || *q == '+' || *q == '-' ||
                       *q == '.'))
      q++;
    if (q < end && *q == ':') {
      *has_scheme = 1;
      p = q + 1;
    }
  }
  if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
    const char *a = p + 2, *ae = a;
    while (ae < end && *ae != '/')
      ae++;
    if (!authority_ok(a, ae)) return 0;
    p = ae;
  } else if (!*has_scheme) {
    /* path-noscheme: no ':' in the first segment */
    const char *slash = memchr(p, '/', (size_t)(end - p));
    const char *seg_end = slash ? slash : end;
    if (memchr(p, ':', (size_t)(seg_end - p))) return 0;
  }
  return chars_ok(p, end, ":@/");
}

int ceb_valid_uri(const char *uri) {
  int scheme;
  return uri && parse(uri, &scheme) && scheme;
}

int ceb_valid_uri_ref(const char *uri_ref) {
  int scheme;
  return uri_ref && parse(uri_ref, &scheme);
}
