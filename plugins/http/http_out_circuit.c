/* Per-destination circuits of a templated webhook sink (see the header). */
#include "http_out_circuit.h"

#include <stdlib.h>
#include <string.h>

enum { DEST_CLOSED = 0, DEST_OPEN = 1, DEST_HALF_OPEN = 2 };

typedef struct dest {
  char *key;
  int state;
  uint32_t failures; /* consecutive */
  int64_t open_until;
  int probe_inflight;
} dest;

struct http_dest_table {
  uint32_t threshold;
  int64_t open_for_ms;
  dest *items; /* unordered; only destinations with a failure on record */
  size_t count, cap;
};

http_dest_table *http_dest_new(uint32_t failures, int64_t open_for_ms) {
  http_dest_table *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->threshold = failures ? failures : 5;
  t->open_for_ms = open_for_ms > 0 ? open_for_ms : 30000;
  return t;
}

void http_dest_free(http_dest_table *t) {
  if (!t) return;
  for (size_t i = 0; i < t->count; i++)
    free(t->items[i].key);
  free(t->items);
  free(t);
}

/* Linear: the table holds failing destinations only, a handful normally. */
static dest *find(const http_dest_table *t, const char *key) {
  for (size_t i = 0; i < t->count; i++)
    if (strcmp(t->items[i].key, key) == 0) return &t->items[i];
  return NULL;
}

static dest *find_or_add(http_dest_table *t, const char *key) {
  dest *d = find(t, key);
  if (d || t->count >= HTTP_DEST_MAX) return d;
  if (t->count == t->cap) {
    size_t nc = t->cap ? t->cap * 2 : 8;
    dest *ni = realloc(t->items, nc * sizeof *ni);
    if (!ni) return NULL;
    t->items = ni;
    t->cap = nc;
  }
  char *k = strdup(key);
  if (!k) return NULL;
  d = &t->items[t->count++];
  *d = (dest){.key = k};
  return d;
}

static void forget(http_dest_table *t, dest *d) {
  free(d->key);
  *d = t->items[--t->count];
}

int http_dest_allow(http_dest_table *t, const char *key, int64_t now,
                    int64_t *open_until) {
  dest *d = find(t, key);
  *open_until = now;
  if (!d) return 1;
  if (d->state == DEST_OPEN && now >= d->open_until) {
    d->state = DEST_HALF_OPEN;
    d->probe_inflight = 0;
  }
  switch (d->state) {
  case DEST_CLOSED:
    return 1;
  case DEST_HALF_OPEN:
    if (d->probe_inflight) return 0;
    d->probe_inflight = 1;
    return 1;
  default:
    *open_until = d->open_until;
    return 0;
  }
}

void http_dest_success(http_dest_table *t, const char *key) {
  dest *d = find(t, key);
  if (d) forget(t, d); /* closed with no failures: the default */
}

void http_dest_trip(http_dest_table *t, const char *key, int64_t now) {
  dest *d = find_or_add(t, key);
  if (!d) return;
  d->state = DEST_OPEN;
  d->open_until = now + t->open_for_ms;
  d->probe_inflight = 0;
}

int http_dest_failure(http_dest_table *t, const char *key, int64_t now) {
  dest *d = find_or_add(t, key);
  if (!d) return 0;
  d->failures++;
  if (d->state == DEST_HALF_OPEN ||
      (d->state == DEST_CLOSED && d->failures >= t->threshold)) {
    http_dest_trip(t, key, now);
    return 1;
  }
  return 0;
}

void http_dest_cancel(http_dest_table *t, const char *key) {
  dest *d = find(t, key);
  if (d && d->state == DEST_HALF_OPEN) d->probe_inflight = 0;
}

size_t http_dest_count(const http_dest_table *t, size_t *open) {
  size_t n = 0;
  for (size_t i = 0; i < t->count; i++)
    n += t->items[i].state != DEST_CLOSED;
  if (open) *open = n;
  return t->count;
}
