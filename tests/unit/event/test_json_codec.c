/* JSON event format and batch format: decoding rules, bad input classes,
 * lossless re-encoding. */
#include <ceb/codec.h>

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

static ceb_event *decode(const char *json) {
  ceb_event *ev = NULL;
  ceb_error err;
  int rc = ceb_json_decode(json, strlen(json), &ev, &err);
  CHECK_MSG(rc == CEB_OK, "%s: %s", err.code, err.message);
  return ev;
}

static void expect_fail(const char *json, const char *code) {
  ceb_event *ev = (ceb_event *)1;
  ceb_error err;
  int rc = ceb_json_decode(json, strlen(json), &ev, &err);
  CHECK_MSG(rc == CEB_EINVAL, "accepted: %s", json);
  CHECK(ev == NULL);
  CHECK_INT(err.status, CEB_EINVAL);
  CHECK_STR(err.code, code);
  CHECK(err.message[0] != '\0');
}

#define MIN                                                                    \
  "\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\",\"type\":\"t\""

static void test_decode_kinds(void) {
  size_t len;
  /* object or array data keeps the sender's bytes (spacing, number
   * spelling): it is cut from the input, not re-serialised */
  ceb_event *ev = decode("{" MIN ",\"data\":{\"a\": [1, 2.50, \"x\"]}}");
  CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_JSON);
  CHECK_STR(ceb_event_data(ev, &len), "{\"a\": [1, 2.50, \"x\"]}");
  ceb_event_unref(ev);

  ev = decode("{" MIN ",\"datacontenttype\":\"text/xml\",\"data\":\"<a/>\"}");
  CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_TEXT);
  CHECK_STR(ceb_event_data(ev, &len), "<a/>");
  ceb_event_unref(ev);

  /* a JSON string without datacontenttype is JSON data (a JSON string) */
  ev = decode("{" MIN ",\"data\":\"hi\"}");
  CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_JSON);
  CHECK_STR(ceb_event_data(ev, &len), "\"hi\"");
  ceb_event_unref(ev);

  ev = decode("{" MIN ",\"data_base64\":\"AAH/\"}");
  CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_BINARY);
  const unsigned char *d = ceb_event_data(ev, &len);
  CHECK(len == 3 && d[0] == 0 && d[1] == 1 && d[2] == 255);
  ceb_event_unref(ev);

  ev = decode("{" MIN ",\"data\":null,\"data_base64\":null,\"x\":null}");
  CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_NONE);
  CHECK(ceb_event_get(ev, "x") == NULL);
  ceb_event_unref(ev);
}

static void test_decode_extensions(void) {
  ceb_event *ev =
      decode("{" MIN ",\"i\":-42,\"b\":true,\"f\":false,\"s\":\"x\","
             "\"subject\":null}");
  CHECK_STR(ceb_event_get(ev, "i"), "-42");
  CHECK_INT(ceb_event_get_type(ev, "i"), CEB_ATTR_INTEGER);
  CHECK_STR(ceb_event_get(ev, "b"), "true");
  CHECK_INT(ceb_event_get_type(ev, "b"), CEB_ATTR_BOOLEAN);
  CHECK_STR(ceb_event_get(ev, "f"), "false");
  CHECK_INT(ceb_event_get_type(ev, "s"), CEB_ATTR_STRING);
  CHECK(ceb_event_get(ev, "subject") == NULL);
  ceb_event_unref(ev);
  /* decoding does not judge names: validation does */
  ev = decode("{" MIN ",\"MyExt\":\"v\"}");
  CHECK_STR(ceb_event_get(ev, "MyExt"), "v");
  ceb_event_unref(ev);
}

/* The data member is cut from the text rather than parsed and dumped:
 * wherever it stands, with whatever spacing, and anything the cut cannot
 * vouch for still gets jansson's verdict. */
static void test_decode_data_cut(void) {
  size_t len;
  const char *where[] = {"{\"data\" : [ {\"k\":\"}]\\\"\"} ] ," MIN "}",
                         "{" MIN
                         ",\"data\":[{\"k\":\"}]\\\"\"}],\"subject\":\"s\"}",
                         "{" MIN ",\n  \"data\":\t[{\"k\":\"}]\\\"\"}]\n}\n"};
  const char *want[] = {"[ {\"k\":\"}]\\\"\"} ]", "[{\"k\":\"}]\\\"\"}]",
                        "[{\"k\":\"}]\\\"\"}]"};
  for (size_t i = 0; i < 3; i++) {
    ceb_event *ev = decode(where[i]);
    CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_JSON);
    CHECK_STR(ceb_event_data(ev, &len), want[i]);
    CHECK_STR(ceb_event_get(ev, "id"), "1");
    /* encoding splices the kept bytes; decoding that again is the same */
    char *out;
    CHECK_INT(ceb_json_encode(ev, &out, &len), CEB_OK);
    ceb_event *back = NULL;
    CHECK_INT(ceb_json_decode_trusted(out, len, &back, NULL), CEB_OK);
    CHECK_STR(ceb_event_data(back, &len), want[i]);
    CHECK_STR(ceb_event_get(back, "type"), "t");
    ceb_free(out);
    ceb_event_unref(back);
    ceb_event_unref(ev);
  }
  /* an escaped key spelling "data" is still the data member */
  ceb_event *ev = decode("{" MIN ",\"d\\u0061ta\":{\"a\":1}}");
  CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_JSON);
  CHECK_STR(ceb_event_data(ev, &len), "{\"a\":1}");
  CHECK(ceb_event_get(ev, "data") == NULL);
  ceb_event_unref(ev);
  /* malformed data, duplicate keys inside or outside it, trailing bytes */
  expect_fail("{" MIN ",\"data\":{\"a\":1,}}", "ce.json.malformed");
  expect_fail("{" MIN ",\"data\":{\"a\":[1}]}", "ce.json.malformed");
  expect_fail("{" MIN ",\"data\":{\"a\":1,\"a\":2}}", "ce.json.malformed");
  expect_fail("{" MIN ",\"data\":{},\"data\":{}}", "ce.json.malformed");
  expect_fail("{" MIN ",\"data\":{}} x", "ce.json.malformed");
  expect_fail("{" MIN ",\"data\":{}", "ce.json.malformed");
  expect_fail("{" MIN " \"data\":{}}", "ce.json.malformed");
  expect_fail("{" MIN ",\"data\":{\"s\":\"\xff\"}}", "ce.json.malformed");
  expect_fail("{" MIN ",\"x\":{\"a\":1},\"data\":{}}", "ce.attr.type");
  expect_fail("{" MIN ",\"data\":{},\"data_base64\":\"YQ==\"}", "ce.data.both");
}

static void test_decode_errors(void) {
  expect_fail("", "ce.json.malformed");
  expect_fail("{", "ce.json.malformed");
  expect_fail("{\"id\":\"1\",}", "ce.json.malformed");
  expect_fail("{\"id\":\"1\",\"id\":\"2\"}", "ce.json.malformed");
  expect_fail("[]", "ce.json.not_object");
  expect_fail("\"x\"", "ce.json.malformed");
  expect_fail("{\"specversion\":\"0.9\"}", "ce.specversion.unsupported");
  expect_fail("{\"specversion\":\"\"}", "ce.specversion.unsupported");
  expect_fail("{\"specversion\":1.0}", "ce.attr.type");
  expect_fail("{\"id\":25}", "ce.attr.type");
  expect_fail("{\"id\":{\"x\":1}}", "ce.attr.type");
  expect_fail("{\"time\":true}", "ce.attr.type");
  expect_fail("{\"ext\":1.5}", "ce.attr.type");
  expect_fail("{\"ext\":{}}", "ce.attr.type");
  expect_fail("{\"ext\":[1]}", "ce.attr.type");
  expect_fail("{\"\":\"x\"}", "ce.attr.name");
  expect_fail("{\"data\":\"a\",\"data_base64\":\"YQ==\"}", "ce.data.both");
  expect_fail("{\"data_base64\":\"not base64!\"}", "ce.data_base64.invalid");
  expect_fail("{\"data_base64\":5}", "ce.data_base64.type");
  expect_fail("{\"id\":\"a\\u0000b\"}", "ce.json.malformed");
  expect_fail("{\"id\":\"\xff\"}", "ce.json.malformed");
  expect_fail("{\"ext\":99999999999999999999999}", "ce.json.malformed");
  /* huge values */
  size_t n = CEB_ATTR_VALUE_MAX + 100;
  char *big = malloc(n + 32);
  strcpy(big, "{\"subject\":\"");
  memset(big + 12, 'a', n);
  strcpy(big + 12 + n, "\"}");
  expect_fail(big, "ce.attr.too_long");
  free(big);
  /* deep nesting in data is bounded by the parser, not a crash */
  char *deep = malloc(200010);
  strcpy(deep, "{\"data\":");
  memset(deep + 8, '[', 100000);
  memset(deep + 8 + 100000, ']', 100000);
  strcpy(deep + 8 + 200000, "}");
  expect_fail(deep, "ce.json.malformed");
  free(deep);
  ceb_event *ev = NULL;
  CHECK_INT(ceb_json_decode(NULL, 3, &ev, NULL), CEB_EINVAL);
  CHECK_INT(ceb_json_decode("{}", 2, NULL, NULL), CEB_EINVAL);
}

/* The encoder writes JSON itself: its bytes must be exactly jansson's
 * compact dump of the same document (stored journals stay readable and
 * comparable), for escapes, UTF-8, typed extensions and every data kind. */
static void expect_jansson_form(const ceb_event *ev, const char *what) {
  char *out = NULL;
  size_t len = 0;
  CHECK_MSG(ceb_json_encode(ev, &out, &len) == CEB_OK, "%s: encode", what);
  if (!out) return;
  CHECK_MSG(strlen(out) == len, "%s: length", what);
  json_t *j = json_loadb(out, len, JSON_REJECT_DUPLICATES, NULL);
  CHECK_MSG(j != NULL, "%s: not JSON: %s", what, out);
  char *again =
      j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
  CHECK_MSG(again && strcmp(again, out) == 0, "%s:\n ours    %s\n jansson %s",
            what, out, again ? again : "(none)");
  free(again);
  json_decref(j);
  ceb_free(out);
}

static void test_encode_writer(void) {
  ceb_event *ev = ceb_event_new();
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", "q\"b\\s/\x01\x1f\b\f\n\r\t\x7f");
  ceb_event_set(ev, "source", "urn:\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80");
  ceb_event_set(ev, "type", "t");
  ceb_event_set_typed(ev, "bt", CEB_ATTR_BOOLEAN, "true");
  ceb_event_set_typed(ev, "bx", CEB_ATTR_BOOLEAN, "tru");
  ceb_event_set_typed(ev, "i1", CEB_ATTR_INTEGER, "+5");
  ceb_event_set_typed(ev, "i2", CEB_ATTR_INTEGER, "-007");
  ceb_event_set_typed(ev, "i3", CEB_ATTR_INTEGER, "99999999999999999999");
  ceb_event_set_typed(ev, "i4", CEB_ATTR_INTEGER, "");
  ceb_event_set_typed(ev, "i5", CEB_ATTR_INTEGER, "12x");
  expect_jansson_form(ev, "no data");
  ceb_event_set_data(ev, "a\"\n\xc3\xa9\x01", 6, CEB_DATA_TEXT);
  expect_jansson_form(ev, "text data");
  ceb_event_set_data(ev, "\x00\xff\x10", 3, CEB_DATA_BINARY);
  expect_jansson_form(ev, "binary data");
  ceb_event_set_data(ev, "{\"k\":[1,\"x\"]}", 13, CEB_DATA_JSON);
  expect_jansson_form(ev, "unchecked JSON data");
  ceb_event_set(ev, "source", "\xff"); /* invalid UTF-8 cannot be encoded */
  char *out = NULL;
  CHECK_INT(ceb_json_encode(ev, &out, NULL), CEB_EINVAL);
  CHECK(out == NULL);
  ceb_event_unref(ev);
  /* decoded JSON data (trusted) in compact form */
  ev = decode("{" MIN ",\"x\":1,\"data\":{\"k\":\"\\u0001\\\"\"}}");
  expect_jansson_form(ev, "decoded JSON data");
  ceb_event_unref(ev);
  ev = ceb_event_new();
  expect_jansson_form(ev, "empty event");
  ceb_event_set_data(ev, "x", 1, CEB_DATA_TEXT);
  expect_jansson_form(ev, "only data");
  ceb_event_unref(ev);
}

static void test_encode(void) {
  const char *in = "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\","
                   "\"type\":\"t\",\"datacontenttype\":\"application/json\","
                   "\"time\":\"2020-01-01T00:00:00Z\",\"b\":false,\"i\":7,"
                   "\"s\":\"x\",\"data\":{\"k\":[true,null]}}";
  ceb_event *ev = decode(in);
  char *out = NULL;
  size_t len = 0;
  CHECK_INT(ceb_json_encode(ev, &out, &len), CEB_OK);
  CHECK_STR(out, in); /* canonical order equals the input's here */
  CHECK_INT(len, strlen(in));
  ceb_free(out);
  ceb_event_unref(ev);

  ev = decode("{" MIN ",\"datacontenttype\":\"text/plain\",\"data\":\"t\"}");
  CHECK_INT(ceb_json_encode(ev, &out, &len), CEB_OK);
  CHECK_STR(out, "{" MIN ",\"datacontenttype\":\"text/plain\",\"data\":\"t\"}");
  ceb_free(out);
  ceb_event_unref(ev);

  ev = decode("{" MIN ",\"data_base64\":\"AAH/\"}");
  CHECK_INT(ceb_json_encode(ev, &out, &len), CEB_OK);
  CHECK_STR(out, "{" MIN ",\"data_base64\":\"AAH/\"}");
  ceb_free(out);
  /* malformed typed values stay strings rather than being lost */
  CHECK_INT(ceb_event_set_typed(ev, "n", CEB_ATTR_INTEGER, "12x"), CEB_OK);
  CHECK_INT(ceb_json_encode(ev, &out, &len), CEB_OK);
  CHECK(strstr(out, "\"n\":\"12x\"") != NULL);
  ceb_free(out);
  /* data that is not what its kind claims is an encoding error */
  CHECK_INT(ceb_event_set_data(ev, "{bad", 4, CEB_DATA_JSON), CEB_OK);
  out = (char *)1;
  CHECK_INT(ceb_json_encode(ev, &out, &len), CEB_EINVAL);
  CHECK(out == NULL);
  CHECK_INT(ceb_event_set_data(ev, "\xff", 1, CEB_DATA_TEXT), CEB_OK);
  CHECK_INT(ceb_json_encode(ev, &out, &len), CEB_EINVAL);
  CHECK_INT(ceb_event_set(ev, "subject", "\xc3"), CEB_OK);
  CHECK_INT(ceb_event_set_data(ev, NULL, 0, CEB_DATA_NONE), CEB_OK);
  CHECK_INT(ceb_json_encode(ev, &out, &len), CEB_EINVAL);
  ceb_event_unref(ev);
}

static void test_batch(void) {
  ceb_event **evs = NULL;
  size_t n = 9;
  ceb_error err;
  CHECK_INT(ceb_batch_decode("[]", 2, &evs, &n, &err), CEB_OK);
  CHECK_INT(n, 0);
  ceb_events_free(evs, n);
  const char *two = "[{" MIN "},{" MIN ",\"id\":\"2\"}]";
  CHECK_INT(ceb_batch_decode("[{" MIN "},{" MIN "}]", strlen(two) - 11, &evs,
                             &n, &err),
            CEB_EINVAL); /* truncated */
  const char *b = "[{" MIN "},{\"specversion\":\"1.0\",\"id\":\"2\"}]";
  CHECK_INT(ceb_batch_decode(b, strlen(b), &evs, &n, &err), CEB_OK);
  CHECK_INT(n, 2);
  CHECK_STR(ceb_event_get(evs[1], "id"), "2");
  char *out;
  size_t len;
  CHECK_INT(ceb_batch_encode(evs, n, &out, &len), CEB_OK);
  CHECK_STR(out, b);
  ceb_free(out);
  ceb_events_free(evs, n);
  CHECK_INT(ceb_batch_encode(NULL, 0, &out, &len), CEB_OK);
  CHECK_STR(out, "[]");
  ceb_free(out);

  struct {
    const char *json, *code;
    int index;
  } bad[] = {
      {"{}", "ce.batch.not_array", -1},
      {"[1", "ce.json.malformed", -1},
      {"[{" MIN "},\"x\"]", "ce.batch.not_object", 1},
      {"[{" MIN "},{\"specversion\":\"0.9\"}]", "ce.batch.mixed_specversion",
       1},
      {"[{\"id\":5}]", "ce.attr.type", 0},
      {"[{" MIN "},{" MIN "},{\"data\":1,\"data_base64\":\"\"}]",
       "ce.data.both", 2},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    evs = (ceb_event **)1;
    n = 7;
    CHECK_INT(
        ceb_batch_decode(bad[i].json, strlen(bad[i].json), &evs, &n, &err),
        CEB_EINVAL);
    CHECK(evs == NULL && n == 0);
    CHECK_STR(err.code, bad[i].code);
    CHECK_INT(err.index, bad[i].index);
  }
}

int main(void) {
  test_decode_kinds();
  test_decode_extensions();
  test_decode_data_cut();
  test_decode_errors();
  test_encode();
  test_encode_writer();
  test_batch();
  return ceb_test_done("unit_event_json");
}
