#include "kafka_record.h"

#include <string.h>

#define CE_PREFIX "ce_"

void kafka_record_clear(kafka_record *r) {
  if (r->headers) rd_kafka_headers_destroy(r->headers);
  ceb_free(r->owned);
  memset(r, 0, sizeof *r);
}

static int add_header(rd_kafka_headers_t *h, const char *name,
                      const char *value) {
  return rd_kafka_header_add(h, name, -1, value, (ssize_t)strlen(value)) ==
                 RD_KAFKA_RESP_ERR_NO_ERROR
             ? CEB_OK
             : CEB_ENOMEM;
}

static int build_binary(const ceb_event *ev, kafka_record *r) {
  size_t n = ceb_event_attr_count(ev);
  r->headers = rd_kafka_headers_new(n + 1);
  if (!r->headers) return CEB_ENOMEM;
  char hname[sizeof CE_PREFIX + CEB_ATTR_NAME_MAX];
  for (size_t i = 0; i < n; i++) {
    const char *name, *value;
    if (ceb_event_attr_at(ev, i, &name, &value, NULL) != CEB_OK)
      return CEB_EINVAL;
    if (!strcmp(name, "datacontenttype")) continue; /* content-type below */
    size_t len = strlen(name);
    if (len > CEB_ATTR_NAME_MAX) return CEB_EINVAL;
    memcpy(hname, CE_PREFIX, sizeof CE_PREFIX - 1);
    memcpy(hname + sizeof CE_PREFIX - 1, name, len + 1);
    int rc = add_header(r->headers, hname, value);
    if (rc != CEB_OK) return rc;
  }
  const char *ct = ceb_event_get(ev, "datacontenttype");
  if (!ct && ceb_event_data_kind(ev) == CEB_DATA_JSON)
    ct = "application/json"; /* implied by the JSON format; made explicit */
  if (ct) {
    int rc = add_header(r->headers, "content-type", ct);
    if (rc != CEB_OK) return rc;
  }
  r->value = ceb_event_data(ev, &r->value_len);
  if (!r->value) r->value_len = 0;
  return CEB_OK;
}

static int build_structured(const ceb_event *ev, const char *json,
                            size_t json_len, kafka_record *r) {
  if (json) { /* the journal's bytes: the JSON format already */
    r->value = json;
    r->value_len = json_len;
  } else {
    int rc = ceb_json_encode(ev, &r->owned, &r->value_len);
    if (rc != CEB_OK) return rc;
    r->value = r->owned;
  }
  r->headers = rd_kafka_headers_new(1);
  if (!r->headers) return CEB_ENOMEM;
  return add_header(r->headers, "content-type", "application/cloudevents+json");
}

int kafka_record_build(const ceb_event *ev, ceb_mode mode, const char *key_attr,
                       const char *json, size_t json_len, kafka_record *r) {
  memset(r, 0, sizeof *r);
  if (!ev || (mode != CEB_MODE_BINARY && mode != CEB_MODE_STRUCTURED))
    return CEB_EINVAL;
  if (key_attr && (r->key = ceb_event_get(ev, key_attr)))
    r->key_len = strlen(r->key);
  int rc = mode == CEB_MODE_BINARY ? build_binary(ev, r)
                                   : build_structured(ev, json, json_len, r);
  if (rc != CEB_OK) kafka_record_clear(r);
  return rc;
}
