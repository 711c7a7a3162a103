/* Liveness stress run of the intermediary -> Kafka sink path, with a stall
 * detector (issue 16, D6: once in about 35 runs of wrk -t2 -c256 every
 * client waited more than 9 s for its 202 while the events were already on
 * the topic and the bridge used almost no CPU):
 *
 *   bench_kafka_stall [-r RUNS] [-d SECONDS] [-T TOTAL_SECONDS]
 *                     [-c CONNECTIONS] [-s PAD_BYTES] [-g STALL_MS]
 *
 * Starts librdkafka's mock cluster once, then for each of RUNS runs (default
 * 35) a fresh `cebridge run` (http source, auth none, loopback; kafka sink,
 * route ordered by subject), and CONNECTIONS keep-alive connections (256)
 * of bench/http's load generator POSTing structured CloudEvents for
 * SECONDS (10) as fast as the 202s come back. A watchdog thread samples the
 * generator's live counters every 20 ms: when no 2xx arrived for STALL_MS
 * (2000) while requests were waiting, it writes every thread's stack of the
 * bridge (gdb -batch -p PID -ex "thread apply all bt") and each thread's
 * kernel state (/proc/PID/task/TID/stat, wchan) to stall-stacks.txt in the
 * run's directory, prints them, and the run fails; the bench stops after
 * that run. It also fails when a request is not answered 202, when the
 * bridge does not exit 0 on SIGTERM, or when a run cannot start.
 *
 * Bounded: at most RUNS runs and TOTAL_SECONDS (default 900) of wall time
 * (a run is not started when it could not end in time); every wait has a
 * deadline. Prints one line per run (requests, 202/s, latency p50/p99/max,
 * the longest wait for a 2xx while requests waited) and a summary (runs,
 * requests, stalls). Exit 0 when every run was live, 1 on a stall or
 * failure, 2 on a setup error. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ceb_bench_load.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "kafka_test_util.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:stall"
#define KEYS 1000
#define ENVELOPE 260

typedef struct opts {
  int runs, connections, pad;
  int64_t run_ms, total_ms, stall_ms;
} opts;

/* ---- the watchdog ---- */

typedef struct watch {
  ceb_bench_load_live live;
  pid_t bridge;
  const char *dir;
  int64_t stall_ms;
  atomic_int stop;
  /* results, read after join */
  int stalled;
  int64_t longest_ms; /* longest time without a 2xx while requests waited */
} watch;

/* Appends each thread's name, state and wait channel (what the kernel
 * says a thread sleeps in: futex_wait_queue, ep_poll, ...) to f. */
static void dump_task_states(pid_t pid, FILE *f) {
  char path[128];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d) return;
  fprintf(f, "--- threads of %d: tid (name) state wchan\n", (int)pid);
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[320], stat[512] = "", wchan[128] = "";
    snprintf(p, sizeof p, "/proc/%d/task/%s/stat", (int)pid, e->d_name);
    FILE *s = fopen(p, "r");
    if (s) {
      if (!fgets(stat, sizeof stat, s)) stat[0] = '\0';
      fclose(s);
    }
    snprintf(p, sizeof p, "/proc/%d/task/%s/wchan", (int)pid, e->d_name);
    s = fopen(p, "r");
    if (s) {
      if (!fgets(wchan, sizeof wchan, s)) wchan[0] = '\0';
      fclose(s);
    }
    /* stat: "tid (comm) S ...": keep up to the state letter */
    char *close = strrchr(stat, ')');
    if (close && close[1] && close[2]) close[3] = '\0';
    fprintf(f, "%s %s\n", stat, wchan);
  }
  closedir(d);
}

/* Writes the bridge's thread states and every thread's stack to
 * DIR/stall-stacks.txt and prints the file. */
static void dump_stacks(const watch *w, int64_t waited_ms, long waiting) {
  char path[600], cmd[1024];
  snprintf(path, sizeof path, "%s/stall-stacks.txt", w->dir);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f,
          "STALL: no 2xx for %lld ms while %ld requests waited (bridge pid "
          "%d)\n",
          (long long)waited_ms, waiting, (int)w->bridge);
  dump_task_states(w->bridge, f);
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "timeout 60 gdb -batch -nx -p %d -ex 'set pagination off' "
           "-ex 'thread apply all bt' >>'%s' 2>&1",
           (int)w->bridge, path);
  if (system(cmd) != 0)
    fprintf(stderr, "gdb failed (is it installed? ptrace allowed?)\n");
  char *text = ceb_test_read_file(path, NULL);
  printf("%s\n(also in %s)\n", text ? text : "", path);
  free(text);
  fflush(stdout);
}

static void *watchdog(void *arg) {
  watch *w = arg;
  long ok = atomic_load(&w->live.ok);
  int64_t last = ceb_test_now_ms();
  while (!atomic_load(&w->stop)) {
    usleep(20000);
    int64_t now = ceb_test_now_ms();
    long ok_now = atomic_load(&w->live.ok);
    long waiting = atomic_load(&w->live.sent) - atomic_load(&w->live.answered);
    if (ok_now != ok || waiting <= 0) {
      ok = ok_now;
      last = now;
      continue;
    }
    int64_t gap = now - last;
    if (gap > w->longest_ms) w->longest_ms = gap;
    if (gap >= w->stall_ms && !w->stalled) {
      w->stalled = 1;
      dump_stacks(w, gap, waiting);
    }
  }
  return NULL;
}

/* ---- one run ---- */

typedef struct run_result {
  long sent, ok, other;
  double per_s;
  ceb_bench_latency lat;
  int64_t longest_ms;
  int stalled, failed;
} run_result;

static int one_run(const opts *o, const ktest_mock *m, int n, run_result *res) {
  memset(res, 0, sizeof *res);
  char *dir = ceb_test_tmpdir("bench-stall");
  char path[600], text[4096];
  snprintf(path, sizeof path, "%s/conf", dir);
  mkdir(path, 0700);
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nadmin.listen = 127.0.0.1:0\n"
           "log.format = text\nlog.level = warn\n"
           "\n[source intermediary]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "port_file = %s/port\nauth = none\nidempotency = off\n"
           /* every connection comes from 127.0.0.1 */
           "max_connections_per_ip = 4096\n"
           "\n[sink internal]\nplugin = kafka\nbrokers = %s\n"
           "topic = bench.out\nkey_attribute = subject\n"
           "\n[route in]\nfrom = intermediary\nto = internal\n"
           "order_by = subject\nmax_inflight = 4096\n",
           dir, dir, m->bootstrap);
  snprintf(path, sizeof path, "%s/conf", dir);
  ceb_test_write_file(path, "00.conf", text);
  char logpath[600];
  snprintf(logpath, sizeof logpath, "%s/bridge.log", dir);
  pid_t bridge = ceb_test_bridge_start(path /* dir/conf */, logpath);
  snprintf(path, sizeof path, "%s/port", dir);
  int port = ceb_test_wait_port_file(path, 30000);
  if (port <= 0) {
    fprintf(stderr, "run %d: the bridge did not write its port; kept %s\n", n,
            dir);
    ceb_test_pid_stop(bridge, SIGTERM, 60000);
    free(dir);
    res->failed = 1;
    return -1;
  }
  watch w = {.bridge = bridge, .dir = dir, .stall_ms = o->stall_ms};
  pthread_t wt;
  pthread_create(&wt, NULL, watchdog, &w);
  char prefix[32];
  snprintf(prefix, sizeof prefix, "st%d", n);
  ceb_bench_load_opts lo = {.port = port,
                            .path = "/events",
                            .connections = o->connections,
                            .duration_ms = o->run_ms,
                            .drain_ms = 30000,
                            .event_size = o->pad + ENVELOPE,
                            .keys = KEYS,
                            .id_prefix = prefix,
                            .source = SRC,
                            .type = "nl.edu.stall",
                            .live = &w.live};
  ceb_bench_load_result r;
  char err[256];
  int rc = ceb_bench_load_run(&lo, &r, err, sizeof err);
  atomic_store(&w.stop, 1);
  pthread_join(wt, NULL);
  int exit_rc = ceb_test_pid_stop(bridge, SIGTERM, 60000);
  if (rc) fprintf(stderr, "run %d: load: %s\n", n, err);
  res->sent = r.sent;
  res->ok = rc ? 0 : ceb_bench_load_ok(&r);
  res->other = rc ? 0 : r.sent - res->ok;
  res->per_s = r.elapsed_s > 0 ? (double)res->ok / r.elapsed_s : 0;
  res->lat = r.lat;
  res->longest_ms = w.longest_ms;
  res->stalled = w.stalled;
  res->failed = rc != 0 || res->other != 0 || exit_rc != 0;
  printf("run %d: %ld requests, %.0f 202/s, latency p50 %.1f ms p99 %.1f ms "
         "max %.1f ms, longest wait for a 2xx %lld ms%s%s\n",
         n, res->sent, res->per_s, r.lat.p50 / 1000.0, r.lat.p99 / 1000.0,
         r.lat.max / 1000.0, (long long)res->longest_ms,
         res->stalled ? ", STALL" : "",
         exit_rc != 0 ? ", bridge did not exit 0 on SIGTERM" : "");
  if (!rc && res->other) ceb_bench_load_print("  answers", &r);
  fflush(stdout);
  if (res->stalled || res->failed) {
    fprintf(stderr, "run %d: kept %s (bridge.log, stall-stacks.txt)\n", n, dir);
  } else {
    ceb_test_rmtree(dir);
  }
  free(dir);
  return res->stalled || res->failed ? 1 : 0;
}

static void usage(void) {
  fprintf(stderr,
          "usage: bench_kafka_stall [-r RUNS] [-d SECONDS] [-T TOTAL_SECONDS]"
          " [-c CONNECTIONS] [-s PAD_BYTES] [-g STALL_MS]\n");
}

int main(int argc, char **argv) {
  opts o = {.runs = 35,
            .connections = 256,
            .pad = 100,
            .run_ms = 10000,
            .total_ms = 900000,
            .stall_ms = 2000};
  int c;
  while ((c = getopt(argc, argv, "r:d:T:c:s:g:")) != -1) {
    long v = atol(optarg);
    switch (c) {
    case 'r':
      o.runs = (int)v;
      break;
    case 'd':
      o.run_ms = v * 1000;
      break;
    case 'T':
      o.total_ms = v * 1000;
      break;
    case 'c':
      o.connections = (int)v;
      break;
    case 's':
      o.pad = (int)v;
      break;
    case 'g':
      o.stall_ms = v;
      break;
    default:
      usage();
      return 2;
    }
  }
  if (o.runs < 1 || o.run_ms < 1000 || o.total_ms < o.run_ms ||
      o.connections < 1 || o.connections > 4096 || o.pad < 0 || o.pad > 60000 ||
      o.stall_ms < 100) {
    usage();
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  ktest_mock m;
  const char *topics[] = {"bench.out:16", NULL};
  if (ktest_mock_start(&m, topics)) return 2;
  int64_t start = ceb_test_now_ms();
  /* a run takes its load time plus start, drain and stop: keep a margin */
  int64_t margin = o.run_ms + 45000;
  long requests = 0, ok = 0;
  int runs = 0, stalls = 0, failures = 0;
  int64_t longest = 0;
  for (int n = 1; n <= o.runs; n++) {
    if (ceb_test_now_ms() - start + margin > o.total_ms) break;
    run_result res;
    int rc = one_run(&o, &m, n, &res);
    runs++;
    requests += res.sent;
    ok += res.ok;
    stalls += res.stalled;
    failures += res.failed;
    if (res.longest_ms > longest) longest = res.longest_ms;
    if (rc) break;
  }
  ktest_mock_stop(&m);
  printf("bench kafka stall: %d runs of %lld s at %d connections, %ld "
         "requests (%ld answered 2xx), %d stalls (>= %lld ms without a 2xx "
         "while requests waited), %d failed runs, longest wait for a 2xx "
         "%lld ms, %.0f s\n",
         runs, (long long)(o.run_ms / 1000), o.connections, requests, ok,
         stalls, (long long)o.stall_ms, failures, (long long)longest,
         (ceb_test_now_ms() - start) / 1000.0);
  return stalls || failures ? 1 : 0;
}
