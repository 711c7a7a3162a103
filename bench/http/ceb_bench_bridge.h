/* The real `cebridge run` as a child process for the HTTP benchmarks: a
 * temp dir with conf/ (written by the caller) and the store, start, wait for
 * port files, sample RSS from /proc/PID/status while a scenario runs, stop
 * with SIGTERM. Every wait has a deadline. One bench thread drives it; the
 * RSS sampler runs on its own thread between rss_start and rss_stop. */
#ifndef CEB_BENCH_BRIDGE_H
#define CEB_BENCH_BRIDGE_H

#include <pthread.h>
#include <stdint.h>

#include "ceb_test_proc.h"

typedef struct ceb_bench_bridge {
  char *dir; /* temp dir (malloc'd): conf/, store.db, *.port, bridge.log */
  ceb_proc proc;
  /* RSS sampler */
  pthread_t sampler;
  int sampling;
  volatile int stop_sampling;
  long rss_max_kb; /* highest VmRSS seen by the sampler */
} ceb_bench_bridge;

/* Creates the temp dir and its conf/ subdir. 0 or -1. */
int ceb_bench_bridge_init(ceb_bench_bridge *b, const char *tag);
/* Writes conf/NAME with text. 0 or -1. */
int ceb_bench_bridge_conf(ceb_bench_bridge *b, const char *name,
                          const char *text);
/* Starts `cebridge run -c DIR/conf` (log in DIR/bridge.log). 0 or -1. */
int ceb_bench_bridge_start(ceb_bench_bridge *b);
/* Waits up to timeout_ms for DIR/NAME to hold a port; returns it or -1
 * (and says so on stderr with the log path). */
int ceb_bench_bridge_port(ceb_bench_bridge *b, const char *name,
                          int64_t timeout_ms);
/* Reads VmRSS / VmHWM (kB) of the running bridge; -1 when unavailable. */
long ceb_bench_bridge_status_kb(const ceb_bench_bridge *b, const char *key);
/* CPU seconds (user + system, all threads) the running bridge has used;
 * -1 when unavailable. */
double ceb_bench_bridge_cpu_s(const ceb_bench_bridge *b);
/* The 1-minute load average of the machine (other work competing for the
 * cores skews every figure); -1 when unavailable. */
double ceb_bench_loadavg(void);
/* Samples VmRSS every 50 ms on a thread until rss_stop. */
int ceb_bench_bridge_rss_start(ceb_bench_bridge *b);
void ceb_bench_bridge_rss_stop(ceb_bench_bridge *b);
/* SIGTERM, wait up to timeout_ms (then SIGKILL). Returns the exit status,
 * -1 on timeout or when the bridge was already stopped. */
int ceb_bench_bridge_stop(ceb_bench_bridge *b, int64_t timeout_ms);
/* Stops the bridge if running; removes the temp dir unless keep (then its
 * path is printed). Frees b->dir. */
void ceb_bench_bridge_free(ceb_bench_bridge *b, int keep);

/* A metric from the admin /metrics page on admin_port, summed over its
 * label sets; -1 when the page or the metric is missing. */
double ceb_bench_metric_sum(int admin_port, const char *name);

#endif
