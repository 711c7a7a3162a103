#include "mqtt_bench_pub.h"

#include "mqtt_bench_http.h"  /* mb_http_key */
#include "mqtt_bench_track.h" /* mb_now_us */
#include "mqtt_bench_wire.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct mb_pub {
  int fd;
  int server_rmax;
  unsigned char *in; /* PUBACKs read, not yet parsed */
  size_t len, cap;
  unsigned next_id; /* packet ids 1..65535 */
};

mb_pub *mb_pub_start(const char *url, const char *client_id) {
  mb_pub *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->cap = 64 * 1024;
  c->in = malloc(c->cap);
  c->fd = c->in ? mb_wire_connect(url, client_id, 1000, &c->server_rmax) : -1;
  if (c->fd < 0) {
    fprintf(stderr, "bench mqtt: publisher %s cannot connect\n", client_id);
    mb_pub_stop(c);
    return NULL;
  }
  return c;
}

void mb_pub_stop(mb_pub *c) {
  if (!c) return;
  if (c->fd >= 0) {
    static const unsigned char disconnect[2] = {0xe0, 0};
    (void)mb_wire_send_all(c->fd, disconnect, sizeof disconnect);
    close(c->fd);
  }
  free(c->in);
  free(c);
}

static size_t put_user(unsigned char *p, const char *name, const char *value) {
  size_t n = 0;
  p[n++] = 0x26;
  n += mb_wire_put_str(p + n, name, strlen(name));
  n += mb_wire_put_str(p + n, value, strlen(value));
  return n;
}

static size_t put_content_type(unsigned char *p, const char *ct) {
  p[0] = 0x03;
  return 1 + mb_wire_put_str(p + 1, ct, strlen(ct));
}

/* Writes one QoS 1 PUBLISH at out; returns its size. */
static size_t put_publish(unsigned char *out, const char *topic, unsigned id,
                          const unsigned char *props, size_t plen,
                          const char *payload, size_t len) {
  unsigned char pl[4];
  size_t tl = strlen(topic), pll = mqtt_put_varint(pl, (uint32_t)plen);
  size_t body = 2 + tl + 2 + pll + plen + len, n = 0;
  out[n++] = 0x32;
  n += mqtt_put_varint(out + n, (uint32_t)body);
  n += mb_wire_put_str(out + n, topic, tl);
  out[n++] = (unsigned char)(id >> 8);
  out[n++] = (unsigned char)id;
  memcpy(out + n, pl, pll);
  n += pll;
  memcpy(out + n, props, plen);
  n += plen;
  memcpy(out + n, payload, len);
  return n + len;
}

/* Parses the PUBACKs read so far. Returns how many arrived (ok and refused
 * added to the counters), or -1 on a DISCONNECT or a malformed packet. */
static long take_acks(mb_pub *c, long *acked, long *failed) {
  size_t at = 0;
  long n = 0;
  mqtt_frame f;
  int r;
  while ((r = mqtt_frame_next(c->in + at, c->len - at, MB_WIRE_MAX_PACKET,
                              &f)) != 0) {
    if (r < 0) return -1;
    unsigned id;
    int reason;
    if (f.type == MQTT_PUBACK && mqtt_frame_ack(&f, &id, &reason) == 0) {
      n++;
      if (reason >= 0x80)
        (*failed)++;
      else
        (*acked)++;
    } else if (f.type == MQTT_DISCONNECT) {
      fprintf(stderr, "bench mqtt: the broker disconnected the publisher\n");
      return -1;
    }
    at += f.total;
  }
  memmove(c->in, c->in + at, c->len - at);
  c->len -= at;
  if (c->len == c->cap) return -1; /* one packet larger than the buffer */
  return n;
}

int mb_pub_run(mb_pub *c, const mb_pub_opts *o, mb_pub_result *r) {
  memset(r, 0, sizeof *r);
  int window = c->server_rmax > 1 ? c->server_rmax - 1 : 1;
  if (window > 1000) window = 1000;
  r->window = window;
  const char *fixed_attrs[] = {"1.0", o->source, o->type,
                               "2026-11-22T18:00:00Z"};
  /* attribute values + data = size: data is {"pad":"..."} */
  int fixed = 10 + 16 /* id */ + 10 /* key */ + 16 /* stamp */;
  for (int i = 0; i < 4; i++)
    fixed += (int)strlen(fixed_attrs[i]);
  int padn = o->size > fixed ? o->size - fixed : 0;
  char *payload = malloc((size_t)padn + 16);
  size_t evcap = (size_t)padn + 1024; /* one event: payload, props, topic */
  char *event = malloc(evcap);
  unsigned char *out = malloc(evcap * (size_t)window);
  if (!payload || !event || !out || strlen(o->topic) > 200) {
    free(payload);
    free(event);
    free(out);
    return -1;
  }
  int plen =
      snprintf(payload, (size_t)padn + 16, "{\"pad\":\"%*s\"}", padn, "");
  memset(payload + 8, 'x', (size_t)padn);
  int streams = o->streams > 0 ? o->streams : 1;
  long inflight = 0;
  int64_t t0 = mb_now_us(), last_ack = t0;
  int broken = 0;
  while (!broken && (r->sent < o->count || inflight > 0)) {
    /* every publish the window and the pace allow, with one write */
    size_t olen = 0;
    int64_t now = mb_now_us();
    while (r->sent < o->count && inflight < window &&
           (o->rate <= 0 ||
            t0 + (int64_t)((double)r->sent * 1e6 / o->rate) <= now)) {
      char id[32], key[24], stamp[24];
      snprintf(id, sizeof id, "%s-%d-%ld", o->id_prefix ? o->id_prefix : "mb",
               o->stream, r->sent);
      snprintf(key, sizeof key, "key-%d",
               mb_http_key(o->stream, r->sent, streams, o->keys));
      snprintf(stamp, sizeof stamp, "%lld", (long long)mb_now_us());
      unsigned char props[512];
      size_t pn = 0;
      const char *body = payload;
      size_t blen = (size_t)plen;
      if (o->structured) { /* the whole event in the payload */
        int n = snprintf(
            event, evcap,
            "{\"specversion\":\"%s\",\"id\":\"%s\",\"source\":\"%s\","
            "\"type\":\"%s\",\"time\":\"%s\",\"partitionkey\":\"%s\","
            "\"benchsent\":\"%s\",\"datacontenttype\":\"application/json\","
            "\"data\":%s}",
            fixed_attrs[0], id, o->source, o->type, fixed_attrs[3], key, stamp,
            payload);
        body = event;
        blen = n > 0 && (size_t)n < evcap ? (size_t)n : 0;
        pn += put_content_type(props + pn, "application/cloudevents+json");
      } else {
        pn += put_user(props + pn, "specversion", fixed_attrs[0]);
        pn += put_user(props + pn, "id", id);
        pn += put_user(props + pn, "source", o->source);
        pn += put_user(props + pn, "type", o->type);
        pn += put_user(props + pn, "time", fixed_attrs[3]);
        pn += put_user(props + pn, "partitionkey", key);
        pn += put_user(props + pn, "benchsent", stamp);
        pn += put_content_type(props + pn, "application/json");
      }
      c->next_id = c->next_id % 65535 + 1;
      olen +=
          put_publish(out + olen, o->topic, c->next_id, props, pn, body, blen);
      r->sent++;
      inflight++;
    }
    if (olen && mb_wire_send_all(c->fd, out, olen) < 0) {
      fprintf(stderr, "bench mqtt: publish failed: %s\n", strerror(errno));
      break;
    }
    if (r->sent == o->count && inflight == 0) break;
    /* PUBACKs, or the pace's next publish */
    int64_t wait_us = 30000000;
    if (r->sent < o->count && inflight < window && o->rate > 0) {
      wait_us = t0 + (int64_t)((double)r->sent * 1e6 / o->rate) - mb_now_us();
      if (wait_us < 0) wait_us = 0;
    }
    struct timespec ts = {(time_t)(wait_us / 1000000),
                          (long)(wait_us % 1000000) * 1000};
    struct pollfd p = {c->fd, POLLIN, 0};
    int pr = ppoll(&p, 1, &ts, NULL);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0 && wait_us == 30000000) {
      fprintf(stderr, "bench mqtt: no PUBACK for 30 s\n");
      break;
    }
    if (pr <= 0) continue;
    ssize_t got = recv(c->fd, c->in + c->len, c->cap - c->len, 0);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got <= 0) {
      fprintf(stderr, "bench mqtt: the broker closed the publisher\n");
      break;
    }
    c->len += (size_t)got;
    long n = take_acks(c, &r->acked, &r->failed);
    if (n < 0) broken = 1;
    if (n > 0) {
      inflight -= n;
      last_ack = mb_now_us();
    }
  }
  r->failed += inflight; /* never acknowledged */
  r->elapsed_s = (double)(last_ack - t0) / 1e6;
  free(payload);
  free(event);
  free(out);
  return r->sent ? 0 : -1;
}
