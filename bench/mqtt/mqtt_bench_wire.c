#include "mqtt_bench_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int mb_wire_send_all(int fd, const void *buf, size_t n) {
  const unsigned char *p = buf;
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

size_t mb_wire_put_str(unsigned char *p, const char *s, size_t n) {
  p[0] = (unsigned char)(n >> 8);
  p[1] = (unsigned char)n;
  memcpy(p + 2, s, n);
  return n + 2;
}

int mb_wire_read_packet(int fd, unsigned char *buf, size_t cap, mqtt_frame *f) {
  size_t n = 0;
  uint32_t rl;
  size_t used;
  int r = 0;
  /* the fixed header a byte at a time, then the body in one read */
  while (r == 0 && n < 5 && n < cap) {
    if (recv(fd, buf + n, 1, MSG_WAITALL) != 1) return -1;
    n++;
    if (n >= 2) r = mqtt_varint(buf + 1, n - 1, &rl, &used);
  }
  if (r != 1 || rl > cap - n) return -1;
  if (rl && recv(fd, buf + n, rl, MSG_WAITALL) != (ssize_t)rl) return -1;
  return mqtt_frame_next(buf, n + rl, cap, f) == 1 ? 0 : -1;
}

static int connect_tcp(const char *url) {
  int port = 0;
  if (sscanf(url, "tcp://127.0.0.1:%d", &port) != 1 || port <= 0 ||
      port > 65535) {
    fprintf(stderr, "bench mqtt: unsupported url %s\n", url);
    return -1;
  }
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct timeval tv = {10, 0};
  int one = 1;
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
    fprintf(stderr, "bench mqtt: cannot connect to %s: %s\n", url,
            strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

int mb_wire_connect(const char *url, const char *client_id, int receive_max,
                    int *server_rmax) {
  size_t cl = strlen(client_id);
  if (cl > 200 || receive_max < 1 || receive_max > 65535) return -1;
  int fd = connect_tcp(url);
  if (fd < 0) return -1;
  unsigned char body[256], pk[300];
  /* "MQTT" v5, clean start, keep-alive 0, Receive Maximum */
  size_t b = mb_wire_put_str(body, "MQTT", 4);
  body[b++] = 5;
  body[b++] = 0x02;
  body[b++] = 0;
  body[b++] = 0;
  body[b++] = 3;
  body[b++] = 0x21;
  body[b++] = (unsigned char)(receive_max >> 8);
  body[b++] = (unsigned char)receive_max;
  b += mb_wire_put_str(body + b, client_id, cl);
  size_t n = 0;
  pk[n++] = 0x10;
  n += mqtt_put_varint(pk + n, (uint32_t)b);
  memcpy(pk + n, body, b);
  unsigned char in[512];
  mqtt_frame f;
  int sp = 0, reason = -1;
  const unsigned char *props = NULL;
  size_t pl = 0;
  if (mb_wire_send_all(fd, pk, n + b) < 0 ||
      mb_wire_read_packet(fd, in, sizeof in, &f) < 0 ||
      mqtt_frame_connack(&f, 1, &sp, &reason, &props, &pl) < 0 || reason != 0) {
    fprintf(stderr, "bench mqtt: %s: CONNACK missing or refusing (%d)\n", url,
            reason);
    close(fd);
    return -1;
  }
  *server_rmax = 65535;
  mqtt_prop pr;
  size_t i = 0;
  int got;
  while ((got = mqtt_prop_next(props, pl, &i, &pr)) == 1)
    if (pr.id == 0x21 && pr.num > 0) *server_rmax = (int)pr.num;
  if (got < 0) {
    fprintf(stderr, "bench mqtt: %s: malformed CONNACK properties\n", url);
    close(fd);
    return -1;
  }
  return fd;
}
