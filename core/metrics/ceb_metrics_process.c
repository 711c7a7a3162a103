/* process_* and build info (see ceb_metrics_process.h). The names, types
 * and units are those of the official client libraries, so dashboards and
 * alerts written for any Prometheus-instrumented process work unchanged. */
#include "metrics/ceb_metrics_process.h"

#include <ceb/ceb.h>
#include <ceb/plugin.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void declare(ceb_metrics *m) {
  ceb_metrics_declare(m, "process_cpu_seconds_total", CEB_MT_COUNTER,
                      "Total user and system CPU time spent in seconds.");
  ceb_metrics_declare(m, "process_resident_memory_bytes", CEB_MT_GAUGE,
                      "Resident memory size in bytes.");
  ceb_metrics_declare(m, "process_virtual_memory_bytes", CEB_MT_GAUGE,
                      "Virtual memory size in bytes.");
  ceb_metrics_declare(m, "process_open_fds", CEB_MT_GAUGE,
                      "Number of open file descriptors.");
  ceb_metrics_declare(m, "process_max_fds", CEB_MT_GAUGE,
                      "Maximum number of open file descriptors.");
  ceb_metrics_declare(m, "process_start_time_seconds", CEB_MT_GAUGE,
                      "Start time of the process since unix epoch in seconds.");
}

/* Boot time in seconds since the epoch (/proc/stat btime), 0 if unknown. */
static double boot_time(void) {
  FILE *f = fopen("/proc/stat", "r");
  char line[256];
  double bt = 0;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "btime ", 6) == 0) {
      bt = strtod(line + 6, NULL);
      break;
    }
  if (f) fclose(f);
  return bt;
}

/* /proc/self/stat: the fields after the command name, which is in
 * parentheses and may itself hold spaces and parentheses. */
static int proc_stat(ceb_metrics *m) {
  FILE *f = fopen("/proc/self/stat", "r");
  if (!f) return 0;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *p = strrchr(buf, ')');
  if (!p) return 0;
  /* after ") ": field 3 (state) is token 0; utime is field 14 */
  unsigned long long v[24] = {0};
  int k = 0;
  char *save = NULL;
  for (char *t = strtok_r(p + 2, " ", &save); t && k < 24;
       t = strtok_r(NULL, " ", &save), k++)
    v[k] = strtoull(t, NULL, 10);
  if (k < 22) return 0;
  long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  if (tck <= 0 || page <= 0) return 0;
  /* field N is v[N - 3] */
  ceb_metrics_set_total(m, "process_cpu_seconds_total", "",
                        (double)(v[11] + v[12]) / (double)tck);
  ceb_metrics_set(m, "process_virtual_memory_bytes", "", (double)v[20]);
  ceb_metrics_set(m, "process_resident_memory_bytes", "",
                  (double)v[21] * (double)page);
  int set = 3;
  double bt = boot_time();
  if (bt > 0) {
    ceb_metrics_set(m, "process_start_time_seconds", "",
                    bt + (double)v[19] / (double)tck);
    set++;
  }
  return set;
}

static int open_fds(ceb_metrics *m) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return 0;
  long n = 0;
  for (struct dirent *e; (e = readdir(d));)
    n += e->d_name[0] != '.';
  closedir(d);
  /* the directory's own descriptor was open while it was read */
  ceb_metrics_set(m, "process_open_fds", "", (double)(n > 0 ? n - 1 : 0));
  return 1;
}

/* The soft limit, as in "Max open files  1024  524288  files". */
static int max_fds(ceb_metrics *m) {
  FILE *f = fopen("/proc/self/limits", "r");
  char line[256];
  int set = 0;
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "Max open files", 14) == 0) {
      char *end;
      double v = strtod(line + 14, &end);
      if (end != line + 14) {
        ceb_metrics_set(m, "process_max_fds", "", v);
        set = 1;
      }
      break;
    }
  if (f) fclose(f);
  return set;
}

int ceb_metrics_process_refresh(ceb_metrics *m) {
  if (!m) return 0;
  declare(m);
  return proc_stat(m) + open_fds(m) + max_fds(m);
}

void ceb_metrics_build_info(ceb_metrics *m) {
  if (!m) return;
  ceb_metrics_declare(m, "cebridge_build_info", CEB_MT_GAUGE,
                      "cebridge build: version and plugin ABI (always 1).");
  char labels[96];
  snprintf(labels, sizeof labels, "version=\"%s\",abi=\"%d.%d\"", CEB_VERSION,
           CEB_ABI_MAJOR, CEB_ABI_MINOR);
  ceb_metrics_set(m, "cebridge_build_info", labels, 1);
}
