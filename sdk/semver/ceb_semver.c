#include <ceb/semver.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A numeric identifier: digits without a leading zero (except "0"). */
static int parse_num(const char **p, long *out) {
  const char *s = *p;
  if (!isdigit((unsigned char)*s)) return -1;
  if (s[0] == '0' && isdigit((unsigned char)s[1])) return -1;
  errno = 0;
  char *end;
  long v = strtol(s, &end, 10);
  if (errno || v < 0 || end - s > 9) return -1;
  *out = v;
  *p = end;
  return 0;
}

static int valid_ident_char(char c) {
  return isalnum((unsigned char)c) || c == '-' || c == '.';
}

int ceb_semver_parse(const char *text, int partial, ceb_semver *out) {
  if (!text || !out) return -1;
  memset(out, 0, sizeof *out);
  const char *p = text;
  if (*p == 'v') p++;
  long *parts[3] = {&out->major, &out->minor, &out->patch};
  int n = 0;
  for (; n < 3; n++) {
    if (parse_num(&p, parts[n]) != 0) return -1;
    if (*p != '.') break;
    if (n == 2) return -1;
    p++;
  }
  if (n < 2 && !partial) return -1;
  if (*p == '-') {
    p++;
    size_t len = strcspn(p, "+");
    if (len == 0 || len >= sizeof out->pre) return -1;
    for (size_t i = 0; i < len; i++)
      if (!valid_ident_char(p[i]) ||
          (p[i] == '.' && (i == 0 || p[i - 1] == '.')))
        return -1;
    if (p[len - 1] == '.') return -1;
    memcpy(out->pre, p, len);
    out->pre[len] = '\0';
    p += len;
  }
  if (*p == '+') {
    p++;
    if (!*p) return -1;
    for (; *p; p++)
      if (!valid_ident_char(*p)) return -1;
  }
  return *p ? -1 : 0;
}

static int is_numeric(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (!isdigit((unsigned char)s[i])) return 0;
  return len > 0;
}

/* Pre-release precedence: identifiers compared left to right, numeric ones
 * numerically and below alphanumeric ones; a longer list wins a tie. */
static int pre_cmp(const char *a, const char *b) {
  while (*a && *b) {
    size_t la = strcspn(a, "."), lb = strcspn(b, ".");
    int na = is_numeric(a, la), nb = is_numeric(b, lb);
    int c;
    if (na && nb)
      c = la != lb ? (la < lb ? -1 : 1) : strncmp(a, b, la);
    else if (na != nb)
      c = na ? -1 : 1;
    else {
      c = strncmp(a, b, la < lb ? la : lb);
      if (c == 0 && la != lb) c = la < lb ? -1 : 1;
    }
    if (c) return c < 0 ? -1 : 1;
    a += la + (a[la] == '.');
    b += lb + (b[lb] == '.');
  }
  return *a ? 1 : *b ? -1 : 0;
}

int ceb_semver_cmp(const ceb_semver *a, const ceb_semver *b) {
  if (a->major != b->major) return a->major < b->major ? -1 : 1;
  if (a->minor != b->minor) return a->minor < b->minor ? -1 : 1;
  if (a->patch != b->patch) return a->patch < b->patch ? -1 : 1;
  if (!a->pre[0] || !b->pre[0]) /* a release is above its pre-releases */
    return a->pre[0] ? -1 : b->pre[0] ? 1 : 0;
  return pre_cmp(a->pre, b->pre);
}

int ceb_semver_cmp_text(const char *a, const char *b) {
  ceb_semver sa, sb;
  int pa = ceb_semver_parse(a, 0, &sa) == 0;
  int pb = ceb_semver_parse(b, 0, &sb) == 0;
  if (pa && pb) return ceb_semver_cmp(&sa, &sb);
  if (pa != pb) return pa ? 1 : -1;
  int c = strcmp(a, b);
  return c < 0 ? -1 : c > 0;
}

int ceb_semver_pin_parse(const char *text, ceb_semver_pin *out, char *err,
                         size_t errlen) {
  memset(out, 0, sizeof *out);
  const char *at = text ? strrchr(text, '@') : NULL;
  if (!at || at == text || !at[1]) {
    snprintf(err, errlen, "contract pin '%s' is not NAME@VERSION",
             text ? text : "");
    return -1;
  }
  if ((size_t)(at - text) >= sizeof out->name ||
      strlen(at + 1) >= sizeof out->spec) {
    snprintf(err, errlen, "contract pin '%s' is too long", text);
    return -1;
  }
  memcpy(out->name, text, (size_t)(at - text));
  snprintf(out->spec, sizeof out->spec, "%s", at + 1);
  const char *spec = out->spec;
  if (spec[0] != '^' && spec[0] != '~') {
    out->kind = CEB_SEMVER_PIN_EXACT;
    return 0;
  }
  out->kind = spec[0] == '^' ? CEB_SEMVER_PIN_CARET : CEB_SEMVER_PIN_TILDE;
  if (ceb_semver_parse(spec + 1, 1, &out->base) != 0 || out->base.pre[0] ||
      spec[1] == 'v') {
    snprintf(err, errlen,
             "contract pin '%s': '%s' is not a range such as ^1, ^1.2 or "
             "~1.2",
             text, spec);
    return -1;
  }
  out->parts = 1;
  for (const char *p = spec + 1; *p; p++)
    out->parts += *p == '.';
  return 0;
}

int ceb_semver_pin_matches(const ceb_semver_pin *pin, const char *version) {
  if (pin->kind == CEB_SEMVER_PIN_EXACT) return strcmp(pin->spec, version) == 0;
  ceb_semver v;
  if (ceb_semver_parse(version, 0, &v) != 0 || v.pre[0]) return 0;
  if (ceb_semver_cmp(&v, &pin->base) < 0 || v.major != pin->base.major)
    return 0;
  if (pin->kind == CEB_SEMVER_PIN_CARET) {
    /* ^0.2 and ^0.2.3 keep the minor; ^0 keeps only the major. */
    if (pin->base.major == 0 && pin->parts >= 2 && v.minor != pin->base.minor)
      return 0;
    return 1;
  }
  /* ~1 is the whole major; ~1.2 and ~1.2.3 keep the minor. */
  return pin->parts == 1 || v.minor == pin->base.minor;
}

long ceb_semver_pin_resolve(const ceb_semver_pin *pin,
                            const char *const *versions, size_t n) {
  long best = -1;
  for (size_t i = 0; i < n; i++) {
    if (!versions[i] || !ceb_semver_pin_matches(pin, versions[i])) continue;
    if (pin->kind == CEB_SEMVER_PIN_EXACT) return (long)i;
    if (best < 0 || ceb_semver_cmp_text(versions[i], versions[best]) > 0)
      best = (long)i;
  }
  return best;
}
