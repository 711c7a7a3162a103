/* The store's identity, integrity check and write health (store_ident.c,
 * store_health.c), at the store's own level and without root:
 *  - the marker <store>.id: written for a new store, written again when
 *    lost; a missing or replaced store file, another program's database
 *    and a file that is not SQLite are refused with CEB_ECONFLICT and a
 *    message naming the file;
 *  - damage in the middle of the file is refused by quick_check and by
 *    integrity_check; store.check = off skips the check;
 *  - writes failing (RLIMIT_FSIZE: the file size limit makes write(2) fail
 *    with EFBIG as a full disk fails with ENOSPC, with no mount needed)
 *    make the store not writable until the probe succeeds once the limit
 *    is lifted; a failed WAL fdatasync is final. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ceb/status.h>

#include "ceb_test_proc.h"
#include "store/sqlite/store_internal.h"
#include "store_fixture.h"

static int open_at(const char *path, int check, ceb_store **st, char *err,
                   size_t errlen) {
  ceb_store_opts o = {
      .spec = path, .synchronous_full = 0, .group_max = 64, .check = check};
  *st = NULL;
  err[0] = '\0';
  return ceb_store_open(&o, st, err, errlen);
}

static void path_in(char *buf, size_t size, const char *dir, const char *n) {
  snprintf(buf, size, "%s/%s", dir, n);
}

static void remove_store(const char *path) {
  char p[600];
  remove(path);
  snprintf(p, sizeof p, "%s-wal", path);
  remove(p);
  snprintf(p, sizeof p, "%s-shm", path);
  remove(p);
}

static int copy_file(const char *from, const char *to) {
  size_t len = 0;
  char *data = ceb_test_read_file(from, &len);
  if (!data) return -1;
  FILE *f = fopen(to, "wb");
  int ok = f && fwrite(data, 1, len, f) == len;
  if (f) fclose(f);
  free(data);
  return ok ? 0 : -1;
}

static void identity_cases(void) {
  char *dir = ceb_test_tmpdir("health-id");
  char path[600], marker[600], other[600], err[1024];
  path_in(path, sizeof path, dir, "store.db");
  path_in(marker, sizeof marker, dir, "store.db.id");
  path_in(other, sizeof other, dir, "other.db");
  ceb_store *st;

  /* new store: the marker is written */
  CHECK_INT(open_at(path, CEB_STORE_CHECK_QUICK, &st, err, sizeof err), CEB_OK);
  ceb_store_close(st);
  char *m = ceb_test_read_file(marker, NULL);
  CHECK_MSG(m && strstr(m, "\nid = "), "marker: %s", m ? m : "(none)");

  /* the marker lost: written again with the same identity */
  CHECK_INT(unlink(marker), 0);
  CHECK_INT(open_at(path, CEB_STORE_CHECK_QUICK, &st, err, sizeof err), CEB_OK);
  ceb_store_close(st);
  char *m2 = ceb_test_read_file(marker, NULL);
  CHECK_MSG(m && m2 && strstr(m, "\nid = ") && strstr(m2, "\nid = ") &&
                strncmp(strstr(m, "\nid = "), strstr(m2, "\nid = "), 14) == 0,
            "identity changed: %s / %s", m ? m : "", m2 ? m2 : "");
  free(m2);
  free(m);

  /* replaced by another store: refused, named */
  CHECK_INT(open_at(other, CEB_STORE_CHECK_QUICK, &st, err, sizeof err),
            CEB_OK);
  ceb_store_close(st);
  remove_store(path);
  CHECK_INT(copy_file(other, path), 0);
  CHECK_INT(open_at(path, CEB_STORE_CHECK_QUICK, &st, err, sizeof err),
            CEB_ECONFLICT);
  CHECK_MSG(strstr(err, path) && strstr(err, "not the store") &&
                strstr(err, "store.db.id"),
            "%s", err);

  /* missing while the marker says it existed: refused, and not created */
  remove_store(path);
  CHECK_INT(open_at(path, CEB_STORE_CHECK_QUICK, &st, err, sizeof err),
            CEB_ECONFLICT);
  CHECK_MSG(strstr(err, path) && strstr(err, "missing") &&
                strstr(err, "backup"),
            "%s", err);
  CHECK(access(path, F_OK) != 0);

  /* another program's database, no marker: refused */
  CHECK_INT(unlink(marker), 0);
  sqlite3 *db = NULL;
  CHECK_INT(sqlite3_open(path, &db), SQLITE_OK);
  CHECK_INT(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL),
            SQLITE_OK);
  sqlite3_close(db);
  CHECK_INT(open_at(path, CEB_STORE_CHECK_QUICK, &st, err, sizeof err),
            CEB_ECONFLICT);
  CHECK_MSG(strstr(err, path) && strstr(err, "another program"), "%s", err);

  /* not SQLite at all: refused */
  remove_store(path);
  CHECK_INT(ceb_test_write_file(dir, "store.db",
                                "this is a text file, not a database, and "
                                "it is longer than an SQLite header: "
                                "0123456789012345678901234567890123456789"),
            0);
  CHECK_INT(open_at(path, CEB_STORE_CHECK_QUICK, &st, err, sizeof err),
            CEB_ECONFLICT);
  CHECK_MSG(strstr(err, path), "%s", err);
  CHECK(access(marker, F_OK) != 0); /* nothing adopted */
  ceb_test_rmtree(dir);
  free(dir);
}

static void damage_cases(void) {
  char *dir = ceb_test_tmpdir("health-dmg");
  char path[600], err[1024];
  path_in(path, sizeof path, dir, "store.db");
  ceb_store *st;
  CHECK_INT(open_at(path, CEB_STORE_CHECK_QUICK, &st, err, sizeof err), CEB_OK);
  /* about 4 MB: pages 1..1000 and more */
  static char json[8192];
  for (int i = 0; i < 500; i++) {
    char id[32];
    snprintf(id, sizeof id, "e-%d", i);
    int n = snprintf(json, sizeof json, "{\"id\":\"%s\",\"d\":\"", id);
    memset(json + n, 'a' + i % 26, sizeof json - (size_t)n - 3);
    memcpy(json + sizeof json - 3, "\"}", 3);
    ceb_ingest_route r = {"r", NULL, 0};
    ceb_ingest_event e = {.source = "urn:s",
                          .id = id,
                          .type = "t",
                          .json = json,
                          .json_len = strlen(json),
                          .routes = &r,
                          .nroutes = 1};
    ceb_ingest_batch b = {&e, 1, 1};
    CHECK_INT(ceb_store_ingest_wait(st, &b), CEB_OK);
  }
  ceb_store_close(st);
  struct stat sb;
  CHECK_INT(stat(path, &sb), 0);
  CHECK(sb.st_size > 700 * 4096);
  int fd = open(path, O_WRONLY);
  CHECK(fd >= 0);
  unsigned char page[4096];
  unsigned seed = 7;
  for (long p = 200; p <= 600; p++) {
    for (size_t i = 0; i < sizeof page; i++)
      page[i] = (unsigned char)(rand_r(&seed) >> 5);
    CHECK_INT(pwrite(fd, page, sizeof page, (p - 1) * 4096), 4096);
  }
  close(fd);
  CHECK_INT(open_at(path, CEB_STORE_CHECK_QUICK, &st, err, sizeof err),
            CEB_ECONFLICT);
  CHECK_MSG(strstr(err, path) && strstr(err, "damaged") &&
                strstr(err, "quick_check"),
            "%s", err);
  CHECK_INT(open_at(path, CEB_STORE_CHECK_FULL, &st, err, sizeof err),
            CEB_ECONFLICT);
  CHECK_MSG(strstr(err, "integrity_check"), "%s", err);
  /* off: the operator's choice for huge stores; the damage is not looked
   * for (the dedupe map's load may still meet it) */
  int rc = open_at(path, CEB_STORE_CHECK_OFF, &st, err, sizeof err);
  CHECK_MSG(rc == CEB_OK || !strstr(err, "quick_check"),
            "off still checked: %s", err);
  if (rc == CEB_OK) ceb_store_close(st);
  ceb_test_rmtree(dir);
  free(dir);
}

/* ---- write health ---- */

static int writable(void *arg) {
  return ceb_store_writable(arg, NULL, 0);
}

static int ingest_big(ceb_store *st, int i) {
  static char json[200 * 1024];
  char id[32];
  snprintf(id, sizeof id, "big-%d", i);
  int n = snprintf(json, sizeof json, "{\"id\":\"%s\",\"d\":\"", id);
  memset(json + n, 'a' + i % 26, sizeof json - (size_t)n - 3);
  memcpy(json + sizeof json - 3, "\"}", 3);
  ceb_ingest_route r = {"r", NULL, 0};
  ceb_ingest_event e = {.source = "urn:s",
                        .id = id,
                        .type = "t",
                        .json = json,
                        .json_len = strlen(json),
                        .routes = &r,
                        .nroutes = 1};
  ceb_ingest_batch b = {&e, 1, 1};
  return ceb_store_ingest_wait(st, &b);
}

static void write_failure_cases(void) {
  char *dir = ceb_test_tmpdir("health-full");
  char path[600], err[1024], why[256];
  path_in(path, sizeof path, dir, "store.db");
  ceb_store *st;
  CHECK_INT(open_at(path, CEB_STORE_CHECK_QUICK, &st, err, sizeof err), CEB_OK);
  CHECK(ceb_store_writable(st, NULL, 0));
  signal(SIGXFSZ, SIG_IGN); /* EFBIG instead of the signal */
  struct rlimit old;
  CHECK_INT(getrlimit(RLIMIT_FSIZE, &old), 0);
  struct rlimit lim = {2 * 1024 * 1024, old.rlim_max};
  CHECK_INT(setrlimit(RLIMIT_FSIZE, &lim), 0);
  int failed_at = -1;
  for (int i = 0; i < 200 && failed_at < 0; i++) /* 40 MB at most */
    if (ingest_big(st, i) != CEB_OK) failed_at = i;
  CHECK_MSG(failed_at >= 0, "no write failed under a 2 MB file limit");
  CHECK(!ceb_store_writable(st, why, sizeof why));
  CHECK_MSG(why[0], "no reason given");
  /* a small write may fit (WAL space the failed commit allocated): the
   * store stays not writable until its own probe passes */
  CHECK(!ceb_store_writable(st, NULL, 0));
  CHECK_INT(setrlimit(RLIMIT_FSIZE, &old), 0);
  CHECK_MSG(ceb_test_wait(writable, st, 15000), "not writable again");
  CHECK_INT(ingest_big(st, 1000), CEB_OK);
  ceb_store_close(st);
  signal(SIGXFSZ, SIG_DFL);
  ceb_test_rmtree(dir);
  free(dir);
}

static int fail_sync(int fd) {
  (void)fd;
  errno = EIO;
  return -1;
}

static int nop_run(sqlite3 *db, void *arg) {
  (void)arg;
  return sqlite3_exec(db, "SELECT 1", NULL, NULL, NULL) == SQLITE_OK ? CEB_OK
                                                                     : CEB_EIO;
}

static void sync_failure_case(void) {
  char *dir = ceb_test_tmpdir("health-sync");
  char path[600], err[1024];
  path_in(path, sizeof path, dir, "store.db");
  ceb_store_opts o = {.spec = path, .synchronous_full = 1, .group_max = 64};
  ceb_store *st = NULL;
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), CEB_OK);
  cebs_fdatasync = fail_sync;
  CHECK_INT(ingest_big(st, 1), CEB_EIO); /* not acknowledged */
  cebs_fdatasync = fdatasync;
  CHECK(!ceb_store_writable(st, NULL, 0));
  /* commits go on (NOSYNC ops) and the probe would pass: still final */
  CHECK_INT(cebs_call_nosync(cebs_of(st), nop_run, NULL), CEB_OK);
  CHECK(!ceb_store_writable(st, NULL, 0));
  ceb_store_close(st);
  ceb_test_rmtree(dir);
  free(dir);
}

int main(void) {
  identity_cases();
  damage_cases();
  write_failure_cases();
  sync_failure_case();
  return ceb_test_done("unit_store_health");
}
