/* The store's identity: a random 32-bit id kept in the SQLite header
 * (PRAGMA application_id) and in a small file beside the store,
 * "<store>.id", written when the store is created.
 *
 * Why: SQLite creates a missing database silently, and opens a 0-byte file
 * as an empty one. A store deleted, truncated or swapped for another file
 * would start empty and every pending event it held would be dropped
 * without a word. The marker is the data directory's record that a store
 * existed there: with the marker present, a missing, empty or foreign
 * store file is a fatal start error that names the file and what to do.
 * Without the marker (a new store, or one made by a version before the
 * marker) the store is adopted and the marker written. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

static void marker_path(const char *path, char *buf, size_t size) {
  snprintf(buf, size, "%s.id", path);
}

/* 1 with *id when the marker exists, 0 when it does not, < 0 when it
 * exists but cannot be read (err filled). */
static int marker_read(const char *mpath, uint32_t *id, char *err,
                       size_t errlen) {
  FILE *f = fopen(mpath, "r");
  if (!f) {
    if (errno == ENOENT) return 0;
    snprintf(err, errlen, "store: cannot read %s: %s", mpath, strerror(errno));
    return CEB_EIO;
  }
  char line[256];
  int found = 0;
  while (!found && fgets(line, sizeof line, f)) {
    unsigned long v;
    char end;
    if (sscanf(line, "id = %lx%c", &v, &end) == 2 && end == '\n' && v &&
        v <= UINT32_MAX) {
      *id = (uint32_t)v;
      found = 1;
    }
  }
  fclose(f);
  if (!found) {
    snprintf(err, errlen,
             "store: %s has no 'id = <hex>' line: it is not a store marker "
             "written by cebridge; restore it from a backup, or remove it to "
             "adopt the store file as it is",
             mpath);
    return CEB_ECONFLICT;
  }
  return 1;
}

/* Writes the marker atomically (temporary file, fsync, rename, fsync of
 * the directory): a marker that is there is complete. */
static int marker_write(const char *path, const char *mpath, uint32_t id,
                        char *err, size_t errlen) {
  char tmp[4200], stamp[32], text[4600];
  snprintf(tmp, sizeof tmp, "%s.tmp", mpath);
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  int n = snprintf(text, sizeof text,
                   "# cebridge store identity, checked at every start: with "
                   "this file present,\n# a missing, empty or different "
                   "store file beside it is refused (see\n# the operator "
                   "guide, \"Store integrity\"). Back it up with the "
                   "store.\nstore = %s\nid = %08" PRIx32 "\ncreated = %s\n",
                   path, id, stamp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  int ok = fd >= 0 && write(fd, text, (size_t)n) == n && fsync(fd) == 0;
  int e = errno;
  if (fd >= 0 && close(fd) != 0 && ok) {
    ok = 0;
    e = errno;
  }
  if (ok && rename(tmp, mpath) != 0) {
    ok = 0;
    e = errno;
  }
  if (!ok) {
    unlink(tmp);
    snprintf(err, errlen, "store: cannot write %s: %s", mpath, strerror(e));
    return CEB_EIO;
  }
  char dir[4200];
  snprintf(dir, sizeof dir, "%s", mpath);
  int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd); /* the rename itself; best effort where unsupported */
    close(dfd);
  }
  return CEB_OK;
}

int cebs_ident_precheck(const char *path, cebs_ident *id, char *err,
                        size_t errlen) {
  memset(id, 0, sizeof *id);
  marker_path(path, id->marker, sizeof id->marker);
  int rc = marker_read(id->marker, &id->id, err, errlen);
  if (rc < 0) return rc;
  id->have_marker = rc == 1;
  struct stat sb;
  int exists = stat(path, &sb) == 0;
  if (!exists && errno != ENOENT) {
    snprintf(err, errlen, "store: cannot stat %s: %s", path, strerror(errno));
    return CEB_EIO;
  }
  if (id->have_marker && (!exists || sb.st_size == 0)) {
    snprintf(err, errlen,
             "store: %s is %s, but %s records that store %08" PRIx32
             " was created there: starting would drop every event it held. "
             "Restore the store file from a backup; only to give up its "
             "contents and start with a new, empty store, remove %s",
             path, exists ? "empty (0 bytes)" : "missing", id->marker, id->id,
             id->marker);
    return CEB_ECONFLICT;
  }
  return CEB_OK;
}

static int pragma_int(sqlite3 *db, const char *sql, int64_t *out) {
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    *out = sqlite3_column_int64(s, 0);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(s);
  return rc;
}

int cebs_ident_foreign_check(sqlite3 *db, const char *path, char *err,
                             size_t errlen) {
  int64_t version = 0, tables = 0;
  if (pragma_int(db, "PRAGMA user_version", &version) != SQLITE_OK ||
      pragma_int(db, "SELECT count(*) FROM sqlite_master", &tables) !=
          SQLITE_OK) {
    snprintf(err, errlen, "store: %s: %s", path, sqlite3_errmsg(db));
    return cebs_status_of(sqlite3_errcode(db));
  }
  /* A cebridge store has user_version >= 1 once its first migration ran;
   * a new one has no tables yet. Anything else is another program's. */
  if (version == 0 && tables > 0) {
    snprintf(err, errlen,
             "store: %s is an SQLite database of another program (no "
             "cebridge schema version): refusing to use it as the store; "
             "point [bridge] store at the bridge's store file",
             path);
    return CEB_ECONFLICT;
  }
  return CEB_OK;
}

int cebs_ident_settle(sqlite3 *db, const char *path, const cebs_ident *id,
                      char *err, size_t errlen) {
  int64_t app = 0;
  if (pragma_int(db, "PRAGMA application_id", &app) != SQLITE_OK) {
    snprintf(err, errlen, "store: %s: %s", path, sqlite3_errmsg(db));
    return cebs_status_of(sqlite3_errcode(db));
  }
  uint32_t have = (uint32_t)app;
  if (id->have_marker) {
    if (have == id->id) return CEB_OK;
    snprintf(err, errlen,
             "store: %s is not the store %s records (this file's identity "
             "is %08" PRIx32 ", the record says %08" PRIx32
             "): the file was replaced. Put the right store file back; only "
             "to adopt this file as the store, remove %s",
             path, id->marker, have, id->id, id->marker);
    return CEB_ECONFLICT;
  }
  if (have == 0) {
    /* new, or made before identities: give it one */
    uint32_t fresh = 0;
    while (fresh == 0)
      if (getrandom(&fresh, sizeof fresh, 0) != (ssize_t)sizeof fresh) {
        snprintf(err, errlen, "store: getrandom: %s", strerror(errno));
        return CEB_EIO;
      }
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA application_id = %" PRId32,
             (int32_t)fresh);
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
      snprintf(err, errlen, "store: %s: cannot record its identity: %s", path,
               sqlite3_errmsg(db));
      return cebs_status_of(sqlite3_errcode(db));
    }
    have = fresh;
  } else {
    ceb_log_warn("store: %s.id was missing; written again from the store's "
                 "identity %08" PRIx32,
                 path, have);
  }
  return marker_write(path, id->marker, have, err, errlen);
}
