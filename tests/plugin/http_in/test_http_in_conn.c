/* Connection-level protection of the intermediary with raw sockets:
 * a slow sender (slowloris) is cut off after connection_timeout, the
 * per-IP connection limit refuses the connection over it, and an oversized
 * request head is refused without reaching the handler. */
#include "hin_harness.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
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
  if (n)
    got[0] = '\0';
  while (ceb_test_now_ms() < until) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0)
      continue;
    char buf[512];
    ssize_t k = recv(fd, buf, sizeof buf, 0);
    if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN))
      return 1;
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
  if (c >= 0)
    close(c);
  close(a);
  close(b);
}

static void test_big_head(hin_env *e) {
  size_t n = 96 * 1024;
  char *hdr = malloc(n + 32);
  memcpy(hdr, "X-Big: ", 7);
  memset(hdr + 7, 'a', n);
  hdr[7 + n] = '\0';
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              hdr, NULL};
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
  static const char *const cfg[] = {"auth=none", "connection_timeout=1s",
                                    "max_connections_per_ip=2",
                                    "connection_memory=32KiB", "threads=1",
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
  curl_global_cleanup();
  return ceb_test_done("test_http_in_conn");
}
