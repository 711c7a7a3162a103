/* The sink publisher's link: monotonic time, the session's reads and
 * writes over TCP or TLS, and one connection attempt (TCP connect, TLS
 * handshake, CONNECT / CONNACK) with its logging and backoff. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mqtt_pub_internal.h"

#define GAUGE "mqtt_connected"

/* I/O timing (keep-alive, ticks, backoff, connect timeouts) runs on the
 * monotonic clock: the broker's timers are real time, whatever the host's
 * clock says. */
int64_t mqtt_pub_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes up to n bytes: how many, 0 when it would block, -1 when the
 * connection broke. */
ssize_t mqtt_pub_io_send(mqtt_pub *p, const void *b, size_t n) {
  if (p->ssl) {
    int w = SSL_write(p->ssl, b, n > INT_MAX ? INT_MAX : (int)n);
    if (w > 0) return w;
    int e = SSL_get_error(p->ssl, w);
    return e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? 0 : -1;
  }
  ssize_t w = send(p->fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (w > 0) return w;
  return w < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
}

/* Reads up to n bytes: how many, 0 when nothing is there now, -1 when the
 * connection closed or broke. */
ssize_t mqtt_pub_io_recv(mqtt_pub *p, void *b, size_t n) {
  if (p->ssl) {
    int r = SSL_read(p->ssl, b, n > INT_MAX ? INT_MAX : (int)n);
    if (r > 0) return r;
    int e = SSL_get_error(p->ssl, r);
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
  }
  ssize_t r = recv(p->fd, b, n, MSG_DONTWAIT);
  if (r > 0) return r;
  return r < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
}

void mqtt_pub_io_close(mqtt_pub *p) {
  if (p->ssl) SSL_free(p->ssl);
  p->ssl = NULL;
  if (p->fd >= 0) close(p->fd);
  p->fd = -1;
}

void mqtt_pub_gauge(mqtt_pub *p, int up) {
  p->host->metric(p->inst, CEB_METRIC_GAUGE, GAUGE, NULL, up ? 1.0 : 0.0);
}

size_t mqtt_pub_put_varint(unsigned char *b, uint32_t v) {
  size_t n = 0;
  do {
    unsigned char c = v & 0x7f;
    v >>= 7;
    b[n++] = (unsigned char)(c | (v ? 0x80 : 0));
  } while (v);
  return n;
}

size_t mqtt_pub_put_bytes(unsigned char *b, const void *s, size_t n) {
  b[0] = (unsigned char)(n >> 8);
  b[1] = (unsigned char)n;
  memcpy(b + 2, s, n);
  return n + 2;
}

/* ---- connection ---- */

/* Waits until fd is ready for events, the deadline passes (0) or the
 * publisher stops (-1). */
int mqtt_pub_wait_fd(mqtt_pub *p, int fd, short events, int64_t deadline) {
  for (;;) {
    pthread_mutex_lock(&p->lock);
    int stop = p->stopping;
    pthread_mutex_unlock(&p->lock);
    if (stop) return -1;
    int64_t left = deadline - mqtt_pub_now_ms();
    if (left <= 0) return 0;
    struct pollfd f[2] = {{fd, events, 0}, {p->efd, POLLIN, 0}};
    int r = poll(f, 2, left > MQTT_PUB_TICK_MS ? MQTT_PUB_TICK_MS : (int)left);
    if (r < 0 && errno != EINTR) return -1;
    if (r > 0 && (f[1].revents & POLLIN)) {
      uint64_t v;
      ssize_t n = read(p->efd, &v, sizeof v);
      (void)n;
    }
    if (r > 0 && f[0].revents) return 1;
  }
}

static int tcp_connect(mqtt_pub *p, int64_t deadline, char *why, size_t wn) {
  char port[16];
  snprintf(port, sizeof port, "%d", p->conf->port);
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  int rc = getaddrinfo(p->conf->host, port, &hints, &res);
  if (rc != 0) {
    snprintf(why, wn, "cannot resolve: %s", gai_strerror(rc));
    return -1;
  }
  int fd = -1, err = ECONNREFUSED;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      err = errno;
      close(fd);
      fd = -1;
      continue;
    }
    int w = mqtt_pub_wait_fd(p, fd, POLLOUT, deadline);
    socklen_t sl = sizeof err;
    err = 0;
    if (w <= 0)
      err = w == 0 ? ETIMEDOUT : ECANCELED;
    else
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl);
    if (err) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    snprintf(why, wn, "%s", strerror(err));
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* Writes all of buf to the non-blocking fd before the deadline. */
static int write_all(mqtt_pub *p, const unsigned char *buf, size_t n,
                     int64_t deadline) {
  while (n) {
    ssize_t w = mqtt_pub_io_send(p, buf, n);
    if (w < 0) return -1;
    if (w == 0 && mqtt_pub_wait_fd(p, p->fd, POLLOUT | POLLIN, deadline) <= 0)
      return -1;
    buf += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Reads one whole packet into p->rbuf (body at *body, *len bytes) before
 * the deadline; returns the first byte or -1. Only for the CONNACK: later
 * reads are in bulk. */
static int read_packet(mqtt_pub *p, int64_t deadline,
                       const unsigned char **body, size_t *len) {
  p->rlen = 0;
  for (;;) {
    if (p->rlen >= 2) {
      size_t rl = 0, i = 1;
      for (; i < 5 && i < p->rlen; i++) {
        rl |= (size_t)(p->rbuf[i] & 0x7f) << (7 * (i - 1));
        if (!(p->rbuf[i] & 0x80)) break;
      }
      if (i == 5) return -1;
      if (i < p->rlen && p->rlen >= i + 1 + rl) {
        *body = p->rbuf + i + 1;
        *len = rl;
        return p->rbuf[0];
      }
    }
    if (p->rlen == p->rcap) return -1; /* a CONNACK is small */
    ssize_t r = mqtt_pub_io_recv(p, p->rbuf + p->rlen, p->rcap - p->rlen);
    if (r < 0) return -1;
    if (r == 0 && mqtt_pub_wait_fd(p, p->fd, POLLIN, deadline) <= 0) return -1;
    p->rlen += (size_t)r;
  }
}

/* CONNECT and CONNACK on a fresh socket. 0 with the session's window and
 * keep-alive set; -1 with why (and *reason when the broker refused). */
static int handshake(mqtt_pub *p, int64_t deadline, int *reason, char *why,
                     size_t wn) {
  const mqtt_conf *c = p->conf;
  int v5 = c->version == 5;
  size_t cl = strlen(p->client_id);
  size_t ul = c->username ? strlen(c->username) : 0;
  size_t pl = c->password ? strlen(c->password) : 0;
  if (cl > 65535 || ul > 65535 || pl > 65535) {
    snprintf(why, wn, "client id, user name or password too long");
    return -1;
  }
  size_t rem = 10 + (v5 ? 1 : 0) + 2 + cl + (c->username ? 2 + ul : 0) +
               (c->password ? 2 + pl : 0);
  unsigned char *b = malloc(5 + rem);
  if (!b) {
    snprintf(why, wn, "out of memory");
    return -1;
  }
  size_t n = 0;
  b[n++] = 0x10;
  n += mqtt_pub_put_varint(b + n, (uint32_t)rem);
  n += mqtt_pub_put_bytes(b + n, "MQTT", 4);
  b[n++] = v5 ? 5 : 4;
  b[n++] = (unsigned char)(0x02 | (c->username ? 0x80 : 0) |
                           (c->password ? 0x40 : 0));
  b[n++] = (unsigned char)(c->keepalive_s >> 8);
  b[n++] = (unsigned char)c->keepalive_s;
  if (v5) b[n++] = 0; /* no CONNECT properties */
  n += mqtt_pub_put_bytes(b + n, p->client_id, cl);
  if (c->username) n += mqtt_pub_put_bytes(b + n, c->username, ul);
  if (c->password) n += mqtt_pub_put_bytes(b + n, c->password, pl);
  int w = write_all(p, b, n, deadline);
  free(b);
  const unsigned char *body = NULL;
  size_t len = 0;
  int type = w == 0 ? read_packet(p, deadline, &body, &len) : -1;
  if (type != 0x20 || len < 2) {
    snprintf(why, wn, "%s", type < 0 ? "no CONNACK" : "unexpected packet");
    return -1;
  }
  if (body[1] != 0) {
    *reason = body[1];
    snprintf(why, wn, "%s",
             v5 ? MQTTReasonCode_toString((enum MQTTReasonCodes)body[1])
             : body[1] == 4 ? "bad user name or password"
             : body[1] == 5 ? "not authorized"
                            : "connection refused");
    return -1;
  }
  int window = 65535, keepalive = c->keepalive_s;
  if (v5 && len > 2) { /* CONNACK properties */
    size_t i = 2, plen = 0, shift = 0;
    for (; i < len && i < 6; i++, shift += 7) {
      plen |= (size_t)(body[i] & 0x7f) << shift;
      if (!(body[i] & 0x80)) break;
    }
    size_t end = ++i + plen;
    if (end > len) {
      snprintf(why, wn, "malformed CONNACK");
      return -1;
    }
    while (i < end) { /* only the two we use; others end the scan */
      unsigned id = body[i++];
      if ((id == 0x21 || id == 0x13) && end - i >= 2) {
        int v = body[i] << 8 | body[i + 1];
        if (id == 0x21 && v > 0) window = v;
        if (id == 0x13) keepalive = v; /* Server Keep Alive wins */
        i += 2;
      } else if (id == 0x24 || id == 0x25 || id == 0x28 || id == 0x29 ||
                 id == 0x2a || id == 0x01) {
        i += 1;
      } else if (id == 0x27 || id == 0x11 || id == 0x02) {
        i += 4;
      } else if (id == 0x22) {
        i += 2;
      } else if ((id == 0x12 || id == 0x1f || id == 0x1a || id == 0x1c ||
                  id == 0x15 || id == 0x16) &&
                 end - i >= 2) {
        i += 2 + (size_t)(body[i] << 8 | body[i + 1]);
      } else if (id == 0x26 && end - i >= 2) {
        i += 2 + (size_t)(body[i] << 8 | body[i + 1]);
        if (end - i >= 2) i += 2 + (size_t)(body[i] << 8 | body[i + 1]);
      } else {
        break;
      }
    }
  }
  pthread_mutex_lock(&p->lock);
  p->window = window;
  pthread_mutex_unlock(&p->lock);
  p->keepalive_ms = keepalive * 1000;
  return 0;
}

void mqtt_pub_connect_once(mqtt_pub *p) {
  int64_t deadline =
      mqtt_pub_now_ms() + (int64_t)p->conf->connect_timeout_s * 1000;
  char why[200] = "";
  int reason = 0;
  p->fd = tcp_connect(p, deadline, why, sizeof why);
  if (p->fd >= 0 && p->ctx) { /* the TLS handshake blocks, bounded */
    fcntl(p->fd, F_SETFL, fcntl(p->fd, F_GETFL) & ~O_NONBLOCK);
    p->ssl = mqtt_tls_connect(p->host, p->inst, p->conf, p->ctx, p->fd);
    if (!p->ssl) snprintf(why, sizeof why, "TLS handshake failed");
  }
  if (p->fd >= 0 && ((p->ctx && !p->ssl) ||
                     handshake(p, deadline, &reason, why, sizeof why) != 0))
    mqtt_pub_io_close(p);
  int fd = p->fd;
  int64_t min = (int64_t)p->conf->reconnect_min_s * 1000;
  int64_t max = (int64_t)p->conf->reconnect_max_s * 1000;
  if (fd < 0) {
    p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : min;
    if (p->backoff_ms > max) p->backoff_ms = max;
    p->next_attempt_ms = mqtt_pub_now_ms() + p->backoff_ms;
    pthread_mutex_lock(&p->lock);
    int stop = p->stopping;
    pthread_mutex_unlock(&p->lock);
    if (stop) return;
    if (reason)
      CEB_LOG(p->host, p->inst, CEB_LOG_WARN,
              "connect to %s:%d refused: reason 0x%02x (%s); retrying in "
              "%lld ms",
              p->conf->host, p->conf->port, (unsigned)reason, why,
              (long long)p->backoff_ms);
    else
      CEB_LOG(p->host, p->inst, CEB_LOG_WARN,
              "connect to %s:%d failed: %s; retrying in %lld ms", p->conf->host,
              p->conf->port, why, (long long)p->backoff_ms);
    return;
  }
  p->backoff_ms = 0;
  p->rlen = p->wlen = p->woff = 0;
  p->last_write_ms = mqtt_pub_now_ms();
  p->ping_sent_ms = 0;
  pthread_mutex_lock(&p->lock);
  p->connected = 1;
  p->ever_connected = 1;
  unsigned long n = ++p->connects;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  mqtt_pub_gauge(p, 1);
  CEB_LOG(p->host, p->inst, CEB_LOG_INFO,
          "connected to %s:%d as \"%s\" (MQTT %s, connect, connection #%lu)",
          p->conf->host, p->conf->port, p->client_id,
          p->conf->version == 5 ? "5" : "3.1.1", n);
  if (p->ops.connected) p->ops.connected(p->arg);
}
