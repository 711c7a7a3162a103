#include "http_in_ratelimit.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct bucket {
  char *client; /* NULL: free slot */
  double tokens;
  int64_t updated_ms;
} bucket;

struct http_ratelimit {
  double rate, burst;
  size_t max;
  bucket *slots;
  pthread_mutex_t lock;
};

http_ratelimit *http_ratelimit_new(double rate, double burst,
                                   size_t max_clients) {
  http_ratelimit *rl = calloc(1, sizeof *rl);
  if (!rl) return NULL;
  rl->slots = calloc(max_clients, sizeof *rl->slots);
  if (!rl->slots) {
    free(rl);
    return NULL;
  }
  rl->rate = rate;
  rl->burst = burst < 1 ? 1 : burst;
  rl->max = max_clients;
  pthread_mutex_init(&rl->lock, NULL);
  return rl;
}

void http_ratelimit_free(http_ratelimit *rl) {
  if (!rl) return;
  for (size_t i = 0; i < rl->max; i++)
    free(rl->slots[i].client);
  free(rl->slots);
  pthread_mutex_destroy(&rl->lock);
  free(rl);
}

/* Linear probing from the hash; the table is small (clients are
 * authenticated partners, not anonymous addresses). */
static bucket *find(http_ratelimit *rl, const char *client, int64_t now_ms) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = client; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  bucket *oldest = NULL, *empty = NULL;
  for (size_t i = 0; i < rl->max; i++) {
    bucket *b = &rl->slots[(h + i) % rl->max];
    if (!b->client) {
      if (!empty) empty = b;
      continue;
    }
    if (strcmp(b->client, client) == 0) return b;
    if (!oldest || b->updated_ms < oldest->updated_ms) oldest = b;
  }
  bucket *b = empty ? empty : oldest;
  char *copy = strdup(client);
  if (!copy) return NULL;
  free(b->client);
  b->client = copy;
  b->tokens = rl->burst;
  b->updated_ms = now_ms;
  return b;
}

int http_ratelimit_take(http_ratelimit *rl, const char *client, int64_t now_ms,
                        int64_t *retry_after_ms) {
  pthread_mutex_lock(&rl->lock);
  bucket *b = find(rl, client ? client : "", now_ms);
  int ok = 1;
  if (b) {
    if (now_ms > b->updated_ms) {
      b->tokens += (double)(now_ms - b->updated_ms) * rl->rate / 1000.0;
      if (b->tokens > rl->burst) b->tokens = rl->burst;
      b->updated_ms = now_ms;
    }
    if (b->tokens >= 1.0) {
      b->tokens -= 1.0;
    } else {
      ok = 0;
      *retry_after_ms = (int64_t)ceil((1.0 - b->tokens) * 1000.0 / rl->rate);
    }
  }
  pthread_mutex_unlock(&rl->lock);
  return ok;
}
