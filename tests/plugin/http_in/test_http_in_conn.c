/* Connection-level protection of the intermediary with raw sockets:
 * a slow sender (slowloris) is cut off after connection_timeout, the
 * per-IP connection limit refuses the connection over it (also when the
 * connections land on different listener threads), an oversized request
 * head is refused without reaching the handler, and a second intermediary
 * cannot start on a port that is taken, though the first listens with
 * SO_REUSEPORT. */
#include "hin_harness.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Waits until the peer closes fd (EOF or reset); reads and drops data.
 * Returns 1 when closed within timeout_ms. *got gets the first bytes. */
static int wait_closed(int fd, int64_t timeout_ms, char *got, size_t n) {
  int64_t until = ceb_test_now_ms() + timeout_ms;
  size_t have = 0;
  if (n) got[0] = '\0';
  while (ceb_test_now_ms() < until) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    char buf[512];
    ssize_t k = recv(fd, buf, sizeof buf, 0);
    if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) return 1;
    if (k > 0 && have + 1 < n) {
      size_t c = (size_t)k < n - 1 - have ? (size_t)k : n - 1 - have;
      memcpy(got + have, buf, c);
      have += c;
      got[have] = '\0';
    }
  }
  return 0;
}

static void test_slow_sender(hin_env *e) {
  int fd = connect_to(e->port);
  CHECK(fd >= 0);
  const char *part = "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  CHECK(send(fd, part, strlen(part), 0) == (ssize_t)strlen(part));
  int64_t t0 = ceb_test_now_ms();
  char got[64];
  /* connection_timeout is 1s: closed well within 10s, and not at once */
  CHECK(wait_closed(fd, 10000, got, sizeof got));
  CHECK(ceb_test_now_ms() - t0 >= 900);
  close(fd);
}

static void test_per_ip_limit(hin_env *e) {
  int a = connect_to(e->port), b = connect_to(e->port);
  CHECK(a >= 0 && b >= 0);
  /* the third connection from 127.0.0.1 is over max_connections_per_ip */
  int c = connect_to(e->port);
  char got[64];
  CHECK(c < 0 || wait_closed(c, 5000, got, sizeof got));
  if (c >= 0) close(c);
  close(a);
  close(b);
}

/* Sends a request on fd and waits for the status line: the connection is
 * then known to the intermediary (counted against the limits). */
static int served(int fd) {
  /* an accepted event: the answer (202) keeps the connection open */
  static const char body[] = "{\"specversion\":\"1.0\",\"id\":\"conn\","
                             "\"source\":\"urn:t\",\"type\":\"nl.edu.t\"}";
  char req[512];
  snprintf(req, sizeof req,
           "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Content-Type: application/cloudevents+json\r\n"
           "Content-Length: %zu\r\n\r\n%s",
           sizeof body - 1, body);
  if (send(fd, req, strlen(req), 0) != (ssize_t)strlen(req)) return 0;
  char buf[512];
  size_t have = 0;
  int64_t until = ceb_test_now_ms() + 10000;
  while (ceb_test_now_ms() < until && have < 12) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t k = recv(fd, buf + have, sizeof buf - have, 0);
    if (k <= 0) return 0;
    have += (size_t)k;
  }
  return have >= 12 && memcmp(buf, "HTTP/1.1 202", 12) == 0;
}

/* 1 once a new connection to port is served before timeout_ms: a place
 * freed by a close counts only once the intermediary has seen the close. */
static int served_within(int port, int64_t timeout_ms) {
  int64_t until = ceb_test_now_ms() + timeout_ms;
  int ok = 0;
  while (!ok && ceb_test_now_ms() < until) {
    int c = connect_to(port);
    ok = c >= 0 && served(c);
    if (c >= 0) close(c);
  }
  return ok;
}

/* threads=4: four listeners share the port; the per-IP limit (2) holds
 * across them, and a closed connection frees its place. */
static void test_limits_across_listeners(hin_env *e) {
  int fds[2];
  for (int i = 0; i < 2; i++) {
    fds[i] = connect_to(e->port);
    CHECK(fds[i] >= 0 && served(fds[i]));
  }
  char got[64];
  /* several tries: each may land on any listener */
  for (int i = 0; i < 8; i++) {
    int c = connect_to(e->port);
    CHECK_MSG(c < 0 || wait_closed(c, 5000, got, sizeof got),
              "connection %d over the per-IP limit was served", i + 3);
    if (c >= 0) close(c);
  }
  close(fds[0]);
  /* the place is freed once the intermediary saw the close */
  CHECK_MSG(served_within(e->port, 10000),
            "no connection served after one of two was closed");
  close(fds[1]);
}

static void test_port_taken(hin_env *e) {
  char listen[64];
  snprintf(listen, sizeof listen, "listen=127.0.0.1:%d", e->port);
  const char *const cfg[] = {"auth=none", listen, "threads=2", NULL};
  int st = 0;
  hin_env *second = hin_start(cfg, &st);
  CHECK_MSG(second == NULL, "a second intermediary started on port %d",
            e->port);
  if (second) hin_stop(second);
  /* the first still serves; tries until a deadline because the per-IP
   * limit (2) may still count the previous test's connections until the
   * intermediary has seen their close */
  CHECK_MSG(served_within(e->port, 10000),
            "the first intermediary no longer serves port %d", e->port);
}

static void test_big_head(hin_env *e) {
  size_t n = 96 * 1024;
  char *hdr = malloc(n + 32);
  memcpy(hdr, "X-Big: ", 7);
  memset(hdr + 7, 'a', n);
  hdr[7 + n] = '\0';
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json", hdr,
                              NULL};
  size_t before = ceb_fake_event_count(e->fake);
  hin_resp r = hin_post(e, hdrs,
                        "{\"specversion\":\"1.0\",\"id\":\"big\",\"source\":"
                        "\"urn:t\",\"type\":\"nl.edu.t\"}");
  /* 431 from libmicrohttpd, or the connection closed */
  CHECK_MSG(r.status == 431 || r.status == 0, "status %ld", r.status);
  hin_resp_free(&r);
  free(hdr);
  CHECK_INT(ceb_fake_event_count(e->fake), before);
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  static const char *const cfg[] = {"auth=none",
                                    "connection_timeout=1s",
                                    "max_connections_per_ip=2",
                                    "connection_memory=32KiB",
                                    "threads=1",
                                    NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (e) {
    test_slow_sender(e);
    test_per_ip_limit(e);
    test_big_head(e);
    /* still serving */
    static const char *const hdrs[] = {
        "Content-Type: application/cloudevents+json", NULL};
    hin_resp r = hin_post(e, hdrs,
                          "{\"specversion\":\"1.0\",\"id\":\"ok\",\"source\":"
                          "\"urn:t\",\"type\":\"nl.edu.t\"}");
    CHECK_INT(r.status, 202);
    hin_resp_free(&r);
    hin_stop(e);
  }
  static const char *const cfg4[] = {"auth=none", "max_connections_per_ip=2",
                                     "threads=4", NULL};
  e = hin_start(cfg4, NULL);
  CHECK(e != NULL);
  if (e) {
    test_limits_across_listeners(e);
    test_port_taken(e);
    hin_stop(e);
  }
  curl_global_cleanup();
  return ceb_test_done("test_http_in_conn");
}
