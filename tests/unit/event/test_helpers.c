/* Base64, percent-encoding, timestamps, URIs, media types, attribute names. */
#include <ceb/codec.h>
#include <ceb/validate.h>

#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

static void b64_roundtrip(const char *in, size_t n, const char *want) {
  char *enc = ceb_base64_encode(in, n);
  CHECK_STR(enc, want);
  unsigned char *dec = NULL;
  size_t dn = 0;
  CHECK_INT(ceb_base64_decode(enc, strlen(enc), &dec, &dn), CEB_OK);
  CHECK(dn == n && (n == 0 || memcmp(dec, in, n) == 0));
  ceb_free(dec);
  ceb_free(enc);
}

static void test_base64(void) {
  b64_roundtrip("", 0, "");
  b64_roundtrip("f", 1, "Zg==");
  b64_roundtrip("fo", 2, "Zm8=");
  b64_roundtrip("foo", 3, "Zm9v");
  b64_roundtrip("foobar", 6, "Zm9vYmFy");
  b64_roundtrip("\xff\xfe\x00\x01", 4, "//4AAQ==");
  static const char *const bad[] = {"Zg=",      "Zg",       "Z===",
                                    "====",     "Zm9v!A==", "Zm 9",
                                    "Zg==Zg==", "A=BC",     "Zm9\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unsigned char *out = (unsigned char *)1;
    size_t n;
    CHECK_MSG(ceb_base64_decode(bad[i], strlen(bad[i]), &out, &n) == CEB_EINVAL,
              "'%s' accepted", bad[i]);
    CHECK(out == NULL);
  }
}

static void test_percent(void) {
  char *e = ceb_percent_encode("Euro \xe2\x82\xac \"q\" 100%");
  CHECK_STR(e, "Euro%20%E2%82%AC%20%22q%22%20100%25");
  char *d = NULL;
  CHECK_INT(ceb_percent_decode(e, &d), CEB_OK);
  CHECK_STR(d, "Euro \xe2\x82\xac \"q\" 100%");
  ceb_free(d);
  ceb_free(e);
  e = ceb_percent_encode("plain-value_1.0~!");
  CHECK_STR(e, "plain-value_1.0~!");
  ceb_free(e);
  CHECK_INT(ceb_percent_decode("a%2fb%2F", &d), CEB_OK);
  CHECK_STR(d, "a/b/");
  ceb_free(d);
  static const char *const bad[] = {"%",   "%4",  "%zz",    "abc%g1",
                                    "%00", "%C3", "%C0%AF", "%ED%A0%80"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    d = (char *)1;
    CHECK_MSG(ceb_percent_decode(bad[i], &d) == CEB_EINVAL, "'%s' accepted",
              bad[i]);
    CHECK(d == NULL);
  }
}

static void test_timestamp(void) {
  int64_t a, b;
  CHECK_INT(ceb_timestamp_parse("2018-04-05T17:31:00Z", &a), CEB_OK);
  CHECK_INT(a, 1522949460000LL);
  CHECK_INT(ceb_timestamp_parse("2018-04-05T18:31:00+01:00", &b), CEB_OK);
  CHECK_INT(a, b);
  CHECK_INT(ceb_timestamp_parse("2018-04-05T16:31:00-01:00", &b), CEB_OK);
  CHECK_INT(a, b);
  CHECK_INT(ceb_timestamp_parse("2018-04-05t17:31:00.123456789z", &b), CEB_OK);
  CHECK_INT(b, a + 123);
  CHECK_INT(ceb_timestamp_parse("2018-04-05T17:31:00.5Z", &b), CEB_OK);
  CHECK_INT(b, a + 500);
  CHECK_INT(ceb_timestamp_parse("1969-12-31T23:59:59.999Z", &b), CEB_OK);
  CHECK_INT(b, -1);
  CHECK(ceb_valid_timestamp("2020-02-29T00:00:00Z"));
  CHECK(ceb_valid_timestamp("2016-12-31T23:59:60Z"));
  static const char *const bad[] = {"lunchtime",
                                    "2018-04-05T18:31Z",
                                    "2018-04-05T18:31:00X",
                                    "2018-04-05T18:31:00+25:00",
                                    "2018-04-05T18:31:00+xx:00",
                                    "2018-04-05T18:31:00+05",
                                    "2019-02-29T00:00:00Z",
                                    "2018-13-01T00:00:00Z",
                                    "2018-04-31T00:00:00Z",
                                    "2018-04-05T24:00:00Z",
                                    "2018-04-05 17:31:00Z",
                                    "2018-04-05T17:31:00.Z",
                                    "2018-04-05T17:31:00Z ",
                                    "",
                                    "2018-04-05"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK_MSG(!ceb_valid_timestamp(bad[i]), "'%s' accepted", bad[i]);
  CHECK(!ceb_valid_timestamp(NULL));
  char buf[32];
  ceb_timestamp_format(1522949460123LL, buf, sizeof buf);
  CHECK_STR(buf, "2018-04-05T17:31:00.123Z");
  ceb_timestamp_format(-1, buf, sizeof buf);
  CHECK_STR(buf, "1969-12-31T23:59:59.999Z");
  ceb_timestamp_format(951782400000LL, buf, sizeof buf);
  CHECK_STR(buf, "2000-02-29T00:00:00.000Z");
  CHECK_INT(ceb_timestamp_parse(buf, &b), CEB_OK);
  CHECK_INT(b, 951782400000LL);
}

static void test_uri(void) {
  static const char *const uris[] = {
      "https://cloudevents.io",
      "urn:nld:oin:00000001823288444000:systeem:BRP",
      "http://user:pw@[::1]:8080/a/b?q=1&r=%20#frag",
      "mailto:a@b.example",
      "https://x.example/dataschema",
      "tag:example.com,2024:x"};
  for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
    CHECK_MSG(ceb_valid_uri(uris[i]), "'%s' rejected", uris[i]);
    CHECK_MSG(ceb_valid_uri_ref(uris[i]), "'%s' rejected", uris[i]);
  }
  static const char *const refs[] = {"/mycontext/subcontext",
                                     "#fragment",
                                     "//authority/path",
                                     "a/b",
                                     "",
                                     "?q"};
  for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
    CHECK_MSG(ceb_valid_uri_ref(refs[i]), "'%s' rejected", refs[i]);
    CHECK_MSG(!ceb_valid_uri(refs[i]), "'%s' accepted as URI", refs[i]);
  }
  static const char *const bad[] = {
      "http://a b",       "http://x/%zz", "a:b/c d",     "1a:b",
      "http://host:80x/", "x\xc3\xa9",    "http://x/<>", "http://[::1/"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK_MSG(!ceb_valid_uri(bad[i]) && !ceb_valid_uri_ref(bad[i]),
              "'%s' accepted", bad[i]);
  CHECK(!ceb_valid_uri(NULL) && !ceb_valid_uri_ref(NULL));
}

static void test_media(void) {
  CHECK(ceb_valid_media_type("application/json"));
  CHECK(ceb_valid_media_type("text/plain; charset=utf-8"));
  CHECK(ceb_valid_media_type("multipart/form-data;boundary=\"a b;c\""));
  CHECK(!ceb_valid_media_type("xyz"));
  CHECK(!ceb_valid_media_type(""));
  CHECK(!ceb_valid_media_type("text/"));
  CHECK(!ceb_valid_media_type("text/plain;"));
  CHECK(!ceb_valid_media_type("text/plain; charset"));
  CHECK(!ceb_valid_media_type("text/plain; a=\"unterminated"));
  CHECK(!ceb_valid_media_type(NULL));
  CHECK(ceb_media_type_is_json(NULL));
  CHECK(ceb_media_type_is_json("application/json; charset=utf-8"));
  CHECK(ceb_media_type_is_json("Application/JSON"));
  CHECK(ceb_media_type_is_json("text/json"));
  CHECK(ceb_media_type_is_json("application/vnd.api+json"));
  CHECK(!ceb_media_type_is_json("application/xml"));
  CHECK(!ceb_media_type_is_json("application/jsonx"));
  CHECK_INT(ceb_http_mode_of("application/cloudevents+json; charset=UTF-8"),
            CEB_MODE_STRUCTURED);
  CHECK_INT(ceb_http_mode_of("APPLICATION/CloudEvents-Batch+JSON"),
            CEB_MODE_BATCH);
  CHECK_INT(ceb_http_mode_of("application/json"), CEB_MODE_BINARY);
  CHECK_INT(ceb_http_mode_of(NULL), CEB_MODE_BINARY);
}

static void test_names_and_headers(void) {
  CHECK(ceb_valid_attr_name("abc123"));
  CHECK(!ceb_valid_attr_name("MyExtension"));
  CHECK(!ceb_valid_attr_name("my.extension"));
  CHECK(!ceb_valid_attr_name("my_ext"));
  CHECK(!ceb_valid_attr_name(""));
  CHECK(!ceb_valid_attr_name(NULL));
  ceb_headers h = {0};
  CHECK_INT(ceb_headers_add(&h, "Content-Type", "text/plain", 10), CEB_OK);
  CHECK_INT(ceb_headers_add(&h, "X-Bin", "a\0b", 3), CEB_OK);
  CHECK_STR(ceb_headers_get(&h, "content-type"), "text/plain");
  CHECK_INT(h.items[1].value_len, 3);
  CHECK(ceb_headers_get(&h, "missing") == NULL);
  CHECK_INT(ceb_headers_add(&h, NULL, "x", 1), CEB_EINVAL);
  ceb_headers_clear(&h);
  CHECK(h.count == 0 && h.items == NULL);
}

int main(void) {
  test_base64();
  test_percent();
  test_timestamp();
  test_uri();
  test_media();
  test_names_and_headers();
  return ceb_test_done("unit_event_helpers");
}
