/* SIGHUP with a config that passes `check` but cannot start (issue 16,
 * D1): the ingress port it names is in use. The bridge must not exit: it
 * rolls back to the running configuration, whose listener answers again,
 * and logs why. A later good reload is applied. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

static const char *k_conf_fmt =
    "[bridge]\nstore = %s/store.db\nplugin_dir = %s\nadmin.listen = off\n"
    "log.format = text\n\n"
    "[source in]\nplugin = http\nlisten = 127.0.0.1:%d\n"
    "auth = none\n\n"
    "[sink out]\nplugin = pull\nlisten = 127.0.0.1:0\nauth = none\n\n"
    "[route r]\nfrom = in\nto = out\n";

/* A listening socket on an ephemeral port; *port gets the port. */
static int occupy(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      listen(fd, 1) != 0 || getsockname(fd, (struct sockaddr *)&sa, &len))
    return -1;
  *port = ntohs(sa.sin_port);
  return fd;
}

static int post(int port, const char *id) {
  char url[128], body[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:nld:oin:"
           "00000001234567890000:systeem:t\",\"type\":\"nl.edu.t.created\","
           "\"time\":\"2026-01-01T00:00:00Z\"}",
           id);
  const char *h[] = {"Content-Type: application/cloudevents+json", NULL};
  return ceb_test_http("POST", url, h, body, strlen(body), NULL);
}

typedef struct want {
  const char *log, *text;
} want;

static int log_has(void *arg) {
  want *w = arg;
  char *l = ceb_test_read_file(w->log, NULL);
  int seen = l && strstr(l, w->text);
  free(l);
  return seen;
}

typedef struct post_arg {
  int port, n;
} post_arg;

static int accepts(void *arg) {
  post_arg *a = arg;
  char id[32];
  snprintf(id, sizeof id, "p-%d", a->n++);
  return post(a->port, id) == 202;
}

int main(void) {
  char *dir = ceb_test_tmpdir("reload");
  char conf[600], text[4096], log[600];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/log", dir);
  CHECK_INT(mkdir(conf, 0700), 0);
  /* the running config's port: free once this socket closes */
  int old_port = 0, fd = occupy(&old_port);
  CHECK(fd >= 0);
  close(fd);
  snprintf(text, sizeof text, k_conf_fmt, dir, CEB_PLUGIN_DIR, old_port);
  CHECK_INT(ceb_test_write_file(conf, "00.conf", text), 0);
  char bin[600];
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *argv[] = {bin, "run", "-c", conf, NULL};
  ceb_proc p;
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  post_arg pa = {old_port, 0};
  CHECK_MSG(ceb_test_wait(accepts, &pa, 30000), "bridge did not start");

  /* a config that checks but cannot start: its port is taken */
  int busy_port = 0, busy = occupy(&busy_port);
  CHECK(busy >= 0);
  snprintf(text, sizeof text, k_conf_fmt, dir, CEB_PLUGIN_DIR, busy_port);
  CHECK_INT(ceb_test_write_file(conf, "00.conf", text), 0);
  char out[1400];
  snprintf(out, sizeof out, "%s check -c %s >/dev/null 2>&1", bin, conf);
  CHECK_INT(system(out), 0);
  kill(p.pid, SIGHUP);
  want rolled = {log, "reload rolled back"};
  CHECK_MSG(ceb_test_wait(log_has, &rolled, 30000), "no rollback logged");
  CHECK(ceb_proc_alive(&p));
  char *l = ceb_test_read_file(log, NULL);
  char why[64];
  snprintf(why, sizeof why, "%d", busy_port);
  CHECK_MSG(l && strstr(l, "reload failed") && strstr(l, why),
            "the log does not say why (port %d): %s", busy_port, l ? l : "");
  free(l);
  /* the old listener answers again */
  CHECK_MSG(ceb_test_wait(accepts, &pa, 15000), "old listener gone");

  /* a later good reload is applied */
  close(busy);
  kill(p.pid, SIGHUP);
  want done = {log, "reload done"};
  CHECK_MSG(ceb_test_wait(log_has, &done, 30000), "good reload not done");
  post_arg pb = {busy_port, 100};
  CHECK_MSG(ceb_test_wait(accepts, &pb, 15000), "new listener not serving");

  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);
  ceb_test_rmtree(dir);
  free(dir);
  return ceb_test_done("integration_reload_rollback");
}
