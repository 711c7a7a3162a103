/* JSON value semantics of JSON Schema: equality (1 == 1.0, objects
 * unordered), integers (1.0 is one), number comparison without losing
 * precision on large integers, multipleOf, and code point length. */
#include "schema/ceb_schema_int.h"

#include <math.h>
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
