/* Ingest benchmark: producers submit 1 KiB events through the runtime's
 * host table into the store with group commit (synchronous=FULL), each
 * waiting for its durable callback (closed loop, like an HTTP source that
 * answers 202 only when durable). The route's sink never settles and allows
 * one attempt in flight, so the backlog grows with every event: the report
 * shows throughput, submit->durable latency and RSS per backlog band.
 *
 *   bench_core_ingest [total=1000000] [producers=64] [dir=$TMPDIR]
 *                     [synchronous=full|normal]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <ceb/ceb.h>

#include "config/ceb_conf.h"
#include "instance/ceb_instance.h"
#include "runtime/ceb_runtime.h"

static int64_t mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  if (f) fclose(f);
  return kib;
}

/* ---- a sink that takes one delivery and never settles ---- */
static int s_init(const ceb_host *h, ceb_instance *i,
                  const ceb_instance_info *info, const ceb_config *c,
                  void **st) {
  (void)h, (void)i, (void)info, (void)c;
  *st = NULL;
  return CEB_OK;
}
static int s_start(void *st) {
  return (void)st, CEB_OK;
}
static int s_drain(void *st, int64_t d) {
  return (void)st, (void)d, CEB_OK;
}
static void s_destroy(void *st) {
  (void)st;
}
static int s_deliver(void *st, ceb_delivery *d) {
  return (void)st, (void)d, CEB_OK;
}
static const ceb_config_spec k_none[] = {CEB_CONFIG_SPEC_END};
static const ceb_plugin k_plugin = {.struct_size = sizeof(ceb_plugin),
                                    .abi_major = CEB_ABI_MAJOR,
                                    .abi_minor = CEB_ABI_MINOR,
                                    .name = "benchplug",
                                    .version = "1",
                                    .roles = CEB_ROLE_SOURCE | CEB_ROLE_SINK,
                                    .config_source = k_none,
                                    .config_sink = k_none,
                                    .init = s_init,
                                    .start = s_start,
                                    .drain = s_drain,
                                    .destroy = s_destroy,
                                    .deliver = s_deliver};

static const ceb_config_spec *spec_cb(void *a, const ceb_conf_section *s,
                                      ceb_conf_errors *e) {
  (void)a, (void)s, (void)e;
  return k_none;
}

/* ---- producers ---- */
#define BANDS 4
static const long k_band_end[BANDS] = {10000, 100000, 500000, 1000000};

typedef struct shared {
  const ceb_host *host;
  ceb_instance *src;
  long total;
  atomic_long next;
  atomic_long done;
  char data[1024];
  pthread_mutex_t lock;
  int64_t *lat_us; /* per event */
} shared;

typedef struct waiter {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int done, status;
} waiter;

static void on_durable(void *arg, const ceb_submit_result *r) {
  waiter *w = arg;
  pthread_mutex_lock(&w->lock);
  w->status = r->status;
  w->done = 1;
  pthread_cond_signal(&w->cond);
  pthread_mutex_unlock(&w->lock);
}

static void *producer(void *arg) {
  shared *sh = arg;
  waiter w = {.done = 0};
  pthread_mutex_init(&w.lock, NULL);
  pthread_cond_init(&w.cond, NULL);
  for (;;) {
    long n = atomic_fetch_add(&sh->next, 1);
    if (n >= sh->total) break;
    ceb_event *ev = ceb_event_new();
    char id[32];
    snprintf(id, sizeof id, "e%ld", n);
    ceb_event_set(ev, "specversion", "1.0");
    ceb_event_set(ev, "id", id);
    ceb_event_set(ev, "source", "urn:nld:oin:00000001234567890000:bench");
    ceb_event_set(ev, "type", "nl.cebridge.bench");
    ceb_event_set(ev, "time", "2026-11-22T12:00:00Z");
    snprintf(id, sizeof id, "k%ld", n % 1000);
    ceb_event_set(ev, "partitionkey", id);
    ceb_event_set_data(ev, sh->data, sizeof sh->data - 1 - 200, CEB_DATA_TEXT);
    w.done = 0;
    int64_t t0 = mono_us();
    int rc;
    while ((rc = sh->host->submit(sh->src, &ev, 1, NULL, on_durable, &w)) ==
           CEB_EBUSY)
      sched_yield();
    if (rc != CEB_OK) {
      fprintf(stderr, "submit: %s\n", ceb_strerror(rc));
      exit(1);
    }
    pthread_mutex_lock(&w.lock);
    while (!w.done)
      pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    if (w.status != CEB_OK) {
      fprintf(stderr, "commit: %s\n", ceb_strerror(w.status));
      exit(1);
    }
    sh->lat_us[n] = mono_us() - t0;
    atomic_fetch_add(&sh->done, 1);
  }
  pthread_mutex_destroy(&w.lock);
  pthread_cond_destroy(&w.cond);
  return NULL;
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  long total = argc > 1 ? atol(argv[1]) : 1000000;
  int producers = argc > 2 ? atoi(argv[2]) : 64;
  const char *base = argc > 3 && *argv[3] ? argv[3] : getenv("TMPDIR");
  const char *sync = argc > 4 ? argv[4] : "full";
  char dir[512];
  snprintf(dir, sizeof dir, "%s/ceb-bench-XXXXXX", base ? base : "/tmp");
  if (!mkdtemp(dir) || total < 1 || producers < 1 ||
      (strcmp(sync, "full") != 0 && strcmp(sync, "normal") != 0)) {
    fprintf(stderr, "usage: bench_core_ingest [total] [producers] [dir] "
                    "[full|normal]\n");
    return 2;
  }
  char path[600];
  snprintf(path, sizeof path, "%s/bridge.conf", dir);
  FILE *f = fopen(path, "w");
  fprintf(f,
          "[bridge]\nstore = %s/store.db\nbackpressure.max_queued = "
          "100000000\nprofile = warn\nstore.synchronous = %s\n"
          "[source in]\nplugin = benchplug\n[sink out]\nplugin = benchplug\n"
          "[route r]\nfrom = in\nto = out\norder_by = partitionkey\n"
          "max_inflight = 1\n",
          dir, sync);
  fclose(f);
  ceb_conf *conf = NULL;
  ceb_conf_errors errs = {0};
  if (ceb_conf_load(dir, &conf, &errs) != CEB_OK ||
      ceb_conf_check(conf, spec_cb, NULL, &errs) != CEB_OK) {
    ceb_conf_errors_print(&errs, stderr);
    return 1;
  }
  ceb_instance src = {.name = "in",
                      .role = CEB_ROLE_SOURCE,
                      .plugin = &k_plugin,
                      .cfg = ceb_conf_find(conf, "source", "in")->cfg};
  ceb_instance snk = {.name = "out",
                      .role = CEB_ROLE_SINK,
                      .plugin = &k_plugin,
                      .cfg = ceb_conf_find(conf, "sink", "out")->cfg};
  snprintf(src.component, sizeof src.component, "source:bench:in");
  snprintf(snk.component, sizeof snk.component, "sink:bench:out");
  ceb_instance *insts[2] = {&src, &snk};
  ceb_metrics *m = ceb_metrics_new();
  ceb_runtime_opts o = {
      .conf = conf, .instances = insts, .ninstances = 2, .metrics = m};
  ceb_runtime *rt = NULL;
  char err[512];
  if (ceb_runtime_open(&o, &rt, err, sizeof err) != CEB_OK) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  ceb_runtime_start(rt);
  shared sh = {.host = ceb_runtime_host(), .src = &src, .total = total};
  memset(sh.data, 'x', sizeof sh.data - 1);
  sh.lat_us = calloc((size_t)total, sizeof *sh.lat_us);
  pthread_t *th = calloc((size_t)producers, sizeof *th);
  long rss0 = rss_kib();
  double cpu0 = cpu_s();
  int64_t t0 = mono_us();
  for (int i = 0; i < producers; i++)
    pthread_create(&th[i], NULL, producer, &sh);
  printf("%-20s %10s %10s %10s %10s %10s\n", "backlog band", "events/s",
         "p50 ms", "p99 ms", "us/event", "RSS MiB");
  long start = 0;
  int64_t tb = t0;
  for (int b = 0; b < BANDS && start < total; b++) {
    long end = k_band_end[b] < total ? k_band_end[b] : total;
    while (atomic_load(&sh.done) < end) {
      struct timespec ts = {0, 20 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
    int64_t tn = mono_us();
    long n = end - start;
    int64_t *lat = malloc((size_t)n * sizeof *lat);
    memcpy(lat, sh.lat_us + start, (size_t)n * sizeof *lat);
    qsort(lat, (size_t)n, sizeof *lat, cmp64);
    char band[32];
    snprintf(band, sizeof band, "%ld-%ld", start, end);
    printf("%-20s %10.0f %10.2f %10.2f %10.1f %10.1f\n", band,
           (double)n * 1e6 / (double)(tn - tb), lat[n / 2] / 1000.0,
           lat[(size_t)(n * 0.99)] / 1000.0, (double)(tn - tb) / (double)n,
           rss_kib() / 1024.0);
    fflush(stdout);
    free(lat);
    start = end;
    tb = tn;
  }
  for (int i = 0; i < producers; i++)
    pthread_join(th[i], NULL);
  int64_t t1 = mono_us();
  qsort(sh.lat_us, (size_t)total, sizeof *sh.lat_us, cmp64);
  double cpu = cpu_s() - cpu0;
  uint64_t batches = 0, ops = 0;
  ceb_store_commit_stats(ceb_runtime_store(rt), &batches, &ops);
  printf("synchronous=%s, ", sync);
  printf(
      "total %ld events, %d producers: %.0f events/s, p50 %.2f ms, p99 "
      "%.2f ms, RSS %.1f -> %.1f MiB, queued %lld\n"
      "CPU %.1f us/event (user+sys, all threads), %.1f ops per group "
      "commit (%llu commits)\n",
      total, producers, (double)total * 1e6 / (double)(t1 - t0),
      sh.lat_us[total / 2] / 1000.0, sh.lat_us[(size_t)(total * 0.99)] / 1000.0,
      rss0 / 1024.0, rss_kib() / 1024.0,
      (long long)ceb_store_count_open(ceb_runtime_store(rt), NULL),
      cpu * 1e6 / (double)total, batches ? (double)ops / (double)batches : 0.0,
      (unsigned long long)batches);
  ceb_runtime_drain(rt, ceb_runtime_now(rt) + 100);
  ceb_runtime_close(rt);
  ceb_metrics_free(m);
  ceb_conf_free(conf);
  free(sh.lat_us);
  free(th);
  static const char *const files[] = {"store.db", "store.db-wal",
                                      "store.db-shm", "bridge.conf"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    unlink(path);
  }
  rmdir(dir);
  return 0;
}
