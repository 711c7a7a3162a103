/* Label selection for the per-key metrics (ceb_key_metrics.h). Hand-written:
 * the Space-Saving ranking is a few dozen lines over fixed arrays, and no
 * Debian package offers a heavy-hitters sketch for C. Lookups compare
 * 64-bit hashes first over at most 8 x 100 slots: no allocation after
 * start except when a new key takes a slot. */
#include "delivery/ceb_key_metrics.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct km_slot {
  uint64_t h;
  char *key;
  uint64_t count, err; /* Space-Saving: count over-counts by at most err */
  int top;             /* in the current top N: never the one replaced */
} km_slot;

typedef struct km_name {
  uint64_t h;
  char *key;
} km_name;

struct ceb_key_metrics {
  km_name *allow;
  size_t nallow;
  unsigned top;
  km_slot *slots; /* the ranking */
  size_t nslots, capslots;
  km_name *topset; /* the current top N */
  size_t ntop;
};

static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static int in_names(const km_name *v, size_t n, uint64_t h, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (v[i].h == h && strcmp(v[i].key, key) == 0) return 1;
  return 0;
}

ceb_key_metrics *ceb_key_metrics_new(const char *const *allow, size_t nallow,
                                     unsigned top) {
  if ((!nallow && !top) || nallow > CEB_KEY_METRICS_MAX ||
      top > CEB_KEY_METRICS_MAX)
    return NULL;
  ceb_key_metrics *k = calloc(1, sizeof *k);
  if (!k) return NULL;
  k->top = top;
  k->capslots = CEB_KEY_METRICS_SLOTS(top);
  k->allow = calloc(nallow ? nallow : 1, sizeof *k->allow);
  k->slots = calloc(k->capslots ? k->capslots : 1, sizeof *k->slots);
  k->topset = calloc(top ? top : 1, sizeof *k->topset);
  if (!k->allow || !k->slots || !k->topset) goto fail;
  for (size_t i = 0; i < nallow; i++) {
    if (!allow[i] || strlen(allow[i]) > CEB_KEY_METRICS_KEY_MAX) goto fail;
    uint64_t h = fnv1a(allow[i]);
    if (in_names(k->allow, k->nallow, h, allow[i])) continue; /* twice */
    k->allow[k->nallow].key = strdup(allow[i]);
    if (!k->allow[k->nallow].key) goto fail;
    k->allow[k->nallow++].h = h;
  }
  return k;
fail:
  ceb_key_metrics_free(k);
  return NULL;
}

void ceb_key_metrics_free(ceb_key_metrics *k) {
  if (!k) return;
  for (size_t i = 0; k->allow && i < k->nallow; i++)
    free(k->allow[i].key);
  for (size_t i = 0; k->slots && i < k->nslots; i++)
    free(k->slots[i].key);
  for (size_t i = 0; k->topset && i < k->ntop; i++)
    free(k->topset[i].key);
  free(k->allow);
  free(k->slots);
  free(k->topset);
  free(k);
}

void ceb_key_metrics_seen(ceb_key_metrics *k, const char *key) {
  if (!k || !key || !k->capslots || strlen(key) > CEB_KEY_METRICS_KEY_MAX)
    return;
  uint64_t h = fnv1a(key);
  if (in_names(k->allow, k->nallow, h, key)) return; /* labelled anyway */
  size_t min = SIZE_MAX;
  for (size_t i = 0; i < k->nslots; i++) {
    km_slot *s = &k->slots[i];
    if (s->h == h && strcmp(s->key, key) == 0) {
      s->count++;
      return;
    }
    /* the top N keep their slots (and counts) through a flood of new keys:
     * only the other slots (7 per place) churn */
    if (!s->top && (min == SIZE_MAX || s->count < k->slots[min].count)) min = i;
  }
  char *copy = strdup(key);
  if (!copy) return; /* not ranked: counted under "other" */
  if (k->nslots < k->capslots) {
    k->slots[k->nslots++] = (km_slot){h, copy, 1, 0};
    return;
  }
  if (min == SIZE_MAX) { /* cannot happen: 8 slots per place */
    free(copy);
    return;
  }
  /* full: the least counted slot's key is dropped, and the new key
   * inherits its count as the bound on its own over-count */
  km_slot *s = &k->slots[min];
  free(s->key);
  *s = (km_slot){h, copy, s->count + 1, s->count};
}

const char *ceb_key_metrics_label(const ceb_key_metrics *k, const char *key) {
  if (!k || !key || strlen(key) > CEB_KEY_METRICS_KEY_MAX) return "other";
  uint64_t h = fnv1a(key);
  if (in_names(k->allow, k->nallow, h, key) ||
      in_names(k->topset, k->ntop, h, key))
    return key;
  return "other";
}

/* Ranks by events counted for sure (count - err), then by key. */
static int slot_cmp(const void *a, const void *b) {
  const km_slot *x = *(const km_slot *const *)a,
                *y = *(const km_slot *const *)b;
  uint64_t gx = x->count - x->err, gy = y->count - y->err;
  if (gx != gy) return gx > gy ? -1 : 1;
  return strcmp(x->key, y->key);
}

void ceb_key_metrics_rank(ceb_key_metrics *k,
                          void (*gone)(void *arg, const char *key), void *arg) {
  if (!k || !k->top) return;
  km_slot **order = malloc((k->nslots ? k->nslots : 1) * sizeof *order);
  km_name *next = calloc(k->top, sizeof *next);
  if (!order || !next) {
    free(order);
    free(next);
    return; /* the labels stay as they were */
  }
  for (size_t i = 0; i < k->nslots; i++)
    order[i] = &k->slots[i];
  qsort(order, k->nslots, sizeof *order, slot_cmp);
  size_t n = 0;
  for (size_t i = 0; i < k->nslots; i++)
    order[i]->top = 0;
  /* a key seen once for sure is no busy key: a flood of new keys, each
   * inheriting a replaced count, never takes a place */
  for (size_t i = 0; i < k->nslots && n < k->top; i++) {
    if (order[i]->count - order[i]->err < 2) break;
    next[n].key = strdup(order[i]->key);
    if (!next[n].key) break;
    order[i]->top = 1;
    next[n++].h = order[i]->h;
  }
  free(order);
  for (size_t i = 0; i < k->ntop; i++) {
    if (!in_names(next, n, k->topset[i].h, k->topset[i].key) && gone)
      gone(arg, k->topset[i].key);
    free(k->topset[i].key);
  }
  free(k->topset);
  k->topset = next;
  k->ntop = n;
}

size_t ceb_key_metrics_count(const ceb_key_metrics *k) {
  return k ? k->nallow + k->ntop : 0;
}

const char *ceb_key_metrics_at(const ceb_key_metrics *k, size_t i) {
  if (!k) return NULL;
  if (i < k->nallow) return k->allow[i].key;
  i -= k->nallow;
  return i < k->ntop ? k->topset[i].key : NULL;
}

int ceb_key_metrics_labels(char *buf, size_t size, const char *route_labels,
                           const char *key) {
  int n = snprintf(buf, size, "%s,key=\"", route_labels);
  if (n < 0 || (size_t)n >= size) return -1;
  size_t o = (size_t)n;
  for (const char *p = key; *p; p++) {
    const char *esc = *p == '\\'   ? "\\\\"
                      : *p == '"'  ? "\\\""
                      : *p == '\n' ? "\\n"
                                   : NULL;
    size_t len = esc ? 2 : 1;
    if (o + len + 2 > size) return -1;
    if (esc)
      memcpy(buf + o, esc, 2);
    else
      buf[o] = *p;
    o += len;
  }
  buf[o++] = '"';
  buf[o] = '\0';
  return 0;
}
