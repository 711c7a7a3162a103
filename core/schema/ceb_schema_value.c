/* JSON value semantics of JSON Schema: equality (1 == 1.0, objects
 * unordered), integers (1.0 is one), number comparison without losing
 * precision on large integers, multipleOf, and code point length. */
#include "schema/ceb_schema_int.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cebs_is_integer(json_t *v) {
  if (json_is_integer(v)) return true;
  if (json_is_real(v)) {
    double d = json_real_value(v);
    return isfinite(d) && d == floor(d);
  }
  return false;
}

static bool num_equal(json_t *a, json_t *b) {
  if (json_is_integer(a) && json_is_integer(b))
    return json_integer_value(a) == json_integer_value(b);
  cebs_num n;
  cebs_num_from_json(&n, b);
  return cebs_num_cmp(a, &n) == 0;
}

bool cebs_json_equal(json_t *a, json_t *b) {
  if (json_is_number(a) && json_is_number(b)) return num_equal(a, b);
  if (json_typeof(a) != json_typeof(b)) return false;
  switch (json_typeof(a)) {
  case JSON_OBJECT: {
    if (json_object_size(a) != json_object_size(b)) return false;
    const char *k;
    json_t *va;
    json_object_foreach(a, k, va) {
      json_t *vb = json_object_get(b, k);
      if (!vb || !cebs_json_equal(va, vb)) return false;
    }
    return true;
  }
  case JSON_ARRAY: {
    size_t n = json_array_size(a);
    if (n != json_array_size(b)) return false;
    for (size_t i = 0; i < n; i++)
      if (!cebs_json_equal(json_array_get(a, i), json_array_get(b, i)))
        return false;
    return true;
  }
  case JSON_STRING:
    return json_string_length(a) == json_string_length(b) &&
           memcmp(json_string_value(a), json_string_value(b),
                  json_string_length(a)) == 0;
  default: /* true, false, null: same type is equal */
    return true;
  }
}

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 33);
}

/* A hash consistent with cebs_json_equal: 1 and 1.0 hash alike, object
 * member order does not matter. */
static uint64_t json_hash(json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT: {
    uint64_t h = 0x0b;
    const char *k;
    json_t *m;
    json_object_foreach(v, k, m) {
      uint64_t kh = 1469598103934665603ULL;
      for (const char *p = k; *p; p++)
        kh = (kh ^ (unsigned char)*p) * 1099511628211ULL;
      h += mix(kh ^ mix(json_hash(m))); /* order independent */
    }
    return mix(h);
  }
  case JSON_ARRAY: {
    uint64_t h = 0x0a;
    size_t i;
    json_t *m;
    json_array_foreach(v, i, m) h = mix(h * 31 + json_hash(m));
    return h;
  }
  case JSON_STRING: {
    uint64_t h = 1469598103934665603ULL;
    const char *p = json_string_value(v);
    for (size_t i = 0; i < json_string_length(v); i++)
      h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
    return mix(h);
  }
  case JSON_INTEGER:
    return mix((uint64_t)json_integer_value(v));
  case JSON_REAL: {
    double d = json_real_value(v);
    if (cebs_is_integer(v) && d >= -9.2e18 && d <= 9.2e18)
      return mix((uint64_t)(json_int_t)d);
    if (d == 0) d = 0; /* -0.0 */
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    return mix(bits ^ 0x5151);
  }
  default:
    return mix((uint64_t)json_typeof(v) + 0x77);
  }
}

typedef struct hashed {
  uint64_t h;
  size_t i;
} hashed;

static int cmp_hashed(const void *a, const void *b) {
  const hashed *x = a, *y = b;
  if (x->h != y->h) return x->h < y->h ? -1 : 1;
  return x->i < y->i ? -1 : x->i > y->i;
}

int cebs_find_duplicate(json_t *arr, size_t *first, size_t *second) {
  size_t n = json_array_size(arr);
  if (n < 2) return 0;
  hashed *v = malloc(n * sizeof *v);
  if (!v) return -1;
  for (size_t i = 0; i < n; i++)
    v[i] = (hashed){json_hash(json_array_get(arr, i)), i};
  qsort(v, n, sizeof *v, cmp_hashed);
  int found = 0;
  /* compare within runs of equal hashes; report the earliest pair */
  for (size_t s = 0; s < n;) {
    size_t e = s + 1;
    while (e < n && v[e].h == v[s].h)
      e++;
    for (size_t a = s; a < e; a++) {
      for (size_t b = a + 1; b < e; b++) {
        if ((!found || v[b].i < *second) &&
            cebs_json_equal(json_array_get(arr, v[a].i),
                            json_array_get(arr, v[b].i))) {
          *first = v[a].i;
          *second = v[b].i;
          found = 1;
          break;
        }
      }
    }
    s = e;
  }
  free(v);
  return found;
}

size_t cebs_utf8_length(const char *s, size_t len) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++)
    if (((unsigned char)s[i] & 0xC0) != 0x80) n++;
  return n;
}

void cebs_num_from_json(cebs_num *n, json_t *v) {
  memset(n, 0, sizeof *n);
  if (!json_is_number(v)) return;
  n->set = true;
  if (json_is_integer(v)) {
    n->is_int = true;
    n->i = json_integer_value(v);
    n->d = (double)n->i;
  } else {
    n->d = json_real_value(v);
  }
}

/* Compares an integer with a double exactly (no rounding of the integer). */
static int cmp_int_double(json_int_t i, double d) {
  if (isnan(d)) return 0;
  if (d >= 9223372036854775808.0) return -1;
  if (d < -9223372036854775808.0) return 1;
  double fl = floor(d);
  json_int_t di = (json_int_t)fl;
  if (i < di) return -1;
  if (i > di) return 1;
  return fl < d ? -1 : 0;
}

int cebs_num_cmp(json_t *v, const cebs_num *n) {
  if (json_is_integer(v)) {
    json_int_t i = json_integer_value(v);
    if (n->is_int) return i < n->i ? -1 : i > n->i;
    return cmp_int_double(i, n->d);
  }
  double d = json_real_value(v);
  if (n->is_int) return -cmp_int_double(n->i, d);
  return d < n->d ? -1 : d > n->d;
}

/* A finite number as mant * 10^exp with the shortest decimal digits that
 * round-trip, so that 0.0075 / 0.0001 is decided on decimals, not on their
 * binary approximations. False when it does not fit. */
static bool to_decimal(bool is_int, json_int_t i, double d,
                       unsigned __int128 *mant, int *exp) {
  if (is_int) {
    *mant = i < 0 ? (unsigned __int128)(-(i + 1)) + 1 : (unsigned __int128)i;
    *exp = 0;
    return true;
  }
  char buf[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, fabs(d));
    if (strtod(buf, NULL) == fabs(d)) break;
  }
  unsigned __int128 m = 0;
  int e = 0, frac = 0;
  bool in_frac = false;
  const char *p = buf;
  for (; *p && *p != 'e'; p++) {
    if (*p == '.') {
      in_frac = true;
      continue;
    }
    m = m * 10 + (unsigned)(*p - '0');
    if (in_frac) frac++;
  }
  if (*p == 'e') e = atoi(p + 1);
  *mant = m;
  *exp = e - frac;
  return true;
}

/* 10^k mod m, for m < 2^64 (products stay below 2^128). */
static unsigned __int128 pow10_mod(int k, unsigned __int128 m) {
  unsigned __int128 r = 1 % m, b = 10 % m;
  for (; k > 0; k >>= 1) {
    if (k & 1) r = r * b % m;
    b = b * b % m;
  }
  return r;
}

bool cebs_num_multiple(json_t *v, const cebs_num *n) {
  if (json_is_integer(v) && n->is_int)
    return n->i == 0 ? false : json_integer_value(v) % n->i == 0;
  unsigned __int128 xm, mm;
  int xe, me;
  bool xi = json_is_integer(v);
  double xd = xi ? 0 : json_real_value(v);
  if (!isfinite(xd) || (!n->is_int && !isfinite(n->d))) return false;
  to_decimal(xi, xi ? json_integer_value(v) : 0, xd, &xm, &xe);
  to_decimal(n->is_int, n->i, n->d, &mm, &me);
  if (mm == 0) return false;
  if (xm == 0) return true;
  /* x / m = xm * 10^xe / (mm * 10^me), decided exactly */
  if (xe >= me) return xm % mm * pow10_mod(xe - me, mm) % mm == 0;
  unsigned __int128 d = mm;
  for (int k = me - xe; k > 0; k--) {
    if (d > xm) return false; /* the divisor already exceeds the dividend */
    d *= 10;
  }
  return xm % d == 0;
}
