/* The real binary: every event dies on its route, and the route's DLQ sink
 * fails every forward it is offered while the first `cebridge run` lasts. After
 * a SIGTERM and a second run whose DLQ sink accepts, every dead letter reaches
 * the DLQ topic, `forwarded_at` is set on each (admin API) and
 * cebridge_dlq_forward_pending drops from N to 0 (metrics). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

#define N 20
#define ADMIN_TOKEN "dlqfwd-e2e-admin-token"

static char g_dir[512], g_conf[600];

static int write_conf(const char *mode, const char *record) {
  char text[2048];
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nadmin.listen = 127.0.0.1:0\n"
           "admin.port_file = %s/admin.port\nlog.level = info\n"
           "admin.token = " ADMIN_TOKEN "\n"
           "profile = warn\n"
           "[source gen]\nplugin = testsource\ncount = %d\n"
           "[sink out]\nplugin = testsink\nmode = reject\n"
           "[sink dlqsink]\nplugin = testsink\nmode = %s\n"
           "record = %s/%s\n"
           "[route r]\nfrom = gen\nto = out\ndlq = dlqsink:edu.dlq\n",
           g_dir, g_dir, N, mode, g_dir, record);
  return ceb_test_write_file(g_conf, "bridge.conf", text);
}

/* Distinct event ids in a testsink record file ("route id attempt topic")
 * whose topic is edu.dlq. */
static int record_ids(const char *name) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "r");
  char seen[N] = {0};
  int n = 0;
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    char route[64], id[128], topic[128];
    unsigned attempt;
    long k;
    if (sscanf(line, "%63s %127s %u %127s", route, id, &attempt, topic) != 4 ||
        strcmp(topic, "edu.dlq") != 0 || sscanf(id, "gen-%ld", &k) != 1 ||
        k < 0 || k >= N)
      continue;
    if (!seen[k]) n++;
    seen[k] = 1;
  }
  if (f) fclose(f);
  return n;
}

/* a window's worth (4) of forwards was tried and failed */
static int window_in_dlq1(void *arg) {
  (void)arg;
  return record_ids("dlq1.txt") >= 4;
}

static int all_in_dlq2(void *arg) {
  (void)arg;
  return record_ids("dlq2.txt") == N;
}

typedef struct api {
  int port;
} api;

/* The value of cebridge_dlq_forward_pending{sink="dlqsink"}, -1 when
 * absent. */
static double pending(const api *a) {
  char url[128], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", a->port);
  double v = -1;
  if (ceb_test_http("GET", url, NULL, NULL, 0, &body) == 200 && body) {
    const char *k = "cebridge_dlq_forward_pending{sink=\"dlqsink\"} ";
    const char *p = strstr(body, k);
    if (p) v = strtod(p + strlen(k), NULL);
  }
  free(body);
  return v;
}

static int pending_is_n(void *arg) {
  return pending(arg) == N;
}

static int pending_is_zero(void *arg) {
  return pending(arg) == 0;
}

/* Rows of route r in the DLQ with forwarded_at set. */
static int forwarded_rows(const api *a, int *rows) {
  char url[160], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/dlq?route=r&limit=1000",
           a->port);
  int n = 0;
  *rows = 0;
  const char *auth[] = {"Authorization: Bearer " ADMIN_TOKEN, NULL};
  if (ceb_test_http("GET", url, auth, NULL, 0, &body) == 200 && body) {
    json_t *doc = json_loads(body, 0, NULL);
    size_t i;
    json_t *row;
    json_array_foreach(doc, i, row) {
      (*rows)++;
      n += json_integer_value(json_object_get(row, "forwarded_at")) > 0;
    }
    json_decref(doc);
  }
  free(body);
  return n;
}

static int all_forwarded(void *arg) {
  int rows = 0;
  return forwarded_rows(arg, &rows) == N && rows == N;
}

static pid_t start(ceb_proc *p, const char *log_name) {
  char log[700], port[700];
  snprintf(log, sizeof log, "%s/%s", g_dir, log_name);
  snprintf(port, sizeof port, "%s/admin.port", g_dir);
  unlink(port);
  char bin[600];
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *argv[] = {bin, "run", "-c", g_conf, "--plugin-dir", CEB_PLUGIN_PATH,
                  NULL};
  if (ceb_proc_start(p, argv, log) != 0) return -1;
  return ceb_test_wait_port_file(port, 30000);
}

int main(void) {
  char *d = ceb_test_tmpdir("dlqfwd-e2e");
  snprintf(g_dir, sizeof g_dir, "%s", d);
  free(d);
  snprintf(g_conf, sizeof g_conf, "%s/bridge.d", g_dir);
  CHECK(mkdir(g_conf, 0700) == 0);

  /* run 1: the DLQ sink fails every forward */
  CHECK_INT(write_conf("retry", "dlq1.txt"), 0);
  ceb_proc p1;
  api a = {start(&p1, "run1.log")};
  CHECK_MSG(a.port > 0, "run 1 did not come up");
  if (a.port > 0) {
    CHECK_MSG(ceb_test_wait(window_in_dlq1, NULL, 30000),
              "run 1 tried %d forwards", record_ids("dlq1.txt"));
    CHECK(ceb_test_wait(pending_is_n, &a, 10000));
    int rows = 0;
    CHECK_INT(forwarded_rows(&a, &rows), 0);
    CHECK_INT(rows, N);
  }
  CHECK_INT(ceb_proc_stop(&p1, SIGTERM, 30000), 0);

  /* run 2: the DLQ sink accepts; nothing new is submitted (the source's
   * events are duplicates of run 1's) */
  CHECK_INT(write_conf("ack", "dlq2.txt"), 0);
  ceb_proc p2;
  a.port = start(&p2, "run2.log");
  CHECK_MSG(a.port > 0, "run 2 did not come up");
  if (a.port > 0) {
    CHECK_MSG(ceb_test_wait(all_in_dlq2, NULL, 30000),
              "run 2 forwarded %d of %d dead letters", record_ids("dlq2.txt"),
              N);
    CHECK(ceb_test_wait(all_forwarded, &a, 10000));
    CHECK(ceb_test_wait(pending_is_zero, &a, 10000));
  }
  CHECK_INT(ceb_proc_stop(&p2, SIGTERM, 30000), 0);
  if (ceb_test_failures)
    fprintf(stderr, "logs and files kept in %s\n", g_dir);
  else
    ceb_test_rmtree(g_dir);
  return ceb_test_done("integration_core_dlq_forward_e2e");
}
