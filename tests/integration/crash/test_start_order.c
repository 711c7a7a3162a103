/* The start order of the real binary: deliveries resumed from the store
 * never reach a sink before its start returned. A first run accepts events
 * behind a throttled sink (rate_limit 1/s: they wait in the store, due);
 * the second run's sink lingers in start (start_linger_ms), watching for a
 * delivery that comes too early: every event arrives, none before start.
 *
 * The defect it guards: the engine started before the sinks, and a
 * loaded machine let it hand resumed deliveries to an MQTT sink that had no
 * publisher yet; each failed, the circuit opened, and they waited past
 * the bench's patience (bench_mqtt_smoke_http2mqtt_preload in CI). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

#define EVENTS 40

static char g_dir[512], g_conf[600];

static void write_conf(int first) {
  char text[4096];
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nplugin_dir = %s\n"
           "admin.listen = 127.0.0.1:0\nadmin.port_file = %s/admin.port\n"
           "log.level = warn\nprofile = warn\n"
           "[source gen]\nplugin = testsource\ncount = %d\nkeys = 4\n"
           "record = %s/acked.txt\n"
           "[sink out]\nplugin = testsink\nrecord = %s/delivered.txt\n%s"
           "[route r]\nfrom = gen\nto = out\norder_by = partitionkey\n",
           g_dir, CEB_PLUGIN_PATH, g_dir, first ? EVENTS : 0, g_dir, g_dir,
           first ? "rate_limit = 1/s\nrate_limit.burst = 1\n"
                 : "start_linger_ms = 2000\n");
  CHECK_INT(ceb_test_write_file(g_conf, "bridge.conf", text), 0);
}

static long count_lines(const char *name, const char *word) {
  char path[700], line[512];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "r");
  long n = 0;
  while (f && fgets(line, sizeof line, f))
    n += !word || strstr(line, word) != NULL;
  if (f) fclose(f);
  return n;
}

static int all_acked(void *arg) {
  (void)arg;
  return count_lines("acked.txt", NULL) >= EVENTS;
}

/* Every event delivered at least once (ids in the second word). */
static int all_delivered(void *arg) {
  (void)arg;
  char path[700], line[512], seen[EVENTS] = {0};
  snprintf(path, sizeof path, "%s/delivered.txt", g_dir);
  FILE *f = fopen(path, "r");
  long n = 0;
  while (f && fgets(line, sizeof line, f)) {
    long id;
    if (sscanf(line, "%*s gen-%ld", &id) == 1 && id >= 0 && id < EVENTS &&
        !seen[id]) {
      seen[id] = 1;
      n++;
    }
  }
  if (f) fclose(f);
  return n == EVENTS;
}

static pid_t run(void) {
  char port[700], log[700];
  snprintf(port, sizeof port, "%s/admin.port", g_dir);
  snprintf(log, sizeof log, "%s/bridge.log", g_dir);
  unlink(port);
  pid_t pid = ceb_test_bridge_start(g_conf, log);
  CHECK(pid > 0);
  CHECK(ceb_test_wait_port_file(port, 30000) > 0);
  return pid;
}

int main(void) {
  char *d = ceb_test_tmpdir("start-order");
  snprintf(g_dir, sizeof g_dir, "%s", d);
  free(d);
  snprintf(g_conf, sizeof g_conf, "%s/bridge.d", g_dir);
  CHECK(mkdir(g_conf, 0700) == 0);

  write_conf(1);
  pid_t pid = run();
  CHECK(ceb_test_wait(all_acked, NULL, 30000));
  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  /* the throttle let a few through: the rest wait in the store */
  long before = count_lines("delivered.txt", NULL);
  CHECK_MSG(before < EVENTS, "%ld of %d delivered before the restart", before,
            EVENTS);

  write_conf(0);
  pid = run();
  CHECK(ceb_test_wait(all_delivered, NULL, 60000));
  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  CHECK_MSG(count_lines("delivered.txt", "before-start") == 0,
            "%ld deliveries reached the sink before its start returned",
            count_lines("delivered.txt", "before-start"));
  if (ceb_test_failures) {
    char log[700];
    snprintf(log, sizeof log, "%s/bridge.log", g_dir);
    ceb_test_print_tail(log, 4000);
  }
  return ceb_test_done("integration_start_order");
}
