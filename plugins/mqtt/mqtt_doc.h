/* The MQTT source's input document: what a PUBLISH becomes for the
 * source's `map` program (include/ceb/plugin.h). Fields, in this order
 * (docs/integration-guide.md, "Input documents", is the reference):
 *
 *   topic                      the topic it was published to
 *   qos                        0, 1 or 2 (as delivered to the bridge)
 *   retain                     true for a retained message
 *   content_type               the Content Type property, or null
 *   payload_format             1 (UTF-8 declared), 0, or null (property
 *                              absent; always null over MQTT 3.1.1)
 *   response_topic             the Response Topic property, or null
 *   correlation_data           the Correlation Data property as a string
 *                              when UTF-8, else its base64; or null
 *   correlation_data_encoding  "text", "base64", or null
 *   user_properties            object: name -> value; a name given more
 *                              than once keeps its last value here
 *   user_property_list         every user property in order: {"name",
 *                              "value"}
 *   payload                    parsed as JSON when the content type is a
 *                              JSON one or absent and it parses; else as a
 *                              string when UTF-8; else its base64
 *                              (input_doc.h)
 *   payload_encoding           "json", "text" or "base64"
 *
 * MQTT 3.1.1 has no properties: those fields are null or empty.
 * Reentrant: everything is the caller's or borrowed for the call. */
#ifndef MQTT_DOC_H
#define MQTT_DOC_H

#include <stdbool.h>
#include <stddef.h>

#include <mosquitto.h>

typedef struct mqtt_doc_msg {
  const char *topic;
  int qos;
  bool retain;
  const void *payload;
  size_t len;
  const mosquitto_property *props; /* NULL: none (3.1.1) */
} mqtt_doc_msg;

/* Builds m's document. CEB_OK with *out malloc'd and NUL-terminated (free
 * with free()) and *out_len its length, or CEB_ENOMEM. */
int mqtt_doc_build(const mqtt_doc_msg *m, char **out, size_t *out_len);

#endif
