/* Crash safety of the real binary: `cebridge run` is killed with SIGKILL at
 * random moments while a source submits and a sink delivers; after the last
 * restart every event the source saw acknowledged (durable) is delivered,
 * and per ordering key the first deliveries keep the submit order. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

#define EVENTS 2000
#define KEYS 8
#define KILLS 5

static char g_dir[512], g_conf[600];

static pid_t spawn(void) {
  pid_t pid = fork();
  if (pid == 0) {
    char log[700];
    snprintf(log, sizeof log, "%s/bridge.log", g_dir);
    FILE *f = freopen(log, "a", stderr);
    (void)f;
    execl(CEB_TEST_BIN_DIR "/cebridge", "cebridge", "run", "-c", g_conf,
          "--plugin-dir", CEB_PLUGIN_PATH, (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* ids seen in a file of lines whose first (acked) or second (delivered)
 * word is "gen-<n>"; marks seen[n] and records first-delivery order. */
static long read_ids(const char *name, int field, char *seen, long *order,
                     long *norder) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "r");
  long count = 0;
  char line[256];
  while (f && fgets(line, sizeof line, f)) {
    char a[128] = "", b[128] = "";
    if (sscanf(line, "%127s %127s", a, b) < 1) continue;
    const char *id = field == 0 ? a : b;
    long n;
    if (sscanf(id, "gen-%ld", &n) != 1 || n < 0 || n >= EVENTS) continue;
    if (!seen[n] && order) order[(*norder)++] = n;
    if (!seen[n]) count++;
    seen[n] = 1;
  }
  if (f) fclose(f);
  return count;
}

static int all_delivered(void *arg) {
  (void)arg;
  char acked[EVENTS] = {0}, delivered[EVENTS] = {0};
  long na = read_ids("acked.txt", 0, acked, NULL, NULL);
  read_ids("delivered.txt", 1, delivered, NULL, NULL);
  if (na < EVENTS) return 0; /* the source has not finished yet */
  for (long i = 0; i < EVENTS; i++)
    if (acked[i] && !delivered[i]) return 0;
  return 1;
}

int main(void) {
  if (access(CEB_TEST_BIN_DIR "/cebridge", X_OK) != 0) {
    fprintf(stderr, "cebridge binary missing\n");
    CHECK(0);
    return ceb_test_done("integration_crash");
  }
  char *d = ceb_test_tmpdir("crash");
  snprintf(g_dir, sizeof g_dir, "%s", d);
  free(d);
  snprintf(g_conf, sizeof g_conf, "%s/bridge.d", g_dir);
  CHECK(mkdir(g_conf, 0700) == 0);
  char path[700];
  snprintf(path, sizeof path, "%s/bridge.conf", g_conf);
  FILE *f = fopen(path, "w");
  fprintf(f,
          "[bridge]\nstore = %s/store.db\nadmin.listen = 127.0.0.1:0\n"
          "admin.port_file = %s/admin.port\n"
          "log.level = warn\nprofile = warn\n"
          "[source gen]\nplugin = testsource\ncount = %d\nkeys = %d\n"
          "record = %s/acked.txt\n"
          "[sink out]\nplugin = testsink\nrecord = %s/delivered.txt\n"
          "[route r]\nfrom = gen\nto = out\norder_by = partitionkey\n",
          g_dir, g_dir, EVENTS, KEYS, g_dir, g_dir);
  fclose(f);

  unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
  printf("seed %u\n", seed);
  srand(seed);
  for (int k = 0; k < KILLS; k++) {
    pid_t pid = spawn();
    CHECK(pid > 0);
    /* a random moment: 0.2..1.5 s into the run */
    long ms = 200 + rand() % 1300;
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) || WIFEXITED(status));
  }
  /* The last run is stopped with SIGTERM only once it is up (its admin API
   * wrote its port): a signal before main() runs would kill it outright. */
  char port_path[700];
  snprintf(port_path, sizeof port_path, "%s/admin.port", g_dir);
  unlink(port_path);
  pid_t pid = spawn();
  CHECK(ceb_test_wait_port_file(port_path, 30000) > 0);
  CHECK(ceb_test_wait(all_delivered, NULL, 90000));
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  char acked[EVENTS] = {0}, delivered[EVENTS] = {0};
  static long order[EVENTS];
  long norder = 0;
  long na = read_ids("acked.txt", 0, acked, NULL, NULL);
  read_ids("delivered.txt", 1, delivered, order, &norder);
  CHECK_INT(na, EVENTS);
  long missing = 0;
  for (long i = 0; i < EVENTS; i++)
    missing += acked[i] && !delivered[i];
  CHECK_INT(missing, 0);
  /* FIFO per key: first deliveries of a key come in submit order */
  long last[KEYS];
  for (int k = 0; k < KEYS; k++)
    last[k] = -1;
  long disorder = 0;
  for (long i = 0; i < norder; i++) {
    int k = (int)(order[i] % KEYS);
    if (order[i] < last[k]) disorder++;
    last[k] = order[i];
  }
  CHECK_INT(disorder, 0);
  if (ceb_test_failures) fprintf(stderr, "logs and files kept in %s\n", g_dir);
  return ceb_test_done("integration_crash");
}
