/* Slow clients cannot lock the admin API (slowloris), with the real binary
 * and real sockets:
 *  - 70 connections dripping a header byte every 100 ms (the admin API has
 *    64 connection slots; libmicrohttpd's idle timeout of 30 s never fires
 *    on them) with admin.request_head_timeout = 1h, so no deadline frees a
 *    slot: a /healthz is still answered (polled with a generous bound), in
 *    the place of the dripper waiting longest, counted as
 *    cebridge_admin_connections_closed_total{reason="evicted"}. Before the
 *    guard every probe was refused for as long as the clients dripped.
 *  - admin.request_head_timeout = 1s: a dripping connection is closed (read
 *    EOF) though it keeps sending, counted (head_timeout) and logged once
 *    with the client's address; admin.request_body_timeout = 1s: a body
 *    dripped after a complete head likewise (body_timeout);
 *  - a normal request on a kept-alive connection is still answered;
 *  - a deadline under 100 ms is a config error at its file:line. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

#define DRIPPERS 70 /* more than the 64 slots */

static char g_dir[512], g_conf[600];
static int g_port;

static int write_conf(const char *dir, const char *extra) {
  char text[2048];
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/var/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "admin.port_file = %s/admin.port\n%s"
           "[source gen]\nplugin = testsource\ncount = 1\n"
           "[sink out]\nplugin = testsink\n"
           "[route r]\nfrom = gen\nto = out\n",
           g_dir, g_dir, extra);
  return ceb_test_write_file(dir, "bridge.conf", text);
}

static int start(ceb_proc *p, const char *log_name) {
  char log[700], port[700], bin[600];
  snprintf(log, sizeof log, "%s/%s", g_dir, log_name);
  snprintf(port, sizeof port, "%s/admin.port", g_dir);
  unlink(port);
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *argv[] = {bin, "run", "-c", g_conf, "--plugin-dir", CEB_PLUGIN_PATH,
                  NULL};
  if (ceb_proc_start(p, argv, log) != 0) return -1;
  return ceb_test_wait_port_file(port, 30000);
}

/* Reads an answer to its end (the server closes after it: Connection:
 * close) into out; 0 when it starts with want. */
static int read_answer(int fd, char *out, size_t size, const char *want) {
  size_t len = 0;
  ssize_t n = 0;
  out[0] = '\0';
  while (len + 1 < size && (n = recv(fd, out + len, size - 1 - len, 0)) > 0) {
    len += (size_t)n;
    out[len] = '\0';
  }
  return strncmp(out, want, strlen(want)) == 0 ? 0 : -1;
}

/* GET path on a fresh connection, its reads bounded (3 s): 1 when answered
 * 200, the answer in body (may be NULL). A connection refused at the limit
 * is closed at once (no answer). */
static int get_ok(const char *path, char *body, size_t size) {
  static char own[4096];
  if (!body) {
    body = own;
    size = sizeof own;
  }
  body[0] = '\0';
  int fd = ceb_test_tcp_connect(g_port, 3);
  if (fd < 0) return 0;
  char req[256];
  snprintf(req, sizeof req,
           "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
           "Connection: close\r\n\r\n",
           path, g_port);
  int ok = ceb_test_send_all(fd, req, strlen(req)) == 0 &&
           read_answer(fd, body, size, "HTTP/1.1 200") == 0;
  close(fd);
  return ok;
}

static int healthz_ok(void *arg) {
  (void)arg;
  return get_ok("/healthz", NULL, 0);
}

/* The value of a cebridge_admin_connections_closed_total series, -1 when
 * absent, -2 when /metrics was not answered (refused: with every slot
 * taken, a new connection gets in only in the place of one that waited
 * at least 1 s for its head). */
static double closed_total(const char *reason) {
  static char text[1 << 20];
  if (!get_ok("/metrics", text, sizeof text)) return -2;
  char key[128];
  snprintf(key, sizeof key,
           "cebridge_admin_connections_closed_total{reason=\"%s\"} ", reason);
  const char *p = strstr(text, key);
  return p ? atof(p + strlen(key)) : -1;
}

typedef struct counted {
  const char *reason;
  double value; /* the last read */
} counted;

/* 1 once /metrics answered: c->value is the series' value. */
static int metrics_read(void *arg) {
  counted *c = arg;
  c->value = closed_total(c->reason);
  return c->value > -2;
}

/* The series' value, asking /metrics again while it is refused (bounded);
 * -2 when it never answered. */
static double closed_now(const char *reason) {
  counted c = {reason, -2};
  ceb_test_wait(metrics_read, &c, 30000);
  return c.value;
}

/* ---- drippers: a header byte each per round, one round per 100 ms ---- */

typedef struct drip {
  int fd[DRIPPERS];
  atomic_int stop;
  atomic_int open; /* connections still accepting bytes */
  pthread_t th;
} drip;

static void *drip_main(void *arg) {
  drip *d = arg;
  while (!atomic_load(&d->stop)) {
    int open = 0;
    for (int i = 0; i < DRIPPERS; i++) {
      if (d->fd[i] < 0) continue;
      if (send(d->fd[i], "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1 &&
          errno != EAGAIN) {
        close(d->fd[i]);
        d->fd[i] = -1;
        continue;
      }
      open++;
    }
    atomic_store(&d->open, open);
    /* the drip's pace (not a wait for a condition) */
    poll(NULL, 0, 100);
  }
  return NULL;
}

static void drip_start(drip *d, int n) {
  atomic_init(&d->stop, 0);
  atomic_init(&d->open, 0);
  char head[200];
  snprintf(head, sizeof head,
           "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: ", g_port);
  for (int i = 0; i < DRIPPERS; i++) {
    d->fd[i] = i < n ? ceb_test_tcp_connect(g_port, 5) : -1;
    if (d->fd[i] >= 0 && ceb_test_send_all(d->fd[i], head, strlen(head)) != 0) {
      close(d->fd[i]);
      d->fd[i] = -1;
    }
  }
  pthread_create(&d->th, NULL, drip_main, d);
}

static void drip_stop(drip *d) {
  atomic_store(&d->stop, 1);
  pthread_join(d->th, NULL);
  for (int i = 0; i < DRIPPERS; i++)
    if (d->fd[i] >= 0) close(d->fd[i]);
}

static int file_has(const char *name, const char *needle) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  char *text = ceb_test_read_file(path, NULL);
  int has = text && strstr(text, needle) != NULL;
  free(text);
  return has;
}

/* Lines of the log that are not the bridge's JSON lines (libmicrohttpd's
 * own, one per failing connection, went straight to stderr); -1 when the
 * log cannot be read. */
static int raw_lines(const char *name) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  char *text = ceb_test_read_file(path, NULL);
  if (!text) return -1;
  int n = 0;
  for (const char *l = text; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : "")
    n += *l != '{' && *l != '\n';
  free(text);
  return n;
}

static int slots_taken(void *arg) {
  drip *d = arg;
  return atomic_load(&d->open) == 64;
}

/* Phase 1: no deadline helps (1 h); the probe gets in by eviction. */
static void evicted(void) {
  CHECK_INT(write_conf(g_conf, "admin.request_head_timeout = 1h\n"), 0);
  ceb_proc p;
  g_port = start(&p, "run-evict.log");
  CHECK_MSG(g_port > 0, "the bridge did not come up");
  if (g_port <= 0) return;
  CHECK(healthz_ok(NULL));
  drip d;
  drip_start(&d, DRIPPERS);
  /* the listener took 64 of them and refused the rest (their sends fail):
   * every slot is held by a dripper before the probe comes */
  CHECK_MSG(ceb_test_wait(slots_taken, &d, 30000), "%d drippers open",
            atomic_load(&d.open));
  /* a probe is answered while 64+ connections drip */
  CHECK_MSG(ceb_test_wait(healthz_ok, NULL, 60000),
            "/healthz not answered with %d dripping connections",
            atomic_load(&d.open));
  /* the probe took an evicted dripper's place (counted before it was
   * answered); no deadline closed one */
  double evicted = closed_now("evicted"),
         timed_out = closed_now("head_timeout");
  CHECK_MSG(evicted >= 1, "evicted: %g", evicted);
  CHECK_MSG(timed_out == -1, "head_timeout: %g", timed_out);
  drip_stop(&d);
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);
  /* libmicrohttpd's complaints about the closed connections went through
   * the bridge's log, rate-limited, not a raw line each */
  CHECK_INT(raw_lines("run-evict.log"), 0);
  CHECK(file_has("run-evict.log", "admin API: libmicrohttpd: "));
}

/* Reads fd until the server ends the stream (EOF or reset) while the
 * drip thread keeps feeding other connections; 1 on the end. */
typedef struct ended {
  int fd;
  const char *more; /* sent between reads: the drip */
} ended;

static int stream_ended(void *arg) {
  ended *e = arg;
  char b[256];
  /* one byte more, then a read bounded by the socket's 1 s timeout */
  if (send(e->fd, e->more, 1, MSG_NOSIGNAL) < 0 &&
      (errno == EPIPE || errno == ECONNRESET))
    return 1;
  ssize_t n = recv(e->fd, b, sizeof b, 0);
  if (n == 0 || (n < 0 && errno == ECONNRESET)) return 1;
  return 0;
}

/* Phase 2: the deadlines close a dripping head and a dripping body. */
static void deadlines(void) {
  CHECK_INT(write_conf(g_conf, "admin.request_head_timeout = 1s\n"
                               "admin.request_body_timeout = 1s\n"),
            0);
  ceb_proc p;
  g_port = start(&p, "run-deadline.log");
  CHECK_MSG(g_port > 0, "the bridge did not come up");
  if (g_port <= 0) return;
  char head[300];
  /* a head dripped byte by byte, never complete */
  int fd = ceb_test_tcp_connect(g_port, 1);
  CHECK(fd >= 0);
  snprintf(head, sizeof head,
           "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: ", g_port);
  CHECK_INT(ceb_test_send_all(fd, head, strlen(head)), 0);
  ended e = {fd, "x"};
  CHECK_MSG(ceb_test_wait(stream_ended, &e, 60000),
            "a dripping head was not closed");
  close(fd);
  /* a complete head announcing 10 body bytes, dripped */
  fd = ceb_test_tcp_connect(g_port, 1);
  CHECK(fd >= 0);
  snprintf(head, sizeof head,
           "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
           "Content-Length: 1000\r\n\r\n",
           g_port);
  CHECK_INT(ceb_test_send_all(fd, head, strlen(head)), 0);
  e.fd = fd;
  CHECK_MSG(ceb_test_wait(stream_ended, &e, 60000),
            "a dripping body was not closed");
  close(fd);
  CHECK_MSG(closed_now("head_timeout") >= 1, "head_timeout: %g",
            closed_now("head_timeout"));
  CHECK_MSG(closed_now("body_timeout") >= 1, "body_timeout: %g",
            closed_now("body_timeout"));
  /* two requests on one kept-alive connection are answered */
  fd = ceb_test_tcp_connect(g_port, 10);
  CHECK(fd >= 0);
  snprintf(head, sizeof head,
           "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", g_port);
  char buf[1024];
  for (int i = 0; i < 2; i++) {
    CHECK_INT(ceb_test_send_all(fd, head, strlen(head)), 0);
    ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    CHECK_MSG(strncmp(buf, "HTTP/1.1 200", 12) == 0, "request %d: '%.40s'",
              i + 1, buf);
  }
  close(fd);
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);
  CHECK(file_has("run-deadline.log", "(head_timeout)"));
  CHECK(file_has("run-deadline.log", "(body_timeout)"));
  CHECK(file_has("run-deadline.log", "last client 127.0.0.1"));
}

/* A deadline under 100 ms is refused by `check` at its file:line. */
static void config_checked(void) {
  char dir[700];
  snprintf(dir, sizeof dir, "%s/bad.d", g_dir);
  CHECK_INT(mkdir(dir, 0700), 0);
  CHECK_INT(write_conf(dir, "admin.request_head_timeout = 10ms\n"), 0);
  char log[800], bin[600];
  snprintf(log, sizeof log, "%s/check.out", g_dir);
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *argv[] = {bin, "check", "-c", dir, "--plugin-dir", CEB_PLUGIN_PATH,
                  NULL};
  ceb_proc p;
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  CHECK_INT(ceb_proc_stop(&p, 0, 60000), 1);
  char where[800];
  snprintf(where, sizeof where,
           "%s/bridge.conf:5: duration '10ms' is out of range for "
           "'admin.request_head_timeout'",
           dir);
  CHECK_MSG(file_has("check.out", where), "no %s", where);
}

int main(void) {
  char *d = ceb_test_tmpdir("admin-slow");
  snprintf(g_dir, sizeof g_dir, "%s", d);
  free(d);
  snprintf(g_conf, sizeof g_conf, "%s/bridge.d", g_dir);
  char var[600];
  snprintf(var, sizeof var, "%s/var", g_dir);
  CHECK(mkdir(g_conf, 0700) == 0 && mkdir(var, 0755) == 0);
  evicted();
  deadlines();
  config_checked();
  return ceb_test_done("integration_admin_slow");
}
