#include "http_in_replay.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* A ring of (id, time) in arrival order plus an open-addressing index of
 * ring positions; expired and evicted entries are tombstoned. */
typedef struct entry {
  char *id;
  int64_t at_ms;
} entry;

struct http_replay {
  size_t max, head, count;
  int64_t window_ms;
  entry *ring;
  size_t *index; /* 2*max slots holding ring position + 1, 0 empty */
  size_t nindex, ntomb;
  pthread_mutex_t lock;
};

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

http_replay *http_replay_new(size_t max, int64_t window_ms) {
  http_replay *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->max = max;
  r->window_ms = window_ms;
  r->nindex = max * 2;
  r->ring = calloc(max, sizeof *r->ring);
  r->index = calloc(r->nindex, sizeof *r->index);
  if (!r->ring || !r->index) {
    http_replay_free(r);
    return NULL;
  }
  pthread_mutex_init(&r->lock, NULL);
  return r;
}

void http_replay_free(http_replay *r) {
  if (!r) return;
  if (r->ring)
    for (size_t i = 0; i < r->max; i++)
      free(r->ring[i].id);
  free(r->ring);
  free(r->index);
  if (r->index) pthread_mutex_destroy(&r->lock);
  free(r);
}

#define TOMB ((size_t)-1)

/* Rebuilds the index from the ring, clearing tombstones. */
static void reindex(http_replay *r) {
  memset(r->index, 0, r->nindex * sizeof *r->index);
  r->ntomb = 0;
  for (size_t k = 0; k < r->count; k++) {
    size_t pos = (r->head + k) % r->max;
    size_t s = hash(r->ring[pos].id) % r->nindex;
    while (r->index[s])
      s = (s + 1) % r->nindex;
    r->index[s] = pos + 1;
  }
}

static void drop_oldest(http_replay *r) {
  entry *e = &r->ring[r->head];
  for (size_t s = hash(e->id) % r->nindex; r->index[s]; s = (s + 1) % r->nindex)
    if (r->index[s] == r->head + 1) {
      r->index[s] = TOMB;
      r->ntomb++;
      break;
    }
  free(e->id);
  e->id = NULL;
  r->head = (r->head + 1) % r->max;
  r->count--;
}

/* Slot of id in the index, or 0-based slot to insert it at (*found 0). */
static size_t probe(http_replay *r, const char *id, int *found) {
  size_t s = hash(id) % r->nindex, free_slot = TOMB;
  for (; r->index[s]; s = (s + 1) % r->nindex) {
    if (r->index[s] == TOMB) {
      if (free_slot == TOMB) free_slot = s;
    } else if (strcmp(r->ring[r->index[s] - 1].id, id) == 0) {
      *found = 1;
      return s;
    }
  }
  *found = 0;
  return free_slot == TOMB ? s : free_slot;
}

static void drop_expired(http_replay *r, int64_t now_ms) {
  while (r->count && r->ring[r->head].at_ms + r->window_ms < now_ms)
    drop_oldest(r);
}

int http_replay_seen(http_replay *r, const char *id, int64_t now_ms) {
  pthread_mutex_lock(&r->lock);
  drop_expired(r, now_ms);
  int found = 0;
  probe(r, id, &found);
  pthread_mutex_unlock(&r->lock);
  return found;
}

int http_replay_check_add(http_replay *r, const char *id, int64_t now_ms) {
  pthread_mutex_lock(&r->lock);
  drop_expired(r, now_ms);
  int found = 0;
  probe(r, id, &found);
  char *copy = found ? NULL : strdup(id);
  if (copy) {
    /* Make room only for a new id: a lookup must not evict. */
    if (r->count == r->max) drop_oldest(r);
    if (r->ntomb > r->max / 2)
      reindex(r); /* amortised: only after max/2 removals */
    size_t slot = probe(r, id, &found);
    if (r->index[slot] == TOMB) r->ntomb--;
    size_t pos = (r->head + r->count) % r->max;
    r->ring[pos].id = copy;
    r->ring[pos].at_ms = now_ms;
    r->count++;
    r->index[slot] = pos + 1;
  }
  pthread_mutex_unlock(&r->lock);
  return !found;
}
