/* plugins/http/http_in_doc.c: the intermediary's input document, field by
 * field (http_in_doc.h). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "http_in_doc.h"

static char *build(const http_in_doc_req *r) {
  char *out = NULL;
  size_t len = 0;
  CHECK_INT(http_in_doc_build(r, &out, &len), CEB_OK);
  CHECK(out && strlen(out) == len);
  return out;
}

static void add(ceb_headers *h, const char *name, const char *value) {
  CHECK_INT(ceb_headers_add(h, name, value, strlen(value)), CEB_OK);
}

/* The meemoo guide's example webhook (tests/data/meemoo/): every field in
 * order, byte for byte. */
static void test_webhook(void) {
  ceb_headers h = {0}, q = {0};
  add(&h, "Host", "127.0.0.1:8080");
  add(&h, "Content-Type", "application/json");
  add(&h, "webhook-id", "msg_333a3NGSYKk1vyFtMgj9Qy8gm3y");
  add(&h, "webhook-timestamp", "1758548009");
  add(&h, "webhook-signature",
      "v1,cVueLJYV5JY6qXHw3+MIHbZCPHHnX7N7jjaebaI2+5o=");
  add(&h, "Authorization", "Bearer secret-token");
  const char *body =
      "{\"type\": \"meemoo.sip.archived\", \"timestamp\": "
      "\"2025-09-03T20:26:10.344522Z\", \"data\": {\"correlation_id\": "
      "\"843e9ba457593d0edf69a24baa0babf3\", \"outcome\": \"success\", "
      "\"pid\": \"kdleipkyuj\"}}";
  http_in_doc_req r = {"POST", "/events", &q, &h, NULL, body, strlen(body)};
  char *doc = build(&r);
  CHECK_STR(doc, "{\"method\":\"POST\",\"path\":\"/events\",\"query\":{},"
                 "\"headers\":{\"host\":\"127.0.0.1:8080\","
                 "\"content-type\":\"application/json\","
                 "\"webhook-id\":\"msg_333a3NGSYKk1vyFtMgj9Qy8gm3y\","
                 "\"webhook-timestamp\":\"1758548009\","
                 "\"webhook-signature\":"
                 "\"v1,cVueLJYV5JY6qXHw3+MIHbZCPHHnX7N7jjaebaI2+5o=\"},"
                 "\"client\":null,"
                 "\"body\":{\"type\": \"meemoo.sip.archived\", "
                 "\"timestamp\": \"2025-09-03T20:26:10.344522Z\", "
                 "\"data\": {\"correlation_id\": "
                 "\"843e9ba457593d0edf69a24baa0babf3\", "
                 "\"outcome\": \"success\", \"pid\": \"kdleipkyuj\"}},"
                 "\"body_encoding\":\"json\"}");
  CHECK(doc && !strstr(doc, "secret-token"));
  free(doc);
  ceb_headers_clear(&h);
}

/* Repeated headers joined in order under the lower-cased name; repeated
 * query arguments as an array; the client; a text and a binary body. */
static void test_fields(void) {
  ceb_headers h = {0}, q = {0};
  add(&h, "Accept", "text/plain");
  add(&h, "X-Tag", "a");
  add(&h, "content-type", "text/csv");
  add(&h, "x-tag", "b");
  add(&h, "X-TAG", "c");
  add(&h, "Proxy-Authorization", "Basic eDp5");
  add(&q, "page", "2");
  add(&q, "tag", "x");
  add(&q, "flag", "");
  add(&q, "tag", "y");
  add(&q, "tag", "z");
  add(&q, "\xff", "\xfe");
  const char *csv = "id,name\n1,\"a\"\n";
  http_in_doc_req r = {"POST",      "/in/csv", &q,         &h,
                       "partner-7", csv,       strlen(csv)};
  char *doc = build(&r);
  CHECK_STR(
      doc, "{\"method\":\"POST\",\"path\":\"/in/csv\","
           "\"query\":{\"page\":\"2\",\"tag\":[\"x\",\"y\",\"z\"],"
           "\"flag\":\"\",\"/w==\":\"/g==\"},"
           "\"headers\":{\"accept\":\"text/plain\",\"x-tag\":\"a, b, c\","
           "\"content-type\":\"text/csv\"},"
           "\"client\":\"partner-7\","
           "\"body\":\"id,name\\n1,\\\"a\\\"\\n\",\"body_encoding\":\"text\"}");
  free(doc);
  ceb_headers_clear(&h);

  add(&h, "Content-Type", "application/octet-stream");
  static const unsigned char bin[] = {0x00, 0xff, 0x10, 0x80};
  http_in_doc_req b = {"POST", "/", NULL, &h, NULL, bin, sizeof bin};
  doc = build(&b);
  json_t *j = doc ? json_loads(doc, 0, NULL) : NULL;
  CHECK_STR(json_string_value(json_object_get(j, "body")), "AP8QgA==");
  CHECK_STR(json_string_value(json_object_get(j, "body_encoding")), "base64");
  CHECK(json_object_size(json_object_get(j, "query")) == 0);
  json_decref(j);
  free(doc);

  /* a JSON content type whose body does not parse: given as text, the
   * mapping decides */
  ceb_headers_clear(&h);
  add(&h, "Content-Type", "application/json");
  http_in_doc_req t = {"POST", "/", NULL, &h, NULL, "{\"a\":", 5};
  doc = build(&t);
  j = doc ? json_loads(doc, 0, NULL) : NULL;
  CHECK_STR(json_string_value(json_object_get(j, "body")), "{\"a\":");
  CHECK_STR(json_string_value(json_object_get(j, "body_encoding")), "text");
  json_decref(j);
  free(doc);
  ceb_headers_clear(&h);
  ceb_headers_clear(&q);
}

int main(void) {
  test_webhook();
  test_fields();
  return ceb_test_done("unit_http_in_doc");
}
