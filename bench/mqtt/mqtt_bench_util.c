/* The pieces every bench_mqtt scenario shares (mqtt_bench.h). */
#include "mqtt_bench.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ceb_bench_bridge.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"

/* "max_inflight = N\n" for the mqtt section, or "" for its default. */
const char *mb_inflight_line(const mb_params *p, char *buf, size_t n) {
  if (p->inflight > 0)
    snprintf(buf, n, "max_inflight = %d\n", p->inflight);
  else
    buf[0] = '\0';
  return buf;
}

double mb_proc_cpu_s(pid_t pid) {
  ceb_bench_bridge b;
  memset(&b, 0, sizeof b);
  b.proc.pid = pid;
  return ceb_bench_bridge_cpu_s(&b);
}

double mb_self_cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

void mb_thread_snapshot(pid_t pid, mb_thread_cpu *t) {
  t->n = 0;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d) return;
  long hz = sysconf(_SC_CLK_TCK);
  struct dirent *e;
  while ((e = readdir(d)) && t->n < MB_MAX_THREADS) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char p2[384];
    snprintf(p2, sizeof p2, "%s/%s/comm", path, e->d_name);
    char *comm = ceb_test_read_file(p2, NULL);
    snprintf(p2, sizeof p2, "%s/%s/stat", path, e->d_name);
    char *stat = ceb_test_read_file(p2, NULL);
    char *rp = stat ? strrchr(stat, ')') : NULL;
    unsigned long ut = 0, st = 0;
    if (comm && rp &&
        sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
               &ut, &st) == 2) {
      comm[strcspn(comm, "\n")] = '\0';
      t->tid[t->n] = atol(e->d_name);
      snprintf(t->name[t->n], sizeof t->name[0], "%s", comm);
      t->cpu_s[t->n] = (double)(ut + st) / (double)hz;
      t->n++;
    }
    free(comm);
    free(stat);
  }
  closedir(d);
}

/* Prints "name us/event" per thread name, busiest first (threads of one
 * name summed, with their count). */
void mb_thread_report(const char *label, const mb_thread_cpu *a,
                      const mb_thread_cpu *b, long events) {
  char names[MB_MAX_THREADS][20];
  double us[MB_MAX_THREADS];
  int cnt[MB_MAX_THREADS], n = 0;
  for (int i = 0; i < b->n; i++) {
    double before = 0;
    for (int j = 0; j < a->n; j++)
      if (a->tid[j] == b->tid[i]) before = a->cpu_s[j];
    double d = b->cpu_s[i] - before;
    int k = 0;
    while (k < n && strcmp(names[k], b->name[i]))
      k++;
    if (k == n) {
      snprintf(names[n], sizeof names[0], "%s", b->name[i]);
      us[n] = 0;
      cnt[n++] = 0;
    }
    us[k] += d * 1e6 / (double)(events ? events : 1);
    cnt[k]++;
  }
  printf("%s: bridge CPU us/event by thread:", label);
  for (int shown = 0; shown < n; shown++) {
    int best = -1;
    for (int k = 0; k < n; k++)
      if (cnt[k] >= 0 && (best < 0 || us[k] > us[best])) best = k;
    if (best < 0 || us[best] < 1) break;
    printf(" %s%s %.0f", names[best], cnt[best] > 1 ? "(xN)" : "", us[best]);
    cnt[best] = -1;
  }
  printf("\n");
}

/* MB_PLUGIN_DIR overrides the plugin directory: A/B runs of two builds of
 * one plugin against the same bench and bridge. */
void mb_conf_bridge(char *buf, size_t n, const char *dir) {
  const char *pdir = getenv("MB_PLUGIN_DIR");
  snprintf(buf, n,
           "[bridge]\nstore = %s/store.db\nplugin_dir = %s\n"
           "admin.listen = 127.0.0.1:0\nadmin.port_file = %s/admin.port\n"
           "log.format = text\nlog.level = warn\nprofile = warn\n"
           "drain_timeout = 10s\n",
           dir, pdir && *pdir ? pdir : CEB_PLUGIN_PATH, dir);
}

ceb_mosq *mb_broker_start(void) {
  /* no queue limit: the bench decides how much waits in the broker */
  ceb_mosq_opts mo = {.quiet_log = 1,
                      .extra =
                          getenv("MB_EXTRA")
                              ? getenv("MB_EXTRA")
                              : "max_queued_messages 0\nmax_queued_bytes 0"};
  ceb_mosq *m = ceb_mosq_start(&mo);
  if (!m) fprintf(stderr, "bench mqtt: mosquitto did not start\n");
  return m;
}

void mb_broker_log_tail(const ceb_mosq *m) {
  char path[600];
  snprintf(path, sizeof path, "%s/mosquitto.log", m->dir);
  ceb_test_print_tail(path, 3000);
}

/* Waits until the drained counts stop changing or everything arrived. */
void mb_wait_delivered(mb_track *t, long want, int64_t idle_ms,
                       int64_t max_ms) {
  int64_t until = ceb_test_now_ms() + max_ms, idle_since = ceb_test_now_ms();
  long last = -1;
  while (ceb_test_now_ms() < until) {
    mb_counts c;
    mb_track_snapshot(t, &c);
    long seen = c.delivered + c.duplicates + c.disorder + c.unparsable;
    if (c.delivered >= want) return;
    if (seen != last) {
      last = seen;
      idle_since = ceb_test_now_ms();
    } else if (ceb_test_now_ms() - idle_since > idle_ms) {
      return;
    }
    usleep(20000);
  }
}

void mb_collect(mb_track *t, mb_outcome *o) {
  mb_track_snapshot(t, &o->c);
  const double ps[3] = {50, 99, 100};
  if (mb_track_latency(t, ps, o->lat, 3) < 0) memset(o->lat, 0, sizeof o->lat);
}

int mb_judge(const mb_outcome *o, long want) {
  int ok = o->c.delivered == want && o->c.disorder == 0 &&
           o->c.unparsable == 0 && o->stopped == 0;
  if (o->c.disorder)
    fprintf(stderr,
            "bench mqtt: DISORDER: key-%ld from stream %ld: seq %ld after "
            "%ld\n",
            o->c.bad_key, o->c.bad_stream, o->c.bad_seq, o->c.bad_last);
  if (o->c.delivered != want)
    fprintf(stderr, "bench mqtt: LOST: %ld of %ld events arrived\n",
            o->c.delivered, want);
  if (o->stopped != 0)
    fprintf(stderr, "bench mqtt: bridge exit status %d\n", o->stopped);
  return ok;
}

void mb_print_far_end(const char *label, const mb_outcome *o, int64_t t0) {
  double span = (double)(o->c.last_us - t0) / 1e6;
  printf("%s: delivered %ld (duplicates %ld, out of order %ld, unparsable "
         "%ld), %.0f ev/s end to end (%.2f s); e2e latency p50 %.1f ms p99 "
         "%.1f ms max %.1f ms\n",
         label, o->c.delivered, o->c.duplicates, o->c.disorder, o->c.unparsable,
         span > 0 ? (double)o->c.delivered / span : 0, span,
         (double)o->lat[0] / 1000.0, (double)o->lat[1] / 1000.0,
         (double)o->lat[2] / 1000.0);
  long n = o->c.delivered ? o->c.delivered : 1;
  char mock[48] = "";
  if (o->mock_cpu_s >= 0)
    snprintf(mock, sizeof mock, ", kafka mock %.0f",
             o->mock_cpu_s * 1e6 / (double)n);
  printf("%s: CPU us/event bridge %.0f, mosquitto %.0f, bench %.0f%s; bridge "
         "RSS max %ld kB; load average before %.2f\n",
         label, o->cpu_s * 1e6 / (double)n, o->mosq_cpu_s * 1e6 / (double)n,
         o->own_cpu_s * 1e6 / (double)n, mock, o->rss_kb, o->loadavg);
}
