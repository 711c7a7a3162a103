/* The sink's publisher: its queue, the session loop of the I/O thread and
 * the API (mqtt_pub.h); the socket, TLS and CONNECT / CONNACK are in
 * mqtt_pub_link.c. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "mqtt_pub_internal.h"

#define MAX_REMAINING 268435455u /* MQTT's largest remaining length */

static void list_push(pkt_list *l, pub_pkt *k) {
  k->next = NULL;
  if (l->tail)
    l->tail->next = k;
  else
    l->head = k;
  l->tail = k;
  l->n++;
}

static pub_pkt *list_pop(pkt_list *l) {
  pub_pkt *k = l->head;
  if (!k) return NULL;
  l->head = k->next;
  if (!l->head) l->tail = NULL;
  l->n--;
  k->next = NULL;
  return k;
}

/* Removes and returns the in-flight packet with id, or NULL. */
static pub_pkt *list_take_id(pkt_list *l, unsigned id) {
  pub_pkt *prev = NULL;
  for (pub_pkt *k = l->head; k; prev = k, k = k->next) {
    if (k->id != id) continue;
    if (prev)
      prev->next = k->next;
    else
      l->head = k->next;
    if (l->tail == k) l->tail = prev;
    l->n--;
    k->next = NULL;
    return k;
  }
  return NULL;
}

static int id_in_use(const pkt_list *l, unsigned id) {
  for (const pub_pkt *k = l->head; k; k = k->next)
    if (k->id == id) return 1;
  return 0;
}

static void wake(mqtt_pub *p) {
  uint64_t one = 1;
  ssize_t n = write(p->efd, &one, sizeof one);
  (void)n;
}

static size_t varint_len(uint32_t v) {
  return v < 128 ? 1 : v < 16384 ? 2 : v < 2097152 ? 3 : 4;
}

/* The encoded size of the properties the sink sends (Content Type, User
 * Property); (size_t)-1 for anything else or a value over 65535 bytes. */
static size_t props_size(const MQTTProperties *pr) {
  size_t n = 0;
  for (int i = 0; pr && i < pr->count; i++) {
    const MQTTProperty *q = &pr->array[i];
    if (q->value.data.len < 0 || q->value.data.len > 65535) return (size_t)-1;
    if (q->identifier == MQTTPROPERTY_CODE_CONTENT_TYPE)
      n += 3 + (size_t)q->value.data.len;
    else if (q->identifier == MQTTPROPERTY_CODE_USER_PROPERTY &&
             q->value.value.len >= 0 && q->value.value.len <= 65535)
      n += 5 + (size_t)q->value.data.len + (size_t)q->value.value.len;
    else
      return (size_t)-1;
  }
  return n;
}

int mqtt_pub_send(mqtt_pub *p, const char *topic, int qos,
                  const MQTTProperties *props, const void *payload, size_t len,
                  void *ctx) {
  size_t tl = strlen(topic);
  size_t pl = p->conf->version == 5 ? props_size(props) : 0;
  if (tl > 65535 || pl == (size_t)-1 || qos < 0 || qos > 2)
    return CEB_ETOOLARGE;
  size_t pfx = p->conf->version == 5 ? varint_len((uint32_t)pl) : 0;
  size_t rem = 2 + tl + (qos ? 2 : 0) + pfx + pl + len;
  if (rem > MAX_REMAINING || pl > MAX_REMAINING) return CEB_ETOOLARGE;
  pub_pkt *k = malloc(sizeof *k + 5 + rem);
  if (!k) return CEB_ENOMEM;
  memset(k, 0, sizeof *k);
  k->ctx = ctx;
  k->qos = qos;
  unsigned char *b = k->buf;
  size_t n = 0;
  b[n++] = (unsigned char)(0x30 | (qos << 1));
  n += mqtt_pub_put_varint(b + n, (uint32_t)rem);
  n += mqtt_pub_put_bytes(b + n, topic, tl);
  if (qos) {
    k->id_off = n;
    n += 2;
  }
  if (p->conf->version == 5) {
    n += mqtt_pub_put_varint(b + n, (uint32_t)pl);
    for (int i = 0; props && i < props->count; i++) {
      const MQTTProperty *q = &props->array[i];
      b[n++] = (unsigned char)q->identifier;
      n += mqtt_pub_put_bytes(b + n, q->value.data.data,
                              (size_t)q->value.data.len);
      if (q->identifier == MQTTPROPERTY_CODE_USER_PROPERTY)
        n += mqtt_pub_put_bytes(b + n, q->value.value.data,
                                (size_t)q->value.value.len);
    }
  }
  if (len) memcpy(b + n, payload, len);
  k->len = n + len;
  pthread_mutex_lock(&p->lock);
  int up = p->connected && !p->disconnecting && !p->stopping;
  int sleeping = p->sleeping;
  if (up) {
    list_push(&p->queue, k);
    p->sleeping = 0;
  }
  pthread_mutex_unlock(&p->lock);
  if (!up) {
    free(k);
    return CEB_ESHUTDOWN;
  }
  if (sleeping) wake(p);
  return CEB_OK;
}

/* Fails every publish the session had (written or not) with detail. */
static void fail_all(mqtt_pub *p, const char *detail) {
  pkt_list all = {0};
  pthread_mutex_lock(&p->lock);
  all = p->queue;
  memset(&p->queue, 0, sizeof p->queue);
  pthread_mutex_unlock(&p->lock);
  pkt_list *ls[] = {&p->flushing, &p->inflight, &p->pending, &all};
  for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++) {
    pub_pkt *k;
    while ((k = list_pop(ls[i]))) {
      p->ops.done(p->arg, k->ctx, 0, 0, detail);
      free(k);
    }
  }
}

/* Ends the session: closes, reports the loss, fails what it had. */
static void lose(mqtt_pub *p, const char *why) {
  mqtt_pub_io_close(p);
  pthread_mutex_lock(&p->lock);
  p->connected = 0;
  int quiet = p->stopping || p->disconnecting;
  pthread_cond_broadcast(&p->cond);
  pthread_mutex_unlock(&p->lock);
  mqtt_pub_gauge(p, 0);
  CEB_LOG(p->host, p->inst, quiet ? CEB_LOG_INFO : CEB_LOG_WARN,
          "connection to %s:%d lost: %s%s", p->conf->host, p->conf->port, why,
          quiet ? "" : "; reconnecting");
  if (p->ops.lost) p->ops.lost(p->arg);
  fail_all(p, "connection lost before the broker acknowledged");
  p->next_attempt_ms =
      mqtt_pub_now_ms() + (int64_t)p->conf->reconnect_min_s * 1000;
}

static int wbuf_add(mqtt_pub *p, const unsigned char *b, size_t n) {
  if (p->woff && p->wcap - p->wlen < n) { /* drop what was written */
    memmove(p->wbuf, p->wbuf + p->woff, p->wlen - p->woff);
    p->wlen -= p->woff;
    p->woff = 0;
  }
  if (p->wcap - p->wlen < n) {
    size_t cap = p->wcap ? p->wcap : 65536;
    while (cap - p->wlen < n)
      cap *= 2;
    unsigned char *g = realloc(p->wbuf, cap);
    if (!g) return -1;
    p->wbuf = g;
    p->wcap = cap;
  }
  memcpy(p->wbuf + p->wlen, b, n);
  p->wlen += n;
  return 0;
}

/* Writes what the socket takes now. 0, or -1 when the connection broke. */
static int flush(mqtt_pub *p) {
  while (p->woff < p->wlen) {
    ssize_t w = mqtt_pub_io_send(p, p->wbuf + p->woff, p->wlen - p->woff);
    if (w < 0) return -1;
    if (w == 0) return 0; /* the socket is full: poll says when */
    p->woff += (size_t)w;
    p->last_write_ms = mqtt_pub_now_ms();
  }
  p->wlen = p->woff = 0;
  pub_pkt *k;
  while ((k = list_pop(&p->flushing))) { /* QoS 0: written is done */
    p->ops.done(p->arg, k->ctx, 1, 0, NULL);
    free(k);
  }
  return 0;
}

/* Moves pending publishes into the write buffer while the window allows. */
static int fill(mqtt_pub *p) {
  pthread_mutex_lock(&p->lock);
  int window = p->window;
  pkt_list q = p->queue;
  memset(&p->queue, 0, sizeof p->queue);
  pthread_mutex_unlock(&p->lock);
  pub_pkt *k;
  while ((k = list_pop(&q)))
    list_push(&p->pending, k);
  while (p->pending.head &&
         (p->pending.head->qos == 0 || p->inflight.n < (size_t)window)) {
    k = list_pop(&p->pending);
    if (k->qos) {
      do /* an id still in flight (at most window of them) is skipped */
        p->next_id = p->next_id % 65535 + 1;
      while (id_in_use(&p->inflight, p->next_id));
      k->id = p->next_id;
      k->buf[k->id_off] = (unsigned char)(k->id >> 8);
      k->buf[k->id_off + 1] = (unsigned char)k->id;
    }
    if (wbuf_add(p, k->buf, k->len) != 0) {
      p->ops.done(p->arg, k->ctx, 0, 0, "out of memory");
      free(k);
      continue;
    }
    list_push(k->qos ? &p->inflight : &p->flushing, k);
  }
  return 0;
}

/* Handles the packets read so far. 0, or -1 with why when the session
 * must end. */
static int take_input(mqtt_pub *p, char *why, size_t wn) {
  size_t at = 0;
  int rc = 0;
  while (rc == 0 && p->rlen - at >= 2) {
    const unsigned char *h = p->rbuf + at;
    size_t rl = 0, i = 1;
    for (; i < 5 && at + i < p->rlen; i++) {
      rl |= (size_t)(h[i] & 0x7f) << (7 * (i - 1));
      if (!(h[i] & 0x80)) break;
    }
    if (i == 5) {
      snprintf(why, wn, "malformed packet from the broker");
      return -1;
    }
    if (at + i >= p->rlen || p->rlen - at < i + 1 + rl) break; /* partial */
    const unsigned char *b = h + i + 1;
    unsigned type = h[0] >> 4;
    unsigned id = rl >= 2 ? (unsigned)(b[0] << 8 | b[1]) : 0;
    int reason = rl >= 3 ? b[2] : 0;
    pub_pkt *k = NULL;
    switch (type) {
    case 4: /* PUBACK */
    case 7: /* PUBCOMP */
      k = list_take_id(&p->inflight, id);
      if (k && k->qos == (type == 4 ? 1 : 2)) {
        p->ops.done(p->arg, k->ctx, reason < 0x80, reason,
                    reason < 0x80 ? NULL : "refused by the broker");
        free(k);
      } else if (k) {
        list_push(&p->inflight, k); /* not its acknowledgement */
      }
      break;
    case 5: /* PUBREC: release it, or the broker refused it */
      k = list_take_id(&p->inflight, id);
      if (!k) break;
      if (reason >= 0x80) {
        p->ops.done(p->arg, k->ctx, 0, reason, "refused by the broker");
        free(k);
        break;
      }
      k->stage = 1;
      list_push(&p->inflight, k);
      {
        unsigned char rel[4] = {0x62, 2, (unsigned char)(id >> 8),
                                (unsigned char)id};
        if (wbuf_add(p, rel, sizeof rel) != 0) {
          snprintf(why, wn, "out of memory");
          rc = -1;
        }
      }
      break;
    case 13: /* PINGRESP */
      p->ping_sent_ms = 0;
      break;
    case 14: { /* DISCONNECT (MQTT 5): the broker's reason */
      int r = rl >= 1 ? b[0] : 0;
      CEB_LOG(p->host, p->inst, CEB_LOG_WARN,
              "broker %s:%d disconnected us: reason 0x%02x (%s)", p->conf->host,
              p->conf->port, (unsigned)r,
              MQTTReasonCode_toString((enum MQTTReasonCodes)r));
      snprintf(why, wn, "disconnected by the broker");
      rc = -1;
      break;
    }
    default: /* nothing else is expected by a publisher: ignored */
      break;
    }
    at += i + 1 + rl;
  }
  memmove(p->rbuf, p->rbuf + at, p->rlen - at);
  p->rlen -= at;
  return rc;
}

/* Reads what the socket has. 0, or -1 with why. */
static int read_input(mqtt_pub *p, char *why, size_t wn) {
  for (;;) {
    if (p->rcap - p->rlen < 4096) {
      size_t cap = p->rcap * 2;
      unsigned char *g =
          cap <= 4 * (size_t)MAX_REMAINING ? realloc(p->rbuf, cap) : NULL;
      if (!g) {
        snprintf(why, wn, "out of memory");
        return -1;
      }
      p->rbuf = g;
      p->rcap = cap;
    }
    ssize_t r = mqtt_pub_io_recv(p, p->rbuf + p->rlen, p->rcap - p->rlen);
    if (r == 0) return 0;
    if (r < 0) {
      snprintf(why, wn, "closed by the broker");
      return -1;
    }
    p->rlen += (size_t)r;
    if (take_input(p, why, wn) != 0) return -1;
  }
}

/* One round of a live session: take new publishes, write, wait, read,
 * keep alive. 0, or -1 with why when the session ended. */
static int session_step(mqtt_pub *p, char *why, size_t wn) {
  fill(p);
  if (flush(p) != 0) {
    snprintf(why, wn, "write failed");
    return -1;
  }
  int64_t now = mqtt_pub_now_ms();
  if (p->keepalive_ms > 0) {
    if (p->ping_sent_ms && now - p->ping_sent_ms > p->keepalive_ms) {
      snprintf(why, wn, "no PINGRESP within the keep-alive");
      return -1;
    }
    if (!p->ping_sent_ms && now - p->last_write_ms >= p->keepalive_ms) {
      static const unsigned char ping[2] = {0xc0, 0};
      p->ping_sent_ms = now;
      if (wbuf_add(p, ping, sizeof ping) != 0 || flush(p) != 0) {
        snprintf(why, wn, "cannot send PINGREQ");
        return -1;
      }
    }
  }
  int64_t wait = p->next_tick_ms - now;
  if (p->keepalive_ms > 0) {
    int64_t k = (p->ping_sent_ms ? p->ping_sent_ms : p->last_write_ms) +
                p->keepalive_ms - now;
    if (k < wait) wait = k;
  }
  if (wait < 0) wait = 0;
  pthread_mutex_lock(&p->lock);
  int idle = !p->queue.head && !p->stopping && !p->disconnecting;
  p->sleeping = idle;
  pthread_mutex_unlock(&p->lock);
  struct pollfd f[2] = {
      {p->fd, (short)(POLLIN | (p->woff < p->wlen ? POLLOUT : 0)), 0},
      {p->efd, POLLIN, 0}};
  int r = poll(f, 2, idle ? (int)wait : 0);
  pthread_mutex_lock(&p->lock);
  p->sleeping = 0;
  pthread_mutex_unlock(&p->lock);
  if (r < 0 && errno != EINTR) {
    snprintf(why, wn, "%s", strerror(errno));
    return -1;
  }
  if (r > 0 && (f[1].revents & POLLIN)) {
    uint64_t v;
    ssize_t n = read(p->efd, &v, sizeof v);
    (void)n;
  }
  if (r > 0 && (f[0].revents & (POLLIN | POLLHUP | POLLERR)))
    if (read_input(p, why, wn) != 0) return -1;
  return 0;
}

/* Disconnecting: writes what is queued (until the deadline), then
 * DISCONNECT. */
static void say_goodbye(mqtt_pub *p, int64_t deadline) {
  char why[160];
  while (mqtt_pub_now_ms() < deadline) {
    fill(p);
    if (flush(p) != 0) return;
    if (p->woff == p->wlen && !p->pending.head) break;
    if (mqtt_pub_wait_fd(p, p->fd, POLLOUT | POLLIN, deadline) <= 0) break;
  }
  static const unsigned char bye[2] = {0xe0, 0};
  if (p->woff == p->wlen) (void)mqtt_pub_io_send(p, bye, 2);
  (void)read_input(p, why, sizeof why); /* acknowledgements in the buffer */
}

/* Our own DISCONNECT: what was never acknowledged fails; no loss is
 * reported (the owner is shutting down). */
static void end_session(mqtt_pub *p, int timeout_ms) {
  say_goodbye(p, mqtt_pub_now_ms() + timeout_ms);
  mqtt_pub_io_close(p);
  pthread_mutex_lock(&p->lock);
  p->connected = 0;
  pthread_mutex_unlock(&p->lock);
  mqtt_pub_gauge(p, 0);
  CEB_LOG(p->host, p->inst, CEB_LOG_INFO, "disconnected from %s:%d",
          p->conf->host, p->conf->port);
  fail_all(p, "the sink disconnected before the broker acknowledged");
}

static void *io_main(void *arg) {
  mqtt_pub *p = arg;
  char why[200];
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE); /* SSL_write must fail with EPIPE, not kill */
  pthread_sigmask(SIG_BLOCK, &pipe, NULL);
  for (;;) {
    pthread_mutex_lock(&p->lock);
    int stop = p->stopping, bye = p->disconnecting, done = p->disconnected;
    int bye_ms = p->bye_timeout_ms;
    pthread_mutex_unlock(&p->lock);
    if (stop) break;
    int64_t now = mqtt_pub_now_ms();
    if (now >= p->next_tick_ms) {
      p->next_tick_ms = now + MQTT_PUB_TICK_MS;
      if (p->ops.tick) p->ops.tick(p->arg);
    }
    if (bye && !done) {
      if (p->fd >= 0) end_session(p, bye_ms);
      pthread_mutex_lock(&p->lock);
      p->disconnected = 1;
      pthread_cond_broadcast(&p->cond);
      pthread_mutex_unlock(&p->lock);
      continue;
    }
    if (p->fd < 0) {
      if (!bye && now >= p->next_attempt_ms) {
        mqtt_pub_connect_once(p);
        continue;
      }
      int64_t until = bye ? now + MQTT_PUB_TICK_MS : p->next_attempt_ms;
      if (until > p->next_tick_ms) until = p->next_tick_ms;
      struct pollfd f = {p->efd, POLLIN, 0};
      if (poll(&f, 1, until > now ? (int)(until - now) : 0) > 0) {
        uint64_t v;
        ssize_t n = read(p->efd, &v, sizeof v);
        (void)n;
      }
      continue;
    }
    if (session_step(p, why, sizeof why) != 0) lose(p, why);
  }
  mqtt_pub_io_close(p);
  return NULL;
}

int mqtt_pub_new(const ceb_host *host, ceb_instance *inst,
                 const mqtt_conf *conf, const char *client_id,
                 const mqtt_pub_ops *ops, void *arg, mqtt_pub **out) {
  *out = NULL;
  mqtt_pub *p = calloc(1, sizeof *p);
  if (!p) return CEB_ENOMEM;
  p->host = host;
  p->inst = inst;
  p->conf = conf;
  p->ops = *ops;
  p->arg = arg;
  p->fd = -1;
  p->window = 65535;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  p->rcap = 65536;
  p->rbuf = malloc(p->rcap);
  p->client_id = strdup(client_id);
  if (p->efd < 0 || !p->rbuf || !p->client_id) {
    mqtt_pub_free(p);
    return CEB_ENOMEM;
  }
  if (conf->tls && !(p->ctx = mqtt_tls_ctx_new(host, inst, conf))) {
    mqtt_pub_free(p);
    return CEB_ECONFIG;
  }
  *out = p;
  return CEB_OK;
}

int mqtt_pub_start(mqtt_pub *p) {
  mqtt_pub_gauge(p, 0);
  if (pthread_create(&p->thread, NULL, io_main, p) != 0) return CEB_ENOMEM;
  p->started = 1;
  pthread_setname_np(p->thread, "mqtt-publish");
  return CEB_OK;
}

int mqtt_pub_is_connected(mqtt_pub *p) {
  pthread_mutex_lock(&p->lock);
  int up = p->connected;
  pthread_mutex_unlock(&p->lock);
  return up;
}

int mqtt_pub_ever_connected(mqtt_pub *p) {
  pthread_mutex_lock(&p->lock);
  int ever = p->ever_connected;
  pthread_mutex_unlock(&p->lock);
  return ever;
}

int mqtt_pub_window(mqtt_pub *p) {
  pthread_mutex_lock(&p->lock);
  int w = p->window;
  pthread_mutex_unlock(&p->lock);
  return w;
}

void mqtt_pub_disconnect(mqtt_pub *p, int timeout_ms) {
  if (!p || !p->started) return;
  pthread_mutex_lock(&p->lock);
  p->disconnecting = 1;
  p->bye_timeout_ms = timeout_ms;
  pthread_mutex_unlock(&p->lock);
  wake(p);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t ns = (int64_t)ts.tv_nsec + (int64_t)(timeout_ms + 2000) * 1000000;
  ts.tv_sec += (time_t)(ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  pthread_mutex_lock(&p->lock);
  while (!p->disconnected)
    if (pthread_cond_timedwait(&p->cond, &p->lock, &ts) == ETIMEDOUT) break;
  pthread_mutex_unlock(&p->lock);
  mqtt_pub_gauge(p, 0);
}

static void free_list(pkt_list *l) {
  pub_pkt *k;
  while ((k = list_pop(l)))
    free(k);
}

void mqtt_pub_free(mqtt_pub *p) {
  if (!p) return;
  pthread_mutex_lock(&p->lock);
  p->stopping = 1;
  pthread_mutex_unlock(&p->lock);
  if (p->started) {
    wake(p);
    pthread_join(p->thread, NULL);
  }
  free_list(&p->queue);
  free_list(&p->pending);
  free_list(&p->inflight);
  free_list(&p->flushing);
  if (p->efd >= 0) close(p->efd);
  if (p->ctx) SSL_CTX_free(p->ctx);
  free(p->wbuf);
  free(p->rbuf);
  free(p->client_id);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->cond);
  free(p);
}
