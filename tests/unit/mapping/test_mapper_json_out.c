/* The mapping worker's JSON writer (core/mapping/mapper_json_out.c) against
 * libjq's own printer: for every value, cebm_json_write writes exactly the
 * bytes jv_dump_string(v, 0) does. Values: fixed texts parsed by libjq
 * (escapes, UTF-8, astral characters, nesting, number forms), numbers at
 * the edges of the writer's own integer path (1e15, -0, NaN, infinities,
 * fractions), objects whose keys were deleted and set again (iteration
 * order), and 20 000 random values from a fixed seed (random bytes as
 * strings, random doubles by bits, nesting to depth 4). */
#include "ceb_test.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jv.h>

#include "mapping/mapper_json_out.h"

static int g_mismatches;

/* Compares both writers on v (consumed); label names the case. */
static void same(jv v, const char *label) {
  jv want = jv_dump_string(jv_copy(v), 0);
  cebm_text t = {0};
  int rc = cebm_json_write(&t, v);
  const char *w = jv_string_value(want);
  size_t wl = (size_t)jv_string_length_bytes(jv_copy(want));
  int ok = rc == 0 && t.len == wl && memcmp(t.p, w, wl) == 0;
  if (!ok && g_mismatches++ < 5)
    CHECK_MSG(0, "%s: want %.*s got %.*s", label, (int)wl, w, (int)t.len,
              t.p ? t.p : "");
  jv_free(want);
  free(t.p);
}

static void same_text(const char *json) {
  jv v = jv_parse(json);
  CHECK_MSG(jv_is_valid(v), "libjq refused %s", json);
  if (jv_is_valid(v))
    same(v, json);
  else
    jv_free(v);
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) { /* xorshift64* */
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 0x2545f4914f6cdd1dull;
}

static jv random_string(void) {
  char buf[48];
  size_t n = next() % sizeof buf;
  int ascii = next() % 2;
  for (size_t i = 0; i < n; i++) /* invalid UTF-8 becomes U+FFFD in jq */
    buf[i] = ascii ? (char)(next() % 128) : (char)(next() % 256);
  return jv_string_sized(buf, (int)n);
}

static double random_number(void) {
  switch (next() % 6) {
  case 0:
    return (double)(int64_t)(next() % 2000001) - 1000000;
  case 1:
    return (double)(int64_t)next() / (double)(1 + next() % 1000);
  case 2: { /* any double, by its bits (NaN and infinities included) */
    uint64_t b = next();
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
  }
  case 3:
    return ldexp((double)(next() % 1000), (int)(next() % 120) - 60);
  case 4:
    return (double)(int64_t)(next() >> (next() % 64));
  default:
    return (next() % 2 ? 1 : -1) * 1e15 + (double)(next() % 5) - 2;
  }
}

static jv random_value(int depth) {
  unsigned k = (unsigned)(next() % (depth < 4 ? 8 : 5));
  switch (k) {
  case 0:
    return jv_null();
  case 1:
    return next() % 2 ? jv_true() : jv_false();
  case 2:
    return jv_number(random_number());
  case 3:
  case 4:
    return random_string();
  case 5:
  case 6: {
    jv o = jv_object();
    size_t n = next() % 6;
    for (size_t i = 0; i < n; i++)
      o = jv_object_set(o, random_string(), random_value(depth + 1));
    if (n && next() % 3 == 0) /* a key deleted: the order of the rest */
      o = jv_object_delete(o, jv_string(""));
    return o;
  }
  default: {
    jv a = jv_array();
    size_t n = next() % 6;
    for (size_t i = 0; i < n; i++)
      a = jv_array_append(a, random_value(depth + 1));
    return a;
  }
  }
}

int main(void) {
  static const char *const texts[] = {
      "null",
      "true",
      "false",
      "0",
      "-0",
      "1",
      "-1",
      "42",
      "3.0",
      "0.1",
      "1.5e300",
      "-2.25e-7",
      "123456789012345678",
      "999999999999999",
      "1000000000000000",
      "1e16",
      "1e17",
      "\"\"",
      "\"plain\"",
      "\"q\\\"b\\\\s\\/\"",
      "\"\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\"",
      "\"\\u00e9 \\u2028 \\ud83d\\ude00 caf\xc3\xa9\"",
      "[]",
      "{}",
      "[1,[2,[3,[]]],{}]",
      "{\"b\":1,\"a\":{\"c\":[true,null]},\"\":\"\"}",
      "{\"specversion\":\"1.0\",\"id\":\"x-1\",\"data\":{\"n\":[1,2.5,-3]}}",
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    same_text(texts[i]);

  static const double numbers[] = {
      0.0, -0.0, 1e15 - 1, 1e15,    -1e15,    1e15 + 1, 1e16,   -1e16 + 2,
      0.5, 1e-5, 1e-4,     DBL_MAX, -DBL_MAX, DBL_MIN,  4e-320, 123.456};
  for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++)
    same(jv_number(numbers[i]), "number");
  same(jv_number(NAN), "NaN");
  same(jv_number(INFINITY), "infinity");
  same(jv_number(-INFINITY), "-infinity");

  /* every byte below 0x80 in one string */
  char all[128];
  for (int c = 1; c < 128; c++)
    all[c - 1] = (char)c;
  same(jv_string_sized(all, 127), "ascii");

  /* iteration order after deletes and re-sets */
  jv o = jv_object();
  for (int i = 0; i < 40; i++) {
    char k[16];
    snprintf(k, sizeof k, "k%d", i);
    o = jv_object_set(o, jv_string(k), jv_number(i));
  }
  for (int i = 0; i < 40; i += 3) {
    char k[16];
    snprintf(k, sizeof k, "k%d", i);
    o = jv_object_delete(o, jv_string(k));
  }
  o = jv_object_set(o, jv_string("k3"), jv_string("again"));
  same(o, "deleted keys");

  for (int i = 0; i < 20000; i++)
    same(random_value(0), "random");
  CHECK_INT(g_mismatches, 0);
  return ceb_test_done("unit_mapper_json_out");
}
