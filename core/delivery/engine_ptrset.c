/* Open-addressing pointer set with tombstones (see engine_internal.h). */
#include <stdint.h>
#include <stdlib.h>

#include <ceb/status.h>

#include "delivery/engine_internal.h"

#define TOMB ((void *)1)

static size_t hash(void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

static int grow(ptrset *s) {
  size_t ncap = s->cap ? s->cap * 2 : 64;
  if (s->count * 4 < s->cap)
    ncap = s->cap; /* mostly tombstones: rehash in place size */
  void **n = calloc(ncap, sizeof *n);
  if (!n) return CEB_ENOMEM;
  for (size_t i = 0; i < s->cap; i++) {
    void *p = s->slots[i];
    if (p && p != TOMB) {
      size_t h = hash(p, ncap);
      while (n[h])
        h = (h + 1) & (ncap - 1);
      n[h] = p;
    }
  }
  free(s->slots);
  s->slots = n;
  s->cap = ncap;
  s->used = s->count;
  return CEB_OK;
}

int cebe_ptrset_add(ptrset *s, void *p) {
  if ((s->used + 1) * 2 > s->cap && grow(s) != CEB_OK) return CEB_ENOMEM;
  size_t h = hash(p, s->cap);
  while (s->slots[h] && s->slots[h] != TOMB)
    h = (h + 1) & (s->cap - 1);
  if (!s->slots[h]) s->used++;
  s->slots[h] = p;
  s->count++;
  return CEB_OK;
}

static long find(const ptrset *s, void *p) {
  if (!s->cap) return -1;
  size_t h = hash(p, s->cap);
  for (size_t n = 0; n < s->cap && s->slots[h]; n++) {
    if (s->slots[h] == p) return (long)h;
    h = (h + 1) & (s->cap - 1);
  }
  return -1;
}

int cebe_ptrset_has(const ptrset *s, void *p) {
  return find(s, p) >= 0;
}

int cebe_ptrset_del(ptrset *s, void *p) {
  long i = find(s, p);
  if (i < 0) return CEB_ENOTFOUND;
  s->slots[i] = TOMB;
  s->count--;
  return CEB_OK;
}

void cebe_ptrset_free(ptrset *s) {
  free(s->slots);
  *s = (ptrset){0};
}
