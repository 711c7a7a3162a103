/* Pieces shared by the Kafka source and sink: the librdkafka configuration
 * built from a section, reading a record's headers and a monotonic clock.
 * All functions are reentrant; none keeps state. */
#ifndef CEB_KAFKA_COMMON_H
#define CEB_KAFKA_COMMON_H

#include <ceb/ceb.h>
#include <librdkafka/rdkafka.h>

/* Prefix of librdkafka pass-through keys ("rdkafka.compression.type"). */
#define KAFKA_PASSTHROUGH_PREFIX "rdkafka."

/* One default applied before the pass-through keys (the user may override
 * it) and the keys the plugin manages itself (the user may not). */
typedef struct kafka_conf_rules {
  const char *const *defaults; /* NULL-terminated name, value pairs */
  const char *const *reserved; /* NULL-terminated librdkafka names */
} kafka_conf_rules;

/* Builds a new rd_kafka_conf_t: bootstrap.servers from the `brokers` list,
 * ssl.cipher.suites = CEB_TLS_CIPHERS_DEFAULT (the TLS policy), the rules'
 * defaults, then every rdkafka.* key in file order, its value
 * resolved when it is a ${ENV} or file:/path secret reference
 * (kafka_secret.h). On a bad key or value returns NULL and writes
 * librdkafka's own error text (prefixed with the key and its origin; never
 * a resolved secret) into errstr. Caller owns the result. */
rd_kafka_conf_t *kafka_conf_build(const ceb_config *cfg,
                                  const kafka_conf_rules *rules, char *errstr,
                                  size_t errsz);

/* Copies a message's headers into *out (appended). CEB_OK or CEB_ENOMEM. */
int kafka_headers_from_message(const rd_kafka_message_t *m, ceb_headers *out);

/* CLOCK_MONOTONIC in milliseconds. */
int64_t kafka_mono_ms(void);

/* 1 when name is a legal Kafka topic name: 1..249 of [a-zA-Z0-9._-], not
 * "." or "..". */
int kafka_topic_name_valid(const char *name);

#endif
