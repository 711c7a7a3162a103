/* The tree-less JSON check (ceb_json_valid.c) answers 1 only for texts
 * jansson accepts (JSON_DECODE_ANY | JSON_REJECT_DUPLICATES): hand cases on
 * both sides and the borderline ones it leaves to jansson, then every JSON
 * file of the conformance suites (the JSON Schema Test Suite's are made to
 * be awkward), and 1 for every CloudEvents and NL GOV example (else the fast
 * path would not be taken for ordinary events). */
#include <ftw.h>
#include <jansson.h>
#include <string.h>

#include "ceb_test.h"
#include "event/ceb_event_internal.h"

static int jansson_accepts(const char *s, size_t n) {
  json_t *j = json_loadb(s, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
  json_decref(j);
  return j != NULL;
}

static void expect(const char *s, size_t n, int want) {
  int got = cebi_json_valid(s, n);
  CHECK_MSG(got == want, "cebi_json_valid(%.*s) = %d, want %d", (int)n, s, got,
            want);
  if (got) CHECK_MSG(jansson_accepts(s, n), "jansson refuses %.*s", (int)n, s);
}
#define VALID(lit) expect(lit, sizeof lit - 1, 1)
#define NOT(lit) expect(lit, sizeof lit - 1, 0)

/* all files; of the event examples (the kind of data the bridge sees),
 * those jansson accepts and those taking the fast path */
static int files, events, events_fast;

static int visit(const char *path, const struct stat *sb, int type,
                 struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  size_t len = strlen(path);
  if (type != FTW_F || len < 5 || strcmp(path + len - 5, ".json") != 0)
    return 0;
  size_t n = 0;
  char *text = ceb_test_read_file(path, &n);
  if (!text) return 0;
  files++;
  int j = jansson_accepts(text, n), v = cebi_json_valid(text, n);
  CHECK_MSG(!v || j, "%s: valid here, refused by jansson", path);
  if (!strstr(path, "json-schema-test-suite") && !strstr(path, "asyncapi")) {
    events += j;
    events_fast += v;
  }
  free(text);
  return 0;
}

int main(void) {
  ceb_test_need_data(CEB_CONFORMANCE_DIR);
  VALID("{}");
  VALID("[]");
  VALID(" \t\r\n{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\\n\\u00e9\"}}"
        " ");
  VALID("\"x\"");
  VALID("-0");
  VALID("1.5e-10");
  VALID("123456789012345678");
  VALID("[\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]");
  VALID("{\"a\":{\"a\":{\"a\":1}}}"); /* same name, different objects */
  VALID("[1e299, -2.5E+3, 0.0]");
  VALID("\"\\ud83d\\ude00 \\u00e9\"");
  VALID("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"");
  /* refused by jansson */
  NOT("");
  NOT("{\"a\":1,\"a\":2}");
  NOT("01");
  NOT("1.");
  NOT(".5");
  NOT("+1");
  NOT("[1,]");
  NOT("[1 2]");
  NOT("{\"a\"}");
  NOT("{\"a\":1,}");
  NOT("{} x");
  NOT("tru");
  NOT("nul");
  NOT("NaN");
  NOT("\"\x01\"");
  NOT("\"\xc0\x80\"");         /* overlong */
  NOT("\"\xed\xa0\x80\"");     /* a surrogate in UTF-8 */
  NOT("\"\xf4\x90\x80\x80\""); /* past U+10FFFF */
  NOT("\"\xc3\"");
  NOT("\"abc");
  NOT("\"\\x\"");
  NOT("\"\\u12\"");
  NOT("[\"a\"\0]");
  /* left to jansson: it may accept or refuse */
  NOT("\"\\u0000\"");
  NOT("\"\\ud83d\"");
  NOT("\"\\ude00\\ud83d\"");
  NOT("\"\\ud83d\\u0041\"");
  NOT("1e400");
  NOT("12345678901234567890");
  NOT("{\"\\u0061\":1}");
  char deep[200];
  memset(deep, '[', 100);
  memset(deep + 100, ']', 100);
  expect(deep, sizeof deep, 0);
  CHECK(jansson_accepts(deep, sizeof deep));

  CHECK_INT(nftw(CEB_CONFORMANCE_DIR, visit, 16, FTW_PHYS), 0);
  CHECK_MSG(files > 100, "%d JSON files under %s", files, CEB_CONFORMANCE_DIR);
  CHECK_MSG(events >= 10 && events_fast == events,
            "fast path for %d of %d event examples", events_fast, events);
  return ceb_test_done("unit_event_json_valid");
}
