/* MQTT protocol binding (CloudEvents 1.0.2 mqtt-protocol-binding.md).
 * MQTT 5: binary mode maps every user property to the attribute of the same
 * name (no prefix, names kept as sent) and the Content Type property to
 * datacontenttype; structured mode when the content type is
 * application/cloudevents+json. MQTT 3.1.1 (version 4) has no properties, so
 * only structured mode exists there. */
#include "ceb_event_internal.h"

#include <stdlib.h>
#include <string.h>

static const cebi_binding k_mqtt = {"", 0, 0, NULL, "mqtt"};

int ceb_mqtt_decode(int mqtt_version, const ceb_headers *user_props,
                    const char *content_type, const void *payload, size_t len,
                    ceb_event **out, ceb_error *err) {
  ceb_error_clear(err);
  if (!out || (!payload && len))
    return cebi_fail(err, CEB_EINVAL, "ce.arg", "invalid argument");
  *out = NULL;
  if (mqtt_version == 4) return ceb_json_decode(payload, len, out, err);
  if (mqtt_version != 5)
    return cebi_fail(err, CEB_EINVAL, "mqtt.version",
                     "unsupported MQTT protocol version %d (4 or 5)",
                     mqtt_version);
  switch (ceb_http_mode_of(content_type)) {
  case CEB_MODE_STRUCTURED:
    return ceb_json_decode(payload, len, out, err);
  case CEB_MODE_BATCH:
    return cebi_fail(err, CEB_EINVAL, "mqtt.batch",
                     "the MQTT binding has no batch mode");
  default:
    return cebi_binary_decode(&k_mqtt, user_props, content_type, payload, len,
                              out, err);
  }
}

int ceb_mqtt_encode(const ceb_event *ev, int mqtt_version, ceb_mode mode,
                    ceb_headers *user_props, char **content_type,
                    char **payload, size_t *len) {
  if (!ev || !content_type || !payload || !len) return CEB_EINVAL;
  *content_type = *payload = NULL;
  *len = 0;
  if (mqtt_version != 4 && mqtt_version != 5) return CEB_EINVAL;
  if (mode == CEB_MODE_STRUCTURED) {
    int rc = ceb_json_encode(ev, payload, len);
    if (rc != CEB_OK || mqtt_version == 4) return rc;
    if (!(*content_type = strdup("application/cloudevents+json"))) {
      free(*payload);
      *payload = NULL;
      *len = 0;
      return CEB_ENOMEM;
    }
    return CEB_OK;
  }
  if (mode != CEB_MODE_BINARY || mqtt_version != 5 || !user_props)
    return CEB_EINVAL;
  return cebi_binary_encode(&k_mqtt, ev, user_props, content_type, payload,
                            len);
}
