/* Raw sockets rather than libcurl: on a 2-core machine the generator shares
 * the CPU with the bridge, so every microsecond it spends is taken from the
 * system under test. A pre-built request whose connection, id and subject
 * digits are patched in place costs one send() and one or two recv()s per
 * event (about 16 us of CPU per request at 64 connections, RESULTS.md);
 * libcurl's per-transfer work (re-adding an easy handle, header callbacks,
 * multi bookkeeping) is extra cost with no benefit for a fixed request.
 *
 * Event size: in structured mode the request body (the event as JSON) is
 * exactly event_size bytes; in binary mode the attribute values plus the
 * data are event_size bytes (what the host counts against max_event_size). */
#include "ceb_bench_load.h"

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
#include <time.h>
#include <unistd.h>

#define ID_DIGITS 10
#define CONN_DIGITS 4
#define KEY_DIGITS 6
#define RBUF_MAX (1 << 20) /* a response larger than this is an error */

enum cstate { C_IDLE, C_CONNECTING, C_WRITING, C_READING };

typedef struct conn {
  int fd;
  enum cstate st;
  char *req; /* this connection's copy of the request template */
  size_t wpos;
  char *rbuf;
  size_t rlen, rcap;
  int64_t start_us;
} conn;

typedef struct tmpl {
  char *text;
  size_t len, conn_off, id_off, key_off;
} tmpl;

typedef struct load {
  const ceb_bench_load_opts *o;
  ceb_bench_load_result *r;
  tmpl t;
  int ep;
  conn *c;
  uint32_t *lat; /* microseconds, one per completed response */
  size_t nlat, caplat;
  long next_seq;
  int64_t t0, t_last, stop_send_us;
  int stopping;
} load;

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---- request template ---- */

static const char k_id_ph[] = "##########"; /* ID_DIGITS placeholders */
static const char k_conn_ph[] = "@@@@";     /* CONN_DIGITS placeholders */
static const char k_key_ph[] = "%%%%%%";    /* KEY_DIGITS placeholders */
static const char k_time[] = "2026-11-22T18:00:00Z";

static char *make_pad(long n) {
  char *p = malloc((size_t)(n > 0 ? n : 0) + 1);
  if (p) {
    memset(p, 'x', (size_t)(n > 0 ? n : 0));
    p[n > 0 ? n : 0] = '\0';
  }
  return p;
}

/* Builds the request with placeholder digits and finds their offsets. */
static int tmpl_build(tmpl *t, const ceb_bench_load_opts *o, char *err,
                      size_t errlen) {
  char id[128], subj[32];
  snprintf(id, sizeof id, "%s-%s-%s", o->id_prefix, k_conn_ph, k_id_ph);
  snprintf(subj, sizeof subj, "key-%s", k_key_ph);
  long fixed, padn;
  char *body = NULL, *pad = NULL, *head = NULL;
  int n;
  if (o->binary) {
    /* attribute values + data; data is {"pad":"xxx"} (10 bytes + pad) */
    fixed = 3 + (long)strlen(id) + (long)strlen(o->source) +
            (long)strlen(o->type) + (long)strlen(subj) + (long)strlen(k_time) +
            10;
    padn = o->event_size - fixed;
    if (padn < 0) goto too_small;
    pad = make_pad(padn);
    if (!pad || asprintf(&body, "{\"pad\":\"%s\"}", pad) < 0) goto nomem;
    n = asprintf(&head,
                 "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 "ce-specversion: 1.0\r\nce-id: %s\r\nce-source: %s\r\n"
                 "ce-type: %s\r\nce-subject: %s\r\nce-time: %s\r\n"
                 "Content-Type: application/json\r\n"
                 "Content-Length: %zu\r\n\r\n",
                 o->path, o->port, id, o->source, o->type, subj, k_time,
                 strlen(body));
  } else {
    const char *fmt =
        "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"%s\","
        "\"type\":\"%s\",\"subject\":\"%s\",\"time\":\"%s\","
        "\"datacontenttype\":\"application/json\",\"data\":{\"pad\":\"%s\"}}";
    fixed = snprintf(NULL, 0, fmt, id, o->source, o->type, subj, k_time, "");
    padn = o->event_size - fixed;
    if (padn < 0) goto too_small;
    pad = make_pad(padn);
    if (!pad ||
        asprintf(&body, fmt, id, o->source, o->type, subj, k_time, pad) < 0)
      goto nomem;
    n = asprintf(&head,
                 "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                 "Content-Type: application/cloudevents+json\r\n"
                 "Content-Length: %zu\r\n\r\n",
                 o->path, o->port, strlen(body));
  }
  if (n < 0) goto nomem;
  if (asprintf(&t->text, "%s%s", head, body) < 0) goto nomem;
  t->len = strlen(t->text);
  char *ip = strstr(t->text, k_id_ph), *kp = strstr(t->text, k_key_ph);
  char *cp = strstr(t->text, k_conn_ph);
  if (!ip || !kp || !cp) {
    snprintf(err, errlen, "id prefix or source must not contain #, @ or %%");
    free(t->text);
    t->text = NULL;
    goto fail;
  }
  t->id_off = (size_t)(ip - t->text);
  t->conn_off = (size_t)(cp - t->text);
  t->key_off = (size_t)(kp - t->text);
  free(head);
  free(body);
  free(pad);
  return 0;
too_small:
  snprintf(err, errlen, "event_size %d is below the %ld bytes of attributes",
           o->event_size, fixed);
  goto fail;
nomem:
  snprintf(err, errlen, "out of memory");
fail:
  free(head);
  free(body);
  free(pad);
  return -1;
}

static void put_digits(char *p, long v, int width) {
  for (int i = width - 1; i >= 0; i--, v /= 10)
    p[i] = (char)('0' + v % 10);
}

/* ---- connections ---- */

static void conn_close(load *L, conn *c) {
  if (c->fd >= 0) {
    epoll_ctl(L->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
  }
  c->fd = -1;
  c->st = C_IDLE;
  c->rlen = 0;
}

static int conn_watch(load *L, conn *c, int op, uint32_t events) {
  struct epoll_event ev = {.events = events, .data.ptr = c};
  return epoll_ctl(L->ep, op, c->fd, &ev);
}

/* Starts a non-blocking connect; C_CONNECTING until writable. */
static int conn_open(load *L, conn *c) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)L->o->port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 &&
      errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  c->fd = fd;
  c->st = C_CONNECTING;
  c->rlen = 0;
  if (conn_watch(L, c, EPOLL_CTL_ADD, EPOLLIN | EPOLLOUT) < 0) {
    close(fd);
    c->fd = -1;
    return -1;
  }
  return 0;
}

static void conn_fail(load *L, conn *c) {
  if (c->st == C_WRITING || c->st == C_READING) {
    L->r->transport_errors++;
    if (L->o->live) atomic_fetch_add(&L->o->live->answered, 1);
  }
  conn_close(L, c);
}

static int may_send(load *L) {
  if (L->stopping) return 0;
  if (L->o->count && L->next_seq >= L->o->count) return 0;
  if (L->o->duration_ms && now_us() >= L->stop_send_us) return 0;
  return 1;
}

static void conn_flush(load *L, conn *c);

/* Sends the next request on an idle connected connection, if any is due. */
static void conn_next(load *L, conn *c) {
  if (!may_send(L)) {
    L->stopping = 1;
    return;
  }
  long seq = L->next_seq++;
  put_digits(c->req + L->t.id_off, seq, ID_DIGITS);
  put_digits(c->req + L->t.key_off, seq % L->o->keys, KEY_DIGITS);
  c->wpos = 0;
  c->rlen = 0;
  c->st = C_WRITING;
  c->start_us = now_us();
  if (!L->t0) L->t0 = c->start_us;
  L->r->sent++;
  if (L->o->live) atomic_fetch_add(&L->o->live->sent, 1);
  conn_flush(L, c);
}

static void conn_flush(load *L, conn *c) {
  while (c->wpos < L->t.len) {
    ssize_t w = send(c->fd, c->req + c->wpos, L->t.len - c->wpos, MSG_NOSIGNAL);
    if (w > 0) {
      c->wpos += (size_t)w;
    } else if (w < 0 && errno == EAGAIN) {
      conn_watch(L, c, EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT);
      return;
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else {
      conn_fail(L, c);
      return;
    }
  }
  c->st = C_READING;
  conn_watch(L, c, EPOLL_CTL_MOD, EPOLLIN);
}

/* Case-insensitive header lookup within the head [h, h+n); value start. */
static const char *head_value(const char *h, size_t n, const char *name) {
  size_t nl = strlen(name);
  for (const char *p = h; p && p < h + n;) {
    const char *eol = memmem(p, (size_t)(h + n - p), "\r\n", 2);
    if (!eol) return NULL;
    if ((size_t)(eol - p) > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) {
      p += nl + 1;
      while (*p == ' ' || *p == '\t')
        p++;
      return p;
    }
    p = eol + 2;
  }
  return NULL;
}

/* Length of a complete chunked body at b (n bytes), 0 if incomplete, -1 if
 * malformed. Trailers are not expected from the bridge. */
static long chunked_len(const char *b, size_t n) {
  size_t pos = 0;
  for (int guard = 0; guard < 100000; guard++) {
    const char *eol = memmem(b + pos, n - pos, "\r\n", 2);
    if (!eol) return 0;
    char *end;
    unsigned long sz = strtoul(b + pos, &end, 16);
    if (end == b + pos) return -1;
    pos = (size_t)(eol - b) + 2;
    if (sz == 0) return n - pos >= 2 ? (long)pos + 2 : 0;
    if (n - pos < sz + 2) return 0;
    pos += sz + 2;
  }
  return -1;
}

/* Parses the buffered response: 1 complete (status set), 0 need more,
 * -1 malformed. eof: the peer closed (ends a body without a length). */
static int resp_parse(conn *c, int eof, int *status, int *close_after) {
  const char *end = memmem(c->rbuf, c->rlen, "\r\n\r\n", 4);
  if (!end) return c->rlen >= RBUF_MAX ? -1 : 0;
  size_t hl = (size_t)(end - c->rbuf) + 4;
  int st;
  if (c->rlen < 12 || strncmp(c->rbuf, "HTTP/1.", 7) ||
      sscanf(c->rbuf + 9, "%3d", &st) != 1 || st < 100 || st > 599)
    return -1;
  const char *cl = head_value(c->rbuf, hl, "Content-Length");
  const char *te = head_value(c->rbuf, hl, "Transfer-Encoding");
  const char *cn = head_value(c->rbuf, hl, "Connection");
  *close_after = cn && !strncasecmp(cn, "close", 5);
  if (!strncmp(c->rbuf, "HTTP/1.0", 8) &&
      !(cn && !strncasecmp(cn, "keep-alive", 10)))
    *close_after = 1;
  *status = st;
  if (st == 204 || st == 304 || st < 200) return 1;
  if (te && !strncasecmp(te, "chunked", 7)) {
    long bl = chunked_len(c->rbuf + hl, c->rlen - hl);
    return bl < 0 ? -1 : bl > 0 ? 1 : 0;
  }
  if (cl) {
    long want = atol(cl);
    if (want < 0) return -1;
    return c->rlen - hl >= (size_t)want ? 1 : 0;
  }
  *close_after = 1;
  return eof ? 1 : 0;
}

static int record_latency(load *L, int64_t us) {
  if (L->nlat == L->caplat) {
    size_t cap = L->caplat ? L->caplat * 2 : 65536;
    uint32_t *n = realloc(L->lat, cap * sizeof *n);
    if (!n) return -1;
    L->lat = n;
    L->caplat = cap;
  }
  L->lat[L->nlat++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
  return 0;
}

static void conn_readable(load *L, conn *c) {
  for (;;) {
    if (c->rcap - c->rlen < 4096) {
      size_t cap = c->rcap * 2;
      char *n = cap <= RBUF_MAX ? realloc(c->rbuf, cap) : NULL;
      if (!n) {
        conn_fail(L, c);
        return;
      }
      c->rbuf = n;
      c->rcap = cap;
    }
    ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
    int eof = n == 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) {
      conn_fail(L, c);
      return;
    }
    if (n > 0) c->rlen += (size_t)n;
    if (c->st != C_READING) {
      /* unsolicited bytes or a close while idle: drop the connection */
      if (n != 0 && !(n < 0 && errno == EAGAIN))
        conn_fail(L, c);
      else if (eof)
        conn_close(L, c);
      return;
    }
    int status = 0, close_after = 0;
    int p = resp_parse(c, eof, &status, &close_after);
    if (p < 0 || (p == 0 && eof)) {
      conn_fail(L, c);
      return;
    }
    if (p == 0) {
      if (n < 0) /* EAGAIN: wait for more */
        return;
      continue;
    }
    int64_t t = now_us();
    L->t_last = t;
    L->r->completed++;
    L->r->status[status]++;
    if (L->o->live) {
      if (status >= 200 && status < 300) atomic_fetch_add(&L->o->live->ok, 1);
      atomic_fetch_add(&L->o->live->answered, 1);
    }
    if (record_latency(L, t - c->start_us) < 0) {
      conn_fail(L, c);
      return;
    }
    c->rlen = 0;
    c->st = C_IDLE;
    if (close_after || eof) {
      conn_close(L, c); /* the run loop reopens it */
      return;
    }
    conn_next(L, c);
    return;
  }
}

static void conn_event(load *L, conn *c, uint32_t ev) {
  if (c->st == C_CONNECTING) {
    int e = 0;
    socklen_t el = sizeof e;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0 || e) {
      /* the request was never written: count it as failed */
      L->r->transport_errors++;
      L->next_seq++;
      conn_close(L, c);
      return;
    }
    c->st = C_IDLE;
    conn_watch(L, c, EPOLL_CTL_MOD, EPOLLIN);
    conn_next(L, c);
    return;
  }
  if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) conn_readable(L, c);
  if (c->fd >= 0 && c->st == C_WRITING && (ev & EPOLLOUT)) conn_flush(L, c);
}

/* ---- the run ---- */

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static void percentiles(load *L) {
  if (!L->nlat) return;
  qsort(L->lat, L->nlat, sizeof *L->lat, cmp_u32);
  size_t n = L->nlat;
  L->r->lat.p50 = L->lat[(n - 1) * 50 / 100];
  L->r->lat.p90 = L->lat[(n - 1) * 90 / 100];
  L->r->lat.p99 = L->lat[(n - 1) * 99 / 100];
  L->r->lat.max = L->lat[n - 1];
}

static int check_opts(const ceb_bench_load_opts *o, char *err, size_t errlen) {
  const char *bad = NULL;
  if (o->port < 1 || o->port > 65535)
    bad = "port must be 1..65535";
  else if (o->connections < 1 || o->connections > 4096)
    bad = "connections must be 1..4096";
  else if (!o->count && !o->duration_ms)
    bad = "a count or a duration is required";
  else if (o->count < 0 || o->count > 100000000 || o->duration_ms < 0 ||
           o->duration_ms > 3600000)
    bad = "count must be <= 1e8 and duration <= 1 h";
  else if (o->event_size < 1 || o->event_size > 16 << 20)
    bad = "event_size must be 1 B .. 16 MiB";
  else if (o->keys < 1 || o->keys > 999999)
    bad = "keys must be 1..999999";
  else if (!o->path || o->path[0] != '/' || !o->id_prefix ||
           strlen(o->id_prefix) > 64 || !o->source || !o->type)
    bad = "path (starting with /), id_prefix (<= 64), source and type are "
          "required";
  if (bad) snprintf(err, errlen, "%s", bad);
  return bad ? -1 : 0;
}

int ceb_bench_load_run(const ceb_bench_load_opts *o, ceb_bench_load_result *r,
                       char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  if (check_opts(o, err, errlen) < 0) return -1;
  load L = {.o = o, .r = r, .ep = -1};
  int rc = -1;
  if (tmpl_build(&L.t, o, err, errlen) < 0) return -1;
  L.ep = epoll_create1(EPOLL_CLOEXEC);
  L.c = calloc((size_t)o->connections, sizeof *L.c);
  if (L.ep < 0 || !L.c) {
    snprintf(err, errlen, "epoll/calloc: %s", strerror(errno));
    goto out;
  }
  for (int i = 0; i < o->connections; i++) {
    conn *c = &L.c[i];
    c->fd = -1;
    c->req = malloc(L.t.len);
    c->rcap = 16384;
    c->rbuf = malloc(c->rcap);
    if (!c->req || !c->rbuf) {
      snprintf(err, errlen, "out of memory");
      goto out;
    }
    memcpy(c->req, L.t.text, L.t.len);
    put_digits(c->req + L.t.conn_off, i, CONN_DIGITS);
  }
  int64_t start = now_us();
  L.stop_send_us = start + o->duration_ms * 1000;
  int64_t drain_us = (o->drain_ms ? o->drain_ms : 30000) * 1000;
  int64_t hard_stop = 0;
  struct epoll_event evs[256];
  for (;;) {
    /* closed connections are reopened while sending is due; a failed
     * open uses up one request so that a dead server ends a counted run */
    int active = 0;
    for (int i = 0; i < o->connections; i++) {
      if (L.c[i].fd < 0 && may_send(&L) && conn_open(&L, &L.c[i]) < 0) {
        r->transport_errors++;
        L.next_seq++;
      }
      active += L.c[i].st != C_IDLE;
    }
    if (!active) break; /* nothing outstanding and nothing more to send */
    int64_t now = now_us();
    if (!hard_stop && !may_send(&L)) hard_stop = now + drain_us;
    if (hard_stop && now >= hard_stop) break;
    int n = epoll_wait(L.ep, evs, 256, 50);
    if (n < 0 && errno != EINTR) {
      snprintf(err, errlen, "epoll_wait: %s", strerror(errno));
      goto out;
    }
    for (int i = 0; i < n; i++)
      conn_event(&L, evs[i].data.ptr, evs[i].events);
  }
  for (int i = 0; i < o->connections; i++)
    if (L.c[i].st == C_WRITING || L.c[i].st == C_READING) r->timeouts++;
  r->elapsed_s = L.t0 && L.t_last > L.t0 ? (L.t_last - L.t0) / 1e6 : 0;
  percentiles(&L);
  rc = 0;
out:
  if (L.c)
    for (int i = 0; i < o->connections; i++) {
      if (L.c[i].fd >= 0) close(L.c[i].fd);
      free(L.c[i].req);
      free(L.c[i].rbuf);
    }
  free(L.c);
  free(L.lat);
  free(L.t.text);
  if (L.ep >= 0) close(L.ep);
  return rc;
}

long ceb_bench_load_ok(const ceb_bench_load_result *r) {
  long ok = 0;
  for (int s = 200; s < 300; s++)
    ok += r->status[s];
  return ok;
}

void ceb_bench_load_print(const char *label, const ceb_bench_load_result *r) {
  long ok = ceb_bench_load_ok(r);
  printf("%s: %ld sent, %ld 2xx in %.2f s = %.0f ev/s; latency ms p50 %.2f "
         "p90 %.2f p99 %.2f max %.2f\n",
         label, r->sent, ok, r->elapsed_s,
         r->elapsed_s > 0 ? ok / r->elapsed_s : 0, r->lat.p50 / 1000.0,
         r->lat.p90 / 1000.0, r->lat.p99 / 1000.0, r->lat.max / 1000.0);
  if (ok == r->sent && !r->transport_errors && !r->timeouts) return;
  printf("%s: errors:", label);
  for (int s = 100; s < 600; s++)
    if (r->status[s] && (s < 200 || s >= 300))
      printf(" %d x%ld", s, r->status[s]);
  printf(" transport x%ld timeouts x%ld\n", r->transport_errors, r->timeouts);
}
