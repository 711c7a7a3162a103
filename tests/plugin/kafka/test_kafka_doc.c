/* plugins/kafka/kafka_doc.c: the Kafka source's input document, field by
 * field (kafka_doc.h), from records built with librdkafka's own header
 * list (no broker needed). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "kafka_doc.h"

static char *build(const kafka_doc_rec *r) {
  char *out = NULL;
  size_t len = 0;
  CHECK_INT(kafka_doc_build(r, &out, &len), CEB_OK);
  CHECK(out && strlen(out) == len);
  return out;
}

/* A plain JSON record with the id in a header (contrib/mappings/
 * kafka-plain-json.jq's input): every field, byte for byte. */
static void test_plain_json(void) {
  rd_kafka_headers_t *h = rd_kafka_headers_new(4);
  rd_kafka_header_add(h, "event-id", -1, "sis-0001", -1);
  rd_kafka_header_add(h, "trace", -1, "t-1", -1);
  rd_kafka_header_add(h, "trace", -1, "t-2", -1);
  rd_kafka_header_add(h, "empty", -1, NULL, 0);
  const char *v = "{\"student\":\"s-42\",\"status\":\"enrolled\"}";
  kafka_doc_rec r = {
      "sis.enrolments", 3, 1207, 1758548009123, RD_KAFKA_TIMESTAMP_CREATE_TIME,
      "s-42",           4, v,    strlen(v),     h};
  char *doc = build(&r);
  CHECK_STR(doc,
            "{\"topic\":\"sis.enrolments\",\"partition\":3,\"offset\":1207,"
            "\"timestamp\":1758548009123,\"timestamp_type\":\"create_time\","
            "\"key\":\"s-42\",\"key_encoding\":\"text\","
            "\"headers\":{\"event-id\":\"sis-0001\",\"trace\":\"t-2\","
            "\"empty\":null},"
            "\"header_list\":[{\"name\":\"event-id\",\"value\":\"sis-0001\"},"
            "{\"name\":\"trace\",\"value\":\"t-1\"},"
            "{\"name\":\"trace\",\"value\":\"t-2\"},"
            "{\"name\":\"empty\",\"value\":null}],"
            "\"value\":{\"student\":\"s-42\",\"status\":\"enrolled\"},"
            "\"value_encoding\":\"json\"}");
  free(doc);
  rd_kafka_headers_destroy(h);
}

static json_t *parse(char *doc) {
  json_t *j = doc ? json_loads(doc, 0, NULL) : NULL;
  CHECK(j != NULL);
  free(doc);
  return j;
}

/* No key, no headers, no timestamp; a tombstone; binary key, header and
 * value; a content-type header that says the value is not JSON. */
static void test_edges(void) {
  kafka_doc_rec r = {"t",  0, 0,    -1, RD_KAFKA_TIMESTAMP_NOT_AVAILABLE,
                     NULL, 0, NULL, 0,  NULL};
  json_t *j = parse(build(&r));
  CHECK(json_is_null(json_object_get(j, "key")));
  CHECK(json_is_null(json_object_get(j, "key_encoding")));
  CHECK(json_is_null(json_object_get(j, "timestamp")));
  CHECK(json_is_null(json_object_get(j, "timestamp_type")));
  CHECK(json_is_null(json_object_get(j, "value")));
  CHECK(json_is_null(json_object_get(j, "value_encoding")));
  CHECK(json_object_size(json_object_get(j, "headers")) == 0);
  CHECK(json_array_size(json_object_get(j, "header_list")) == 0);
  json_decref(j);

  rd_kafka_headers_t *h = rd_kafka_headers_new(2);
  rd_kafka_header_add(h, "sig", -1, "\x01\xff", 2);
  rd_kafka_header_add(h, "content-type", -1, "text/plain", -1);
  r = (kafka_doc_rec){
      "t",    1, 9223372036854775806LL, 5, RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME,
      "\x80", 1, "{\"a\":1}",           7, h};
  j = parse(build(&r));
  CHECK_STR(json_string_value(json_object_get(j, "key")), "gA==");
  CHECK_STR(json_string_value(json_object_get(j, "key_encoding")), "base64");
  CHECK_INT(json_integer_value(json_object_get(j, "offset")),
            9223372036854775806LL);
  CHECK_STR(json_string_value(json_object_get(j, "timestamp_type")),
            "log_append_time");
  CHECK_STR(
      json_string_value(json_object_get(json_object_get(j, "headers"), "sig")),
      "Af8=");
  json_t *e0 = json_array_get(json_object_get(j, "header_list"), 0);
  CHECK_STR(json_string_value(json_object_get(e0, "encoding")), "base64");
  /* text/plain: the JSON-looking value stays a string */
  CHECK_STR(json_string_value(json_object_get(j, "value")), "{\"a\":1}");
  CHECK_STR(json_string_value(json_object_get(j, "value_encoding")), "text");
  json_decref(j);
  rd_kafka_headers_destroy(h);

  /* a non-JSON, non-UTF-8 value (Avro, protobuf): base64 */
  static const unsigned char avro[] = {0x00, 0x00, 0x00, 0x00, 0x01, 0xc8};
  r = (kafka_doc_rec){
      "t",  0, 1,    1,           RD_KAFKA_TIMESTAMP_CREATE_TIME,
      NULL, 0, avro, sizeof avro, NULL};
  j = parse(build(&r));
  CHECK_STR(json_string_value(json_object_get(j, "value")), "AAAAAAHI");
  CHECK_STR(json_string_value(json_object_get(j, "value_encoding")), "base64");
  json_decref(j);
}

int main(void) {
  test_plain_json();
  test_edges();
  return ceb_test_done("unit_kafka_doc");
}
