#include "kafka_record.h"

#include <string.h>
#include <strings.h>

void kafka_record_clear(kafka_record *r) {
  if (r->headers) rd_kafka_headers_destroy(r->headers);
  ceb_free(r->owned);
  memset(r, 0, sizeof *r);
}

/* Header visitor: straight into the rd_kafka_headers_t. */
static int add_header(void *arg, const char *name, const char *value,
                      size_t len) {
  return rd_kafka_header_add(arg, name, -1, value, (ssize_t)len) ==
                 RD_KAFKA_RESP_ERR_NO_ERROR
             ? CEB_OK
             : CEB_ENOMEM;
}

int kafka_record_build(const ceb_event *ev, ceb_mode mode, const char *key_attr,
                       const char *json, size_t json_len, kafka_record *r) {
  memset(r, 0, sizeof *r);
  if (!ev || (mode != CEB_MODE_BINARY && mode != CEB_MODE_STRUCTURED))
    return CEB_EINVAL;
  r->headers = rd_kafka_headers_new(
      mode == CEB_MODE_BINARY ? ceb_event_attr_count(ev) + 1 : 1);
  if (!r->headers) return CEB_ENOMEM;
  /* the SDK's one mapping (ceb_kafka_encode walks the same) */
  ceb_kafka_parts p;
  int rc = ceb_kafka_visit(ev, mode, key_attr, add_header, r->headers, &p);
  if (rc == CEB_OK) {
    r->key = p.key;
    r->key_len = p.key_len;
    r->value = p.value;
    r->value_len = p.value_len;
    if (mode == CEB_MODE_STRUCTURED && json) {
      /* the journal's bytes: the JSON format already */
      r->value = json;
      r->value_len = json_len;
    } else if (mode == CEB_MODE_STRUCTURED) {
      rc = ceb_json_encode(ev, &r->owned, &r->value_len);
      r->value = r->owned;
    }
  }
  if (rc != CEB_OK) kafka_record_clear(r);
  return rc;
}

int kafka_record_mapped(const ceb_mapped_out *mo, const ceb_event *ev,
                        const char *key_attr, kafka_record *r) {
  memset(r, 0, sizeof *r);
  r->headers = rd_kafka_headers_new(mo->nheaders + 1);
  if (!r->headers) return CEB_ENOMEM;
  int rc = add_header(r->headers, "content-type", mo->content_type,
                      strlen(mo->content_type));
  for (size_t i = 0; rc == CEB_OK && i < mo->nheaders; i++) {
    const ceb_mapped_header *h = &mo->headers[i];
    if (strcasecmp(h->name, "content-type") == 0) continue;
    rc = add_header(r->headers, h->name, h->value, strlen(h->value));
  }
  if (rc != CEB_OK) {
    kafka_record_clear(r);
    return rc;
  }
  r->key = mo->key          ? mo->key
           : key_attr && ev ? ceb_event_get(ev, key_attr)
                            : NULL;
  r->key_len = r->key ? strlen(r->key) : 0;
  r->value = mo->body;
  r->value_len = mo->body_len;
  return CEB_OK;
}
