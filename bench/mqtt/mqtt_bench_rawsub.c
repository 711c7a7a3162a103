#include "mqtt_bench_rawsub.h"

#include "mqtt_bench_wire.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* Picks the bench's user properties out of a PUBLISH's properties. 0, or
 * -1 when malformed. */
static int read_props(const unsigned char *p, size_t n, attr *id, attr *key,
                      attr *sent) {
  size_t i = 0;
  mqtt_prop pr;
  int got;
  while ((got = mqtt_prop_next(p, n, &i, &pr)) == 1) {
    if (pr.id != 0x26) continue;
    attr *to = pr.l1 == 2 && !memcmp(pr.s1, "id", 2)               ? id
               : pr.l1 == 12 && !memcmp(pr.s1, "partitionkey", 12) ? key
               : pr.l1 == 9 && !memcmp(pr.s1, "benchsent", 9)      ? sent
                                                                   : NULL;
    if (to) {
      to->v = (const char *)pr.s2;
      to->len = (int)pr.l2;
    }
  }
  return got;
}

/* One PUBLISH: recorded, and its PUBACK appended to ack (4 bytes). 0, or
 * -1 when malformed. */
static int on_publish(mb_rsub *s, const mqtt_frame *f, unsigned char *ack,
                      size_t *acklen) {
  mqtt_publish m;
  if (mqtt_frame_publish(f, 1, &m) < 0) return -1;
  unsigned qos = (unsigned)m.qos, pid = m.packet_id;
  attr id = {0}, key = {0}, sent = {0};
  if (read_props(m.props, m.props_len, &id, &key, &sent) < 0) return -1;
  const char *payload = (const char *)m.payload;
  size_t plen = m.payload_len;
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
  mqtt_frame f;
  int r;
  while (rc == 0 && (r = mqtt_frame_next(s->in + at, s->len - at,
                                         MB_WIRE_MAX_PACKET, &f)) != 0) {
    if (r < 0) {
      fail(s, "malformed packet length");
      rc = -1;
      break;
    }
    if (f.type == MQTT_PUBLISH) {
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
      if (on_publish(s, &f, ack, &acklen) < 0) {
        fail(s, "malformed PUBLISH");
        rc = -1;
      }
    } else if (f.type == MQTT_DISCONNECT) {
      fail(s, "the broker sent DISCONNECT");
      rc = -1;
    } /* anything else (PINGRESP...) needs no answer */
    at += f.total;
  }
  if (acklen && mb_wire_send_all(s->fd, ack, acklen) < 0) {
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
      unsigned char *g =
          nc <= 4 * MB_WIRE_MAX_PACKET ? realloc(s->in, nc) : NULL;
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

/* SUBSCRIBE (packet id 1, QoS 1) and its SUBACK. 0 or -1. */
static int subscribe(mb_rsub *s, const char *filter) {
  unsigned char pk[300], body[260];
  size_t fl = strlen(filter), b = 0, n = 0;
  if (fl > 200) return -1;
  body[b++] = 0;
  body[b++] = 1;
  body[b++] = 0; /* no properties */
  b += mb_wire_put_str(body + b, filter, fl);
  body[b++] = 1;
  pk[n++] = 0x82;
  n += mqtt_put_varint(pk + n, (uint32_t)b);
  memcpy(pk + n, body, b);
  if (mb_wire_send_all(s->fd, pk, n + b) < 0) return -1;
  /* SUBACK: packet id, properties, one reason code (the granted QoS) */
  mqtt_frame f;
  unsigned id;
  const unsigned char *codes;
  size_t ncodes;
  return mb_wire_read_packet(s->fd, s->in, s->cap, &f) == 0 &&
                 mqtt_frame_suback(&f, 1, &id, &codes, &ncodes) == 0 &&
                 codes[0] < 0x80
             ? 0
             : -1;
}

mb_rsub *mb_rsub_start(const char *url, const char *client_id,
                       const char *filter, mb_track *t) {
  mb_rsub *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->cap = 256 * 1024;
  s->in = malloc(s->cap);
  atomic_store(&s->track, t);
  int rmax = 0;
  s->fd = s->in ? mb_wire_connect(url, client_id, 1000, &rmax) : -1;
  if (s->fd < 0 || subscribe(s, filter) < 0) {
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
    (void)mb_wire_send_all(s->fd, disconnect, sizeof disconnect);
    close(s->fd);
  }
  free(s->in);
  free(s);
}
