#include "delivery/ceb_token_bucket.h"

#include <math.h>

void ceb_token_bucket_init(ceb_token_bucket *b, double rate, double burst,
                           int64_t now) {
  b->rate = rate;
  b->burst = burst > 0 ? burst : (rate > 1 ? rate : 1);
  b->tokens = b->burst;
  b->last = now;
}

static void refill(ceb_token_bucket *b, int64_t now) {
  if (now > b->last) {
    b->tokens += (double)(now - b->last) * b->rate / 1000.0;
    if (b->tokens > b->burst) b->tokens = b->burst;
    b->last = now;
  }
}

int ceb_token_bucket_available(ceb_token_bucket *b, int64_t now, int max) {
  if (b->rate <= 0) return max;
  refill(b, now);
  double n = floor(b->tokens);
  return n < max ? (int)n : max;
}

void ceb_token_bucket_take(ceb_token_bucket *b, int n) {
  if (b->rate > 0) b->tokens -= n;
}

int64_t ceb_token_bucket_next(ceb_token_bucket *b, int64_t now) {
  if (b->rate <= 0) return now;
  refill(b, now);
  if (b->tokens >= 1) return now;
  return now + (int64_t)ceil((1 - b->tokens) * 1000.0 / b->rate);
}
