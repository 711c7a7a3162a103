/* Raw sockets rather than libcurl for the same reason as bench/http: the
 * generator shares two cores with the bridge, so its per-request CPU is
 * taken from the system under test. Each request is formatted into the
 * connection's buffer (one snprintf around a fixed pad) and written with one
 * send(). */
#include "mqtt_bench_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mqtt_bench_track.h"

#define REQ_MAX 16384
#define RESP_MAX 8192

typedef struct hconn {
  int fd, idx;
  int writing; /* 1 while the request is being written */
  long n;      /* events this connection sent */
  char req[REQ_MAX];
  size_t len, wpos;
  char resp[RESP_MAX];
  size_t rlen;
  int64_t start_us;
} hconn;

typedef struct hload {
  const mb_http_opts *o;
  mb_http_result *r;
  const char *pad;
  int ep;
  long next;     /* requests started */
  long answered; /* completed or failed */
  int64_t *lat;
  long nlat;
} hload;

int mb_http_key(int conn, long n, int conns, int keys) {
  if (keys < conns) return conn % keys;
  long owned = (keys - conn + conns - 1) / conns;
  return conn + conns * (int)(n % owned);
}

static int fmt_body(char *buf, size_t cap, const mb_http_opts *o, int conn,
                    long seq, int key, int64_t sent, const char *pad) {
  return snprintf(buf, cap,
                  "{\"specversion\":\"1.0\",\"id\":\"%s-%d-%ld\","
                  "\"source\":\"%s\",\"type\":\"%s\","
                  "\"time\":\"2026-11-22T18:00:00Z\","
                  "\"partitionkey\":\"key-%d\",\"benchsent\":\"%lld\","
                  "\"datacontenttype\":\"application/json\","
                  "\"data\":{\"pad\":\"%s\"}}",
                  o->id_prefix ? o->id_prefix : "mb", conn, seq, o->source,
                  o->type, key, (long long)sent, pad);
}

/* Formats and starts the next request of c. */
static void prepare(hload *l, hconn *c) {
  char body[REQ_MAX];
  int64_t t = mb_now_us();
  int bl =
      fmt_body(body, sizeof body, l->o, c->idx, c->n,
               mb_http_key(c->idx, c->n, l->o->conns, l->o->keys), t, l->pad);
  int hl = snprintf(c->req, sizeof c->req,
                    "POST /events HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                    "Content-Type: application/cloudevents+json\r\n"
                    "Content-Length: %d\r\n\r\n",
                    l->o->port, bl);
  memcpy(c->req + hl, body, (size_t)bl);
  c->len = (size_t)(hl + bl);
  c->wpos = 0;
  c->rlen = 0;
  c->writing = 1;
  c->start_us = t;
  c->n++;
  l->next++;
  l->r->sent++;
}

static int conn_open(hload *l, hconn *c) {
  c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->fd < 0) return -1;
  int one = 1;
  setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)l->o->port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0 &&
      errno != EINPROGRESS)
    return -1;
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = c};
  return epoll_ctl(l->ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static void conn_close(hload *l, hconn *c) {
  if (c->fd >= 0) {
    epoll_ctl(l->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
  }
  c->fd = -1;
}

static void want(hload *l, hconn *c, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = c};
  epoll_ctl(l->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* A full response in c->resp: its length, 0 when incomplete, -1 bad. */
static long resp_complete(hconn *c, int *status) {
  c->resp[c->rlen < RESP_MAX ? c->rlen : RESP_MAX - 1] = '\0';
  char *end = strstr(c->resp, "\r\n\r\n");
  if (!end) return c->rlen >= RESP_MAX - 1 ? -1 : 0;
  if (sscanf(c->resp, "HTTP/1.%*d %d", status) != 1) return -1;
  long clen = 0;
  for (char *p = c->resp; p && p < end; p = strstr(p, "\r\n")) {
    p += 2;
    if (!strncasecmp(p, "Content-Length:", 15)) clen = atol(p + 15);
  }
  long total = (long)(end + 4 - c->resp) + clen;
  if (total >= RESP_MAX) return -1;
  return (long)c->rlen >= total ? total : 0;
}

/* An answer (or a failure) ends c's request; starts the next one. */
static void finish(hload *l, hconn *c, int status) {
  l->answered++;
  if (status == 202)
    l->r->accepted++;
  else if (status > 0)
    l->r->other++;
  else
    l->r->errors++;
  if (status > 0 && l->nlat < l->o->count)
    l->lat[l->nlat++] = mb_now_us() - c->start_us;
  if (status <= 0) {
    conn_close(l, c); /* the connection is unusable: stop using it */
    return;
  }
  if (l->next < l->o->count) {
    prepare(l, c);
    want(l, c, EPOLLIN | EPOLLOUT);
  }
}

static void on_event(hload *l, hconn *c, uint32_t ev) {
  if (ev & (EPOLLERR | EPOLLHUP) && !(ev & EPOLLIN)) {
    finish(l, c, -1);
    return;
  }
  if (c->writing && (ev & EPOLLOUT)) {
    ssize_t w = send(c->fd, c->req + c->wpos, c->len - c->wpos, MSG_NOSIGNAL);
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
      finish(l, c, -1);
      return;
    }
    if (w > 0) c->wpos += (size_t)w;
    if (c->wpos == c->len) {
      c->writing = 0;
      want(l, c, EPOLLIN);
    }
  }
  if (ev & EPOLLIN) {
    ssize_t n = recv(c->fd, c->resp + c->rlen, RESP_MAX - 1 - c->rlen, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      finish(l, c, -1);
      return;
    }
    if (n > 0) c->rlen += (size_t)n;
    int status = 0;
    long done = resp_complete(c, &status);
    if (done < 0) {
      finish(l, c, -1);
    } else if (done > 0 && !c->writing) {
      finish(l, c, status);
    }
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int mb_http_run(const mb_http_opts *o, mb_http_result *r, char *err,
                size_t errlen) {
  memset(r, 0, sizeof *r);
  if (o->conns < 1 || o->conns > 1024 || o->count < 1 || o->keys < 1 ||
      o->size < 0 || o->size > 8000) {
    snprintf(err, errlen, "bad load options");
    return -1;
  }
  hload l = {.o = o, .r = r, .ep = -1};
  /* pad so that a typical event is `size` bytes */
  char sample[REQ_MAX];
  int fixed =
      fmt_body(sample, sizeof sample, o, 10, 100000, 100, mb_now_us(), "");
  int padn = o->size > fixed ? o->size - fixed : 0;
  char *pad = malloc((size_t)padn + 1);
  hconn *cs = calloc((size_t)o->conns, sizeof *cs);
  l.lat = malloc(sizeof *l.lat * (size_t)o->count);
  l.ep = epoll_create1(EPOLL_CLOEXEC);
  int rc = -1;
  if (!pad || !cs || !l.lat || l.ep < 0) {
    snprintf(err, errlen, "out of memory or no epoll");
    goto out;
  }
  memset(pad, 'x', (size_t)padn);
  pad[padn] = '\0';
  l.pad = pad;
  for (int i = 0; i < o->conns; i++)
    cs[i].fd = -1;
  int64_t t0 = mb_now_us();
  for (int i = 0; i < o->conns && l.next < o->count; i++) {
    cs[i].idx = i;
    if (conn_open(&l, &cs[i]) < 0) {
      snprintf(err, errlen, "connect: %s", strerror(errno));
      goto out;
    }
    prepare(&l, &cs[i]);
  }
  int64_t last = t0, deadline = 0;
  while (l.answered < l.next) {
    struct epoll_event evs[64];
    int n = epoll_wait(l.ep, evs, 64, 100);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; i++) {
      long before = l.answered;
      on_event(&l, evs[i].data.ptr, evs[i].events);
      if (l.answered != before) last = mb_now_us();
    }
    /* bounded: once everything is sent, at most 60 s for the answers */
    if (l.next >= o->count && !deadline) deadline = mb_now_us() + 60000000;
    if (deadline && mb_now_us() > deadline) break;
  }
  r->errors += l.next - l.answered; /* unanswered */
  r->elapsed_s = (double)(last - t0) / 1e6;
  if (l.nlat) {
    qsort(l.lat, (size_t)l.nlat, sizeof *l.lat, cmp_i64);
    r->p50 = l.lat[l.nlat / 2];
    r->p99 = l.lat[l.nlat * 99 / 100];
    r->max = l.lat[l.nlat - 1];
  }
  rc = 0;
out:
  for (int i = 0; cs && i < o->conns; i++)
    if (cs[i].fd >= 0) close(cs[i].fd);
  if (l.ep >= 0) close(l.ep);
  free(cs);
  free(pad);
  free(l.lat);
  return rc;
}
