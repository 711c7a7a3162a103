#include "mqtt_bench_rawsub.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_PACKET (1u << 20) /* far above a bench event */

struct mb_rsub {
  int fd;
  pthread_t thread;
  int started;
  mb_track *_Atomic track;
  atomic_int stop;
  atomic_int failed;
  unsigned char *in; /* reader thread only */
  size_t len, cap;
};

static int send_all(int fd, const unsigned char *p, size_t n) {
  while (n) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* MQTT variable byte integer at p (at most n bytes): its value, and in *used
 * the bytes it took; 0 when incomplete, -1 when malformed. */
static int varint(const unsigned char *p, size_t n, uint32_t *v, size_t *used) {
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

static size_t put_varint(unsigned char *p, uint32_t v) {
  size_t n = 0;
  do {
    unsigned char b = v & 0x7f;
    v >>= 7;
    p[n++] = (unsigned char)(b | (v ? 0x80 : 0));
  } while (v);
  return n;
}

static size_t put_str(unsigned char *p, const char *s, size_t n) {
  p[0] = (unsigned char)(n >> 8);
  p[1] = (unsigned char)n;
  memcpy(p + 2, s, n);
  return n + 2;
}

/* A structured-mode event's string member `name` (the bench's own events:
 * no escapes in these values); NULL when absent. */
static const char *json_member(const char *p, size_t len, const char *name,
                               int *vlen) {
  char pat[32];
  int n = snprintf(pat, sizeof pat, "\"%s\":\"", name);
  const char *at = memmem(p, len, pat, (size_t)n);
  if (!at) return NULL;
  at += n;
  const char *end = memchr(at, '"', (size_t)(p + len - at));
  if (!end) return NULL;
  *vlen = (int)(end - at);
  return at;
}

typedef struct attr {
  const char *v;
  int len;
} attr;

/* Reads a PUBLISH's properties for the bench's user properties. 0, or -1
 * when malformed (a property this client does not know included: none of
 * the broker's forwarded properties has an unknown length). */
static int read_props(const unsigned char *p, size_t n, attr *id, attr *key,
                      attr *sent) {
  size_t i = 0;
  while (i < n) {
    unsigned char code = p[i++];
    size_t fixed = 0;
    switch (code) {
    case 0x01: /* payload format indicator */
      fixed = 1;
      break;
    case 0x02: /* message expiry interval */
      fixed = 4;
      break;
    case 0x23: /* topic alias */
      fixed = 2;
      break;
    case 0x0b: { /* subscription identifier */
      uint32_t v;
      size_t used;
      if (varint(p + i, n - i, &v, &used) != 1) return -1;
      i += used;
      continue;
    }
    case 0x03:   /* content type */
    case 0x08:   /* response topic */
    case 0x09:   /* correlation data */
    case 0x26: { /* user property: two strings */
      int strings = code == 0x26 ? 2 : 1;
      const unsigned char *s[2] = {NULL, NULL};
      size_t l[2] = {0, 0};
      for (int k = 0; k < strings; k++) {
        if (n - i < 2) return -1;
        l[k] = (size_t)p[i] << 8 | p[i + 1];
        if (n - i - 2 < l[k]) return -1;
        s[k] = p + i + 2;
        i += 2 + l[k];
      }
      if (code != 0x26) continue;
      attr *to = l[0] == 2 && !memcmp(s[0], "id", 2)               ? id
                 : l[0] == 12 && !memcmp(s[0], "partitionkey", 12) ? key
                 : l[0] == 9 && !memcmp(s[0], "benchsent", 9)      ? sent
                                                                   : NULL;
      if (to) {
        to->v = (const char *)s[1];
        to->len = (int)l[1];
      }
      continue;
    }
    default:
      return -1;
    }
    if (n - i < fixed) return -1;
    i += fixed;
  }
  return 0;
}

/* One PUBLISH (flags: the fixed header's low nibble; body: the rest):
 * recorded, and its PUBACK appended to ack (4 bytes). 0, or -1 when
 * malformed. */
static int on_publish(mb_rsub *s, unsigned flags, const unsigned char *b,
                      size_t n, unsigned char *ack, size_t *acklen) {
  unsigned qos = (flags >> 1) & 3;
  if (n < 2) return -1;
  size_t tl = (size_t)b[0] << 8 | b[1], i = 2 + tl;
  if (i > n || qos > 2) return -1;
  unsigned pid = 0;
  if (qos) {
    if (n - i < 2) return -1;
    pid = (unsigned)b[i] << 8 | b[i + 1];
    i += 2;
  }
  uint32_t pl;
  size_t used;
  if (varint(b + i, n - i, &pl, &used) != 1 || n - i - used < pl) return -1;
  attr id = {0}, key = {0}, sent = {0};
  if (read_props(b + i + used, pl, &id, &key, &sent) < 0) return -1;
  i += used + pl;
  const char *payload = (const char *)b + i;
  size_t plen = n - i;
  if (!id.v) { /* structured mode: the event is the payload */
    id.v = json_member(payload, plen, "id", &id.len);
    key.v = json_member(payload, plen, "partitionkey", &key.len);
    sent.v = json_member(payload, plen, "benchsent", &sent.len);
  }
  mb_track *t = atomic_load(&s->track);
  if (t)
    mb_track_record(t, id.v, id.v ? id.len : 0, key.v, key.v ? key.len : 0,
                    sent.v, sent.v ? sent.len : 0);
  if (qos == 1) {
    unsigned char *a = ack + *acklen;
    a[0] = 0x40;
    a[1] = 2;
    a[2] = (unsigned char)(pid >> 8);
    a[3] = (unsigned char)pid;
    *acklen += 4;
  } else if (qos == 2) {
    return -1; /* subscribed at QoS 1: the broker never sends QoS 2 */
  }
  return 0;
}

static void fail(mb_rsub *s, const char *why) {
  if (!atomic_exchange(&s->failed, 1))
    fprintf(stderr, "bench mqtt: subscriber: %s\n", why);
}

/* Parses every complete packet in s->in, acknowledging the PUBLISHes with
 * one write. 0, or -1 on a protocol error or a closed connection. */
static int drain_input(mb_rsub *s) {
  size_t at = 0, acklen = 0, ackcap = 0;
  unsigned char *ack = NULL;
  int rc = 0;
  while (rc == 0 && s->len - at >= 2) {
    uint32_t rl;
    size_t used;
    int v = varint(s->in + at + 1, s->len - at - 1, &rl, &used);
    if (v == 0) break; /* header incomplete */
    if (v < 0 || rl > MAX_PACKET) {
      fail(s, "malformed packet length");
      rc = -1;
      break;
    }
    size_t whole = 1 + used + rl;
    if (s->len - at < whole) break;
    unsigned type = s->in[at] >> 4, flags = s->in[at] & 0x0f;
    const unsigned char *body = s->in + at + 1 + used;
    if (type == 3) {
      if (acklen + 4 > ackcap) {
        size_t nc = ackcap ? ackcap * 2 : 1024;
        unsigned char *g = realloc(ack, nc);
        if (!g) {
          fail(s, "out of memory");
          rc = -1;
          break;
        }
        ack = g;
        ackcap = nc;
      }
      if (on_publish(s, flags, body, rl, ack, &acklen) < 0) {
        fail(s, "malformed PUBLISH");
        rc = -1;
      }
    } else if (type == 14) {
      fail(s, "the broker sent DISCONNECT");
      rc = -1;
    } /* anything else (PINGRESP...) needs no answer */
    at += whole;
  }
  if (acklen && send_all(s->fd, ack, acklen) < 0) {
    fail(s, "cannot send PUBACK");
    rc = -1;
  }
  free(ack);
  memmove(s->in, s->in + at, s->len - at);
  s->len -= at;
  return rc;
}

static void *reader(void *arg) {
  mb_rsub *s = arg;
  while (!atomic_load(&s->stop)) {
    struct pollfd p = {s->fd, POLLIN, 0};
    int r = poll(&p, 1, 100); /* wakes to see stop */
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    if (s->cap - s->len < 65536) {
      size_t nc = s->cap * 2;
      unsigned char *g = nc <= 4 * MAX_PACKET ? realloc(s->in, nc) : NULL;
      if (!g) {
        fail(s, "input buffer full");
        break;
      }
      s->in = g;
      s->cap = nc;
    }
    ssize_t got = recv(s->fd, s->in + s->len, s->cap - s->len, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      if (!atomic_load(&s->stop)) fail(s, "the broker closed the connection");
      break;
    }
    s->len += (size_t)got;
    if (drain_input(s) < 0) break;
  }
  return NULL;
}

/* Reads one whole packet during the handshake (blocking, SO_RCVTIMEO):
 * its first byte, or -1. The body lands in s->in (s->len bytes). */
static int read_packet(mb_rsub *s) {
  unsigned char h[5];
  if (recv(s->fd, h, 1, MSG_WAITALL) != 1) return -1;
  size_t n = 0;
  uint32_t rl = 0;
  for (;;) {
    if (n == 4 || recv(s->fd, h + 1 + n, 1, MSG_WAITALL) != 1) return -1;
    rl |= (uint32_t)(h[1 + n] & 0x7f) << (7 * n);
    if (!(h[1 + n++] & 0x80)) break;
  }
  if (rl > s->cap) return -1;
  if (rl && recv(s->fd, s->in, rl, MSG_WAITALL) != (ssize_t)rl) return -1;
  s->len = rl;
  return h[0];
}

static int handshake(mb_rsub *s, const char *client_id, const char *filter) {
  unsigned char pk[1024], body[1000];
  size_t cl = strlen(client_id), fl = strlen(filter);
  if (cl > 200 || fl > 200) return -1;
  /* CONNECT: "MQTT" v5, clean start, keep-alive 0, Receive Maximum 1000 */
  size_t b = put_str(body, "MQTT", 4);
  body[b++] = 5;
  body[b++] = 0x02;
  body[b++] = 0;
  body[b++] = 0;
  body[b++] = 3; /* properties length */
  body[b++] = 0x21;
  body[b++] = 1000 >> 8;
  body[b++] = 1000 & 0xff;
  b += put_str(body + b, client_id, cl);
  size_t n = 0;
  pk[n++] = 0x10;
  n += put_varint(pk + n, (uint32_t)b);
  memcpy(pk + n, body, b);
  if (send_all(s->fd, pk, n + b) < 0) return -1;
  if (read_packet(s) != 0x20 || s->len < 2 || s->in[1] != 0) {
    fprintf(stderr, "bench mqtt: subscriber: CONNACK missing or refusing\n");
    return -1;
  }
  /* SUBSCRIBE packet id 1, no properties, QoS 1 */
  b = 0;
  body[b++] = 0;
  body[b++] = 1;
  body[b++] = 0;
  b += put_str(body + b, filter, fl);
  body[b++] = 1;
  n = 0;
  pk[n++] = 0x82;
  n += put_varint(pk + n, (uint32_t)b);
  memcpy(pk + n, body, b);
  if (send_all(s->fd, pk, n + b) < 0) return -1;
  /* SUBACK: packet id, properties, one reason code (granted QoS) */
  int type = read_packet(s);
  uint32_t pl;
  size_t used;
  if (type != 0x90 || s->len < 3 ||
      varint(s->in + 2, s->len - 2, &pl, &used) != 1 ||
      2 + used + pl >= s->len || s->in[2 + used + pl] >= 0x80) {
    fprintf(stderr, "bench mqtt: subscriber: SUBACK missing or refusing\n");
    return -1;
  }
  s->len = 0;
  return 0;
}

mb_rsub *mb_rsub_start(const char *url, const char *client_id,
                       const char *filter, mb_track *t) {
  int port = 0;
  if (sscanf(url, "tcp://127.0.0.1:%d", &port) != 1 || port <= 0 ||
      port > 65535) {
    fprintf(stderr, "bench mqtt: subscriber: unsupported url %s\n", url);
    return NULL;
  }
  mb_rsub *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->fd = -1;
  s->cap = 256 * 1024;
  s->in = malloc(s->cap);
  atomic_store(&s->track, t);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (s->in) s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct timeval tv = {10, 0};
  int one = 1;
  if (s->fd < 0 || connect(s->fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
      handshake(s, client_id, filter) < 0) {
    fprintf(stderr, "bench mqtt: subscriber: cannot subscribe to %s at %s\n",
            filter, url);
    mb_rsub_stop(s);
    return NULL;
  }
  if (pthread_create(&s->thread, NULL, reader, s) != 0) {
    mb_rsub_stop(s);
    return NULL;
  }
  s->started = 1;
  return s;
}

void mb_rsub_set_track(mb_rsub *s, mb_track *t) {
  atomic_store(&s->track, t);
}

int mb_rsub_status(mb_rsub *s) {
  return atomic_load(&s->failed) ? -1 : 0;
}

void mb_rsub_stop(mb_rsub *s) {
  if (!s) return;
  atomic_store(&s->stop, 1);
  if (s->started) pthread_join(s->thread, NULL);
  if (s->fd >= 0) {
    static const unsigned char disconnect[2] = {0xe0, 0};
    (void)send_all(s->fd, disconnect, sizeof disconnect);
    close(s->fd);
  }
  free(s->in);
  free(s);
}
