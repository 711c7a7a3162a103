/* Kafka protocol binding (CloudEvents 1.0.2 kafka-protocol-binding.md):
 * binary mode with ce_* headers (values are UTF-8, not percent-encoded) and a
 * content-type header; structured mode when content-type is
 * application/cloudevents+json. The record key maps to `partitionkey`. */
#include "ceb_event_internal.h"

#include <stdlib.h>
#include <string.h>

static const cebi_binding k_kafka = {"ce_", 0, 1, NULL, "kafka"};

/* A key that is not UTF-8 text (e.g. a serialised binary key) cannot be a
 * string attribute; it is left unmapped rather than failing the record. So
 * is one that is UTF-8 but not a CloudEvents String (control characters,
 * noncharacters: a binary key that happens to decode): the key is the
 * producer's Kafka metadata, not an attribute the client set, and mapping
 * it would make the validator refuse the whole record. */
static int map_key(ceb_event *ev, const void *key, size_t key_len,
                   ceb_error *err) {
  if (!key || !key_len || ceb_event_get(ev, "partitionkey") ||
      key_len > CEB_ATTR_VALUE_MAX || !cebi_utf8_valid(key, key_len))
    return CEB_OK;
  char *k = cebi_memdup(key, key_len);
  if (k && cebi_ce_string_check(k, NULL, NULL) != CEBI_STR_OK) {
    free(k);
    return CEB_OK;
  }
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

/* The one Kafka mapping (ceb_kafka_visit in codec.h): ceb_kafka_encode and
 * the kafka sink's record builder both walk it. */
int ceb_kafka_visit(const ceb_event *ev, ceb_mode mode, const char *key_attr,
                    ceb_header_fn fn, void *arg, ceb_kafka_parts *parts) {
  if (!ev || !fn || !parts) return CEB_EINVAL;
  memset(parts, 0, sizeof *parts);
  if (mode != CEB_MODE_BINARY && mode != CEB_MODE_STRUCTURED) return CEB_EINVAL;
  if (key_attr && (parts->key = ceb_event_get(ev, key_attr)))
    parts->key_len = strlen(parts->key);
  if (mode == CEB_MODE_STRUCTURED) {
    static const char ct[] = "application/cloudevents+json";
    return fn(arg, "content-type", ct, sizeof ct - 1);
  }
  char hname[sizeof "ce_" + CEB_ATTR_NAME_MAX];
  size_t n = ceb_event_attr_count(ev);
  for (size_t i = 0; i < n; i++) {
    const char *name, *value;
    if (ceb_event_attr_at(ev, i, &name, &value, NULL) != CEB_OK)
      return CEB_EINVAL;
    if (!strcmp(name, "datacontenttype")) continue; /* content-type below */
    size_t len = strlen(name);
    if (len > CEB_ATTR_NAME_MAX) return CEB_EINVAL;
    memcpy(hname, "ce_", 3);
    memcpy(hname + 3, name, len + 1);
    int rc = fn(arg, hname, value, strlen(value));
    if (rc != CEB_OK) return rc;
  }
  const char *ct = ceb_event_get(ev, "datacontenttype");
  if (!ct && ceb_event_data_kind(ev) == CEB_DATA_JSON)
    ct = "application/json"; /* implied by the JSON format; made explicit */
  if (ct) {
    int rc = fn(arg, "content-type", ct, strlen(ct));
    if (rc != CEB_OK) return rc;
  }
  parts->value = ceb_event_data(ev, &parts->value_len);
  if (!parts->value) parts->value_len = 0;
  return CEB_OK;
}

static int add_to_headers(void *arg, const char *name, const char *value,
                          size_t len) {
  return ceb_headers_add(arg, name, value, len);
}

int ceb_kafka_encode(const ceb_event *ev, ceb_mode mode, const char *key_attr,
                     ceb_headers *headers, char **key, size_t *key_len,
                     char **value, size_t *len) {
  if (!ev || !headers || !key || !key_len || !value || !len) return CEB_EINVAL;
  *key = *value = NULL;
  *key_len = *len = 0;
  size_t first = headers->count;
  ceb_kafka_parts p;
  int rc = ceb_kafka_visit(ev, mode, key_attr ? key_attr : "partitionkey",
                           add_to_headers, headers, &p);
  if (rc == CEB_OK && p.key && !(*key = cebi_memdup(p.key, p.key_len)))
    rc = CEB_ENOMEM;
  if (rc == CEB_OK && mode == CEB_MODE_STRUCTURED)
    rc = ceb_json_encode(ev, value, len);
  else if (rc == CEB_OK && p.value) {
    if ((*value = cebi_memdup(p.value, p.value_len)))
      *len = p.value_len;
    else
      rc = CEB_ENOMEM;
  }
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
  *key_len = *key ? p.key_len : 0;
  return CEB_OK;
}
