/* The meemoo endpoint life cycle end to end, through the real cebridge
 * binary: a receiver answering 410 Gone disables the webhook sink (an ALERT
 * line, cebridge_sink_disabled 1, `cebridge sink list` says so); events
 * accepted meanwhile wait, none is dead-lettered; the admin API's POST
 * /v1/sinks/{name}/enable (token-protected) lets them flow, in order; a
 * second 410 and `cebridge sink enable` (the store, read by the running
 * bridge within store.poll_interval) do the same. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"

#define BIN CEB_TEST_BIN_DIR "/cebridge"
#define TOKEN "an-operator-token-for-the-gone-test"

static atomic_int g_gone = 1;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_ids[64][32]; /* ids of the POSTs answered 2xx, in order */
static size_t g_nids, g_n410;

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)index;
  const char *id = ceb_headers_get(&req->headers, "ce-id");
  pthread_mutex_lock(&g_lock);
  if (atomic_load(&g_gone)) {
    resp->status = 410;
    g_n410++;
  } else {
    resp->status = 204;
    if (g_nids < 64) snprintf(g_ids[g_nids++], 32, "%s", id ? id : "?");
  }
  pthread_mutex_unlock(&g_lock);
}

static size_t delivered(void) {
  pthread_mutex_lock(&g_lock);
  size_t n = g_nids;
  pthread_mutex_unlock(&g_lock);
  return n;
}

static char g_dir[512];

static int read_int(const char *name) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  char *t = ceb_test_read_file(path, NULL);
  int v = t ? atoi(t) : 0;
  free(t);
  return v;
}

static int post(int port, const char *id) {
  char url[128], h_id[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(h_id, sizeof h_id, "ce-id: %s", id);
  const char *const hdrs[] = {"ce-specversion: 1.0",
                              "ce-source: urn:nld:oin:00000001234567890000:"
                              "systeem:meemoo",
                              "ce-type: meemoo.sip.archived",
                              "ce-subject: sip-1",
                              h_id,
                              "Content-Type: application/json",
                              NULL};
  return ceb_test_http("POST", url, hdrs, "{}", 2, NULL);
}

static int run_cli(const char *args, char **out) {
  char cmd[1400], log[600];
  snprintf(log, sizeof log, "%s/cli.out", g_dir);
  snprintf(cmd, sizeof cmd, "timeout 60 '%s' %s -c '%s/conf' >'%s' 2>&1", BIN,
           args, g_dir, log);
  int st = system(cmd);
  *out = ceb_test_read_file(log, NULL);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int log_has(const char *needle) {
  char path[600];
  snprintf(path, sizeof path, "%s/bridge.log", g_dir);
  char *t = ceb_test_read_file(path, NULL);
  int has = t && strstr(t, needle) != NULL;
  free(t);
  return has;
}

typedef struct wait_arg {
  const char *needle;
  size_t n;
} wait_arg;
static int log_wait(void *arg) {
  return log_has(((wait_arg *)arg)->needle);
}
static int got(void *arg) {
  return delivered() >= ((wait_arg *)arg)->n;
}

static double metric(int admin, const char *series) {
  char url[128], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", admin);
  if (ceb_test_http("GET", url, NULL, NULL, 0, &body) != 200) return -1;
  const char *p = body ? strstr(body, series) : NULL;
  double v = p ? atof(p + strlen(series)) : -1;
  free(body);
  return v;
}

static int gone_twice(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_lock);
  size_t n = g_n410;
  pthread_mutex_unlock(&g_lock);
  return n >= 2;
}

static int listed_disabled(void *arg) {
  (void)arg;
  char *out = NULL;
  int ok = run_cli("sink list", &out) == 0 && out &&
           strstr(out, " disabled ") != NULL;
  free(out);
  return ok;
}

static int ports_ready(void *arg) {
  (void)arg;
  return read_int("in.port") > 0 && read_int("admin.port") > 0;
}

int main(void) {
  rx_server *rx = rx_start(respond, NULL);
  CHECK(rx != NULL);
  char *tmp = ceb_test_tmpdir("sink-gone");
  snprintf(g_dir, sizeof g_dir, "%s", tmp ? tmp : "/nonexistent");
  free(tmp);
  if (!rx) return ceb_test_done("integration_sink_gone");
  char conf_dir[600], text[2048];
  snprintf(conf_dir, sizeof conf_dir, "%s/conf", g_dir);
  snprintf(text, sizeof text,
           "[bridge]\n"
           "store = %s/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "admin.port_file = %s/admin.port\n"
           "admin.token = " TOKEN "\n"
           "log.format = text\n"
           "store.poll_interval = 200ms\n"
           "\n[source intermediary]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/in.port\n"
           "auth = none\n"
           "\n[sink partner]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:%d/hook\n"
           "allow_insecure_http = true\n"
           "\n[route to-partner]\n"
           "from = intermediary\n"
           "to = partner\n"
           "order_by = subject\n"
           "dlq = store\n",
           g_dir, g_dir, g_dir, rx_port(rx));
  CHECK_INT(mkdir(conf_dir, 0700), 0);
  CHECK_INT(ceb_test_write_file(conf_dir, "bridge.conf", text), 0);
  char log[600];
  snprintf(log, sizeof log, "%s/bridge.log", g_dir);
  pid_t pid = ceb_test_bridge_start(conf_dir, log);
  CHECK(pid > 0 && ceb_test_wait(ports_ready, NULL, 30000));
  int in = read_int("in.port"), admin = read_int("admin.port");

  /* 410: disabled; what comes next waits */
  CHECK_INT(post(in, "m-1"), 202);
  wait_arg w = {"ALERT engine: sink partner disabled", 0};
  CHECK(ceb_test_wait(log_wait, &w, 30000));
  CHECK_INT(post(in, "m-2"), 202);
  CHECK_INT(post(in, "m-3"), 202);
  CHECK(metric(admin, "cebridge_sink_disabled{sink=\"partner\"} ") == 1);
  char *out = NULL;
  CHECK_INT(run_cli("sink list", &out), 0);
  CHECK_MSG(out && strstr(out, "partner") && strstr(out, "disabled") &&
                strstr(out, "410"),
            "sink list: %s", out ? out : "");
  free(out);
  CHECK_INT(run_cli("dlq list", &out), 1); /* nothing dead-lettered */
  free(out);
  CHECK_INT(delivered(), 0);

  /* the admin API enables it (the token is needed) */
  atomic_store(&g_gone, 0);
  char url[160], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/sinks/partner/enable",
           admin);
  CHECK_INT(ceb_test_http("POST", url, NULL, "", 0, &body), 401);
  free(body);
  body = NULL;
  const char *const auth[] = {"Authorization: Bearer " TOKEN, NULL};
  CHECK_INT(ceb_test_http("POST", url, auth, "", 0, &body), 200);
  free(body);
  wait_arg three = {NULL, 3};
  CHECK(ceb_test_wait(got, &three, 30000));
  pthread_mutex_lock(&g_lock);
  CHECK_STR(g_ids[0], "m-1");
  CHECK_STR(g_ids[1], "m-2");
  CHECK_STR(g_ids[2], "m-3");
  pthread_mutex_unlock(&g_lock);
  CHECK(metric(admin, "cebridge_sink_disabled{sink=\"partner\"} ") == 0);

  /* a second 410, and the CLI enables it in the store */
  atomic_store(&g_gone, 1);
  CHECK_INT(post(in, "m-4"), 202);
  CHECK(ceb_test_wait(gone_twice, NULL, 30000));
  /* the disabling is stored (worker 0 writes it): `sink list` shows it */
  CHECK(ceb_test_wait(listed_disabled, NULL, 30000));
  atomic_store(&g_gone, 0);
  CHECK_INT(run_cli("sink enable partner", &out), 0);
  free(out);
  wait_arg four = {NULL, 4};
  CHECK(ceb_test_wait(got, &four, 30000));
  pthread_mutex_lock(&g_lock);
  CHECK_STR(g_ids[3], "m-4");
  pthread_mutex_unlock(&g_lock);

  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  rx_stop(rx);
  ceb_test_rmtree(g_dir);
  return ceb_test_done("integration_sink_gone");
}
