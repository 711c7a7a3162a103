#include "bench_kafka_proc.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* utime + stime of a /proc .../stat file, in seconds; -1 if unreadable. */
static double stat_cpu_s(const char *path) {
  char buf[1024];
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  /* Fields after the parenthesised command name, which may hold spaces. */
  const char *p = strrchr(buf, ')');
  unsigned long long ut, st;
  if (!p ||
      sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
             &ut, &st) != 2)
    return -1;
  return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* The parent pid in a /proc/PID/stat file; -1 if unreadable. */
static long stat_ppid(const char *path) {
  char buf[1024];
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  long ppid;
  return p && sscanf(p + 2, "%*c %ld", &ppid) == 1 ? ppid : -1;
}

double bk_children_cpu_s(pid_t pid) {
  DIR *d = opendir("/proc");
  if (!d) return 0;
  double sum = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%.16s/stat", e->d_name);
    if (stat_ppid(path) != (long)pid) continue;
    double s = stat_cpu_s(path);
    if (s > 0) sum += s;
  }
  closedir(d);
  return sum;
}

static void proc_dir(char *buf, size_t n, pid_t pid) {
  if (pid > 0)
    snprintf(buf, n, "/proc/%d", (int)pid);
  else
    snprintf(buf, n, "/proc/self");
}

double bk_proc_cpu_s(pid_t pid) {
  char dir[32], path[64];
  proc_dir(dir, sizeof dir, pid);
  snprintf(path, sizeof path, "%s/stat", dir);
  return stat_cpu_s(path);
}

double bk_threads_cpu_s(pid_t pid, const char *prefix) {
  char dir[32], path[96];
  proc_dir(dir, sizeof dir, pid);
  snprintf(path, sizeof path, "%s/task", dir);
  DIR *d = opendir(path);
  if (!d) return -1;
  double sum = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char comm[64] = "";
    snprintf(path, sizeof path, "%s/task/%.16s/comm", dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (!fgets(comm, sizeof comm, f)) comm[0] = '\0';
    fclose(f);
    if (strncmp(comm, prefix, strlen(prefix)) != 0) continue;
    snprintf(path, sizeof path, "%s/task/%.16s/stat", dir, e->d_name);
    double s = stat_cpu_s(path);
    if (s > 0) sum += s;
  }
  closedir(d);
  return sum;
}

double bk_self_cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

double bk_loadavg1(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1) l = -1;
    fclose(f);
  }
  return l;
}
