/* The plugin's MQTT client on libmosquitto, for both roles (the sink
 * publishes; the source subscribes and publishes dead letters): its queue,
 * the session loop of the I/O thread and the API (mqtt_pub.h); the client,
 * TLS and the connection attempt are in mqtt_pub_link.c.
 *
 * The I/O thread drives libmosquitto itself (poll on mosquitto_socket(),
 * mosquitto_loop_read / _write / _misc) rather than through
 * mosquitto_loop_start: it hands the queued publishes to
 * mosquitto_publish_v5 in a batch, and a caller wakes it only when it
 * sleeps, never per message. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "mqtt_pub_internal.h"

#define MAX_PAYLOAD 268435455u  /* MQTT's largest remaining length */
#define MQTT_PUB_READ_BATCH 256 /* packets read per poll at most */

/* libmosquitto is set up once per load of the plugin and torn down when
 * the plugin is unloaded: its TLS set-up (a UI method) lives until
 * mosquitto_lib_cleanup, and a host may load and unload the plugin many
 * times. */
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_ready;

static void lib_init(void) {
  lib_ready = mosquitto_lib_init() == MOSQ_ERR_SUCCESS;
}

__attribute__((destructor)) static void lib_fini(void) {
  if (lib_ready) mosquitto_lib_cleanup();
}

static void list_push(rec_list *l, pub_rec *k) {
  k->next = NULL;
  if (l->tail)
    l->tail->next = k;
  else
    l->head = k;
  l->tail = k;
  l->n++;
}

static pub_rec *list_pop(rec_list *l) {
  pub_rec *k = l->head;
  if (!k) return NULL;
  l->head = k->next;
  if (!l->head) l->tail = NULL;
  l->n--;
  k->next = NULL;
  return k;
}

static void rec_free(pub_rec *k) {
  mosquitto_property_free_all(&k->props);
  free(k);
}

static void wake(mqtt_pub *p) {
  uint64_t one = 1;
  ssize_t n = write(p->efd, &one, sizeof one);
  (void)n;
}

/* A NUL-terminated copy of n bytes at s, in buf when it fits. */
static char *zstr(const char *s, size_t n, char *buf, size_t cap) {
  char *z = n < cap ? buf : malloc(n + 1);
  if (!z) return NULL;
  if (n) memcpy(z, s, n);
  z[n] = '\0';
  return z;
}

/* The properties (Content Type, User Property) as libmosquitto's list.
 * CEB_OK, CEB_ETOOLARGE (a string over 65535 bytes), CEB_EINVAL (not
 * UTF-8), CEB_ENOMEM. */
static int props_convert(const mqtt_pub_prop *pr, size_t n,
                         mosquitto_property **out) {
  char kb[256], vb[512];
  for (size_t i = 0; pr && i < n; i++) {
    const mqtt_pub_prop *q = &pr[i];
    if (q->name_len > 65535 || (q->user && q->value_len > 65535))
      return CEB_ETOOLARGE;
    char *k = zstr(q->name, q->name_len, kb, sizeof kb);
    char *v = q->user ? zstr(q->value, q->value_len, vb, sizeof vb) : NULL;
    int rc = MOSQ_ERR_NOMEM;
    if (k && q->user && v)
      rc = mosquitto_property_add_string_pair(out, MQTT_PROP_USER_PROPERTY, k,
                                              v);
    else if (k && !q->user)
      rc = mosquitto_property_add_string(out, MQTT_PROP_CONTENT_TYPE, k);
    if (k != kb) free(k);
    if (v != vb) free(v);
    if (rc != MOSQ_ERR_SUCCESS)
      return rc == MOSQ_ERR_NOMEM ? CEB_ENOMEM : CEB_EINVAL;
  }
  return CEB_OK;
}

int mqtt_pub_send(mqtt_pub *p, const char *topic, int qos,
                  const mqtt_pub_prop *props, size_t nprops,
                  const void *payload, size_t len, void *ctx) {
  size_t tl = strlen(topic);
  if (tl > 65535 || len > MAX_PAYLOAD || qos < 0 || qos > 2)
    return CEB_ETOOLARGE;
  pub_rec *k = malloc(sizeof *k + tl + 1 + len);
  if (!k) return CEB_ENOMEM;
  memset(k, 0, sizeof *k);
  k->ctx = ctx;
  k->qos = qos;
  k->len = len;
  memcpy(k->data, topic, tl + 1);
  k->payload = k->data + tl + 1;
  if (len) memcpy(k->payload, payload, len);
  if (p->conf->version == 5) { /* 3.1.1 has no properties */
    int rc = props_convert(props, nprops, &k->props);
    if (rc != CEB_OK) {
      rec_free(k);
      return rc;
    }
  }
  pthread_mutex_lock(&p->lock);
  int up = p->connected && !p->disconnecting && !p->stopping;
  int sleeping = p->sleeping;
  if (up) {
    list_push(&p->queue, k);
    p->sleeping = 0;
  }
  pthread_mutex_unlock(&p->lock);
  if (!up) {
    rec_free(k);
    return CEB_ESHUTDOWN;
  }
  if (sleeping) wake(p);
  return CEB_OK;
}

void mqtt_pub_complete(mqtt_pub *p, int mid, int ok, int reason,
                       const char *detail) {
  void *ctx = NULL;
  if (p->cur_ctx && mid == p->cur_mid) { /* inside mosquitto_publish_v5 */
    ctx = p->cur_ctx;
    p->cur_ctx = NULL;
  } else if (mid > 0 && mid < MQTT_PUB_MIDS && p->by_mid[mid]) {
    ctx = p->by_mid[mid];
    p->by_mid[mid] = NULL;
    p->outstanding--;
  } else {
    return; /* not ours (a completion of an ended session cannot come) */
  }
  p->ops.done(p->arg, ctx, ok, reason, detail);
}

/* Fails every publish the session had (handed over or not) with detail. */
static void fail_all(mqtt_pub *p, const char *detail) {
  rec_list all = {0};
  pthread_mutex_lock(&p->lock);
  all = p->queue;
  memset(&p->queue, 0, sizeof p->queue);
  pthread_mutex_unlock(&p->lock);
  for (int mid = 1; p->outstanding && mid < MQTT_PUB_MIDS; mid++)
    if (p->by_mid[mid]) mqtt_pub_complete(p, mid, 0, 0, detail);
  rec_list *ls[] = {&p->pending, &all};
  for (size_t i = 0; i < sizeof ls / sizeof ls[0]; i++) {
    pub_rec *k;
    while ((k = list_pop(ls[i]))) {
      p->ops.done(p->arg, k->ctx, 0, 0, detail);
      rec_free(k);
    }
  }
}

/* Hands the queued publishes to libmosquitto, which writes each at once
 * (the socket permitting) and keeps the rest for mosquitto_loop_write. */
static void fill(mqtt_pub *p) {
  pthread_mutex_lock(&p->lock);
  rec_list q = p->queue;
  memset(&p->queue, 0, sizeof p->queue);
  pthread_mutex_unlock(&p->lock);
  pub_rec *k;
  while ((k = list_pop(&q)))
    list_push(&p->pending, k);
  /* Never more outstanding than the broker's Receive Maximum: past it
   * libmosquitto 2.0.11 queues publishes itself and may send a later one
   * before an earlier queued one (seen as a reordered burst under ASan).
   * And at most 65534: libmosquitto's next id is then free. */
  while (p->pending.head && !p->gone && p->outstanding < MQTT_PUB_MIDS - 2 &&
         p->outstanding < (size_t)p->window) {
    k = list_pop(&p->pending);
    p->cur_ctx = k->ctx;
    p->cur_mid = 0;
    int rc = mosquitto_publish_v5(p->mosq, &p->cur_mid, k->data, (int)k->len,
                                  k->payload, k->qos, false, k->props);
    void *ctx = p->cur_ctx; /* NULL if it completed inside (QoS 0) */
    p->cur_ctx = NULL;
    int mid = p->cur_mid;
    rec_free(k);
    if (!ctx) continue;
    if (rc == MOSQ_ERR_SUCCESS && mid > 0 && mid < MQTT_PUB_MIDS &&
        !p->by_mid[mid]) {
      p->by_mid[mid] = ctx;
      p->outstanding++;
      continue;
    }
    char detail[160];
    if (rc == MOSQ_ERR_SUCCESS) { /* cannot happen: ids are checked above */
      snprintf(detail, sizeof detail, "message id %d still in use", mid);
    } else if (rc == MOSQ_ERR_NO_CONN || rc == MOSQ_ERR_CONN_LOST ||
               rc == MOSQ_ERR_ERRNO) {
      p->gone = -1; /* the session loop ends it */
      snprintf(detail, sizeof detail,
               "connection lost before the broker acknowledged");
    } else {
      snprintf(detail, sizeof detail, "publish refused by the client: %s",
               mosquitto_strerror(rc));
    }
    p->ops.done(p->arg, ctx, 0, 0, detail);
  }
}

/* Ends the session: closes, reports the loss, fails what it had. */
static void lose(mqtt_pub *p, const char *why) {
  mosquitto_destroy(p->mosq);
  p->mosq = NULL;
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

static void drain_efd(mqtt_pub *p) {
  uint64_t v;
  ssize_t n = read(p->efd, &v, sizeof v);
  (void)n;
}

/* Polls the session's socket (and the wake fd) up to wait_ms, then lets
 * libmosquitto read and write what it can. A libmosquitto error code. */
static int io_round(mqtt_pub *p, int wait_ms) {
  struct pollfd f[2] = {
      {mosquitto_socket(p->mosq),
       (short)(POLLIN | (mosquitto_want_write(p->mosq) ? POLLOUT : 0)), 0},
      {p->efd, POLLIN, 0}};
  int r = poll(f, 2, wait_ms);
  if (r < 0) return errno == EINTR ? MOSQ_ERR_SUCCESS : MOSQ_ERR_ERRNO;
  if (r > 0 && (f[1].revents & POLLIN)) drain_efd(p);
  int rc = MOSQ_ERR_SUCCESS;
  if (r > 0 && (f[0].revents & (POLLIN | POLLHUP | POLLERR))) {
    /* libmosquitto 2.0 reads one packet per call when nothing of ours
     * awaits an acknowledgement (the source's case): go on while the
     * socket holds more, instead of one poll per packet (bounded, so
     * that ticks and writes still come round). */
    int avail = 0, n = 0;
    do
      rc = mosquitto_loop_read(p->mosq, 1);
    while (rc == MOSQ_ERR_SUCCESS && ++n < MQTT_PUB_READ_BATCH &&
           ioctl(f[0].fd, FIONREAD, &avail) == 0 && avail > 0);
  }
  if (rc == MOSQ_ERR_SUCCESS && r > 0 && (f[0].revents & POLLOUT))
    rc = mosquitto_loop_write(p->mosq, 1);
  return rc;
}

static const char *why_of(int rc, char *buf, size_t n) {
  snprintf(buf, n, "%s",
           rc == MOSQ_ERR_ERRNO ? strerror(errno)
           : rc == MOSQ_ERR_KEEPALIVE || rc == MOSQ_ERR_CONN_LOST ||
                   rc == MOSQ_ERR_NO_CONN || rc < 0
               ? "closed by the broker"
               : mosquitto_strerror(rc));
  if (rc == MOSQ_ERR_KEEPALIVE)
    snprintf(buf, n, "no PINGRESP within the keep-alive");
  else if (rc >= 0x80) /* an MQTT 5 DISCONNECT, logged as it came */
    snprintf(buf, n, "disconnected by the broker");
  return buf;
}

/* One round of a session: hand over new publishes, wait, read, write,
 * keep alive; ends the session (or the attempt) when the link went. */
static void session_step(mqtt_pub *p) {
  if (!p->connecting) fill(p);
  int64_t now = mqtt_pub_now_ms();
  int64_t wait = p->next_tick_ms - now; /* keep-alive is checked per tick */
  if (p->connecting && p->connect_deadline - now < wait)
    wait = p->connect_deadline - now;
  if (wait < 0) wait = 0;
  pthread_mutex_lock(&p->lock);
  int idle = !p->queue.head && !p->stopping && !p->disconnecting && !p->gone &&
             !p->refused;
  p->sleeping = idle;
  pthread_mutex_unlock(&p->lock);
  int rc = io_round(p, idle ? (int)wait : 0);
  pthread_mutex_lock(&p->lock);
  p->sleeping = 0;
  pthread_mutex_unlock(&p->lock);
  if (rc == MOSQ_ERR_SUCCESS && !p->gone && !p->refused)
    rc = mosquitto_loop_misc(p->mosq);
  char why[200];
  if (p->connecting) {
    if (p->refused || rc != MOSQ_ERR_SUCCESS || p->gone)
      mqtt_pub_connect_failed(p, why_of(rc ? rc : p->gone, why, sizeof why));
    else if (mqtt_pub_now_ms() >= p->connect_deadline)
      mqtt_pub_connect_failed(p, "no CONNACK within connect_timeout");
    return;
  }
  if (rc != MOSQ_ERR_SUCCESS || p->gone)
    lose(p, why_of(rc ? rc : p->gone, why, sizeof why));
}

/* Disconnecting: hands over and writes what is queued (until the
 * deadline), then DISCONNECT. */
static void say_goodbye(mqtt_pub *p, int64_t deadline) {
  for (;;) {
    fill(p);
    pthread_mutex_lock(&p->lock);
    int more = p->queue.head != NULL;
    pthread_mutex_unlock(&p->lock);
    int64_t left = deadline - mqtt_pub_now_ms();
    if (p->gone || left <= 0 ||
        (!more && !p->pending.head && !mosquitto_want_write(p->mosq)))
      break;
    int wait = left > MQTT_PUB_TICK_MS ? MQTT_PUB_TICK_MS : (int)left;
    int can_send =
        more || (p->pending.head && p->outstanding < (size_t)p->window);
    if (io_round(p, can_send ? 0 : wait) != MOSQ_ERR_SUCCESS) return;
  }
  if (p->gone) return;
  if (mosquitto_disconnect_v5(p->mosq, 0, NULL) != MOSQ_ERR_SUCCESS) return;
  struct pollfd f = {mosquitto_socket(p->mosq), POLLIN, 0};
  if (poll(&f, 1, 0) > 0) /* acknowledgements already here */
    (void)mosquitto_loop_read(p->mosq, 1);
}

/* Our own DISCONNECT: what was never acknowledged fails; no loss is
 * reported (the owner is shutting down). */
static void end_session(mqtt_pub *p, int timeout_ms) {
  if (!p->connecting) say_goodbye(p, mqtt_pub_now_ms() + timeout_ms);
  mosquitto_destroy(p->mosq);
  p->mosq = NULL;
  p->connecting = 0;
  pthread_mutex_lock(&p->lock);
  p->connected = 0;
  pthread_mutex_unlock(&p->lock);
  mqtt_pub_gauge(p, 0);
  CEB_LOG(p->host, p->inst, CEB_LOG_INFO, "disconnected from %s:%d",
          p->conf->host, p->conf->port);
  fail_all(p, "disconnected before the broker acknowledged");
}

static void *io_main(void *arg) {
  mqtt_pub *p = arg;
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE); /* a TLS write must fail with EPIPE, not kill */
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
      if (p->mosq) end_session(p, bye_ms);
      pthread_mutex_lock(&p->lock);
      p->disconnected = 1;
      pthread_cond_broadcast(&p->cond);
      pthread_mutex_unlock(&p->lock);
      continue;
    }
    if (!p->mosq) {
      if (!bye && now >= p->next_attempt_ms) {
        mqtt_pub_connect_once(p);
        continue;
      }
      int64_t until = bye ? now + MQTT_PUB_TICK_MS : p->next_attempt_ms;
      if (until > p->next_tick_ms) until = p->next_tick_ms;
      struct pollfd f = {p->efd, POLLIN, 0};
      if (poll(&f, 1, until > now ? (int)(until - now) : 0) > 0) drain_efd(p);
      continue;
    }
    session_step(p);
  }
  if (p->mosq) mosquitto_destroy(p->mosq);
  p->mosq = NULL;
  return NULL;
}

int mqtt_pub_new(const ceb_host *host, ceb_instance *inst,
                 const mqtt_conf *conf, const char *client_id,
                 const mqtt_pub_opts *opts, const mqtt_pub_ops *ops, void *arg,
                 mqtt_pub **out) {
  *out = NULL;
  pthread_once(&lib_once, lib_init);
  if (!lib_ready) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "libmosquitto did not initialise");
    return CEB_ENOMEM;
  }
  mqtt_pub *p = calloc(1, sizeof *p);
  if (!p) return CEB_ENOMEM;
  p->host = host;
  p->inst = inst;
  p->conf = conf;
  p->ops = *ops;
  p->arg = arg;
  if (opts) p->opts = *opts;
  if (!p->opts.host) {
    p->opts.host = conf->host;
    p->opts.port = conf->port;
  }
  p->window = 65535;
  p->keepalive_s = conf->keepalive_s;
  if (p->keepalive_s < MQTT_PUB_MIN_KEEPALIVE_S) {
    CEB_LOG(host, inst, CEB_LOG_WARN,
            "keepalive %d s is below libmosquitto's minimum: using %d s",
            conf->keepalive_s, MQTT_PUB_MIN_KEEPALIVE_S);
    p->keepalive_s = MQTT_PUB_MIN_KEEPALIVE_S;
  }
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->cond, NULL);
  p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  p->by_mid = calloc(MQTT_PUB_MIDS, sizeof *p->by_mid);
  p->client_id = strdup(client_id);
  if (p->efd < 0 || !p->by_mid || !p->client_id) {
    mqtt_pub_free(p);
    return CEB_ENOMEM;
  }
  /* a client made now checks the options and TLS files before start */
  struct mosquitto *probe = mqtt_pub_client_new(p);
  if (!probe) {
    mqtt_pub_free(p);
    return CEB_ECONFIG;
  }
  mosquitto_destroy(probe);
  *out = p;
  return CEB_OK;
}

int mqtt_pub_start(mqtt_pub *p) {
  mqtt_pub_gauge(p, 0);
  if (pthread_create(&p->thread, NULL, io_main, p) != 0) return CEB_ENOMEM;
  p->started = 1;
  /* named for top -H / perf (15 characters at most) */
  pthread_setname_np(p->thread,
                     p->ops.message ? "mqtt-source" : "mqtt-publish");
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

static void free_list(rec_list *l) {
  pub_rec *k;
  while ((k = list_pop(l)))
    rec_free(k);
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
  if (p->efd >= 0) close(p->efd);
  free(p->by_mid);
  free(p->client_id);
  pthread_mutex_destroy(&p->lock);
  pthread_cond_destroy(&p->cond);
  free(p);
}
