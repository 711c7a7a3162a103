/* Secret references in rdkafka.* pass-through values, resolved the way the
 * host resolves its SECRET keys: "${NAME}" is the environment variable
 * NAME, "file:/path" the file's content (one trailing newline removed,
 * at most 64 KiB, a relative path is taken from the directory of the
 * config file that set the key). Any other value is taken as written.
 * The host cannot do it for a prefix key without hiding every rdkafka.*
 * value, so the plugin does it when it builds librdkafka's configuration.
 * Reentrant; no state. */
#ifndef CEB_KAFKA_SECRET_H
#define CEB_KAFKA_SECRET_H

#include <stddef.h>

/* Result of kafka_secret_resolve. */
typedef enum kafka_secret_kind {
  KAFKA_SECRET_NONE = 0,     /* a literal: *out is NULL, use the value as is */
  KAFKA_SECRET_RESOLVED = 1, /* *out is the malloc'd secret: wipe and free */
  KAFKA_SECRET_ERROR = -1    /* errstr says why (the secret is never in it) */
} kafka_secret_kind;

/* Resolves value (of key, set at origin "file:line") into *out. */
kafka_secret_kind kafka_secret_resolve(const char *value, const char *origin,
                                       char **out, char *errstr, size_t errsz);

/* Overwrites and frees a resolved secret; NULL is ignored. */
void kafka_secret_free(char *secret);

#endif
