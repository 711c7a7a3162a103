/* Value parsers of the SDK (include/ceb/config.h): strict, locale-free,
 * overflow-checked. Whitespace is never skipped: the loader trims values. */
#include <ceb/config.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <stdint.h>
#include <string.h>

/* Reads decimal digits at *p into *v; fails on none or on overflow. */
static int digits_u64(const char **p, uint64_t *v) {
  const char *s = *p;
  uint64_t n = 0;
  if (!isdigit((unsigned char)*s)) return CEB_EINVAL;
  while (isdigit((unsigned char)*s)) {
    if (__builtin_mul_overflow(n, 10u, &n) ||
        __builtin_add_overflow(n, (uint64_t)(*s - '0'), &n))
      return CEB_EINVAL;
    s++;
  }
  *p = s;
  *v = n;
  return CEB_OK;
}

int ceb_parse_int(const char *text, int64_t *value) {
  if (!text || !value) return CEB_EINVAL;
  const char *p = text;
  int neg = 0;
  if (*p == '-') {
    neg = 1;
    p++;
  }
  uint64_t u;
  if (digits_u64(&p, &u) != CEB_OK || *p != '\0') return CEB_EINVAL;
  if (neg) {
    if (u > (uint64_t)INT64_MAX + 1) return CEB_EINVAL;
    *value = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
  } else {
    if (u > (uint64_t)INT64_MAX) return CEB_EINVAL;
    *value = (int64_t)u;
  }
  return CEB_OK;
}

/* Units of a duration, largest first; each may appear once, in this order,
 * so "1h30m" is accepted and "30m1h" or "5m5m" (likely typos) are not. */
static const struct {
  const char *name;
  int64_t ms;
} duration_units[] = {
    {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};

int ceb_parse_duration_ms(const char *text, int64_t *ms) {
  if (!text || !ms || !*text) return CEB_EINVAL;
  if (strcmp(text, "0") == 0) { /* zero needs no unit */
    *ms = 0;
    return CEB_OK;
  }
  const char *p = text;
  size_t next_unit = 0;
  int64_t total = 0;
  while (*p) {
    uint64_t n;
    if (digits_u64(&p, &n) != CEB_OK) return CEB_EINVAL;
    size_t ulen = 0;
    while (isalpha((unsigned char)p[ulen]))
      ulen++;
    size_t u = next_unit;
    size_t nunits = sizeof duration_units / sizeof duration_units[0];
    while (u < nunits && (strlen(duration_units[u].name) != ulen ||
                          strncmp(duration_units[u].name, p, ulen) != 0))
      u++;
    if (ulen == 0 || u == nunits) return CEB_EINVAL;
    int64_t part;
    if (n > (uint64_t)INT64_MAX ||
        __builtin_mul_overflow((int64_t)n, duration_units[u].ms, &part) ||
        __builtin_add_overflow(total, part, &total))
      return CEB_EINVAL;
    next_unit = u + 1;
    p += ulen;
  }
  *ms = total;
  return CEB_OK;
}

static const struct {
  const char *name;
  uint64_t mult;
} size_units[] = {
    {"", 1},
    {"B", 1},
    {"kB", 1000},
    {"KB", 1000},
    {"MB", 1000 * 1000},
    {"GB", 1000 * 1000 * 1000},
    {"TB", (uint64_t)1000 * 1000 * 1000 * 1000},
    {"KiB", (uint64_t)1 << 10},
    {"MiB", (uint64_t)1 << 20},
    {"GiB", (uint64_t)1 << 30},
    {"TiB", (uint64_t)1 << 40},
};

int ceb_parse_size(const char *text, uint64_t *bytes) {
  if (!text || !bytes) return CEB_EINVAL;
  const char *p = text;
  uint64_t n;
  if (digits_u64(&p, &n) != CEB_OK) return CEB_EINVAL;
  for (size_t i = 0; i < sizeof size_units / sizeof size_units[0]; i++) {
    if (strcmp(p, size_units[i].name) == 0) {
      uint64_t r;
      if (__builtin_mul_overflow(n, size_units[i].mult, &r)) return CEB_EINVAL;
      *bytes = r;
      return CEB_OK;
    }
  }
  return CEB_EINVAL;
}

static const struct {
  const char *name;
  double seconds;
} rate_units[] = {{"s", 1},     {"sec", 1},     {"second", 1}, {"m", 60},
                  {"min", 60},  {"minute", 60}, {"h", 3600},   {"hour", 3600},
                  {"d", 86400}, {"day", 86400}};

int ceb_parse_rate(const char *text, double *per_second) {
  if (!text || !per_second) return CEB_EINVAL;
  const char *p = text;
  uint64_t whole, frac = 0;
  double scale = 1;
  if (digits_u64(&p, &whole) != CEB_OK) return CEB_EINVAL;
  if (*p == '.') {
    p++;
    const char *f = p;
    if (digits_u64(&p, &frac) != CEB_OK || p - f > 9) return CEB_EINVAL;
    for (const char *q = f; q < p; q++)
      scale *= 10;
  }
  if (*p++ != '/') return CEB_EINVAL;
  for (size_t i = 0; i < sizeof rate_units / sizeof rate_units[0]; i++) {
    if (strcmp(p, rate_units[i].name) == 0) {
      *per_second =
          ((double)whole + (double)frac / scale) / rate_units[i].seconds;
      return CEB_OK;
    }
  }
  return CEB_EINVAL;
}

int ceb_parse_bool(const char *text, int *value) {
  static const char *const yes[] = {"true", "yes", "on", "1"};
  static const char *const no[] = {"false", "no", "off", "0"};
  if (!text || !value) return CEB_EINVAL;
  for (size_t i = 0; i < 4; i++) {
    if (strcasecmp(text, yes[i]) == 0) {
      *value = 1;
      return CEB_OK;
    }
    if (strcasecmp(text, no[i]) == 0) {
      *value = 0;
      return CEB_OK;
    }
  }
  return CEB_EINVAL;
}

/* A DNS name or IPv4 literal: labels of letters, digits, '-' and '_'
 * separated by single dots. */
static int host_name_ok(const char *h, size_t len) {
  if (len == 0 || len > 253) return 0;
  size_t label = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)h[i];
    if (c == '.') {
      if (label == 0) return 0;
      label = 0;
    } else if (isalnum(c) || c == '-' || c == '_') {
      if (++label > 63) return 0;
    } else {
      return 0;
    }
  }
  return label > 0;
}

int ceb_parse_address(const char *text, char *host, size_t host_size,
                      int *port) {
  if (!text || !port || (!host && host_size)) return CEB_EINVAL;
  const char *colon, *h = text;
  size_t hlen;
  if (*text == '[') {
    const char *close = strchr(text, ']');
    if (!close || close[1] != ':') return CEB_EINVAL;
    h = text + 1;
    hlen = (size_t)(close - h);
    colon = close + 1;
    char v6[INET6_ADDRSTRLEN + 1];
    struct in6_addr a;
    if (hlen == 0 || hlen >= sizeof v6) return CEB_EINVAL;
    memcpy(v6, h, hlen);
    v6[hlen] = '\0';
    if (inet_pton(AF_INET6, v6, &a) != 1) return CEB_EINVAL;
  } else {
    colon = strrchr(text, ':');
    if (!colon) return CEB_EINVAL;
    hlen = (size_t)(colon - text);
    if (!host_name_ok(text, hlen)) return CEB_EINVAL;
  }
  const char *p = colon + 1;
  uint64_t n;
  if (digits_u64(&p, &n) != CEB_OK || *p != '\0' || n > 65535 ||
      p - (colon + 1) > 5)
    return CEB_EINVAL;
  if (host) {
    if (hlen >= host_size) return CEB_EINVAL;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
  }
  *port = (int)n;
  return CEB_OK;
}
