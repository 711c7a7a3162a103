/* The committer's WAL writes (store_vfs.c): a transaction's frames go out
 * in a few writes instead of two per frame; what a commit wrote is visible
 * to the read connections as soon as it returns, also for a transaction
 * larger than the buffer; and it is all in the file (a reopen recovers it
 * from the WAL). SQLite's allocation statistics stay off. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include <ceb/status.h>

#include "store/sqlite/store_internal.h"
#include "store_fixture.h"

#define EVENT_SIZE 1024

/* Write system calls the thread named `comm` made so far; -1 if absent. */
static long long thread_syscw(const char *comm) {
  DIR *d = opendir("/proc/self/task");
  long long v = -1;
  struct dirent *e;
  while (d && v < 0 && (e = readdir(d))) {
    char path[300], name[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(name, sizeof name, f)) name[0] = '\0';
    fclose(f);
    name[strcspn(name, "\n")] = '\0';
    if (strcmp(name, comm) != 0) continue;
    snprintf(path, sizeof path, "/proc/self/task/%s/io", e->d_name);
    if (!(f = fopen(path, "r"))) continue;
    char line[128];
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "syscw: %lld", &v) == 1) break;
    fclose(f);
  }
  if (d) closedir(d);
  return v;
}

static int ingest(ceb_store *st, int first, int count) {
  static char json[EVENT_SIZE];
  memset(json, 'x', sizeof json - 1);
  ceb_ingest_route r = {"r", NULL, 0};
  ceb_ingest_event *ev = calloc((size_t)count, sizeof *ev);
  char(*ids)[16] = calloc((size_t)count, sizeof *ids);
  for (int i = 0; i < count; i++) {
    snprintf(ids[i], sizeof ids[i], "e-%d", first + i);
    ev[i] = (ceb_ingest_event){.source = "urn:s",
                               .id = ids[i],
                               .type = "t",
                               .json = json,
                               .json_len = sizeof json - 1,
                               .routes = &r,
                               .nroutes = 1};
  }
  ceb_ingest_batch batch = {ev, (size_t)count, 1000};
  int rc = ceb_store_ingest_wait(st, &batch);
  free(ev);
  free(ids);
  return rc;
}

int main(void) {
  CHECK(cebs_vfs_writer() != NULL);
  char *path = NULL;
  ceb_store *st = fixture_open("vfs", &path);
  /* 40 commits of 10 events: ~13 frames each, two writes per frame when
   * unbuffered (1,064 measured) */
  long long before = thread_syscw("store-commit");
  CHECK(before >= 0);
  int n = 0;
  for (int c = 0; c < 40; c++, n += 10) {
    CHECK_INT(ingest(st, n, 10), CEB_OK);
    CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal"), n + 10);
  }
  long long writes = thread_syscw("store-commit") - before;
  /* SQLite's allocation statistics are off (a process-wide mutex on every
   * malloc otherwise): registering the VFS must not initialise SQLite
   * before that setting */
  sqlite3_int64 used = -1, high = -1;
  CHECK_INT(sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &used, &high, 0),
            SQLITE_OK);
  CHECK_MSG(used == 0, "SQLite counts its memory: %lld bytes", (long long)used);
  CHECK_MSG(writes > 0 && writes <= 40 * 2,
            "%lld write calls for 40 commits of ~13 frames", writes);
  /* one transaction of ~4 MiB: twice the buffer */
  CHECK_INT(ingest(st, n, 4000), CEB_OK);
  n += 4000;
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal"), n);
  CHECK_INT(ingest(st, n, 1), CEB_OK);
  n += 1;
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal WHERE"
                            " length(event) = 1023"),
            n);
  ceb_store_close(st);
  /* reopened: every row came back from the database and the WAL files */
  ceb_store_opts o = {.spec = path, .group_max = 512};
  char err[256];
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), CEB_OK);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal"), n);
  sqlite3 *db = cebs_read_begin(cebs_of(st));
  sqlite3_stmt *q = NULL;
  CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &q, NULL) ==
            SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW);
  CHECK_STR((const char *)sqlite3_column_text(q, 0), "ok");
  sqlite3_finalize(q);
  cebs_read_end(cebs_of(st), db);
  ceb_store_close(st);
  free(path);
  return ceb_test_done("unit_store_vfs");
}
