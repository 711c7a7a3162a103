/* Whether the store can be trusted and written: the integrity check at
 * open, and the write health the committer keeps while running.
 *
 * A damaged store must not start: SQLite reads a page only when a query
 * needs it, so garbage in the middle of the file went unnoticed at start
 * and showed up as one failing claim a second while ingress kept
 * answering 202. PRAGMA quick_check (or integrity_check) reads every page
 * once before anything is accepted.
 *
 * At run time a commit that fails for lack of space or an I/O error makes
 * the store "not writable": sources are refused (503, nothing
 * acknowledged), readiness is 503, and the committer probes with a small
 * write transaction every second while nothing else writes, so that the
 * bridge becomes ready again as soon as writes succeed. Corruption met at
 * run time and a failed WAL fsync (store_sync.c says why) are final until
 * a restart. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

int cebs_status_of(int sqlite_rc) {
  switch (sqlite_rc & 0xff) {
  case SQLITE_OK:
    return CEB_OK;
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB:
    return CEB_ECONFLICT;
  case SQLITE_NOMEM:
    return CEB_ENOMEM;
  case SQLITE_CANTOPEN: /* a missing directory, a wrong path */
  case SQLITE_READONLY:
  case SQLITE_PERM:
  case SQLITE_AUTH:
    return CEB_EINVAL; /* not worth retrying: the operator must act */
  default:
    return CEB_EIO;
  }
}

int cebs_integrity_check(sqlite3 *db, const char *path, int mode, char *err,
                         size_t errlen) {
  if (mode == CEB_STORE_CHECK_OFF) return CEB_OK;
  const char *what =
      mode == CEB_STORE_CHECK_FULL ? "integrity_check" : "quick_check";
  char sql[64];
  snprintf(sql, sizeof sql, "PRAGMA %s(3)", what);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
  char found[600] = "";
  size_t used = 0;
  while (rc == SQLITE_OK || rc == SQLITE_ROW) {
    if ((rc = sqlite3_step(s)) != SQLITE_ROW) break;
    const char *m = (const char *)sqlite3_column_text(s, 0);
    if (m && strcmp(m, "ok") != 0 && used < sizeof found - 1)
      used += (size_t)snprintf(found + used, sizeof found - used, "%s%s",
                               used ? "; " : "", m);
  }
  int code = rc == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
  if (code != SQLITE_OK && !found[0])
    snprintf(found, sizeof found, "%s", sqlite3_errmsg(db));
  sqlite3_finalize(s);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  long long ms = (long long)(t1.tv_sec - t0.tv_sec) * 1000 +
                 (t1.tv_nsec - t0.tv_nsec) / 1000000;
  if (!found[0]) {
    ceb_log_info("store: %s of %s passed in %lld ms", what, path, ms);
    return CEB_OK;
  }
  /* An I/O error while reading is not proof of damage: report it as I/O. */
  int st = code != SQLITE_OK ? cebs_status_of(code) : CEB_ECONFLICT;
  if (st == CEB_ECONFLICT)
    snprintf(err, errlen,
             "store: %s is damaged (%s: %s): refusing to start on it. Stop, "
             "restore the store from a backup (operator guide, \"Store "
             "integrity and backups\") or salvage it with sqlite3 .recover",
             path, what, found);
  else
    snprintf(err, errlen, "store: %s: %s could not read it: %s", path, what,
             found);
  return st;
}

/* ---- write health (st->lock) ---- */

static int is_final_code(int code) {
  code &= 0xff;
  return code == SQLITE_CORRUPT || code == SQLITE_NOTADB;
}

static int is_write_code(int code) {
  code &= 0xff;
  return code == SQLITE_FULL || code == SQLITE_IOERR ||
         code == SQLITE_CANTOPEN || code == SQLITE_READONLY ||
         is_final_code(code);
}

int cebs_write_error_of(sqlite3 *db) {
  int code = sqlite3_extended_errcode(db);
  return is_write_code(code) ? code : 0;
}

/* A failure sets the state at once; only the probe clears it. Clearing on
 * any commit made readiness flap on a full disk: small commits (a claim)
 * fitted into WAL space a failed commit had allocated, while the next
 * batch of events failed again. */
static void health_set(cebs_store *st, int code, int probe) {
  pthread_mutex_lock(&st->lock);
  int was = st->write_failed;
  if (!code && !probe) {
    pthread_mutex_unlock(&st->lock);
    return;
  }
  if (code && is_final_code(code)) st->corrupt = 1;
  st->write_failed = code != 0 || st->corrupt;
  if (code) st->write_code = code;
  int corrupt_now = code && is_final_code(code);
  pthread_mutex_unlock(&st->lock);
  if (corrupt_now)
    ceb_log_error("ALERT store: %s is damaged (%s): nothing is accepted; "
                  "stop the bridge and restore the store from a backup",
                  st->path, sqlite3_errstr(code));
  else if (code && !was)
    ceb_log_error("ALERT store: writing %s fails (%s): sources are refused "
                  "(503) and /readyz answers 503 until a write succeeds "
                  "again (free disk space)",
                  st->path, sqlite3_errstr(code));
  else if (!code && was)
    ceb_log_info("store: writing %s succeeds again: accepting", st->path);
}

void cebs_health_group(cebs_store *st, int code) {
  health_set(st, code, 0);
}

int cebs_health_needs_probe(cebs_store *st) {
  return st->write_failed && !st->corrupt && !st->sync_failed;
}

void cebs_health_probe(cebs_store *st) {
  if (st->reserve_released) {
    /* room to start is not room to accept: first the reserve back */
    if (cebs_reserve_take(st->path, st->reserve) != 0) {
      health_set(st, SQLITE_FULL, 1);
      return;
    }
    st->reserve_released = 0;
    ceb_log_info("store: the reserve beside %s is taken back", st->path);
  }
  /* Writes 1 MiB and commits: a probe of one page succeeded on a disk
   * still too full for the next batch of events (its frame fitted into
   * WAL space a failed commit had allocated), and readiness flapped. The
   * table is dropped in a second transaction (its pages stay free inside
   * the file for the next writes). Quietly: the change is logged once by
   * cebs_health_group, not each second. */
  int rc = sqlite3_exec(st->wdb,
                        "BEGIN IMMEDIATE;"
                        " CREATE TABLE IF NOT EXISTS ceb_probe (b BLOB);"
                        " DELETE FROM ceb_probe;"
                        " INSERT INTO ceb_probe VALUES (zeroblob(1048576));"
                        " COMMIT",
                        NULL, NULL, NULL);
  int code = rc == SQLITE_OK ? 0 : cebs_write_error_of(st->wdb);
  if (rc != SQLITE_OK) {
    if (!sqlite3_get_autocommit(st->wdb))
      sqlite3_exec(st->wdb, "ROLLBACK", NULL, NULL, NULL);
    if (!code) code = rc; /* still failing, whatever the reason */
  } else {
    sqlite3_exec(st->wdb, "DROP TABLE IF EXISTS ceb_probe", NULL, NULL, NULL);
  }
  health_set(st, code, 1);
}

int cebs_writable(cebs_store *st, char *why, size_t whylen) {
  if (!st) return 0;
  pthread_mutex_lock(&st->lock);
  int failed = st->write_failed, corrupt = st->corrupt, sync = st->sync_failed,
      code = st->write_code;
  pthread_mutex_unlock(&st->lock);
  if (why && whylen)
    snprintf(why, whylen, "%s",
             sync      ? "the WAL fsync failed; restart the bridge"
             : corrupt ? "the store is damaged; restore it from a backup"
             : failed  ? sqlite3_errstr(code)
                       : "");
  return !failed && !corrupt && !sync;
}
