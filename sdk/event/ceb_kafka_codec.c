/* Kafka protocol binding (CloudEvents 1.0.2 kafka-protocol-binding.md):
 * binary mode with ce_* headers (values are UTF-8, not percent-encoded) and a
 * content-type header; structured mode when content-type is
 * application/cloudevents+json. The record key maps to `partitionkey`. */
#include "ceb_event_internal.h"

#include <stdlib.h>
#include <string.h>

static const cebi_binding k_kafka = {"ce_", 0, 1, NULL, "kafka"};

/* A key that is not UTF-8 text (e.g. a serialised binary key) cannot be a
 * string attribute; it is left unmapped rather than failing the record. */
static int map_key(ceb_event *ev, const void *key, size_t key_len,
                   ceb_error *err) {
  if (!key || !key_len || ceb_event_get(ev, "partitionkey") ||
      key_len > CEB_ATTR_VALUE_MAX || !cebi_utf8_valid(key, key_len))
    return CEB_OK;
  char *k = cebi_memdup(key, key_len);
  int rc = k ? ceb_event_set(ev, "partitionkey", k) : CEB_ENOMEM;
  free(k);
  return rc == CEB_OK ? rc : cebi_fail(err, rc, "ce.nomem", "out of memory");
}

int ceb_kafka_decode(const ceb_headers *headers, const void *key,
                     size_t key_len, const void *value, size_t len,
                     ceb_event **out, ceb_error *err) {
  ceb_error_clear(err);
  if (!out || (!value && len) || (!key && key_len))
    return cebi_fail(err, CEB_EINVAL, "ce.arg", "invalid argument");
  *out = NULL;
  const char *ct = ceb_headers_get(headers, "content-type");
  ceb_event *ev = NULL;
  int rc;
  switch (ceb_http_mode_of(ct)) {
  case CEB_MODE_STRUCTURED:
    rc = ceb_json_decode(value, len, &ev, err);
    break;
  case CEB_MODE_BATCH:
    return cebi_fail(err, CEB_EINVAL, "kafka.batch",
                     "the Kafka binding has no batch mode");
  default:
    rc = cebi_binary_decode(&k_kafka, headers, ct, value, len, &ev, err);
  }
  if (rc == CEB_OK) rc = map_key(ev, key, key_len, err);
  if (rc != CEB_OK) {
    ceb_event_unref(ev);
    return rc;
  }
  *out = ev;
  return CEB_OK;
}

int ceb_kafka_encode(const ceb_event *ev, ceb_mode mode, const char *key_attr,
                     ceb_headers *headers, char **key, size_t *key_len,
                     char **value, size_t *len) {
  if (!ev || !headers || !key || !key_len || !value || !len) return CEB_EINVAL;
  *key = *value = NULL;
  *key_len = *len = 0;
  if (mode != CEB_MODE_BINARY && mode != CEB_MODE_STRUCTURED) return CEB_EINVAL;
  const char *k = ceb_event_get(ev, key_attr ? key_attr : "partitionkey");
  if (k && !(*key = strdup(k))) return CEB_ENOMEM;
  size_t first = headers->count;
  char *ct = NULL;
  int rc;
  if (mode == CEB_MODE_STRUCTURED) {
    rc = ceb_json_encode(ev, value, len);
    if (rc == CEB_OK && !(ct = strdup("application/cloudevents+json")))
      rc = CEB_ENOMEM;
  } else {
    rc = cebi_binary_encode(&k_kafka, ev, headers, &ct, value, len);
  }
  if (rc == CEB_OK && ct)
    rc = ceb_headers_add(headers, "content-type", ct, strlen(ct));
  free(ct);
  if (rc != CEB_OK) {
    while (headers->count > first) {
      headers->count--;
      free(headers->items[headers->count].name);
      free(headers->items[headers->count].value);
    }
    free(*key);
    free(*value);
    *key = *value = NULL;
    *key_len = *len = 0;
    return rc;
  }
  *key_len = *key ? strlen(*key) : 0;
  return CEB_OK;
}
