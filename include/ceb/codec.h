/* cebridge public SDK: CloudEvents formats and protocol bindings.
 *
 * Every decoder returns CEB_OK and a new event owned by the caller, or a
 * negative status with `err` filled (err may be NULL). Decoders check the
 * structure the format or binding defines (JSON types, specversion, header
 * mapping, base64) but not the CloudEvents rules of the values themselves:
 * run ceb_event_validate() for that, so that a bad value is a validation
 * violation with a stable code, not a parse failure.
 *
 * Encoders write into caller-owned outputs; buffers they allocate are freed
 * with ceb_free(). All functions are reentrant and thread-safe. */
#ifndef CEB_CODEC_H
#define CEB_CODEC_H

#include <stddef.h>

#include "event.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Frees memory the SDK allocated for the caller. NULL is ignored. */
void ceb_free(void *p);

/* ---- header lists (HTTP headers, Kafka headers, MQTT user properties) ---- */

typedef struct ceb_header {
  char *name;  /* owned by the list */
  char *value; /* owned by the list; NUL-terminated */
  size_t value_len;
} ceb_header;

/* A growable ordered list; zero-initialise it (ceb_headers h = {0}). */
typedef struct ceb_headers {
  ceb_header *items;
  size_t count;
  size_t cap;
} ceb_headers;

/* Appends copies of name and value (value_len bytes). */
int ceb_headers_add(ceb_headers *h, const char *name, const char *value,
                    size_t value_len);
/* First value whose name matches case-insensitively, or NULL. Borrowed. */
const char *ceb_headers_get(const ceb_headers *h, const char *name);
/* Frees the entries and resets the list to empty. */
void ceb_headers_clear(ceb_headers *h);

/* ---- JSON event format (application/cloudevents+json) ---- */

/* Decodes one event. `data` holding a JSON value gives CEB_DATA_JSON (or
 * CEB_DATA_TEXT for a JSON string with a non-JSON datacontenttype); an
 * object or array is kept byte for byte as sent (spacing, number spelling);
 * `data_base64` gives CEB_DATA_BINARY. An extension set to null is unset.
 * Both data and data_base64 present, a non-object, a non-string context
 * attribute or an object/array extension value are errors. */
int ceb_json_decode(const char *buf, size_t len, ceb_event **out,
                    ceb_error *err);
/* ceb_json_decode for text that ceb_json_encode produced and that was kept
 * unchanged since (a journal, a queue): a JSON object or array in `data` is
 * taken as it is, without being parsed again. Never use it on input from
 * outside the process: that data would skip its JSON check. */
int ceb_json_decode_trusted(const char *buf, size_t len, ceb_event **out,
                            ceb_error *err);
/* Encodes one event; *out is NUL-terminated, free with ceb_free(). */
int ceb_json_encode(const ceb_event *ev, char **out, size_t *out_len);

/* ---- JSON batch format (application/cloudevents-batch+json) ---- */

/* Decodes a JSON array of events. On success *events is an array of *count
 * owned events (free with ceb_events_free). On error nothing is returned and
 * err->index names the failing element. An empty array is valid. */
int ceb_batch_decode(const char *buf, size_t len, ceb_event ***events,
                     size_t *count, ceb_error *err);
int ceb_batch_encode(ceb_event *const *events, size_t count, char **out,
                     size_t *out_len);
/* Unrefs each event and frees the array. */
void ceb_events_free(ceb_event **events, size_t count);

/* ---- HTTP protocol binding ---- */

typedef enum ceb_mode {
  CEB_MODE_BINARY = 0,
  CEB_MODE_STRUCTURED = 1,
  CEB_MODE_BATCH = 2
} ceb_mode;

/* Which mode a Content-Type selects: application/cloudevents+json ->
 * STRUCTURED, application/cloudevents-batch+json -> BATCH, anything else
 * (or none) -> BINARY. Parameters and case are ignored. */
ceb_mode ceb_http_mode_of(const char *content_type);
/* 1 when the media type is JSON: application/json, text/json, or any
 * "+json" suffix. NULL counts as JSON (the spec's default). */
int ceb_media_type_is_json(const char *content_type);
/* 1 when text (len bytes) is one JSON value (RFC 8259, any type) that
 * jansson reads with JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, checked
 * without building a tree; 0 means "not sure" (also for rare valid texts:
 * \u0000, very long integers, deep nesting): parse it then. Reentrant.
 * (Appended in ABI 1.2: the sources' mapping input documents carry a JSON
 * payload as it is when this says 1.) */
int ceb_json_valid(const char *text, size_t len);

/* Decodes one event from request headers and body: binary mode maps ce-*
 * headers (percent-decoded) and Content-Type -> datacontenttype; structured
 * mode parses the body. A batch content type is CEB_EINVAL here. */
int ceb_http_decode(const ceb_headers *headers, const void *body, size_t len,
                    ceb_event **out, ceb_error *err);
/* Encodes for HTTP. Binary: ce-* headers percent-encoded per the binding and
 * Content-Type from datacontenttype, body = data. Structured: Content-Type
 * application/cloudevents+json, body = JSON format. Headers are appended to
 * *headers; *body is freed with ceb_free (may be NULL when there is no data). */
int ceb_http_encode(const ceb_event *ev, ceb_mode mode, ceb_headers *headers,
                    char **body, size_t *len);

/* ---- Kafka protocol binding ---- */

/* Decodes a record: binary mode (ce_* headers, content-type header) unless the
 * content-type header is application/cloudevents+json (structured).
 * A record key is mapped to the partitionkey extension when that is absent. */
int ceb_kafka_decode(const ceb_headers *headers, const void *key,
                     size_t key_len, const void *value, size_t len,
                     ceb_event **out, ceb_error *err);
/* Encodes a record. key_attr names the attribute that becomes the record key
 * ("partitionkey" by default when NULL); *key is NULL when it is unset.
 * Free *key and *value with ceb_free. */
int ceb_kafka_encode(const ceb_event *ev, ceb_mode mode, const char *key_attr,
                     ceb_headers *headers, char **key, size_t *key_len,
                     char **value, size_t *len);

/* One record header for a visitor: name (NUL-terminated) and value_len
 * bytes of value, both borrowed for the call only. Return CEB_OK to go on;
 * any other status stops the walk and is returned by it. */
typedef int (*ceb_header_fn)(void *arg, const char *name, const char *value,
                             size_t value_len);

/* Key and value of a visited Kafka record, borrowed from the event. */
typedef struct ceb_kafka_parts {
  const char *key; /* the key_attr attribute's value; NULL: no key */
  size_t key_len;
  const void *value; /* binary mode: the data (NULL: none); structured: NULL,
                        the value is the JSON format (ceb_json_encode, or
                        the journal's bytes: ceb_delivery_encoded) */
  size_t value_len;
} ceb_kafka_parts;

/* The Kafka binding's mapping of ev, the one ceb_kafka_encode and the kafka
 * sink both use (ABI 1.1): calls fn for each header in order and fills
 * *parts. Binary mode: ce_<name> for every attribute but datacontenttype,
 * in the event's attribute order, values as they are (the binding does not
 * percent-encode), then content-type from datacontenttype (application/json
 * when unset and the data is JSON); structured mode: content-type
 * application/cloudevents+json only. key_attr names the attribute that
 * becomes the key; NULL: no key. CEB_OK, CEB_EINVAL (bad mode or event), or
 * fn's status. Reentrant. */
int ceb_kafka_visit(const ceb_event *ev, ceb_mode mode, const char *key_attr,
                    ceb_header_fn fn, void *arg, ceb_kafka_parts *parts);

/* ---- MQTT protocol binding ---- */

/* Decodes a PUBLISH. mqtt_version 5: binary mode from user properties and the
 * Content Type property, structured when that is application/cloudevents+json.
 * mqtt_version 4 (3.1.1): structured JSON only. content_type may be NULL. */
int ceb_mqtt_decode(int mqtt_version, const ceb_headers *user_props,
                    const char *content_type, const void *payload, size_t len,
                    ceb_event **out, ceb_error *err);
/* Encodes a PUBLISH. For mqtt_version 4 the mode must be structured.
 * *content_type (may be NULL) and *payload are freed with ceb_free. */
int ceb_mqtt_encode(const ceb_event *ev, int mqtt_version, ceb_mode mode,
                    ceb_headers *user_props, char **content_type,
                    char **payload, size_t *len);

/* ---- helpers shared by bindings ---- */

/* Percent-encodes a header value per the CloudEvents HTTP binding (space,
 * double quote, percent and anything outside printable ASCII). Free with
 * ceb_free. */
char *ceb_percent_encode(const char *value);
/* Decodes percent-encoding; CEB_EINVAL on a malformed escape or invalid
 * UTF-8 result. *out freed with ceb_free. */
int ceb_percent_decode(const char *value, char **out);

/* Length of the well-formed UTF-8 sequence (RFC 3629: no overlong form,
 * no surrogate, nothing past U+10FFFF) at s, of which avail bytes may be
 * read: 1 for an ASCII byte, 2..4, or 0 when none starts there (or avail is
 * 0). Pure; any thread. */
size_t ceb_utf8_seq(const unsigned char *s, size_t avail);

/* Standard base64 (RFC 4648 with padding). Free results with ceb_free. */
char *ceb_base64_encode(const void *data, size_t len);
int ceb_base64_decode(const char *text, size_t text_len, unsigned char **out,
                      size_t *out_len);

#ifdef __cplusplus
}
#endif
#endif
