/* The journal's dedupe index, in memory: event id hash -> journal seq.
 *
 * Until schema 6 this was the on-disk index journal_idh. Its keys are
 * random, so every ingested event dirtied one more index page of its own:
 * about 4 KiB of WAL per 1 KiB event and a third of the bytes the syncer
 * waited for. Now each journal row's hash is kept in its settle row
 * (journal_settle.idh, schema 20; an index journal_seq_idh until then),
 * and this map, built from it when the store opens, answers "which rows
 * may carry this id". Memory: about 24-48 bytes per journal row.
 *
 * A multimap: one id under several sources or clients, and different ids
 * whose hashes collide, share a key. A seq found here is a candidate only:
 * the caller checks the row's columns. So an entry whose row was rolled
 * back, or swept before its entry was removed, is harmless (it costs its
 * memory until removed or the store reopens).
 *
 * Thread-safe (one mutex): the committer adds and removes; readers look
 * up. Internal to core/store. */
#ifndef CEBS_IDMAP_H
#define CEBS_IDMAP_H

#include <pthread.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cebs_idmap_slot {
  int64_t idh;
  int64_t seq; /* 0: empty (journal seqs start at 1) */
} cebs_idmap_slot;

typedef struct cebs_idmap {
  pthread_mutex_t lock;
  cebs_idmap_slot *slots;
  size_t cap; /* a power of two, or 0 */
  size_t count;
} cebs_idmap;

void cebs_idmap_init(cebs_idmap *m);
void cebs_idmap_destroy(cebs_idmap *m);

/* Adds one entry (seq >= 1). CEB_OK, CEB_EINVAL, or CEB_ENOMEM when the
 * table is full and cannot grow. */
int cebs_idmap_add(cebs_idmap *m, int64_t idh, int64_t seq);

/* Removes one (idh, seq) entry if present (one copy, if added twice). */
void cebs_idmap_remove(cebs_idmap *m, int64_t idh, int64_t seq);

/* Copies up to max seqs filed under idh into out (any order) and returns
 * how many there are, which may be more than max. */
size_t cebs_idmap_find(cebs_idmap *m, int64_t idh, int64_t *out, size_t max);

/* Entries, and bytes of the table. */
size_t cebs_idmap_count(cebs_idmap *m);
size_t cebs_idmap_bytes(cebs_idmap *m);

/* Fills an empty map from the journal of db (SELECT seq, idh of the
 * narrow table journal_settle). CEB_OK, or CEB_EIO / CEB_ENOMEM with
 * the reason in err. Called at open, before the committer starts. */
int cebs_idmap_load(cebs_idmap *m, sqlite3 *db, char *err, size_t errlen);

#endif
