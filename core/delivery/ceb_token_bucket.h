/* Token bucket rate limit of one sink: `rate` tokens per second up to
 * `burst`. rate <= 0 means unlimited. Not thread-safe: the engine calls it
 * under its lock. Time is the host clock in ms. */
#ifndef CEB_TOKEN_BUCKET_H
#define CEB_TOKEN_BUCKET_H

#include <stdint.h>

typedef struct ceb_token_bucket {
  double rate; /* per second; <= 0: unlimited */
  double burst;
  double tokens;
  int64_t last;
} ceb_token_bucket;

/* burst 0: one second's worth (at least 1). Starts full. */
void ceb_token_bucket_init(ceb_token_bucket *b, double rate, double burst,
                           int64_t now);
/* Whole tokens available now, at most max. */
int ceb_token_bucket_available(ceb_token_bucket *b, int64_t now, int max);
/* Takes n tokens (after available said so). */
void ceb_token_bucket_take(ceb_token_bucket *b, int n);
/* When the next whole token will be there (now when one is). */
int64_t ceb_token_bucket_next(ceb_token_bucket *b, int64_t now);

#endif
