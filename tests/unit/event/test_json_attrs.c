/* The direct attribute reader (ceb_json_attrs.c) decodes exactly as the
 * jansson path: each text is decoded as is (the direct reader takes it)
 * and with a member added that only the jansson path takes (an escaped
 * name with a null value, which sets nothing); both must give the same
 * event: equal JSON encodings (compared as JSON, since that path also
 * re-spaces the data). Over hand cases (escapes, UTF-8, surrogate pairs,
 * integers, booleans, nulls, spacing) and the conformance suites' event
 * examples. */
#include <ceb/codec.h>

#include <ftw.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

static int compared;

/* Inserts the reference member after the first '{'; NULL if none. */
static char *with_ref_member(const char *text, size_t len, size_t *out_len) {
  const char *brace = memchr(text, '{', len);
  if (!brace) return NULL;
  static const char member[] = "\"\\u0078ceb\":null,";
  size_t at = (size_t)(brace - text) + 1, add = sizeof member - 1;
  /* an empty object takes the member without its comma */
  size_t j = at;
  while (j < len && strchr(" \t\r\n", text[j]))
    j++;
  if (j < len && text[j] == '}') add--;
  char *r = malloc(len + add + 1);
  memcpy(r, text, at);
  memcpy(r + at, member, add);
  memcpy(r + at + add, text + at, len - at);
  r[len + add] = '\0';
  *out_len = len + add;
  return r;
}

static void compare(const char *text, size_t len, const char *what) {
  ceb_event *fast = NULL, *ref = NULL;
  int a = ceb_json_decode(text, len, &fast, NULL);
  size_t rlen = 0;
  char *rtext = with_ref_member(text, len, &rlen);
  int b = rtext ? ceb_json_decode(rtext, rlen, &ref, NULL) : -1;
  CHECK_MSG(a == b, "%s: decode %d, jansson path %d", what, a, b);
  if (a == CEB_OK && b == CEB_OK) {
    char *x = NULL, *y = NULL;
    size_t xl = 0, yl = 0;
    CHECK_INT(ceb_json_encode(fast, &x, &xl), CEB_OK);
    CHECK_INT(ceb_json_encode(ref, &y, &yl), CEB_OK);
    json_t *jx = json_loadb(x, xl, 0, NULL), *jy = json_loadb(y, yl, 0, NULL);
    CHECK_MSG(jx && jy && json_equal(jx, jy), "%s:\n  %.*s\n  %.*s", what,
              (int)xl, x, (int)yl, y);
    json_decref(jx);
    json_decref(jy);
    ceb_free(x);
    ceb_free(y);
    compared++;
  }
  ceb_event_unref(fast);
  ceb_event_unref(ref);
  free(rtext);
}

#define CASE(lit) compare(lit, sizeof lit - 1, lit)
#define BASE                                                                   \
  "\"specversion\":\"1.0\",\"id\":\"e-1\",\"source\":\"urn:s\","               \
  "\"type\":\"t\""

static int visit(const char *path, const struct stat *sb, int type,
                 struct FTW *ftw) {
  (void)sb;
  (void)ftw;
  size_t len = strlen(path);
  if (type != FTW_F || len < 5 || strcmp(path + len - 5, ".json") != 0 ||
      strstr(path, "json-schema-test-suite") || strstr(path, "asyncapi"))
    return 0;
  size_t n = 0;
  char *text = ceb_test_read_file(path, &n);
  if (text) compare(text, n, path);
  free(text);
  return 0;
}

int main(void) {
  ceb_test_need_data(CEB_CONFORMANCE_DIR);
  CASE("{" BASE "}");
  CASE("{" BASE ",\"data\":{\"a\":[1,2,{\"b\":null}]}}");
  CASE("{\"data\":[1] , " BASE "}");
  CASE(" {\n\t" BASE " ,\r\n\"subject\" : \"s\" } ");
  CASE("{" BASE ",\"subject\":\"tab\\there \\\"q\\\" \\\\ \\/ \\b\\f\\n\\r\"}");
  CASE("{" BASE ",\"subject\":\"\\u00e9\\u20ac\\ud83d\\ude00 \xc3\xa9\"}");
  CASE("{" BASE ",\"count\":42,\"neg\":-7,\"zero\":-0,\"big\":"
       "123456789012345678}");
  CASE("{" BASE ",\"yes\":true,\"no\":false,\"gone\":null,\"time\":null}");
  CASE("{" BASE ",\"datacontenttype\":\"application/json\",\"data\":{}}");
  CASE("{" BASE ",\"data\":\"text data\"}");
  CASE("{" BASE ",\"data\":42}");
  /* cases the direct reader leaves to jansson: same answers */
  CASE("{" BASE ",\"subject\":1}");
  CASE("{" BASE ",\"specversion\":\"1.0\"}");
  CASE("{" BASE ",\"x\":1.5}");
  CASE("{" BASE ",\"x\":{}}");
  CASE("{" BASE ",\"x\":12345678901234567890}");
  CASE("{" BASE ",\"x\":\"\\u0000\"}");
  CASE("{" BASE ",\"x\":\"\\ud800\"}");
  CASE("{" BASE ",\"\":\"empty\"}");
  CASE("{" BASE ",\"data_base64\":\"AAE=\"}");
  CASE(
      "{\"specversion\":\"0.3\",\"id\":\"e\",\"source\":\"s\",\"type\":\"t\"}");
  CASE("{" BASE ",\"x\":\"\x01\"}");
  CASE("{" BASE ",\"x\":\"\xc0\x80\"}");
  CASE("{" BASE ",\"x\":01}");
  CASE("{" BASE ",}");
  CASE("{" BASE "} x");
  CHECK_INT(nftw(CEB_CONFORMANCE_DIR, visit, 16, FTW_PHYS), 0);
  CHECK_MSG(compared >= 20, "%d events compared", compared);
  return ceb_test_done("unit_event_json_attrs");
}
