/* "format" checks: date-time, date, time (RFC 3339), uri, uri-reference
 * (RFC 3986), uuid (RFC 4122 layout), email (RFC 5321 mailbox), ipv4, ipv6,
 * regex. Strings are ASCII-only for every format here. */
#include "schema/ceb_schema_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <string.h>

static const struct {
  const char *name;
  cebs_format f;
} formats[] = {
    {"date-time", CEBS_FMT_DATE_TIME},
    {"date", CEBS_FMT_DATE},
    {"time", CEBS_FMT_TIME},
    {"uri", CEBS_FMT_URI},
    {"uri-reference", CEBS_FMT_URI_REFERENCE},
    {"uuid", CEBS_FMT_UUID},
    {"email", CEBS_FMT_EMAIL},
    {"ipv4", CEBS_FMT_IPV4},
    {"ipv6", CEBS_FMT_IPV6},
    {"regex", CEBS_FMT_REGEX},
};

cebs_format cebs_format_lookup(const char *name) {
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (strcmp(formats[i].name, name) == 0) return formats[i].f;
  return CEBS_FMT_UNKNOWN;
}

static bool digits(const char *s, size_t n, int *val) {
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *val = v;
  return true;
}

static bool is_leap(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* full-date = YYYY-MM-DD, exactly 10 characters */
static bool check_date(const char *s, size_t n) {
  int y, m, d;
  if (n != 10 || s[4] != '-' || s[7] != '-' || !digits(s, 4, &y) ||
      !digits(s + 5, 2, &m) || !digits(s + 8, 2, &d))
    return false;
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || d < 1) return false;
  int max = mdays[m - 1] + (m == 2 && is_leap(y));
  return d <= max;
}

/* full-time = HH:MM:SS[.frac](Z|+HH:MM|-HH:MM); a leap second (:60) only
 * where the time is 23:59 in UTC. */
static bool check_time(const char *s, size_t n) {
  int h, mi, sec;
  if (n < 9 || s[2] != ':' || s[5] != ':' || !digits(s, 2, &h) ||
      !digits(s + 3, 2, &mi) || !digits(s + 6, 2, &sec))
    return false;
  size_t i = 8;
  if (i < n && s[i] == '.') {
    size_t st = ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
    if (i == st) return false;
  }
  if (i >= n) return false;
  int oh = 0, om = 0, sign = 0;
  if (s[i] == 'Z' || s[i] == 'z') {
    if (i + 1 != n) return false;
  } else if (s[i] == '+' || s[i] == '-') {
    sign = s[i] == '+' ? 1 : -1;
    if (n - i != 6 || s[i + 3] != ':' || !digits(s + i + 1, 2, &oh) ||
        !digits(s + i + 4, 2, &om) || oh > 23 || om > 59)
      return false;
  } else {
    return false;
  }
  if (h > 23 || mi > 59 || sec > 60) return false;
  if (sec == 60) {
    int utc = (h * 60 + mi - sign * (oh * 60 + om)) % 1440;
    if (utc < 0) utc += 1440;
    if (utc != 23 * 60 + 59) return false;
  }
  return true;
}

static bool check_date_time(const char *s, size_t n) {
  if (n < 11 || (s[10] != 'T' && s[10] != 't')) return false;
  return check_date(s, 10) && check_time(s + 11, n - 11);
}

static bool check_uuid(const char *s, size_t n) {
  if (n != 36) return false;
  for (size_t i = 0; i < n; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (s[i] != '-') return false;
    } else if (!isxdigit((unsigned char)s[i])) {
      return false;
    }
  }
  return true;
}

static bool check_ipv4(const char *s, size_t n) {
  int parts = 0;
  size_t i = 0;
  while (parts < 4) {
    size_t st = i;
    int v = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9' && i - st < 3)
      v = v * 10 + (s[i++] - '0');
    if (i == st || v > 255 || (i - st > 1 && s[st] == '0')) return false;
    parts++;
    if (parts < 4) {
      if (i >= n || s[i] != '.') return false;
      i++;
    }
  }
  return i == n;
}

static bool check_ipv6(const char *s, size_t n) {
  char buf[64];
  unsigned char out[16];
  if (n == 0 || n >= sizeof buf || memchr(s, '%', n)) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  return inet_pton(AF_INET6, buf, out) == 1;
}

/* ---- URI (RFC 3986) ---- */

static bool is_unreserved(int c) {
  return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}
static bool is_subdelim(int c) {
  return c && strchr("!$&'()*+,;=", c) != NULL;
}

/* Checks s[0..n) against unreserved / pct-encoded / sub-delims / extra. */
static bool uri_chars(const char *s, size_t n, const char *extra) {
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)s[i];
    if (c == '%') {
      if (i + 2 >= n) return false;
      if (!isxdigit((unsigned char)s[i + 1]) ||
          !isxdigit((unsigned char)s[i + 2]))
        return false;
      i += 2;
    } else if (!(c < 128 && (is_unreserved(c) || is_subdelim(c) ||
                             (c && strchr(extra, c))))) {
      return false;
    }
  }
  return true;
}

static bool check_authority(const char *s, size_t n) {
  const char *at = memrchr(s, '@', n);
  if (at) {
    if (!uri_chars(s, (size_t)(at - s), ":")) return false;
    n -= (size_t)(at - s) + 1;
    s = at + 1;
  }
  if (n > 0 && s[0] == '[') {
    const char *close = memchr(s, ']', n);
    if (!close) return false;
    size_t hl = (size_t)(close - s) - 1;
    if (!(hl > 0 && (s[1] == 'v' || s[1] == 'V' ? uri_chars(s + 1, hl, ":")
                                                : check_ipv6(s + 1, hl))))
      return false;
    size_t rest = n - (size_t)(close - s) - 1;
    s = close + 1;
    n = rest;
    if (n == 0) return true;
    if (s[0] != ':') return false;
  } else {
    const char *colon = memchr(s, ':', n);
    size_t hl = colon ? (size_t)(colon - s) : n;
    if (!uri_chars(s, hl, "")) return false;
    s += hl;
    n -= hl;
    if (n == 0) return true;
  }
  for (size_t i = 1; i < n; i++) /* port */
    if (!isdigit((unsigned char)s[i])) return false;
  return true;
}

static bool check_uri_any(const char *s, size_t n, bool need_scheme) {
  size_t i = 0;
  bool has_scheme = false;
  if (n > 0 && isalpha((unsigned char)s[0])) {
    size_t j = 1;
    while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '+' ||
                     s[j] == '-' || s[j] == '.'))
      j++;
    if (j < n && s[j] == ':') {
      has_scheme = true;
      i = j + 1;
    }
  }
  if (need_scheme && !has_scheme) return false;
  size_t end = n;
  const char *hash = memchr(s + i, '#', n - i);
  if (hash) {
    if (!uri_chars(hash + 1, n - (size_t)(hash - s) - 1, ":@/?")) return false;
    end = (size_t)(hash - s);
  }
  const char *q = memchr(s + i, '?', end - i);
  if (q) {
    if (!uri_chars(q + 1, end - (size_t)(q - s) - 1, ":@/?")) return false;
    end = (size_t)(q - s);
  }
  const char *p = s + i;
  size_t pl = end - i;
  if (pl >= 2 && p[0] == '/' && p[1] == '/') {
    size_t al = 2;
    while (al < pl && p[al] != '/')
      al++;
    if (!check_authority(p + 2, al - 2)) return false;
    p += al;
    pl -= al;
  } else if (!has_scheme) {
    /* relative-path: the first segment may not contain ':' */
    size_t seg = 0;
    while (seg < pl && p[seg] != '/')
      seg++;
    if (memchr(p, ':', seg)) return false;
  }
  return uri_chars(p, pl, ":@/");
}

static bool check_domain(const char *s, size_t n) {
  if (n == 0 || n > 253) return false;
  size_t lab = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || s[i] == '.') {
      if (lab == 0 || lab > 63 || s[i - 1] == '-' || s[i - lab] == '-')
        return false;
      lab = 0;
    } else if (isalnum((unsigned char)s[i]) || s[i] == '-') {
      lab++;
    } else {
      return false;
    }
  }
  return true;
}

static bool check_email(const char *s, size_t n) {
  const char *at = memrchr(s, '@', n);
  if (!at || at == s) return false;
  size_t ll = (size_t)(at - s), dl = n - ll - 1;
  const char *d = at + 1;
  if (s[0] == '"') {
    if (ll < 2 || s[ll - 1] != '"') return false;
    for (size_t i = 1; i + 1 < ll; i++) {
      unsigned char c = (unsigned char)s[i];
      if (c == '\\') {
        if (++i + 1 >= ll) return false;
      } else if (c == '"' || c < 32 || c >= 127) {
        return false;
      }
    }
  } else {
    if (s[0] == '.' || s[ll - 1] == '.') return false;
    for (size_t i = 0; i < ll; i++) {
      unsigned char c = (unsigned char)s[i];
      if (c == '.' && s[i + 1] == '.') return false;
      if (!(isalnum(c) || (c && strchr("!#$%&'*+-/=?^_`{|}~.", c))))
        return false;
    }
  }
  if (dl >= 2 && d[0] == '[' && d[dl - 1] == ']') {
    if (dl > 7 && strncmp(d + 1, "IPv6:", 5) == 0)
      return check_ipv6(d + 6, dl - 7);
    return check_ipv4(d + 1, dl - 2);
  }
  return check_domain(d, dl);
}

bool cebs_format_check(cebs_format f, const char *s, size_t n) {
  switch (f) {
  case CEBS_FMT_DATE_TIME:
    return check_date_time(s, n);
  case CEBS_FMT_DATE:
    return check_date(s, n);
  case CEBS_FMT_TIME:
    return check_time(s, n);
  case CEBS_FMT_URI:
    return check_uri_any(s, n, true);
  case CEBS_FMT_URI_REFERENCE:
    return check_uri_any(s, n, false);
  case CEBS_FMT_UUID:
    return check_uuid(s, n);
  case CEBS_FMT_EMAIL:
    return check_email(s, n);
  case CEBS_FMT_IPV4:
    return check_ipv4(s, n);
  case CEBS_FMT_IPV6:
    return check_ipv6(s, n);
  case CEBS_FMT_REGEX: {
    char err[8];
    if (memchr(s, '\0', n)) return false;
    cebs_regex *re = cebs_regex_compile(s, err, sizeof err);
    cebs_regex_free(re);
    return re != NULL;
  }
  default:
    return true;
  }
}
