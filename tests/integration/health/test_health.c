/* `cebridge health` asks the running bridge, not itself: exit 0 while the
 * bridge of the config runs (readiness and --live), 1 with the reason once
 * it stopped, 1 with the problem's detail when the admin API answers 503,
 * 2 when the config has no admin API to ask. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"

static char g_bin[600];

/* Runs `cebridge health -c conf [extra]`; returns its exit status and
 * leaves its output in out_path. */
static int health(const char *conf, const char *extra, const char *out_path) {
  char *argv[] = {g_bin, "health", "-c", (char *)conf, (char *)extra, NULL};
  ceb_proc p;
  if (ceb_proc_start(&p, argv, out_path) != 0) return -100;
  return ceb_proc_stop(&p, 0, 20000);
}

static int ready(void *url) {
  return ceb_test_http("GET", url, NULL, NULL, 0, NULL) == 200;
}

static int output_has(const char *path, const char *text) {
  char *s = ceb_test_read_file(path, NULL);
  int has = s && strstr(s, text);
  if (!has)
    fprintf(stderr, "output of health lacks '%s': %s\n", text, s ? s : "");
  free(s);
  return has;
}

/* An admin API stand-in that is up but not ready, as a draining bridge or
 * one whose store fails answers. */
static void not_ready(void *arg, const rx_request *req, size_t index,
                      rx_response *resp) {
  (void)arg, (void)req, (void)index;
  static const char body[] =
      "{\"title\":\"not_ready\",\"status\":503,\"detail\":\"store writes "
      "fail\\nforged\"}";
  rx_reply(resp, 503, "application/problem+json", body);
}

int main(void) {
  char *dir = ceb_test_tmpdir("health");
  char conf[600], text[2048], log[600], out[600], aport[600];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/log", dir);
  snprintf(out, sizeof out, "%s/health.out", dir);
  snprintf(g_bin, sizeof g_bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  snprintf(aport, sizeof aport, "%s/aport", dir);
  CHECK_INT(mkdir(conf, 0700), 0);
  /* The admin port file is relative: resolved from the config directory,
   * as `run` resolves it. */
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nplugin_dir = %s\n"
           "admin.listen = 127.0.0.1:0\nadmin.port_file = ../aport\n"
           "log.format = text\n\n"
           "[source in]\nplugin = http\nlisten = 127.0.0.1:0\nauth = none\n\n"
           "[sink out]\nplugin = pull\nlisten = 127.0.0.1:0\nauth = none\n\n"
           "[route r]\nfrom = in\nto = out\n",
           dir, CEB_PLUGIN_DIR);
  CHECK_INT(ceb_test_write_file(conf, "00.conf", text), 0);

  /* Not started yet: no port file, not healthy. */
  CHECK_INT(health(conf, NULL, out), 1);
  CHECK(output_has(out, "is the bridge running?"));

  ceb_proc p;
  char *argv[] = {g_bin, "run", "-c", conf, NULL};
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  int port = ceb_test_wait_port_file(aport, 15000);
  CHECK(port > 0);
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/readyz", port);
  /* Wait until the bridge itself says ready (sources start after admin). */
  CHECK(ceb_test_wait(ready, url, 15000));
  CHECK_INT(health(conf, NULL, out), 0);
  CHECK(output_has(out, "ready"));
  CHECK_INT(health(conf, "--live", out), 0);
  CHECK(output_has(out, "/healthz"));

  /* Stopped: the port file is still there, nobody answers on it. */
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);
  CHECK_INT(health(conf, NULL, out), 1);
  CHECK(output_has(out, "is the bridge running?"));
  CHECK_INT(health(conf, "--live", out), 1);

  /* Up but not ready: 1, with the problem's detail on one line. */
  rx_server *d = rx_start(not_ready, NULL);
  CHECK(d != NULL);
  if (d) {
    snprintf(text, sizeof text, "%d\n", rx_port(d));
    CHECK_INT(ceb_test_write_file(dir, "aport", text), 0);
    CHECK_INT(health(conf, NULL, out), 1);
    CHECK(output_has(out, "HTTP 503: store writes fail forged"));
    rx_stop(d);
  }

  /* No admin API configured: a config error, not "unhealthy". */
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nadmin.listen = off\n", dir);
  CHECK_INT(ceb_test_write_file(conf, "00.conf", text), 0);
  CHECK_INT(health(conf, NULL, out), 2);
  CHECK(output_has(out, "admin.listen is off"));

  free(dir);
  return ceb_test_done("integration_health");
}
