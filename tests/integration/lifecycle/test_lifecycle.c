/* cebridge run as a supervisor sees it: sd_notify READY / WATCHDOG /
 * RELOADING / STOPPING on the NOTIFY_SOCKET, SIGHUP with a broken config
 * refused while the bridge keeps serving, SIGHUP with a good config applied
 * (queued events kept), SIGTERM drains and exits 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

static int g_sock = -1;
static char g_notes[8192];

/* Appends every datagram that arrived to g_notes. */
static void drain_notes(void) {
  char buf[512];
  ssize_t n;
  while ((n = recv(g_sock, buf, sizeof buf - 1, MSG_DONTWAIT)) > 0) {
    buf[n] = '\0';
    strncat(g_notes, buf, sizeof g_notes - strlen(g_notes) - 2);
    strcat(g_notes, "\n");
  }
}

typedef struct want {
  const char *text;
  size_t from;
} want;

static int note_seen(void *arg) {
  want *w = arg;
  drain_notes();
  return strstr(g_notes + w->from, w->text) != NULL;
}

static int wait_note(const char *text, size_t from) {
  want w = {text, from};
  return ceb_test_wait(note_seen, &w, 15000);
}

static int log_has_refusal(void *path) {
  char *l = ceb_test_read_file(path, NULL);
  int seen = l && strstr(l, "reload refused");
  free(l);
  return seen;
}

static int log_has_trace(void *path) {
  char *l = ceb_test_read_file(path, NULL);
  int seen = l && strstr(l, "event=a-1") &&
             strstr(l, "trace=4bf92f3577b34da6a3ce929d0e0e4736");
  free(l);
  return seen;
}

static const char *k_conf_fmt =
    "[bridge]\nstore = %s/store.db\nplugin_dir = %s\nadmin.listen = off\n"
    "log.format = text\n\n"
    "[source in]\nplugin = http\nlisten = 127.0.0.1:0\nport_file = %s/port\n"
    "auth = none\n\n"
    "[sink out]\nplugin = pull\nlisten = 127.0.0.1:0\nport_file = %s/pport\n"
    "auth = none\n\n"
    "[route r]\nfrom = in\nto = out\n";

static int post(int port, const char *id) {
  char url[128], body[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:nld:oin:"
           "00000001234567890000:systeem:t\",\"type\":\"nl.edu.t.created\"}",
           id);
  const char *h[] = {
      "Content-Type: application/cloudevents+json",
      "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      NULL};
  return ceb_test_http("POST", url, h, body, strlen(body), NULL);
}

int main(void) {
  char *dir = ceb_test_tmpdir("lifecycle");
  char conf[600], sockpath[600], text[4096], log[600], portf[600];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(sockpath, sizeof sockpath, "%s/notify", dir);
  snprintf(log, sizeof log, "%s/log", dir);
  snprintf(portf, sizeof portf, "%s/port", dir);
  CHECK_INT(mkdir(conf, 0700), 0);
  snprintf(text, sizeof text, k_conf_fmt, dir, CEB_PLUGIN_DIR, dir, dir);
  CHECK_INT(ceb_test_write_file(conf, "00.conf", text), 0);

  g_sock = socket(AF_UNIX, SOCK_DGRAM, 0);
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  if (strlen(sockpath) >= sizeof sa.sun_path)
    return ceb_test_done("integration_lifecycle: TMPDIR path too long");
  memcpy(sa.sun_path, sockpath, strlen(sockpath) + 1);
  CHECK_INT(bind(g_sock, (struct sockaddr *)&sa, sizeof sa), 0);
  setenv("NOTIFY_SOCKET", sockpath, 1);
  setenv("WATCHDOG_USEC", "200000", 1); /* every 100 ms */

  char bin[600];
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *argv[] = {bin, "run", "-c", conf, NULL};
  ceb_proc p;
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  CHECK_MSG(wait_note("READY=1", 0), "no READY=1: %s", g_notes);
  CHECK_MSG(wait_note("WATCHDOG=1", 0), "no WATCHDOG=1");
  int port = ceb_test_wait_port_file(portf, 10000);
  CHECK(port > 0);
  CHECK_INT(post(port, "a-1"), 202);
  /* The event has no time: the profile warning names event, and the trace
   * id of the request's traceparent. */
  CHECK_MSG(ceb_test_wait(log_has_trace, log, 10000),
            "no log line with the event id and trace id");

  /* A broken config on SIGHUP is refused; the bridge keeps serving. */
  CHECK_INT(ceb_test_write_file(conf, "50-broken.conf",
                                "[sink out2]\nplugin = pull\nlisten = nowhere\n"),
            0);
  size_t mark = strlen(g_notes);
  kill(p.pid, SIGHUP);
  CHECK_MSG(ceb_test_wait(log_has_refusal, log, 15000), "no refusal logged");
  char *l = ceb_test_read_file(log, NULL);
  CHECK_MSG(l && strstr(l, "50-broken.conf:3"), "refusal lacks file:line");
  free(l);
  drain_notes();
  CHECK_MSG(strstr(g_notes + mark, "RELOADING=1") == NULL,
            "a refused reload must not announce RELOADING");
  CHECK(ceb_proc_alive(&p));
  CHECK_INT(post(port, "a-2"), 202);

  /* A good config on SIGHUP is applied: RELOADING then READY again. */
  char broken[700];
  snprintf(broken, sizeof broken, "%s/50-broken.conf", conf);
  CHECK_INT(unlink(broken), 0);
  remove(portf);
  mark = strlen(g_notes);
  kill(p.pid, SIGHUP);
  CHECK_MSG(wait_note("RELOADING=1", mark), "no RELOADING=1");
  CHECK_MSG(wait_note("READY=1", mark), "no READY=1 after reload");
  port = ceb_test_wait_port_file(portf, 10000);
  CHECK(port > 0);
  CHECK_INT(post(port, "a-3"), 202);

  /* SIGTERM: STOPPING=1 and exit 0. */
  mark = strlen(g_notes);
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);
  drain_notes();
  CHECK_MSG(strstr(g_notes + mark, "STOPPING=1") != NULL, "no STOPPING=1");

  /* Everything accepted across the reload reached the queue. */
  char pport[600];
  snprintf(pport, sizeof pport, "%s/pport", dir);
  char *argv2[] = {bin, "run", "-c", conf, NULL};
  remove(pport);
  unsetenv("NOTIFY_SOCKET");
  CHECK_INT(ceb_proc_start(&p, argv2, log), 0);
  int qport = ceb_test_wait_port_file(pport, 10000);
  char url[128], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/pull/out?max=10", qport);
  CHECK_INT(ceb_test_http("GET", url, NULL, NULL, 0, &body), 200);
  CHECK_MSG(body && strstr(body, "\"a-1\"") && strstr(body, "\"a-2\"") &&
                strstr(body, "\"a-3\""),
            "queue lacks events: %s", body ? body : "");
  free(body);
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);

  close(g_sock);
  ceb_test_rmtree(dir);
  free(dir);
  return ceb_test_done("integration_lifecycle");
}
