/* The WAL is checkpointed in the background: writing ~40 MiB of events in
 * many commits leaves a WAL far smaller than what was written (it is reset
 * and reused), and every row is readable after a reopen. The background
 * checkpointer runs a pass per chunk of WAL growth, not one per commit. */
#include <sys/stat.h>

#include <ceb/status.h>

#include "store/sqlite/store_internal.h"
#include "store_fixture.h"

#define BATCHES 400
#define PER_BATCH 100

int main(void) {
  char *path = NULL;
  ceb_store *st = fixture_open("ckpt", &path);
  ceb_store_close(st);
  ceb_store_opts o = {.spec = path, .synchronous_full = 0, .group_max = 1};
  char err[256];
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), 0);
  static char json[1024];
  memset(json, 'x', sizeof json - 1);
  static char ids[PER_BATCH][16];
  ceb_ingest_route r = {"r", NULL, 0};
  ceb_ingest_event ev[PER_BATCH];
  for (int b = 0; b < BATCHES; b++) {
    for (int i = 0; i < PER_BATCH; i++) {
      snprintf(ids[i], sizeof ids[i], "%d-%d", b, i);
      ev[i] = (ceb_ingest_event){.source = "urn:s",
                                 .id = ids[i],
                                 .type = "t",
                                 .json = json,
                                 .json_len = sizeof json - 1,
                                 .routes = &r,
                                 .nroutes = 1};
    }
    ceb_ingest_batch batch = {ev, PER_BATCH, b};
    CHECK_INT(ceb_store_ingest_wait(st, &batch), CEB_OK);
  }
  char wal[600];
  snprintf(wal, sizeof wal, "%s-wal", path);
  struct stat sb;
  CHECK(stat(wal, &sb) == 0);
  long long written = (long long)BATCHES * PER_BATCH * (long long)sizeof json;
  CHECK_MSG(sb.st_size < written / 2, "WAL %lld bytes after %lld written",
            (long long)sb.st_size, written);
  /* ~40 MiB is ~10,000 frames: ten chunks of 1,000, plus at most one
   * timer pass a second; chasing each of the 400 commits made hundreds */
  uint64_t passes = 0, forced = 0;
  cebs_checkpoint_stats(cebs_of(st), &passes, &forced);
  CHECK_MSG(passes >= 2 && passes <= 60,
            "%llu background checkpoint passes for %d commits",
            (unsigned long long)passes, BATCHES);
  ceb_store_close(st);
  CHECK_INT(ceb_store_open(&o, &st, err, sizeof err), 0);
  CHECK_INT(fixture_int(st, "SELECT COUNT(*) FROM journal"),
            BATCHES * PER_BATCH);
  ceb_store_close(st);
  free(path);
  return ceb_test_done("unit_store_checkpoint");
}
