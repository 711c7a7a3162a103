/* The Kafka source's input document (kafka_doc.h). */
#include "kafka_doc.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include <ceb/status.h>

#include "input_doc.h"

void kafka_doc_rec_of(const rd_kafka_message_t *m, kafka_doc_rec *r) {
  rd_kafka_headers_t *h = NULL;
  memset(r, 0, sizeof *r);
  r->topic = rd_kafka_topic_name(m->rkt);
  r->partition = m->partition;
  r->offset = m->offset;
  r->timestamp_ms = rd_kafka_message_timestamp(m, &r->tstype);
  r->key = m->key;
  r->key_len = m->key_len;
  r->value = m->payload;
  r->len = m->len;
  if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR)
    r->headers = h;
}

static const char *tstype_name(rd_kafka_timestamp_type_t t) {
  switch (t) {
  case RD_KAFKA_TIMESTAMP_CREATE_TIME:
    return "create_time";
  case RD_KAFKA_TIMESTAMP_LOG_APPEND_TIME:
    return "log_append_time";
  default:
    return NULL;
  }
}

/* headers and header_list; *ct the last content-type header as a string
 * (NUL-terminated copy in ct, "" when absent or too long to be one). */
static int add_headers(json_t *doc, const rd_kafka_headers_t *h, char *ct,
                       size_t ctsz, int *has_ct) {
  json_t *map = json_object(), *list = json_array();
  if (!map || !list || json_object_set_new(doc, "headers", map)) {
    json_decref(list);
    return CEB_ENOMEM;
  }
  if (json_object_set_new(doc, "header_list", list)) return CEB_ENOMEM;
  *has_ct = 0;
  const char *name;
  const void *val;
  size_t size;
  for (size_t i = 0; h && !rd_kafka_header_get_all(h, i, &name, &val, &size);
       i++) {
    if (idoc_add_pair(map, list, name, val, size) != CEB_OK) return CEB_ENOMEM;
    if (strcmp(name, "content-type") == 0) {
      *has_ct = 1;
      int fits = val && size < ctsz && !memchr(val, '\0', size);
      if (fits) memcpy(ct, val, size);
      ct[fits ? size : 0] = '\0';
    }
  }
  return CEB_OK;
}

int kafka_doc_build(const kafka_doc_rec *r, char **out, size_t *out_len) {
  json_t *doc = json_object();
  char ct[256];
  int has_ct = 0;
  int rc = doc ? CEB_OK : CEB_ENOMEM;
  if (rc == CEB_OK) rc = idoc_set_str(doc, "topic", r->topic);
  if (rc == CEB_OK &&
      (json_object_set_new(doc, "partition", json_integer(r->partition)) ||
       json_object_set_new(doc, "offset", json_integer(r->offset)) ||
       json_object_set_new(doc, "timestamp",
                           r->timestamp_ms >= 0 ? json_integer(r->timestamp_ms)
                                                : json_null())))
    rc = CEB_ENOMEM;
  if (rc == CEB_OK)
    rc = idoc_set_str(doc, "timestamp_type",
                      r->timestamp_ms >= 0 ? tstype_name(r->tstype) : NULL);
  if (rc == CEB_OK) {
    int b64 = 0;
    json_t *k = r->key ? idoc_text(r->key, r->key_len, &b64) : json_null();
    if (!k || json_object_set_new(doc, "key", k))
      rc = CEB_ENOMEM;
    else
      rc = idoc_set_str(doc, "key_encoding",
                        !r->key ? NULL
                        : b64   ? "base64"
                                : "text");
  }
  if (rc == CEB_OK) rc = add_headers(doc, r->headers, ct, sizeof ct, &has_ct);
  /* A content-type header that is not a usable string is a type we do not
   * know (""): not JSON, so the value is given as text or base64. */
  if (rc == CEB_OK)
    rc = idoc_dump_payload(doc, "value", r->value, r->len, has_ct ? ct : NULL,
                           out, out_len);
  json_decref(doc);
  return rc;
}
