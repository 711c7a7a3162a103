/* Opening and closing the store: connections, pragmas, migrations, the read
 * connection pool and small SQLite helpers. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

void *cebs_committer_main(void *arg);

int cebs_open_conn(const char *path, int readonly, int sync_full, sqlite3 **out,
                   char *err, size_t errlen);
int cebs_open_conn_vfs(const char *path, int readonly, int sync_full,
                       const char *vfs, sqlite3 **out, char *err,
                       size_t errlen);
/* SQLite's allocation statistics take a process-wide mutex on every
 * malloc and free: the committer and readers contended on it (about 2 % of
 * the bridge's CPU under ingest). Nothing here reads those statistics.
 * sqlite3_config must run before SQLite initialises; if something in the
 * process initialised it first, the call fails harmlessly. */
static pthread_once_t g_sqlite_once = PTHREAD_ONCE_INIT;
static void sqlite_configure(void) {
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

void cebs_sqlite_configure(void) {
  pthread_once(&g_sqlite_once, sqlite_configure);
}

int cebs_open_conn(const char *path, int readonly, int sync_full, sqlite3 **out,
                   char *err, size_t errlen) {
  return cebs_open_conn_vfs(path, readonly, sync_full, NULL, out, err, errlen);
}

int cebs_open_conn_vfs(const char *path, int readonly, int sync_full,
                       const char *vfs, sqlite3 **out, char *err,
                       size_t errlen) {
  cebs_sqlite_configure();
  sqlite3 *db = NULL;
  int flags = SQLITE_OPEN_NOMUTEX |
              (readonly ? SQLITE_OPEN_READONLY
                        : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  if (sqlite3_open_v2(path, &db, flags, vfs) != SQLITE_OK) {
    snprintf(err, errlen, "store: cannot open %s: %s", path,
             db ? sqlite3_errmsg(db) : "out of memory");
    int st = db ? cebs_status_of(sqlite3_errcode(db)) : CEB_ENOMEM;
    sqlite3_close(db);
    return st;
  }
  sqlite3_busy_timeout(db, 10000);
  char sql[256];
  snprintf(sql, sizeof sql,
           "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s;"
           " PRAGMA foreign_keys=OFF; PRAGMA temp_store=MEMORY;"
           " PRAGMA cache_size=-32768;",
           sync_full ? "FULL" : "NORMAL");
  char *msg = NULL;
  if (!readonly && sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    int st = cebs_status_of(sqlite3_errcode(db));
    if (st == CEB_ECONFLICT)
      snprintf(err, errlen,
               "store: %s is not a usable SQLite database (%s): restore the "
               "store from a backup, or point [bridge] store at the right "
               "file",
               path, msg ? msg : sqlite3_errmsg(db));
    else
      snprintf(err, errlen, "store: %s: %s", path, msg ? msg : "pragma failed");
    sqlite3_free(msg);
    sqlite3_close(db);
    return st;
  }
  *out = db;
  return CEB_OK;
}

static int open_once(const ceb_store_opts *opts, const char *path,
                     cebs_store **out, char *err, size_t errlen) {
  if (!opts || !path || !*path || !out) {
    snprintf(err, errlen, "store: no path given");
    return CEB_EINVAL;
  }
  cebs_store *st = calloc(1, sizeof *st);
  if (!st) {
    snprintf(err, errlen, "store: out of memory");
    return CEB_ENOMEM;
  }
  pthread_mutex_init(&st->lock, NULL);
  pthread_cond_init(&st->cond, NULL);
  pthread_mutex_init(&st->rlock, NULL);
  pthread_cond_init(&st->rcond, NULL);
  st->group_max = opts->group_max ? opts->group_max : 512;
  st->group_wait_ms = opts->group_wait_ms;
  st->queue_max = opts->queue_max ? opts->queue_max : 65536;
  st->wal_fd = -1;
  snprintf(st->instance, sizeof st->instance, "%s",
           opts->instance ? opts->instance : "");
  st->lease_ms =
      opts->lease_ms > 0 ? opts->lease_ms : CEB_STORE_LEASE_DEFAULT_MS;
  cebs_idmap_init(&st->ids);
  cebs_idmap_init(&st->idem_live);
  cebs_ident ident;
  st->path = strdup(path);
  int rc =
      st->path ? cebs_ident_precheck(path, &ident, err, errlen) : CEB_ENOMEM;
  if (rc == CEB_OK)
    rc = cebs_open_conn_vfs(path, 0, opts->synchronous_full, cebs_vfs_writer(),
                            &st->wdb, err, errlen);
  if (rc == CEB_OK) rc = cebs_ident_foreign_check(st->wdb, path, err, errlen);
  if (rc == CEB_OK)
    rc = cebs_integrity_check(st->wdb, path, opts->check, err, errlen);
  if (rc == CEB_OK) rc = cebs_migrate(st->wdb, err, errlen);
  if (rc == CEB_OK) rc = cebs_ident_settle(st->wdb, path, &ident, err, errlen);
  if (rc == CEB_OK) rc = cebs_idmap_load(&st->ids, st->wdb, err, errlen);
  if (rc == CEB_OK && opts->synchronous_full) {
    /* durability by the syncer (store_sync.c); SQLite's own FULL stays on
     * if it cannot start */
    char why[256];
    if (cebs_syncer_start(st, path, why, sizeof why) == CEB_OK)
      rc = cebs_exec(st->wdb, "PRAGMA synchronous=NORMAL");
    else
      ceb_log_warn("%s; SQLite syncs each commit itself (slower)", why);
  }
  for (int i = 0; rc == CEB_OK && i < CEB_STORE_READERS; i++)
    rc = cebs_open_conn(path, 1, 0, &st->readers[i], err, errlen);
  if (rc == CEB_OK)
    rc = cebs_checkpointer_start(st, path, opts->synchronous_full, err, errlen);
  if (rc == CEB_OK &&
      pthread_create(&st->committer, NULL, cebs_committer_main, st) != 0) {
    snprintf(err, errlen, "store: cannot start the committer thread");
    rc = CEB_EINTERNAL;
  }
  if (rc == CEB_OK) pthread_setname_np(st->committer, "store-commit");
  if (rc != CEB_OK) {
    cebs_syncer_stop(st);
    cebs_checkpointer_stop(st);
    for (int i = 0; i < CEB_STORE_READERS; i++)
      sqlite3_close(st->readers[i]);
    sqlite3_close(st->wdb);
    cebs_idmap_destroy(&st->ids);
    cebs_idmap_destroy(&st->idem_live);
    pthread_mutex_destroy(&st->lock);
    pthread_cond_destroy(&st->cond);
    pthread_mutex_destroy(&st->rlock);
    pthread_cond_destroy(&st->rcond);
    free(st->path);
    free(st);
    return rc;
  }
  st->started = 1;
  *out = st;
  return CEB_OK;
}

int cebs_open(const ceb_store_opts *opts, const char *path, ceb_store *owner,
              cebs_store **out, char *err, size_t errlen) {
  (void)owner; /* one process per file: no other writer to hear of */
  int rc = open_once(opts, path, out, err, errlen);
  if (rc == CEB_EIO && opts->reserve && cebs_reserve_release(path) == 0) {
    ceb_log_error("ALERT store: cannot open %s (%s): gave up its reserve "
                  "(%s.reserve, %zu KiB) to start; nothing is accepted until "
                  "the disk has room again",
                  path, err, path, opts->reserve / 1024);
    rc = open_once(opts, path, out, err, errlen);
    if (rc == CEB_OK) {
      cebs_store *st = *out;
      pthread_mutex_lock(&st->lock);
      st->reserve = opts->reserve;
      st->reserve_released = 1;
      st->write_failed = 1; /* the probe clears it, after the reserve */
      st->write_code = SQLITE_FULL;
      pthread_cond_broadcast(&st->cond); /* the committer starts probing */
      pthread_mutex_unlock(&st->lock);
    }
    return rc;
  }
  if (rc == CEB_OK && opts->reserve) {
    (*out)->reserve = opts->reserve;
    int r = cebs_reserve_take(path, opts->reserve);
    if (r != 0)
      ceb_log_warn("store: cannot keep a reserve of %zu KiB in %s.reserve "
                   "(%s): a start on a full disk will wait for room",
                   opts->reserve / 1024, path, strerror(-r));
  }
  return rc;
}

void cebs_close(cebs_store *st) {
  if (!st) return;
  pthread_mutex_lock(&st->lock);
  st->stopping = 1;
  pthread_cond_broadcast(&st->cond);
  pthread_mutex_unlock(&st->lock);
  if (st->started) pthread_join(st->committer, NULL);
  cebs_syncer_stop(st); /* after the committer: it finishes what it got */
  cebs_checkpointer_stop(st);
  for (int i = 0; i < CEB_STORE_READERS; i++) {
    sqlite3_finalize(st->rdue[i]);
    sqlite3_close(st->readers[i]);
  }
  /* A clean close checkpoints the WAL into the main file. */
  sqlite3_close(st->wdb);
  cebs_idmap_destroy(&st->ids);
  cebs_idmap_destroy(&st->idem_live);
  pthread_mutex_destroy(&st->lock);
  pthread_cond_destroy(&st->cond);
  pthread_mutex_destroy(&st->rlock);
  pthread_cond_destroy(&st->rcond);
  free(st->path);
  free(st);
}

sqlite3 *cebs_read_begin(cebs_store *st) {
  pthread_mutex_lock(&st->rlock);
  for (;;) {
    for (int i = 0; i < CEB_STORE_READERS; i++) {
      if (!st->rbusy[i]) {
        st->rbusy[i] = 1;
        pthread_mutex_unlock(&st->rlock);
        return st->readers[i];
      }
    }
    pthread_cond_wait(&st->rcond, &st->rlock);
  }
}

void cebs_read_end(cebs_store *st, sqlite3 *db) {
  pthread_mutex_lock(&st->rlock);
  for (int i = 0; i < CEB_STORE_READERS; i++)
    if (st->readers[i] == db) st->rbusy[i] = 0;
  pthread_cond_signal(&st->rcond);
  pthread_mutex_unlock(&st->rlock);
}

int cebs_exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    ceb_log_error("store: %s: %s", sql, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return CEB_EIO;
  }
  return CEB_OK;
}

sqlite3_stmt *cebs_prepare(sqlite3 *db, const char *sql) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL) !=
      SQLITE_OK) {
    ceb_log_error("store: prepare failed: %s", sqlite3_errmsg(db));
    return NULL;
  }
  return s;
}

void cebs_bind_text(sqlite3_stmt *s, int i, const char *v) {
  if (v)
    sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(s, i);
}

char *cebs_col_dup(sqlite3_stmt *s, int i) {
  const unsigned char *t = sqlite3_column_text(s, i);
  return t ? strdup((const char *)t) : NULL;
}

void cebs_json_col(json_t *o, const char *key, sqlite3_stmt *s, int i) {
  switch (sqlite3_column_type(s, i)) {
  case SQLITE_INTEGER:
    json_object_set_new(o, key, json_integer(sqlite3_column_int64(s, i)));
    break;
  case SQLITE_NULL:
    json_object_set_new(o, key, json_null());
    break;
  default:
    json_object_set_new(o, key,
                        json_string((const char *)sqlite3_column_text(s, i)));
  }
}

/* The committer runs the same few statements for every op: keep them
 * prepared. Thread-local because only the committer thread writes. */
#define STMT_CACHE 48
static __thread struct {
  sqlite3 *db;
  const char *sql;
  sqlite3_stmt *stmt;
} t_cache[STMT_CACHE];

sqlite3_stmt *cebs_stmt(sqlite3 *db, const char *sql) {
  int free_slot = -1;
  for (int i = 0; i < STMT_CACHE; i++) {
    if (t_cache[i].db == db && t_cache[i].sql == sql) {
      sqlite3_reset(t_cache[i].stmt);
      sqlite3_clear_bindings(t_cache[i].stmt);
      return t_cache[i].stmt;
    }
    if (!t_cache[i].db && free_slot < 0) free_slot = i;
  }
  sqlite3_stmt *s = cebs_prepare(db, sql);
  if (s && free_slot >= 0) {
    t_cache[free_slot].db = db;
    t_cache[free_slot].sql = sql;
    t_cache[free_slot].stmt = s;
  } else if (s) {
    ceb_log_error("store: statement cache full");
    sqlite3_finalize(s);
    s = NULL;
  }
  return s;
}

void cebs_finalize_all(sqlite3 *db) {
  for (int i = 0; i < STMT_CACHE; i++)
    if (t_cache[i].db == db) t_cache[i].db = NULL;
  sqlite3_stmt *s;
  while ((s = sqlite3_next_stmt(db, NULL)) != NULL)
    sqlite3_finalize(s);
}

int64_t cebs_id_hash(const char *id) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char *p = (const unsigned char *)id; p && *p; p++) {
    h ^= *p;
    h *= 0x100000001b3ULL;
  }
  return (int64_t)h;
}
