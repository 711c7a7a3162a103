/* The MQTT source's input document (mqtt_doc.h). libmosquitto reads the
 * properties (its read functions copy: freed here). */
#include "mqtt_doc.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <mqtt_protocol.h>

#include <ceb/status.h>

#include "input_doc.h"

/* Sets doc[field] to a string property (or null); *copy keeps it when
 * wanted (the caller frees), else it is freed here. */
static int add_str_prop(json_t *doc, const char *field,
                        const mosquitto_property *props, int id, char **copy) {
  char *v = NULL;
  if (props) mosquitto_property_read_string(props, id, &v, false);
  int rc = idoc_set_str(doc, field, v);
  if (copy)
    *copy = v;
  else
    free(v);
  return rc;
}

static int add_correlation(json_t *doc, const mosquitto_property *props) {
  void *v = NULL;
  uint16_t len = 0;
  if (props)
    mosquitto_property_read_binary(props, MQTT_PROP_CORRELATION_DATA, &v, &len,
                                   false);
  int b64 = 0, has = v != NULL;
  json_t *j = has ? idoc_text(v, len, &b64) : json_null();
  free(v);
  if (!j || json_object_set_new(doc, "correlation_data", j)) return CEB_ENOMEM;
  return idoc_set_str(doc, "correlation_data_encoding",
                      !has  ? NULL
                      : b64 ? "base64"
                            : "text");
}

static int add_user_props(json_t *doc, const mosquitto_property *props) {
  json_t *map = json_object(), *list = json_array();
  if (!map || !list || json_object_set_new(doc, "user_properties", map)) {
    json_decref(list);
    return CEB_ENOMEM;
  }
  if (json_object_set_new(doc, "user_property_list", list)) return CEB_ENOMEM;
  const mosquitto_property *p = props;
  char *k = NULL, *v = NULL;
  int skip = 0, rc = CEB_OK;
  while (p && rc == CEB_OK &&
         (p = mosquitto_property_read_string_pair(p, MQTT_PROP_USER_PROPERTY,
                                                  &k, &v, skip))) {
    skip = 1;
    rc = idoc_add_pair(map, list, k, v, strlen(v));
    free(k);
    free(v);
  }
  return rc;
}

int mqtt_doc_build(const mqtt_doc_msg *m, char **out, size_t *out_len) {
  json_t *doc = json_object();
  char *ct = NULL;
  uint8_t pfi = 0;
  int has_pfi = m->props && mosquitto_property_read_byte(
                                m->props, MQTT_PROP_PAYLOAD_FORMAT_INDICATOR,
                                &pfi, false) != NULL;
  int rc = doc ? CEB_OK : CEB_ENOMEM;
  if (rc == CEB_OK) rc = idoc_set_str(doc, "topic", m->topic);
  if (rc == CEB_OK &&
      (json_object_set_new(doc, "qos", json_integer(m->qos)) ||
       json_object_set_new(doc, "retain", json_boolean(m->retain))))
    rc = CEB_ENOMEM;
  if (rc == CEB_OK)
    rc = add_str_prop(doc, "content_type", m->props, MQTT_PROP_CONTENT_TYPE,
                      &ct);
  if (rc == CEB_OK &&
      json_object_set_new(doc, "payload_format",
                          has_pfi ? json_integer(pfi) : json_null()))
    rc = CEB_ENOMEM;
  if (rc == CEB_OK)
    rc = add_str_prop(doc, "response_topic", m->props, MQTT_PROP_RESPONSE_TOPIC,
                      NULL);
  if (rc == CEB_OK) rc = add_correlation(doc, m->props);
  if (rc == CEB_OK) rc = add_user_props(doc, m->props);
  if (rc == CEB_OK)
    rc = idoc_dump_payload(doc, "payload", m->payload ? m->payload : "", m->len,
                           ct, out, out_len);
  free(ct);
  json_decref(doc);
  return rc;
}
