/* plugins/mqtt/mqtt_doc.c: the MQTT source's input document, field by
 * field (mqtt_doc.h), from property lists built with libmosquitto's own
 * functions (no broker needed). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <mqtt_protocol.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "mqtt_doc.h"

static char *build(const mqtt_doc_msg *m) {
  char *out = NULL;
  size_t len = 0;
  CHECK_INT(mqtt_doc_build(m, &out, &len), CEB_OK);
  CHECK(out && strlen(out) == len);
  return out;
}

/* An MQTT 5 device reading with every property the document gives. */
static void test_v5(void) {
  mosquitto_property *p = NULL;
  CHECK_INT(mosquitto_property_add_string(&p, MQTT_PROP_CONTENT_TYPE,
                                          "application/json"),
            MOSQ_ERR_SUCCESS);
  CHECK_INT(
      mosquitto_property_add_byte(&p, MQTT_PROP_PAYLOAD_FORMAT_INDICATOR, 1),
      MOSQ_ERR_SUCCESS);
  CHECK_INT(mosquitto_property_add_string(&p, MQTT_PROP_RESPONSE_TOPIC,
                                          "replies/dev-9"),
            MOSQ_ERR_SUCCESS);
  CHECK_INT(mosquitto_property_add_binary(&p, MQTT_PROP_CORRELATION_DATA,
                                          "\x01\x02\xff", 3),
            MOSQ_ERR_SUCCESS);
  CHECK_INT(mosquitto_property_add_string_pair(&p, MQTT_PROP_USER_PROPERTY,
                                               "device", "dev-9"),
            MOSQ_ERR_SUCCESS);
  CHECK_INT(mosquitto_property_add_string_pair(&p, MQTT_PROP_USER_PROPERTY,
                                               "unit", "C"),
            MOSQ_ERR_SUCCESS);
  CHECK_INT(mosquitto_property_add_string_pair(&p, MQTT_PROP_USER_PROPERTY,
                                               "unit", "K"),
            MOSQ_ERR_SUCCESS);
  const char *pl = "{\"temp\": 21.5, \"seq\": 7}";
  mqtt_doc_msg m = {"campus/b1/temp", 1, true, pl, strlen(pl), p};
  char *doc = build(&m);
  CHECK_STR(doc,
            "{\"topic\":\"campus/b1/temp\",\"qos\":1,\"retain\":true,"
            "\"content_type\":\"application/json\",\"payload_format\":1,"
            "\"response_topic\":\"replies/dev-9\","
            "\"correlation_data\":\"AQL/\","
            "\"correlation_data_encoding\":\"base64\","
            "\"user_properties\":{\"device\":\"dev-9\",\"unit\":\"K\"},"
            "\"user_property_list\":[{\"name\":\"device\",\"value\":\"dev-9\"},"
            "{\"name\":\"unit\",\"value\":\"C\"},"
            "{\"name\":\"unit\",\"value\":\"K\"}],"
            "\"payload\":{\"temp\": 21.5, \"seq\": 7},"
            "\"payload_encoding\":\"json\"}");
  free(doc);
  mosquitto_property_free_all(&p);
}

/* MQTT 3.1.1 (no properties): a plain JSON payload is parsed, a text one
 * kept, a binary one base64. */
static void test_v311(void) {
  mqtt_doc_msg m = {"dev/1", 0, false, "[1,2]", 5, NULL};
  char *doc = build(&m);
  CHECK_STR(doc, "{\"topic\":\"dev/1\",\"qos\":0,\"retain\":false,"
                 "\"content_type\":null,\"payload_format\":null,"
                 "\"response_topic\":null,\"correlation_data\":null,"
                 "\"correlation_data_encoding\":null,"
                 "\"user_properties\":{},\"user_property_list\":[],"
                 "\"payload\":[1,2],\"payload_encoding\":\"json\"}");
  free(doc);

  m = (mqtt_doc_msg){"dev/1", 2, false, "on", 2, NULL};
  json_t *j = json_loads((doc = build(&m)), 0, NULL);
  CHECK_STR(json_string_value(json_object_get(j, "payload")), "on");
  CHECK_STR(json_string_value(json_object_get(j, "payload_encoding")), "text");
  CHECK_INT(json_integer_value(json_object_get(j, "qos")), 2);
  json_decref(j);
  free(doc);

  m = (mqtt_doc_msg){"dev/1", 1, false, "\xde\xad\xbe\xef", 4, NULL};
  j = json_loads((doc = build(&m)), 0, NULL);
  CHECK_STR(json_string_value(json_object_get(j, "payload")), "3q2+7w==");
  CHECK_STR(json_string_value(json_object_get(j, "payload_encoding")),
            "base64");
  json_decref(j);
  free(doc);

  /* an empty payload is text "" */
  m = (mqtt_doc_msg){"dev/1", 1, false, NULL, 0, NULL};
  j = json_loads((doc = build(&m)), 0, NULL);
  CHECK_STR(json_string_value(json_object_get(j, "payload")), "");
  json_decref(j);
  free(doc);
}

/* A content type that is not JSON keeps a JSON-looking payload as text;
 * a UTF-8 correlation data is text. */
static void test_text_type(void) {
  mosquitto_property *p = NULL;
  mosquitto_property_add_string(&p, MQTT_PROP_CONTENT_TYPE, "text/plain");
  mosquitto_property_add_binary(&p, MQTT_PROP_CORRELATION_DATA, "req-1", 5);
  mqtt_doc_msg m = {"dev/2", 1, false, "{\"a\":1}", 7, p};
  char *doc = build(&m);
  json_t *j = json_loads(doc, 0, NULL);
  CHECK_STR(json_string_value(json_object_get(j, "payload")), "{\"a\":1}");
  CHECK_STR(json_string_value(json_object_get(j, "payload_encoding")), "text");
  CHECK_STR(json_string_value(json_object_get(j, "correlation_data")), "req-1");
  CHECK_STR(json_string_value(json_object_get(j, "correlation_data_encoding")),
            "text");
  CHECK(json_is_null(json_object_get(j, "payload_format")));
  json_decref(j);
  free(doc);
  mosquitto_property_free_all(&p);
}

int main(void) {
  test_v5();
  test_v311();
  test_text_type();
  return ceb_test_done("unit_mqtt_doc");
}
