/* Per-client token buckets: `rate` tokens per second, at most `burst`.
 * Bounded: at most `max_clients` buckets; when full, the bucket idle the
 * longest is recycled (it was full anyway or close to it). Thread-safe. */
#ifndef HTTP_IN_RATELIMIT_H
#define HTTP_IN_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct http_ratelimit http_ratelimit;

/* rate > 0; burst >= 1. NULL on ENOMEM. */
http_ratelimit *http_ratelimit_new(double rate, double burst,
                                   size_t max_clients);
void http_ratelimit_free(http_ratelimit *rl);

/* Takes one token for client at now_ms. Returns 1 when allowed; 0 when
 * limited, with *retry_after_ms the wait until a token is available. */
int http_ratelimit_take(http_ratelimit *rl, const char *client, int64_t now_ms,
                        int64_t *retry_after_ms);

#endif
