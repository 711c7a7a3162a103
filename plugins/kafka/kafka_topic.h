/* Topic templates: "edu.${type}" expands ${attr} with an event attribute or
 * extension. Parsed once at init, expanded per delivery (thread-safe: the
 * template is immutable after parse). */
#ifndef CEB_KAFKA_TOPIC_H
#define CEB_KAFKA_TOPIC_H

#include <ceb/ceb.h>

typedef struct kafka_topic_tmpl kafka_topic_tmpl;

/* Parses text. NULL with errstr filled on a malformed template ("${" not
 * closed, empty or invalid attribute name) or a fixed name that is not a
 * legal topic. Caller owns the result (kafka_topic_tmpl_free). */
kafka_topic_tmpl *kafka_topic_tmpl_parse(const char *text, char *errstr,
                                         size_t errsz);
void kafka_topic_tmpl_free(kafka_topic_tmpl *t);

/* 1 when the template has no ${...} part. */
int kafka_topic_tmpl_is_fixed(const kafka_topic_tmpl *t);

/* Expands for ev into buf. CEB_OK, or CEB_EINVAL with errstr filled when an
 * attribute is unset or the result is not a legal topic name. */
int kafka_topic_tmpl_expand(const kafka_topic_tmpl *t, const ceb_event *ev,
                            char *buf, size_t bufsz, char *errstr,
                            size_t errsz);

#endif
