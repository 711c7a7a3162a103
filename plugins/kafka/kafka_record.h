/* A Kafka record built from an event by the CloudEvents Kafka binding, in
 * the form rd_kafka_producev takes, without intermediate copies: the
 * headers go straight into an rd_kafka_headers_t and the key and (binary
 * mode) the value borrow the event's own bytes, which librdkafka copies in
 * producev (the key always, the value with RD_KAFKA_MSG_F_COPY).
 *
 * The mapping is the SDK's one Kafka mapping, ceb_kafka_visit
 * (include/ceb/codec.h), which ceb_kafka_encode walks too: binary mode
 * ce_<attribute> headers in the event's attribute order (values as they
 * are, no percent-encoding), datacontenttype as a content-type header last
 * (application/json when unset and the data is JSON), the data as the
 * value; structured mode the JSON format as the value and content-type
 * application/cloudevents+json. test_kafka_record holds the two equal and
 * counts the visits. Reentrant; no state. */
#ifndef CEB_KAFKA_RECORD_H
#define CEB_KAFKA_RECORD_H

#include <ceb/ceb.h>
#include <librdkafka/rdkafka.h>

typedef struct kafka_record {
  rd_kafka_headers_t *headers; /* owned until producev takes it */
  const char *key;             /* borrowed from the event; NULL: no key */
  size_t key_len;
  const void *value; /* borrowed from the event, or `owned`; may be NULL */
  size_t value_len;
  char *owned; /* structured mode's JSON text (ceb_free) */
} kafka_record;

/* Builds *r for ev. key_attr names the attribute or extension that becomes
 * the key; NULL: no key. json (may be NULL): ev in the JSON format as the
 * host journaled it (ceb_delivery_encoded, ABI 1.1), which structured mode
 * sends as it is (borrowed) instead of encoding ev. Borrowed parts stay
 * valid while ev (and json) live unchanged. CEB_OK, or CEB_ENOMEM /
 * CEB_EINVAL with *r cleared. */
int kafka_record_build(const ceb_event *ev, ceb_mode mode, const char *key_attr,
                       const char *json, size_t json_len, kafka_record *r);

/* Builds *r from an egress mapping's result (ABI 1.2, include/ceb/plugin.h)
 * instead of the binding: the value is mo's body, the headers a
 * content-type header with mo's content type then mo's headers in program
 * order (a mapped "content-type" header is dropped: the sink's own header
 * wins; no ce_* headers: the body is not a CloudEvent), the key mo's key,
 * else the key_attr attribute of ev as the binding would (NULL: no key).
 * Everything is borrowed from mo and ev. CEB_OK, or CEB_ENOMEM with *r
 * cleared. */
int kafka_record_mapped(const ceb_mapped_out *mo, const ceb_event *ev,
                        const char *key_attr, kafka_record *r);

/* Frees what r owns: headers (unless producev took them: set r->headers to
 * NULL then) and the structured value. Leaves *r zeroed. */
void kafka_record_clear(kafka_record *r);

#endif
