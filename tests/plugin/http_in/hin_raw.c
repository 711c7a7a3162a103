/* Raw-socket client for the intermediary tests (hin_raw.h). */
#include "hin_raw.h"

#include "ceb_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

int hin_raw_connect(int port, const char *src_ip, int nonblock) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (src_ip) {
    struct sockaddr_in src = {0};
    src.sin_family = AF_INET;
    inet_pton(AF_INET, src_ip, &src.sin_addr);
    if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0) {
      close(fd);
      return -1;
    }
  }
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (nonblock) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 &&
      !(nonblock && errno == EINPROGRESS)) {
    close(fd);
    return -1;
  }
  return fd;
}

int hin_raw_send(int fd, const void *data, size_t n, int64_t timeout_ms) {
  const char *p = data;
  int64_t until = ceb_test_now_ms() + timeout_ms;
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k > 0) {
      p += k;
      n -= (size_t)k;
      continue;
    }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return 0;
    int64_t left = until - ceb_test_now_ms();
    if (left <= 0) return 0;
    struct pollfd pf = {fd, POLLOUT, 0};
    poll(&pf, 1, left > 50 ? 50 : (int)left);
  }
  return 1;
}

/* Reads more into buf; 1 when data came, 0 on close or deadline. */
static int read_more(int fd, char *buf, size_t cap, size_t *have, int64_t until,
                     int *closed) {
  while (ceb_test_now_ms() < until) {
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, 50) <= 0) continue;
    ssize_t k = recv(fd, buf + *have, cap - 1 - *have, MSG_DONTWAIT);
    if (k > 0) {
      *have += (size_t)k;
      buf[*have] = '\0';
      return 1;
    }
    if (k == 0 || (errno != EAGAIN && errno != EINTR)) {
      *closed = 1;
      return 0;
    }
  }
  return 0;
}

static const char *header_value(const char *head, const char *name,
                                size_t *len) {
  size_t n = strlen(name);
  for (const char *p = strstr(head, "\r\n"); p && p[2];
       p = strstr(p + 2, "\r\n")) {
    const char *line = p + 2;
    if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
      const char *v = line + n + 1;
      while (*v == ' ')
        v++;
      const char *end = strstr(v, "\r\n");
      *len = end ? (size_t)(end - v) : strlen(v);
      return v;
    }
  }
  return NULL;
}

void hin_raw_read(int fd, int64_t timeout_ms, hin_raw_resp *out) {
  memset(out, 0, sizeof *out);
  int64_t until = ceb_test_now_ms() + timeout_ms;
  size_t cap = 16384, have = 0;
  char *buf = malloc(cap);
  buf[0] = '\0';
  char *end = NULL;
  while (!(end = strstr(buf, "\r\n\r\n")) &&
         read_more(fd, buf, cap, &have, until, &out->closed)) {
  }
  if (end && sscanf(buf, "HTTP/1.%*d %d", &out->status) == 1) {
    *end = '\0';
    size_t len = 0;
    const char *v = header_value(buf, "Content-Type", &len);
    if (v) snprintf(out->ctype, sizeof out->ctype, "%.*s", (int)len, v);
    v = header_value(buf, "Content-Length", &len);
    size_t want = v ? (size_t)strtoul(v, NULL, 10) : 0;
    size_t off = (size_t)(end + 4 - buf);
    while (have - off < want && have + 1 < cap &&
           read_more(fd, buf, cap, &have, until, &out->closed)) {
    }
    size_t got = have - off < want ? have - off : want;
    if (got >= sizeof out->body) got = sizeof out->body - 1;
    memcpy(out->body, buf + off, got);
    out->body[got] = '\0';
  }
  free(buf);
}

int hin_raw_wait_closed(int fd, int64_t timeout_ms) {
  int64_t until = ceb_test_now_ms() + timeout_ms;
  while (ceb_test_now_ms() < until) {
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, 50) <= 0) continue;
    char buf[512];
    ssize_t k = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) return 1;
  }
  return 0;
}
