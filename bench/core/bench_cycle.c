/* Store write volume per event in the steady delivery cycle: each round
 * ingests `group` 1 KiB events (one op each, ordered over 1,000 keys,
 * random UUID v4 ids as senders make them),
 * claims the claimable rows and settles the previous round's claims as
 * done, all queued at once so that the committer runs them in one group
 * as it does under load. Prints bytes handed to write() and bytes sent to
 * the disk per event (WAL, checkpoints), which set how long each fsync of
 * the accept path takes: figures that, unlike events/s, do not depend on
 * what else runs on the machine.
 *
 *   bench_core_cycle [events=64000] [group=32] [dir=$TMPDIR]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ceb/status.h>

#include "store/ceb_store.h"

#define KEYS 1000
#define WINDOW 256

static atomic_int g_failed;
static int g_pending;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cond = PTHREAD_COND_INITIALIZER;

static void op_done(void *arg, int status) {
  (void)arg;
  if (status < 0) atomic_fetch_add(&g_failed, 1);
  pthread_mutex_lock(&g_lock);
  if (--g_pending == 0) pthread_cond_signal(&g_cond);
  pthread_mutex_unlock(&g_lock);
}

static void io_bytes(long long *wchar, long long *wbytes) {
  FILE *f = fopen("/proc/self/io", "r");
  char line[128];
  *wchar = *wbytes = 0;
  while (f && fgets(line, sizeof line, f)) {
    sscanf(line, "wchar: %lld", wchar);
    sscanf(line, "write_bytes: %lld", wbytes);
  }
  if (f) fclose(f);
}

/* A UUID v4 from a xorshift stream: ids as random as real senders' are
 * (sequential ids would hash into neighbouring keys). */
static void uuid4(char *out, uint64_t *state) {
  uint64_t w[2];
  for (int i = 0; i < 2; i++) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    w[i] = *state = x;
  }
  snprintf(out, 37, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(w[0] >> 32),
           (unsigned)(w[0] >> 16) & 0xffff, (unsigned)w[0] & 0xfff,
           0x8000 | ((unsigned)(w[1] >> 48) & 0x3fff),
           (unsigned long long)w[1] & 0xffffffffffffULL);
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct ingest_job {
  ceb_ingest_event ev;
  ceb_ingest_route rt;
  ceb_ingest_batch b;
  char id[40], key[16];
} ingest_job;

int main(int argc, char **argv) {
  long events = argc > 1 ? atol(argv[1]) : 64000;
  long group = argc > 2 ? atol(argv[2]) : 32;
  const char *tmp = argc > 3 ? argv[3] : getenv("TMPDIR");
  if (events <= 0 || group <= 0 || group > WINDOW) {
    fprintf(stderr, "usage: %s [events>0] [group 1..%d] [dir]\n", argv[0],
            WINDOW);
    return 2;
  }
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/ceb-bench-cycle-XXXXXX", tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(path, sizeof path, "%s/store.db", dir);
  ceb_store_opts o = {.spec = path,
                      .synchronous_full = 1,
                      .group_max = 512,
                      .queue_max = 100000};
  char err[256];
  ceb_store *st = NULL;
  if (ceb_store_open(&o, &st, err, sizeof err) != CEB_OK) {
    fprintf(stderr, "open: %s\n", err);
    return 1;
  }
  char json[1024];
  memset(json, 'x', sizeof json);
  static const char head[] =
      "{\"specversion\":\"1.0\",\"id\":\"x\",\"source\":\"urn:bench\","
      "\"type\":\"nl.bench.cycle\",\"data\":\"";
  memcpy(json, head, sizeof head - 1);
  memcpy(json + sizeof json - 2, "\"}", 2);
  ingest_job *jobs = calloc((size_t)group, sizeof *jobs);
  ceb_attempt_result *settles = calloc(WINDOW, sizeof *settles);
  int64_t *held = calloc(WINDOW, sizeof *held);
  int64_t *fences = calloc(WINDOW, sizeof *fences);
  size_t nheld = 0;
  long long wc0, wb0, wc1, wb1;
  io_bytes(&wc0, &wb0);
  double t0 = mono_s();
  int64_t now = 1000;
  uint64_t rng = 0x9e3779b97f4a7c15ULL;
  long done = 0;
  while (done < events && !atomic_load(&g_failed)) {
    now++;
    long n = events - done < group ? events - done : group;
    g_pending = (int)(n + (long)nheld); /* nothing queued yet */
    for (long i = 0; i < n; i++) {
      ingest_job *j = &jobs[i];
      uuid4(j->id, &rng);
      snprintf(j->key, sizeof j->key, "k%ld", (done + i) % KEYS);
      j->rt = (ceb_ingest_route){
          .route = "r", .order_key = j->key, .first_at = now};
      j->ev = (ceb_ingest_event){.source = "urn:bench",
                                 .id = j->id,
                                 .type = "nl.bench.cycle",
                                 .json = json,
                                 .json_len = sizeof json,
                                 .routes = &j->rt,
                                 .nroutes = 1};
      j->b = (ceb_ingest_batch){&j->ev, 1, now};
      ceb_store_ingest(st, &j->b, op_done);
    }
    for (size_t i = 0; i < nheld; i++) {
      settles[i] = (ceb_attempt_result){.seq = held[i],
                                        .route = "r",
                                        .fence = fences[i],
                                        .state = CEB_DS_DONE,
                                        .now = now};
      ceb_store_settle(st, &settles[i], op_done, &settles[i]);
    }
    pthread_mutex_lock(&g_lock);
    while (g_pending > 0)
      pthread_cond_wait(&g_cond, &g_lock);
    pthread_mutex_unlock(&g_lock);
    ceb_claim *c = NULL;
    size_t nc = 0;
    if (ceb_store_claim(st, "r", now, WINDOW, 0, &c, &nc) < 0) {
      fprintf(stderr, "claim failed\n");
      return 1;
    }
    for (size_t i = 0; i < nc; i++)
      held[i] = c[i].seq, fences[i] = c[i].fence;
    nheld = nc;
    ceb_claims_free(c, nc);
    done += n;
  }
  double secs = mono_s() - t0;
  io_bytes(&wc1, &wb1);
  ceb_store_close(st);
  if (atomic_load(&g_failed)) {
    fprintf(stderr, "an op failed\n");
    return 1;
  }
  printf("cycle %ld events, group %ld: write() %.1f KiB/event, to disk "
         "%.1f KiB/event, %.0f events/s\n",
         done, group, (double)(wc1 - wc0) / 1024.0 / (double)done,
         (double)(wb1 - wb0) / 1024.0 / (double)done, (double)done / secs);
  /* start-up: the dedupe map is read back from the journal */
  double o0 = mono_s();
  if (ceb_store_open(&o, &st, err, sizeof err) != CEB_OK) {
    fprintf(stderr, "reopen: %s\n", err);
    return 1;
  }
  uint64_t entries = 0, bytes = 0;
  ceb_store_dedupe_stats(st, &entries, &bytes);
  printf("reopen with %llu journal rows: %.1f ms (dedupe map %.1f MiB)\n",
         (unsigned long long)entries, (mono_s() - o0) * 1e3,
         (double)bytes / 1048576.0);
  ceb_store_close(st);
  free(jobs);
  free(settles);
  free(held);
  free(fences);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : 1;
}
