/* "format" checks: date-time, date, time, duration (RFC 3339), uri,
 * uri-reference (RFC 3986), iri, iri-reference (RFC 3987, as URIs that admit
 * non-ASCII), uri-template (RFC 6570), uuid (RFC 4122 layout), email
 * (RFC 5321 mailbox), hostname (RFC 1123), ipv4, ipv6, json-pointer
 * (RFC 6901), relative-json-pointer, regex (ECMA-262). Unknown formats pass;
 * idn-hostname and idn-email are unknown here (they need IDNA tables). */
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
    {"iri", CEBS_FMT_IRI},
    {"iri-reference", CEBS_FMT_IRI_REFERENCE},
    {"hostname", CEBS_FMT_HOSTNAME},
    {"json-pointer", CEBS_FMT_JSON_POINTER},
    {"relative-json-pointer", CEBS_FMT_RELATIVE_JSON_POINTER},
    {"duration", CEBS_FMT_DURATION},
    {"idn-email", CEBS_FMT_IDN_EMAIL},
    {"uri-template", CEBS_FMT_URI_TEMPLATE},
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
static bool uri_chars(const char *s, size_t n, const char *extra, bool iri) {
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)s[i];
    if (c == '%') {
      if (i + 2 >= n) return false;
      if (!isxdigit((unsigned char)s[i + 1]) ||
          !isxdigit((unsigned char)s[i + 2]))
        return false;
      i += 2;
    } else if (!((iri && c >= 128) ||
                 (c < 128 && (is_unreserved(c) || is_subdelim(c) ||
                              (c && strchr(extra, c)))))) {
      return false;
    }
  }
  return true;
}

static bool check_authority(const char *s, size_t n, bool iri) {
  const char *at = memrchr(s, '@', n);
  if (at) {
    if (!uri_chars(s, (size_t)(at - s), ":", iri)) return false;
    n -= (size_t)(at - s) + 1;
    s = at + 1;
  }
  if (n > 0 && s[0] == '[') {
    const char *close = memchr(s, ']', n);
    if (!close) return false;
    size_t hl = (size_t)(close - s) - 1;
    if (!(hl > 0 && (s[1] == 'v' || s[1] == 'V' ? uri_chars(s + 1, hl, ":", iri)
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
    if (!uri_chars(s, hl, "", iri)) return false;
    s += hl;
    n -= hl;
    if (n == 0) return true;
  }
  for (size_t i = 1; i < n; i++) /* port */
    if (!isdigit((unsigned char)s[i])) return false;
  return true;
}

static bool check_uri_any(const char *s, size_t n, bool need_scheme, bool iri) {
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
    if (!uri_chars(hash + 1, n - (size_t)(hash - s) - 1, ":@/?", iri))
      return false;
    end = (size_t)(hash - s);
  }
  const char *q = memchr(s + i, '?', end - i);
  if (q) {
    if (!uri_chars(q + 1, end - (size_t)(q - s) - 1, ":@/?", iri)) return false;
    end = (size_t)(q - s);
  }
  const char *p = s + i;
  size_t pl = end - i;
  if (pl >= 2 && p[0] == '/' && p[1] == '/') {
    size_t al = 2;
    while (al < pl && p[al] != '/')
      al++;
    if (!check_authority(p + 2, al - 2, iri)) return false;
    p += al;
    pl -= al;
  } else if (!has_scheme) {
    /* relative-path: the first segment may not contain ':' */
    size_t seg = 0;
    while (seg < pl && p[seg] != '/')
      seg++;
    if (memchr(p, ':', seg)) return false;
  }
  return uri_chars(p, pl, ":@/", iri);
}

static bool check_domain(const char *s, size_t n, bool idn) {
  if (n == 0 || n > 253) return false;
  size_t lab = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || s[i] == '.') {
      if (lab == 0 || lab > 63 || s[i - 1] == '-' || s[i - lab] == '-')
        return false;
      lab = 0;
    } else if (isalnum((unsigned char)s[i]) || s[i] == '-' ||
               (idn && (unsigned char)s[i] >= 128)) {
      lab++;
    } else {
      return false;
    }
  }
  return true;
}

static bool check_email(const char *s, size_t n, bool idn) {
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
      } else if (c == '"' || c < 32 || c == 127 || (c > 127 && !idn)) {
        return false;
      }
    }
  } else {
    if (s[0] == '.' || s[ll - 1] == '.') return false;
    for (size_t i = 0; i < ll; i++) {
      unsigned char c = (unsigned char)s[i];
      if (c == '.' && s[i + 1] == '.') return false;
      if (!(isalnum(c) || (idn && c >= 128) ||
            (c && strchr("!#$%&'*+-/=?^_`{|}~.", c))))
        return false;
    }
  }
  if (dl >= 2 && d[0] == '[' && d[dl - 1] == ']') {
    if (dl > 7 && strncmp(d + 1, "IPv6:", 5) == 0)
      return check_ipv6(d + 6, dl - 7);
    return check_ipv4(d + 1, dl - 2);
  }
  return check_domain(d, dl, idn);
}

/* RFC 1123 host name: labels of letters, digits and inner hyphens, at most
 * 63 octets each and 253 in all; "--" in positions 3-4 only for "xn--". */
static bool check_hostname(const char *s, size_t n) {
  if (!check_domain(s, n, false)) return false;
  for (size_t st = 0; st < n;) {
    size_t e = st;
    while (e < n && s[e] != '.')
      e++;
    if (e - st >= 4 && s[st + 2] == '-' && s[st + 3] == '-' &&
        strncasecmp(s + st, "xn", 2) != 0)
      return false;
    st = e + 1;
  }
  return true;
}

/* RFC 6901: ("/" *(unescaped / "~0" / "~1"))* */
static bool check_json_pointer(const char *s, size_t n) {
  if (n > 0 && s[0] != '/') return false;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '~' && (i + 1 >= n || (s[i + 1] != '0' && s[i + 1] != '1')))
      return false;
  return true;
}

/* draft-handrews-relative-json-pointer: int ("#" / json-pointer) */
static bool check_relative_json_pointer(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9')
    i++;
  if (i == 0 || (i > 1 && s[0] == '0')) return false;
  if (i < n && (s[i] == '+' || s[i] == '-')) { /* index manipulation */
    size_t st = ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
    if (i == st || (i - st > 1 && s[st] == '0')) return false;
  }
  if (i < n && s[i] == '#') return i + 1 == n;
  return check_json_pointer(s + i, n - i);
}

/* RFC 3339 appendix A (ISO 8601) durations: PnYnMnDTnHnMnS in order, at
 * least one element, T followed by a time element, or PnW alone. */
static bool check_duration(const char *s, size_t n) {
  if (n < 3 || s[0] != 'P') return false;
  static const char date_units[] = "YMD", time_units[] = "HMS";
  const char *units = date_units;
  size_t i = 1, next = 0, elems = 0;
  bool in_time = false, saw_time_elem = false;
  while (i < n) {
    if (s[i] == 'T') {
      if (in_time) return false;
      in_time = true;
      units = time_units;
      next = 0;
      i++;
      continue;
    }
    size_t st = i;
    while (i < n && s[i] >= '0' && s[i] <= '9')
      i++;
    if (i == st || i >= n) return false;
    char u = s[i++];
    if (u == 'W') {
      return !in_time && elems == 0 && i == n;
    }
    const char *pos = strchr(units + next, u);
    /* after the first element of a part, units follow without gaps:
     * P1Y2D and PT1H2S are not RFC 3339 durations */
    bool first = in_time ? !saw_time_elem : elems == 0;
    if (!pos || !u || (!first && pos != units + next)) return false;
    next = (size_t)(pos - units) + 1;
    elems++;
    if (in_time) saw_time_elem = true;
  }
  return elems > 0 && (!in_time || saw_time_elem);
}

/* RFC 6570 level 4 template syntax. */
static bool check_uri_template(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '}') return false;
    if (c != '{') {
      if (c <= ' ' || c == 0x7F || strchr("\"<>\\^`|", c)) return false;
      continue;
    }
    size_t st = ++i;
    if (i < n && strchr("+#./;?&=,!@|", s[i])) i++;
    bool need_var = true;
    while (i < n && s[i] != '}') {
      size_t vs = i;
      while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' ||
                       s[i] == '.' || s[i] == '%')) {
        /* varname = varchar *( ["."] varchar ) */
        if (s[i] == '.' && (i == vs || s[i - 1] == '.')) return false;
        i++;
      }
      if (i == vs || s[i - 1] == '.') return false;
      need_var = false;
      if (i < n && s[i] == '*') {
        i++;
      } else if (i < n && s[i] == ':') {
        size_t ds = ++i;
        while (i < n && isdigit((unsigned char)s[i]))
          i++;
        if (i == ds || i - ds > 4 || s[ds] == '0') return false;
      }
      if (i < n && s[i] == ',') {
        i++;
        need_var = true;
      }
    }
    if (i >= n || need_var || i == st) return false;
  }
  return true;
}

const char *cebs_format_name(cebs_format f) {
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (formats[i].f == f) return formats[i].name;
  return "unknown";
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
    return check_uri_any(s, n, true, false);
  case CEBS_FMT_URI_REFERENCE:
    return check_uri_any(s, n, false, false);
  case CEBS_FMT_IRI:
    return check_uri_any(s, n, true, true);
  case CEBS_FMT_IRI_REFERENCE:
    return check_uri_any(s, n, false, true);
  case CEBS_FMT_HOSTNAME:
    return check_hostname(s, n);
  case CEBS_FMT_JSON_POINTER:
    return check_json_pointer(s, n);
  case CEBS_FMT_RELATIVE_JSON_POINTER:
    return check_relative_json_pointer(s, n);
  case CEBS_FMT_DURATION:
    return check_duration(s, n);
  case CEBS_FMT_URI_TEMPLATE:
    return check_uri_template(s, n);
  case CEBS_FMT_UUID:
    return check_uuid(s, n);
  case CEBS_FMT_EMAIL:
    return check_email(s, n, false);
  case CEBS_FMT_IDN_EMAIL:
    return check_email(s, n, true);
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
