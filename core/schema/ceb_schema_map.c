/* A small open-addressing hash map with byte-string keys, used by the
 * compiler for URI -> resource and json_t* -> node lookups. */
#include "schema/ceb_schema_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cebs_map_ent {
  void *key; /* NULL = empty slot */
  size_t klen;
  uint64_t hash;
  void *val;
};

static uint64_t map_hash(const void *key, size_t klen) {
  const unsigned char *p = key;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < klen; i++) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

static struct cebs_map_ent *map_find(const cebs_map *m, const void *key,
                                     size_t klen, uint64_t h) {
  size_t mask = m->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    struct cebs_map_ent *e = &m->ents[i];
    if (!e->key ||
        (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0))
      return e;
  }
}

void *cebs_map_get(const cebs_map *m, const void *key, size_t klen) {
  if (!m->cap) return NULL;
  struct cebs_map_ent *e = map_find(m, key, klen, map_hash(key, klen));
  return e->key ? e->val : NULL;
}

static int map_grow(cebs_map *m) {
  size_t ncap = m->cap ? m->cap * 2 : 16;
  struct cebs_map_ent *old = m->ents;
  size_t ocap = m->cap;
  m->ents = calloc(ncap, sizeof *m->ents);
  if (!m->ents) {
    m->ents = old;
    return -1;
  }
  m->cap = ncap;
  for (size_t i = 0; i < ocap; i++)
    if (old[i].key) *map_find(m, old[i].key, old[i].klen, old[i].hash) = old[i];
  free(old);
  return 0;
}

int cebs_map_put(cebs_map *m, const void *key, size_t klen, void *val) {
  if ((m->len + 1) * 4 > m->cap * 3 && map_grow(m) != 0) return -1;
  uint64_t h = map_hash(key, klen);
  struct cebs_map_ent *e = map_find(m, key, klen, h);
  if (e->key) {
    e->val = val;
    return 0;
  }
  e->key = malloc(klen ? klen : 1);
  if (!e->key) return -1;
  memcpy(e->key, key, klen);
  e->klen = klen;
  e->hash = h;
  e->val = val;
  m->len++;
  return 0;
}

void cebs_map_clear(cebs_map *m, void (*free_val)(void *)) {
  for (size_t i = 0; i < m->cap; i++) {
    if (m->ents[i].key) {
      free(m->ents[i].key);
      if (free_val) free_val(m->ents[i].val);
    }
  }
  free(m->ents);
  m->ents = NULL;
  m->cap = m->len = 0;
}
