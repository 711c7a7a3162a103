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

int mb_wire_varint(const unsigned char *p, size_t n, uint32_t *v,
                   size_t *used) {
  uint32_t x = 0;
  for (size_t i = 0; i < 4; i++) {
    if (i >= n) return 0;
    x |= (uint32_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      *v = x;
      *used = i + 1;
      return 1;
    }
  }
  return -1;
}

size_t mb_wire_put_varint(unsigned char *p, uint32_t v) {
  size_t n = 0;
  do {
    unsigned char b = v & 0x7f;
    v >>= 7;
    p[n++] = (unsigned char)(b | (v ? 0x80 : 0));
  } while (v);
  return n;
}

size_t mb_wire_put_str(unsigned char *p, const char *s, size_t n) {
  p[0] = (unsigned char)(n >> 8);
  p[1] = (unsigned char)n;
  memcpy(p + 2, s, n);
  return n + 2;
}

int mb_wire_read_packet(int fd, unsigned char *buf, size_t cap, size_t *len) {
  unsigned char h[5];
  if (recv(fd, h, 1, MSG_WAITALL) != 1) return -1;
  size_t n = 0;
  uint32_t rl = 0;
  for (;;) {
    if (n == 4 || recv(fd, h + 1 + n, 1, MSG_WAITALL) != 1) return -1;
    rl |= (uint32_t)(h[1 + n] & 0x7f) << (7 * n);
    if (!(h[1 + n++] & 0x80)) break;
  }
  if (rl > cap) return -1;
  if (rl && recv(fd, buf, rl, MSG_WAITALL) != (ssize_t)rl) return -1;
  *len = rl;
  return h[0];
}

/* Value sizes by identifier (MQTT 5.0 section 2.2.2.2): 1, 2, 4 bytes, 'v'
 * variable byte integer, 's' string or binary data, 'p' string pair. */
static int prop_kind(unsigned id) {
  switch (id) {
  case 0x01:
  case 0x17:
  case 0x19:
  case 0x24:
  case 0x25:
  case 0x28:
  case 0x29:
  case 0x2a:
    return 1;
  case 0x13:
  case 0x21:
  case 0x22:
  case 0x23:
    return 2;
  case 0x02:
  case 0x11:
  case 0x18:
  case 0x27:
    return 4;
  case 0x0b:
    return 'v';
  case 0x03:
  case 0x08:
  case 0x09:
  case 0x12:
  case 0x15:
  case 0x16:
  case 0x1a:
  case 0x1c:
  case 0x1f:
    return 's';
  case 0x26:
    return 'p';
  default:
    return 0;
  }
}

static int take_str(const unsigned char *p, size_t n, size_t *i,
                    const unsigned char **s, size_t *l) {
  if (n - *i < 2) return -1;
  *l = (size_t)p[*i] << 8 | p[*i + 1];
  if (n - *i - 2 < *l) return -1;
  *s = p + *i + 2;
  *i += 2 + *l;
  return 0;
}

int mb_wire_prop_next(const unsigned char *p, size_t n, size_t *i,
                      mb_wire_prop *out) {
  if (*i >= n) return 0;
  memset(out, 0, sizeof *out);
  out->id = p[(*i)++];
  int kind = prop_kind(out->id);
  switch (kind) {
  case 1:
  case 2:
  case 4:
    if (n - *i < (size_t)kind) return -1;
    for (int k = 0; k < kind; k++)
      out->num = out->num << 8 | p[*i + (size_t)k];
    *i += (size_t)kind;
    return 1;
  case 'v': {
    size_t used;
    if (mb_wire_varint(p + *i, n - *i, &out->num, &used) != 1) return -1;
    *i += used;
    return 1;
  }
  case 's':
    return take_str(p, n, i, &out->s1, &out->l1) < 0 ? -1 : 1;
  case 'p':
    if (take_str(p, n, i, &out->s1, &out->l1) < 0) return -1;
    return take_str(p, n, i, &out->s2, &out->l2) < 0 ? -1 : 1;
  default:
    return -1;
  }
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
  n += mb_wire_put_varint(pk + n, (uint32_t)b);
  memcpy(pk + n, body, b);
  unsigned char in[512];
  size_t len = 0;
  int type = mb_wire_send_all(fd, pk, n + b) < 0
                 ? -1
                 : mb_wire_read_packet(fd, in, sizeof in, &len);
  /* CONNACK: flags, reason code, properties */
  uint32_t pl = 0;
  size_t used = 0;
  if (type != 0x20 || len < 3 || in[1] != 0 ||
      mb_wire_varint(in + 2, len - 2, &pl, &used) != 1 || 2 + used + pl > len) {
    fprintf(stderr, "bench mqtt: %s: CONNACK missing or refusing (%d)\n", url,
            len >= 2 ? in[1] : -1);
    close(fd);
    return -1;
  }
  *server_rmax = 65535;
  mb_wire_prop pr;
  size_t i = 0;
  int got;
  while ((got = mb_wire_prop_next(in + 2 + used, pl, &i, &pr)) == 1)
    if (pr.id == 0x21 && pr.num > 0) *server_rmax = (int)pr.num;
  if (got < 0) {
    fprintf(stderr, "bench mqtt: %s: malformed CONNACK properties\n", url);
    close(fd);
    return -1;
  }
  return fd;
}
