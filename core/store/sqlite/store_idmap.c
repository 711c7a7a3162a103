/* The journal's dedupe map: open addressing with linear probing, deletion
 * by backward shift (no tombstones, so probe runs stay short under the
 * sweeper's steady removals). Grows past 5/8 full, shrinks below 1/8. */
#include <stdio.h>
#include <stdlib.h>

#include <ceb/status.h>

#include "store/sqlite/store_idmap.h"

#define MIN_CAP 1024u

/* FNV-1a's low bits are weak as a table index: mix them (splitmix64). */
static size_t home(const cebs_idmap *m, int64_t idh) {
  uint64_t x = (uint64_t)idh;
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return (size_t)x & (m->cap - 1);
}

static void put(cebs_idmap *m, int64_t idh, int64_t seq) {
  size_t i = home(m, idh);
  while (m->slots[i].seq != 0)
    i = (i + 1) & (m->cap - 1);
  m->slots[i] = (cebs_idmap_slot){idh, seq};
}

/* Moves every entry into a table of cap slots. 0, or -1 (map unchanged). */
static int rehash(cebs_idmap *m, size_t cap) {
  cebs_idmap_slot *old = m->slots;
  size_t old_cap = m->cap;
  cebs_idmap_slot *slots = calloc(cap, sizeof *slots);
  if (!slots) return -1;
  m->slots = slots;
  m->cap = cap;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].seq != 0) put(m, old[i].idh, old[i].seq);
  free(old);
  return 0;
}

void cebs_idmap_init(cebs_idmap *m) {
  *m = (cebs_idmap){.slots = NULL};
  pthread_mutex_init(&m->lock, NULL);
}

void cebs_idmap_destroy(cebs_idmap *m) {
  free(m->slots);
  m->slots = NULL;
  m->cap = m->count = 0;
  pthread_mutex_destroy(&m->lock);
}

int cebs_idmap_add(cebs_idmap *m, int64_t idh, int64_t seq) {
  if (seq <= 0) return CEB_EINVAL;
  pthread_mutex_lock(&m->lock);
  if ((m->count + 1) * 8 > m->cap * 5) {
    size_t cap = m->cap ? m->cap * 2 : MIN_CAP;
    /* growing failed: go on while a slot is left (longer probes) */
    if ((cap < m->cap || rehash(m, cap) != 0) && m->count + 1 >= m->cap) {
      pthread_mutex_unlock(&m->lock);
      return CEB_ENOMEM;
    }
  }
  put(m, idh, seq);
  m->count++;
  pthread_mutex_unlock(&m->lock);
  return CEB_OK;
}

/* 1 when home h lies cyclically in (i, j]: the entry at j may not move
 * back to i without becoming unreachable from h. */
static int between(size_t i, size_t h, size_t j) {
  return i <= j ? (i < h && h <= j) : (i < h || h <= j);
}

void cebs_idmap_remove(cebs_idmap *m, int64_t idh, int64_t seq) {
  pthread_mutex_lock(&m->lock);
  if (m->cap == 0) goto out;
  size_t mask = m->cap - 1, i = home(m, idh);
  for (;; i = (i + 1) & mask) {
    if (m->slots[i].seq == 0) goto out; /* not there */
    if (m->slots[i].idh == idh && m->slots[i].seq == seq) break;
  }
  for (size_t j = (i + 1) & mask; m->slots[j].seq != 0; j = (j + 1) & mask) {
    if (between(i, home(m, m->slots[j].idh), j)) continue;
    m->slots[i] = m->slots[j];
    i = j;
  }
  m->slots[i].seq = 0;
  m->count--;
  if (m->cap > MIN_CAP && m->count * 8 < m->cap) {
    size_t cap = MIN_CAP;
    while (cap < m->count * 4)
      cap *= 2;
    rehash(m, cap); /* on failure the bigger table stays: still correct */
  }
out:
  pthread_mutex_unlock(&m->lock);
}

size_t cebs_idmap_find(cebs_idmap *m, int64_t idh, int64_t *out, size_t max) {
  size_t n = 0;
  pthread_mutex_lock(&m->lock);
  if (m->cap != 0)
    for (size_t i = home(m, idh); m->slots[i].seq != 0;
         i = (i + 1) & (m->cap - 1))
      if (m->slots[i].idh == idh) {
        if (n < max) out[n] = m->slots[i].seq;
        n++;
      }
  pthread_mutex_unlock(&m->lock);
  return n;
}

size_t cebs_idmap_count(cebs_idmap *m) {
  pthread_mutex_lock(&m->lock);
  size_t n = m->count;
  pthread_mutex_unlock(&m->lock);
  return n;
}

size_t cebs_idmap_bytes(cebs_idmap *m) {
  pthread_mutex_lock(&m->lock);
  size_t n = m->cap * sizeof(cebs_idmap_slot);
  pthread_mutex_unlock(&m->lock);
  return n;
}

int cebs_idmap_load(cebs_idmap *m, sqlite3 *db, char *err, size_t errlen) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(db,
                         /* schema 20: each journal row's hash is in
                          * its settle row */
                         "SELECT seq, idh FROM journal_settle"
                         " WHERE idh IS NOT NULL",
                         -1, &s, NULL) != SQLITE_OK) {
    snprintf(err, errlen, "store: dedupe map: %s", sqlite3_errmsg(db));
    return CEB_EIO;
  }
  int rc = CEB_OK, step;
  while (rc == CEB_OK && (step = sqlite3_step(s)) == SQLITE_ROW)
    rc = cebs_idmap_add(m, sqlite3_column_int64(s, 1),
                        sqlite3_column_int64(s, 0));
  if (rc == CEB_ENOMEM)
    snprintf(err, errlen, "store: dedupe map: out of memory at %zu rows",
             cebs_idmap_count(m));
  else if (rc == CEB_OK && step != SQLITE_DONE) {
    snprintf(err, errlen, "store: dedupe map: %s", sqlite3_errmsg(db));
    rc = CEB_EIO;
  }
  sqlite3_finalize(s);
  return rc;
}
