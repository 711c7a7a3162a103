/* The idempotency reservations this process holds in flight (pg_internal.h
 * says why the engine keeps them). A handful at a time: a plain array. */
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "store/postgres/pg_internal.h"

/* FNV-1a of client, NUL, key. */
static uint64_t live_hash(const char *client, const char *key) {
  uint64_t h = 1469598103934665603ull;
  for (const char *p = client;; p++) {
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
    if (!*p) break;
  }
  for (const char *p = key; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return h;
}

void cebpg_live_init(cebpg_live *l) {
  memset(l, 0, sizeof *l);
  pthread_mutex_init(&l->lock, NULL);
}

void cebpg_live_free(cebpg_live *l) {
  pthread_mutex_destroy(&l->lock);
  free(l->h);
}

int cebpg_live_add(cebpg_live *l, const char *client, const char *key) {
  uint64_t h = live_hash(client, key);
  int rc = CEB_OK;
  pthread_mutex_lock(&l->lock);
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 16;
    uint64_t *g = realloc(l->h, cap * sizeof *g);
    if (g) {
      l->h = g;
      l->cap = cap;
    } else {
      rc = CEB_ENOMEM;
    }
  }
  if (rc == CEB_OK) l->h[l->n++] = h;
  pthread_mutex_unlock(&l->lock);
  return rc;
}

void cebpg_live_remove(cebpg_live *l, const char *client, const char *key) {
  uint64_t h = live_hash(client, key);
  pthread_mutex_lock(&l->lock);
  for (size_t i = 0; i < l->n; i++)
    if (l->h[i] == h) {
      l->h[i] = l->h[--l->n];
      break;
    }
  pthread_mutex_unlock(&l->lock);
}

int cebpg_live_has(cebpg_live *l, const char *client, const char *key) {
  uint64_t h = live_hash(client, key);
  int found = 0;
  pthread_mutex_lock(&l->lock);
  for (size_t i = 0; i < l->n && !found; i++)
    found = l->h[i] == h;
  pthread_mutex_unlock(&l->lock);
  return found;
}
