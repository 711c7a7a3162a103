/* The Kafka source's input document: what a record becomes for the
 * source's `map` program (include/ceb/plugin.h). Fields, in this order
 * (docs/integration-guide.md, "Input documents", is the reference):
 *
 *   topic           the record's topic
 *   partition       its partition (a number)
 *   offset          its offset (a number)
 *   timestamp       ms since the epoch, or null when the record has none
 *   timestamp_type  "create_time" (the producer's), "log_append_time" (the
 *                   broker's) or null
 *   key             the key as a string when it is UTF-8, else its base64;
 *                   null when the record has no key. Never parsed as JSON
 *                   (`.key | fromjson` does that)
 *   key_encoding    "text", "base64", or null without a key
 *   headers         object: header name -> value (a string, its base64 when
 *                   not UTF-8, or null for a null header); a name given
 *                   more than once keeps its last value here
 *   header_list     every header in record order: {"name", "value"} plus
 *                   "encoding": "base64" when the value is not UTF-8
 *   value           the value parsed as JSON when the `content-type`
 *                   header is a JSON type or absent and it parses; else as
 *                   a string when UTF-8; else its base64 (input_doc.h);
 *                   null for a tombstone (no value)
 *   value_encoding  "json", "text", "base64", or null for a tombstone
 *
 * Reentrant: everything is the caller's or borrowed for the call. */
#ifndef KAFKA_DOC_H
#define KAFKA_DOC_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

typedef struct kafka_doc_rec {
  const char *topic;
  int32_t partition;
  int64_t offset;
  int64_t timestamp_ms; /* -1: none */
  rd_kafka_timestamp_type_t tstype;
  const void *key; /* NULL: no key */
  size_t key_len;
  const void *value; /* NULL: a tombstone */
  size_t len;
  const rd_kafka_headers_t *headers; /* NULL: none */
} kafka_doc_rec;

/* Fills r from a consumed message (borrowed from it: valid while m is). */
void kafka_doc_rec_of(const rd_kafka_message_t *m, kafka_doc_rec *r);

/* Builds r's document. CEB_OK with *out malloc'd and NUL-terminated (free
 * with free()) and *out_len its length, or CEB_ENOMEM. */
int kafka_doc_build(const kafka_doc_rec *r, char **out, size_t *out_len);

#endif
