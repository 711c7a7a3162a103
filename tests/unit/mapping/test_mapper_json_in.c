/* The mapping worker's JSON reader (core/mapping/mapper_json_in.c) against
 * libjq's parser: for every text, cebm_json_read gives what jv_parse_sized
 * gives: whatever the strict reader takes is libjq's value (jv_equal and
 * the same printed text); the rest goes to libjq itself. Texts: fixed ones
 * (escapes, surrogate pairs, lone surrogates, raw control characters, bytes
 * that are not UTF-8, number forms in and outside the grammar, nesting past the
 * limit, trailing data, a byte order mark), 5 000 random values printed by
 * libjq, and each of those with one byte changed, inserted or cut off. The
 * strict reader must take the plain texts itself (else it is no faster). */
#include "ceb_test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jv.h>

#include "mapping/mapper_json_in.h"

static int g_mismatches;

/* What the strict reader takes must be exactly libjq's value; what it
 * hands on is libjq's own parse (cebm_json_read calls it), so the same
 * value or error by construction. */
static int same(const char *text, size_t len, const char *label) {
  jv got;
  if (!cebm_json_read_strict(text, len, &got)) return 0;
  jv want = jv_parse_sized(text, (int)len);
  int ok = jv_is_valid(want);
  if (ok) {
    jv wd = jv_dump_string(jv_copy(want), 0);
    jv gd = jv_dump_string(jv_copy(got), 0);
    ok = jv_equal(jv_copy(want), jv_copy(got)) && jv_equal(wd, gd);
  }
  if (!ok && g_mismatches++ < 5)
    CHECK_MSG(0, "%s: %.*s", label, (int)(len > 200 ? 200 : len), text);
  jv_free(want);
  jv_free(got);
  return 1;
}

static int strict_takes(const char *text) {
  jv v;
  if (!cebm_json_read_strict(text, strlen(text), &v)) return 0;
  jv_free(v);
  return 1;
}

static uint64_t g_rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void) {
  g_rng ^= g_rng >> 12;
  g_rng ^= g_rng << 25;
  g_rng ^= g_rng >> 27;
  return g_rng * 0x2545f4914f6cdd1dull;
}

static jv random_value(int depth) {
  switch (next() % (depth < 4 ? 8 : 5)) {
  case 0:
    return jv_null();
  case 1:
    return next() % 2 ? jv_true() : jv_false();
  case 2: {
    uint64_t b = next();
    double d;
    memcpy(&d, &b, sizeof d);
    return jv_number(next() % 2 ? d : (double)(int64_t)(next() % 100000) / 8);
  }
  case 3:
  case 4: {
    char buf[40];
    size_t n = next() % sizeof buf;
    for (size_t i = 0; i < n; i++)
      buf[i] = (char)(next() % (next() % 2 ? 128 : 256));
    return jv_string_sized(buf, (int)n);
  }
  case 5:
  case 6: {
    jv o = jv_object();
    for (size_t i = 0, n = next() % 5; i < n; i++) {
      char k[8];
      snprintf(k, sizeof k, "k%u", (unsigned)(next() % 6));
      o = jv_object_set(o, jv_string(k), random_value(depth + 1));
    }
    return o;
  }
  default: {
    jv a = jv_array();
    for (size_t i = 0, n = next() % 5; i < n; i++)
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
      "12",
      "-12.5e-3",
      "1E+2",
      "1e400",
      "-1e400",
      "4.9e-324",
      "0.30000000000000004",
      "123456789012345678901",
      " \t\r\n[ 1 , 2 ]\n",
      "\"\"",
      "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
      "\"\\u0000\\u001f\\u00e9\\u20ac\"",
      "\"\\ud83d\\ude00\"",
      "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"",
      "{\"a\":1,\"a\":2,\"b\":[]}",
      "{\"k\":{\"k\":{\"k\":[[],{}]}}}",
      /* handed to libjq */
      "\"\\ud83d\"",
      "\"\\ude00x\"",
      "\"\\ud83d\\u0041\"",
      "\"a\tb\"",
      "\"\xff\"",
      "\"\xc0\xaf\"",
      "\"\xed\xa0\x80\"",
      "01",
      "1.",
      ".5",
      "+1",
      "-",
      "1e",
      "0x10",
      "nan",
      "NaN",
      "tru",
      "nul",
      "[1,]",
      "{\"a\"}",
      "{\"a\":1,}",
      "[1 2]",
      "1 2",
      "[",
      "{",
      "\"open",
      "",
      "\xef\xbb\xbf{\"bom\":1}",
      "\"\\x\"",
      "\"\\u12g4\"",
      "{1:2}",
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
    same(texts[i], strlen(texts[i]), texts[i]);
  /* nesting: below the limit read here, past it libjq's error */
  char deep[1200];
  for (int d = 150; d <= 500; d += 50) {
    memset(deep, '[', (size_t)d);
    memset(deep + d, ']', (size_t)d);
    same(deep, (size_t)(2 * d), "nesting");
  }
  /* the strict reader takes the plain texts itself */
  CHECK(strict_takes(
      "{\"method\":\"POST\",\"body\":{\"id\":\"x\",\"n\":[1,2.5]}}"));
  CHECK(strict_takes("\"\\ud83d\\ude00 \\n\""));
  CHECK(!strict_takes("\"\\ud83d\""));
  CHECK(!strict_takes("1 2"));

  char *buf = malloc(1 << 16);
  int printed = 0, taken = 0;
  for (int i = 0; i < 5000 && buf; i++) {
    jv s = jv_dump_string(random_value(0), 0);
    size_t n = (size_t)jv_string_length_bytes(jv_copy(s));
    if (n > 60000) {
      jv_free(s);
      continue;
    }
    memcpy(buf, jv_string_value(s), n);
    jv_free(s);
    printed++;
    taken += same(buf, n, "random value");
    if (n == 0) continue;
    /* one byte changed, inserted, or the text cut */
    size_t at = next() % n;
    char was = buf[at];
    buf[at] = (char)(next() % 256);
    same(buf, n, "changed byte");
    buf[at] = was;
    memmove(buf + at + 1, buf + at, n - at);
    buf[at] = "\"\\{}[],:0eE-u \x01\xc3"[next() % 16];
    same(buf, n + 1, "inserted byte");
    memmove(buf + at, buf + at + 1, n - at);
    same(buf, at, "cut");
  }
  free(buf);
  /* libjq's own texts are strict JSON: the fast reader takes every one */
  CHECK(printed > 4000);
  CHECK_INT(taken, printed);
  CHECK_INT(g_mismatches, 0);
  return ceb_test_done("unit_mapper_json_in");
}
