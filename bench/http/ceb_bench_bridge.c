#include "ceb_bench_bridge.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

int ceb_bench_bridge_init(ceb_bench_bridge *b, const char *tag) {
  memset(b, 0, sizeof *b);
  b->dir = ceb_test_tmpdir(tag);
  if (!b->dir) return -1;
  char conf[600];
  snprintf(conf, sizeof conf, "%s/conf", b->dir);
  return mkdir(conf, 0700) == 0 ? 0 : -1;
}

int ceb_bench_bridge_conf(ceb_bench_bridge *b, const char *name,
                          const char *text) {
  char conf[600];
  snprintf(conf, sizeof conf, "%s/conf", b->dir);
  return ceb_test_write_file(conf, name, text);
}

int ceb_bench_bridge_start(ceb_bench_bridge *b) {
  char conf[600], log[600];
  snprintf(conf, sizeof conf, "%s/conf", b->dir);
  snprintf(log, sizeof log, "%s/bridge.log", b->dir);
  char *argv[] = {CEB_TEST_BIN_DIR "/cebridge", "run", "-c", conf, NULL};
  return ceb_proc_start(&b->proc, argv, log);
}

int ceb_bench_bridge_port(ceb_bench_bridge *b, const char *name,
                          int64_t timeout_ms) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", b->dir, name);
  int port = ceb_test_wait_port_file(path, timeout_ms);
  if (port <= 0)
    fprintf(stderr, "bench: no port in %s (see %s)\n", path, b->proc.log_path);
  return port > 0 ? port : -1;
}

long ceb_bench_bridge_status_kb(const ceb_bench_bridge *b, const char *key) {
  if (b->proc.pid <= 0) return -1;
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)b->proc.pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t kl = strlen(key);
  long kb = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ':') {
      kb = atol(line + kl + 1);
      break;
    }
  fclose(f);
  return kb;
}

double ceb_bench_bridge_cpu_s(const ceb_bench_bridge *b) {
  if (b->proc.pid <= 0) return -1;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)b->proc.pid);
  char *text = ceb_test_read_file(path, NULL);
  /* fields after "(comm)": state is field 3, utime 14, stime 15 */
  char *p = text ? strrchr(text, ')') : NULL;
  unsigned long ut = 0, st = 0;
  int n = p ? sscanf(p + 2,
                     "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                     "%lu %lu",
                     &ut, &st)
            : 0;
  free(text);
  long hz = sysconf(_SC_CLK_TCK);
  return n == 2 && hz > 0 ? (double)(ut + st) / (double)hz : -1;
}

double ceb_bench_loadavg(void) {
  double l[1];
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

static void *sampler_main(void *arg) {
  ceb_bench_bridge *b = arg;
  /* bounded by rss_stop; each round is one /proc read and a 50 ms nap */
  while (!__atomic_load_n(&b->stop_sampling, __ATOMIC_ACQUIRE)) {
    long kb = ceb_bench_bridge_status_kb(b, "VmRSS");
    if (kb > b->rss_max_kb) b->rss_max_kb = kb;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

int ceb_bench_bridge_rss_start(ceb_bench_bridge *b) {
  b->stop_sampling = 0;
  b->rss_max_kb = 0;
  if (pthread_create(&b->sampler, NULL, sampler_main, b)) return -1;
  b->sampling = 1;
  return 0;
}

void ceb_bench_bridge_rss_stop(ceb_bench_bridge *b) {
  if (!b->sampling) return;
  __atomic_store_n(&b->stop_sampling, 1, __ATOMIC_RELEASE);
  pthread_join(b->sampler, NULL);
  b->sampling = 0;
}

int ceb_bench_bridge_stop(ceb_bench_bridge *b, int64_t timeout_ms) {
  ceb_bench_bridge_rss_stop(b);
  if (b->proc.pid <= 0)
    return b->proc.pid == 0 ? -1 : ceb_proc_stop(&b->proc, SIGTERM, 0);
  return ceb_proc_stop(&b->proc, SIGTERM, timeout_ms);
}

void ceb_bench_bridge_free(ceb_bench_bridge *b, int keep) {
  if (b->proc.pid > 0) ceb_bench_bridge_stop(b, 30000);
  ceb_bench_bridge_rss_stop(b);
  if (b->dir) {
    if (keep) {
      fprintf(stderr, "bench: kept %s for inspection\n", b->dir);
      ceb_test_print_tail(b->proc.log_path, 6000);
    } else
      ceb_test_rmtree(b->dir);
  }
  free(b->dir);
  b->dir = NULL;
}

double ceb_bench_metric_sum(int admin_port, const char *name) {
  char url[128], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", admin_port);
  if (ceb_test_http("GET", url, NULL, NULL, 0, &body) != 200) {
    free(body);
    return -1;
  }
  double sum = -1;
  size_t nl = strlen(name);
  for (char *p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, name, nl) || (p[nl] != '{' && p[nl] != ' ')) continue;
    char *sp = strchr(p, ' ');
    if (p[nl] == '{') {
      char *close = strchr(p, '}');
      sp = close ? strchr(close, ' ') : NULL;
    }
    if (sp) sum = (sum < 0 ? 0 : sum) + strtod(sp + 1, NULL);
  }
  free(body);
  return sum;
}
