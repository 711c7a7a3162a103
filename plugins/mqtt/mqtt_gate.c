#include "mqtt_gate.h"

#include "mqtt_frame.h"
#include "mqtt_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PREREL 4096
#define MAX_QOS2 65536                 /* packet ids are 16 bits */
#define MAX_FRAME (256u * 1024 * 1024) /* MQTT's own limit */

typedef struct held_ack {
  int packet_id;
  int ready;
  unsigned char frame[4]; /* the client's acks are 4 bytes (no reason code) */
  unsigned char *big;     /* longer ones (MQTT 5 reason code/properties) */
  size_t len;
} held_ack;

typedef struct release {
  uint64_t gen;
  int packet_id;
} release;

struct mqtt_gate {
  const ceb_host *host;
  ceb_instance *inst;
  const mqtt_conf *conf;
  int lfd, wfd, port;
  pthread_t thread;
  int thread_started;
  SSL_CTX *ctx;
  /* shared, under lock */
  pthread_mutex_t lock;
  int stop;
  char *reset_why;
  release *rel;
  size_t nrel, caprel;
  uint64_t gen;
  size_t nheld;
  size_t nready; /* held and released, not yet sent */
  int unordered; /* flush released acks past unreleased ones */
  int applying;  /* releases taken, not yet applied */
  uint64_t acked;
  /* relay thread only */
  int cfd, bfd;
  SSL *ssl;
  unsigned char *cbuf, *bbuf; /* partial frames from the client / broker */
  size_t clen, ccap, blen, bcap;
  /* Packet ids of QoS 2 PUBLISHes forwarded to the client as QoS 1 whose
   * PUBACK from the client has not arrived yet: it goes out as PUBREC. */
  unsigned char qos2[MAX_QOS2 / 8];
  held_ack *held;
  size_t hhead, htail, hcap;
  int prerel[MAX_PREREL];
  size_t nprerel;
};

static void wake(mqtt_gate *g) {
  uint64_t one = 1;
  ssize_t n = write(g->wfd, &one, sizeof one);
  (void)n;
}

static int send_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

static int broker_write(mqtt_gate *g, const void *buf, size_t len) {
  if (!g->ssl) return send_all(g->bfd, buf, len);
  /* The TLS socket is non-blocking (see connect_broker): wait for it. */
  while (len) {
    int n = SSL_write(g->ssl, buf, (int)len);
    if (n > 0) {
      buf = (const char *)buf + n;
      len -= (size_t)n;
      continue;
    }
    int e = SSL_get_error(g->ssl, n);
    struct pollfd p = {g->bfd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, 0};
    if ((e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) ||
        poll(&p, 1, 30000) != 1)
      return -1;
  }
  return 0;
}

static void update_shared(mqtt_gate *g, size_t acked_now, int bump_gen) {
  size_t ready = 0;
  for (size_t i = g->hhead; i < g->htail; i++)
    ready += g->held[i].ready != 0;
  pthread_mutex_lock(&g->lock);
  g->nheld = g->htail - g->hhead;
  g->nready = ready;
  g->acked += acked_now;
  if (bump_gen) g->gen++;
  pthread_mutex_unlock(&g->lock);
}

static void close_pair(mqtt_gate *g) {
  size_t ready = 0;
  for (size_t i = g->hhead; i < g->htail; i++)
    ready += g->held[i].ready != 0;
  if (g->htail > g->hhead)
    CEB_LOG(g->host, g->inst, CEB_LOG_INFO,
            "relay closed with %zu acknowledgement(s) unsent (%zu durable, "
            "first packet id %d): the broker redelivers them",
            g->htail - g->hhead, ready, g->held[g->hhead].packet_id);
  if (g->ssl) {
    SSL_free(g->ssl);
    g->ssl = NULL;
  }
  if (g->bfd >= 0) close(g->bfd);
  if (g->cfd >= 0) close(g->cfd);
  g->bfd = g->cfd = -1;
  for (size_t i = g->hhead; i < g->htail; i++)
    free(g->held[i].big);
  g->hhead = g->htail = 0;
  g->nprerel = 0;
  g->clen = g->blen = 0;
  memset(g->qos2, 0, sizeof g->qos2);
  update_shared(g, 0, 1);
}

static int connect_broker(mqtt_gate *g) {
  char port[16];
  snprintf(port, sizeof port, "%d", g->conf->port);
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  int rc = getaddrinfo(g->conf->host, port, &hints, &res);
  if (rc != 0) {
    CEB_LOG(g->host, g->inst, CEB_LOG_WARN, "cannot resolve %s: %s",
            g->conf->host, gai_strerror(rc));
    return -1;
  }
  int fd = -1, err = 0;
  for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      err = errno;
      close(fd);
      fd = -1;
      continue;
    }
    struct pollfd p = {fd, POLLOUT, 0};
    socklen_t sl = sizeof err;
    err = 0;
    if (poll(&p, 1, g->conf->connect_timeout_s * 1000) != 1)
      err = ETIMEDOUT;
    else
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl);
    if (err) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) {
    CEB_LOG(g->host, g->inst, CEB_LOG_WARN, "cannot connect to %s:%d: %s",
            g->conf->host, g->conf->port, strerror(err ? err : ECONNREFUSED));
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  g->bfd = fd;
  if (!g->ctx) return 0;
  return (g->ssl = mqtt_tls_connect(g->host, g->inst, g->conf, g->ctx, fd))
             ? 0
             : -1;
}

static void accept_client(mqtt_gate *g) {
  int fd = accept4(g->lfd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) return;
  if (g->cfd >= 0)
    close_pair(g); /* the client reconnected: the old pair is dead to it */
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  g->cfd = fd;
  /* A new generation here as well as at close: the client may still read
   * messages of the closed connection from its socket (stamped with the
   * generation after the close) before it reconnects, and their releases
   * must not reach this connection. */
  update_shared(g, 0, 1);
  if (connect_broker(g) != 0)
    close_pair(g); /* the client sees the connect fail and backs off */
}

static int prerel_take(mqtt_gate *g, int id) {
  for (size_t i = 0; i < g->nprerel; i++)
    if (g->prerel[i] == id) {
      g->prerel[i] = g->prerel[--g->nprerel];
      return 1;
    }
  return 0;
}

/* Sends the released acknowledgements at the head, in arrival order (MQTT
 * 4.6), or all released ones when unordered. */
static int flush_ready(mqtt_gate *g) {
  pthread_mutex_lock(&g->lock);
  int unordered = g->unordered;
  pthread_mutex_unlock(&g->lock);
  size_t sent = 0, keep = g->hhead;
  int rc = 0;
  for (size_t i = g->hhead; i < g->htail; i++) {
    held_ack *h = &g->held[i];
    if (h->ready && rc == 0 && (unordered || keep == g->hhead)) {
      if (broker_write(g, h->big ? h->big : h->frame, h->len) != 0) {
        rc = -1;
        g->held[keep++] = *h;
        continue;
      }
      free(h->big);
      sent++;
      continue;
    }
    g->held[keep++] = *h;
  }
  g->htail = keep;
  if (g->hhead == g->htail) g->hhead = g->htail = 0;
  update_shared(g, sent, 0);
  return rc;
}

static int hold(mqtt_gate *g, const unsigned char *frame, size_t len, int id) {
  if (g->htail == g->hcap) {
    if (g->hhead > 0) {
      memmove(g->held, g->held + g->hhead,
              (g->htail - g->hhead) * sizeof *g->held);
      g->htail -= g->hhead;
      g->hhead = 0;
    } else {
      size_t cap = g->hcap ? g->hcap * 2 : 64;
      held_ack *n = realloc(g->held, cap * sizeof *n);
      if (!n) return -1;
      g->held = n;
      g->hcap = cap;
    }
  }
  held_ack *h = &g->held[g->htail];
  memset(h, 0, sizeof *h);
  h->packet_id = id;
  h->len = len;
  if (len <= sizeof h->frame) {
    memcpy(h->frame, frame, len);
  } else {
    if (!(h->big = malloc(len))) return -1;
    memcpy(h->big, frame, len);
  }
  h->ready = prerel_take(g, id);
  g->htail++;
  return 0;
}

static int qos2_take(mqtt_gate *g, int id) {
  unsigned char bit = (unsigned char)(1u << (id & 7));
  int was = (g->qos2[id >> 3] & bit) != 0;
  g->qos2[id >> 3] &= (unsigned char)~bit;
  return was;
}

/* Parses complete packets from the client: acknowledgements are held, the rest
 * is forwarded. -1 closes the pair. */
static int pump_client(mqtt_gate *g) {
  size_t off = 0;
  mqtt_frame f;
  int r;
  while ((r = mqtt_frame_next(g->cbuf + off, g->clen - off, MAX_FRAME, &f)) ==
         1) {
    unsigned char *p = g->cbuf + off;
    unsigned id;
    int reason;
    if (f.type == MQTT_PUBACK && mqtt_frame_ack(&f, &id, &reason) == 0) {
      /* A QoS 2 message: its durable acknowledgement is PUBREC (the reason
       * codes of a success are the same); the broker's PUBREL that follows
       * is answered by pump_broker. */
      if (qos2_take(g, (int)id)) p[0] = (unsigned char)(MQTT_PUBREC << 4);
      if (hold(g, p, f.total, (int)id) != 0) return -1;
    } else if (broker_write(g, p, f.total) != 0) {
      return -1;
    }
    off += f.total;
  }
  if (r < 0) return -1;
  if (off) {
    memmove(g->cbuf, g->cbuf + off, g->clen - off);
    g->clen -= off;
  }
  return flush_ready(g);
}

/* Parses complete packets from the broker and forwards them to the client,
 * except that a QoS 2 PUBLISH goes to the client as QoS 1 (which it then
 * acknowledges with a PUBACK the gate can hold; it would hand a QoS 2
 * message over only after the PUBREL, which needs the PUBREC that waits for
 * durability) and a PUBREL is answered with PUBCOMP here, for any packet
 * id: after a reconnect the broker resends PUBREL for PUBRECs sent on an
 * earlier connection, and the message was taken in either case. -1 closes
 * the pair. */
static int pump_broker(mqtt_gate *g) {
  size_t off = 0, from = 0;
  mqtt_frame f;
  int r;
  while ((r = mqtt_frame_next(g->bbuf + off, g->blen - off, MAX_FRAME, &f)) ==
         1) {
    unsigned char *p = g->bbuf + off;
    if (f.type == MQTT_PUBLISH && ((f.flags >> 1) & 3) == 2) {
      /* The topic and packet id sit where they do in either version. */
      mqtt_publish pub;
      if (mqtt_frame_publish(&f, 0, &pub) != 0) return -1;
      unsigned id = pub.packet_id;
      g->qos2[id >> 3] |= (unsigned char)(1u << (id & 7));
      p[0] = (unsigned char)((p[0] & ~0x06) | 0x02);
    } else if (f.type == MQTT_PUBREL) {
      unsigned id;
      int reason;
      if (mqtt_frame_ack(&f, &id, &reason) != 0) return -1;
      unsigned char comp[4] = {MQTT_PUBCOMP << 4, 2, (unsigned char)(id >> 8),
                               (unsigned char)id};
      if (off > from && send_all(g->cfd, g->bbuf + from, off - from) != 0)
        return -1;
      from = off + f.total;
      if (broker_write(g, comp, sizeof comp) != 0) return -1;
    }
    off += f.total;
  }
  if (r < 0) return -1;
  if (off > from && send_all(g->cfd, g->bbuf + from, off - from) != 0)
    return -1;
  if (off) {
    memmove(g->bbuf, g->bbuf + off, g->blen - off);
    g->blen -= off;
  }
  return 0;
}

/* Room for at least 16 KiB more in *buf. */
static int buf_reserve(unsigned char **buf, size_t len, size_t *cap) {
  if (*cap - len >= 16384) return 0;
  size_t ncap = *cap ? *cap * 2 : 65536;
  unsigned char *n = realloc(*buf, ncap);
  if (!n) return -1;
  *buf = n;
  *cap = ncap;
  return 0;
}

static int read_client(mqtt_gate *g) {
  if (buf_reserve(&g->cbuf, g->clen, &g->ccap) != 0) return -1;
  ssize_t n = recv(g->cfd, g->cbuf + g->clen, g->ccap - g->clen, 0);
  if (n < 0 && errno == EINTR) return 0;
  if (n <= 0) return -1;
  g->clen += (size_t)n;
  return pump_client(g);
}

static int read_broker(mqtt_gate *g) {
  do {
    if (buf_reserve(&g->bbuf, g->blen, &g->bcap) != 0) return -1;
    unsigned char *at = g->bbuf + g->blen;
    size_t room = g->bcap - g->blen;
    ssize_t n;
    if (g->ssl) {
      int r = SSL_read(g->ssl, at, room > INT_MAX ? INT_MAX : (int)room);
      if (r <= 0) {
        int e = SSL_get_error(g->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
        return -1;
      }
      n = r;
    } else {
      n = recv(g->bfd, at, room, 0);
      if (n < 0 && errno == EINTR) return 0;
      if (n <= 0) return -1;
    }
    g->blen += (size_t)n;
    if (pump_broker(g) != 0) return -1;
  } while (g->ssl && SSL_pending(g->ssl) > 0);
  return 0;
}

static void apply_taken(mqtt_gate *g, release *rel, size_t nrel, uint64_t gen,
                        char *why);

static void apply_releases(mqtt_gate *g) {
  pthread_mutex_lock(&g->lock);
  release *rel = g->rel;
  size_t nrel = g->nrel;
  uint64_t gen = g->gen;
  char *why = g->reset_why;
  g->rel = NULL;
  g->nrel = g->caprel = 0;
  g->reset_why = NULL;
  g->applying = 1;
  pthread_mutex_unlock(&g->lock);
  apply_taken(g, rel, nrel, gen, why);
  pthread_mutex_lock(&g->lock);
  g->applying = 0;
  pthread_mutex_unlock(&g->lock);
}

static void apply_taken(mqtt_gate *g, release *rel, size_t nrel, uint64_t gen,
                        char *why) {
  if (why) {
    if (g->cfd >= 0) {
      CEB_LOG(g->host, g->inst, CEB_LOG_WARN,
              "dropping the broker connection so that %zu unacknowledged "
              "message(s) are redelivered: %s",
              g->htail - g->hhead, why);
      close_pair(g);
    }
    free(why);
    free(rel);
    return;
  }
  for (size_t i = 0; g->cfd >= 0 && i < nrel; i++) {
    if (rel[i].gen != gen) continue;
    int found = 0;
    for (size_t j = g->hhead; j < g->htail && !found; j++)
      if (g->held[j].packet_id == rel[i].packet_id && !g->held[j].ready)
        found = g->held[j].ready = 1;
    if (!found) { /* released before the client's ack reached us */
      if (g->nprerel == MAX_PREREL)
        memmove(g->prerel, g->prerel + 1, (MAX_PREREL - 1) * sizeof(int));
      else
        g->nprerel++;
      g->prerel[g->nprerel - 1] = rel[i].packet_id;
    }
  }
  free(rel);
  if (g->cfd >= 0 && flush_ready(g) != 0) close_pair(g);
}

static void *relay(void *arg) {
  mqtt_gate *g = arg;
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE); /* SSL_write must fail with EPIPE, not kill */
  pthread_sigmask(SIG_BLOCK, &pipe, NULL);
  for (;;) {
    struct pollfd p[4] = {{g->lfd, POLLIN, 0},
                          {g->wfd, POLLIN, 0},
                          {g->cfd, POLLIN, 0},
                          {g->bfd, POLLIN, 0}};
    int n = g->cfd >= 0 ? 4 : 2;
    if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR) break;
    pthread_mutex_lock(&g->lock);
    int stop = g->stop;
    pthread_mutex_unlock(&g->lock);
    if (stop) break;
    if (p[1].revents) {
      uint64_t v;
      ssize_t r = read(g->wfd, &v, sizeof v);
      (void)r;
      apply_releases(g);
    }
    if (n == 4 && g->cfd >= 0 && p[3].revents && read_broker(g) != 0)
      close_pair(g);
    if (n == 4 && g->cfd >= 0 && p[2].revents && read_client(g) != 0)
      close_pair(g);
    if (p[0].revents) accept_client(g);
  }
  if (g->cfd >= 0) close_pair(g);
  return NULL;
}

int mqtt_gate_new(const ceb_host *host, ceb_instance *inst,
                  const mqtt_conf *conf, mqtt_gate **out) {
  *out = NULL;
  mqtt_gate *g = calloc(1, sizeof *g);
  if (!g) return CEB_ENOMEM;
  g->host = host;
  g->inst = inst;
  g->conf = conf;
  g->cfd = g->bfd = g->wfd = -1;
  pthread_mutex_init(&g->lock, NULL);
  g->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof a;
  if (g->lfd < 0 || bind(g->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(g->lfd, 4) != 0 ||
      getsockname(g->lfd, (struct sockaddr *)&a, &al) != 0 ||
      (g->wfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "ack gate: cannot listen: %s",
            strerror(errno));
    mqtt_gate_free(g);
    return CEB_EIO;
  }
  g->port = ntohs(a.sin_port);
  if (conf->tls && !(g->ctx = mqtt_tls_ctx_new(host, inst, conf))) {
    mqtt_gate_free(g);
    return CEB_ECONFIG;
  }
  if (pthread_create(&g->thread, NULL, relay, g) != 0) {
    mqtt_gate_free(g);
    return CEB_ENOMEM;
  }
  g->thread_started = 1;
  pthread_setname_np(g->thread, "mqtt-ack-gate");
  *out = g;
  return CEB_OK;
}

int mqtt_gate_port(const mqtt_gate *g) {
  return g->port;
}

uint64_t mqtt_gate_generation(mqtt_gate *g) {
  pthread_mutex_lock(&g->lock);
  uint64_t gen = g->gen;
  pthread_mutex_unlock(&g->lock);
  return gen;
}

void mqtt_gate_release(mqtt_gate *g, uint64_t gen, int packet_id) {
  pthread_mutex_lock(&g->lock);
  if (g->nrel == g->caprel) {
    size_t cap = g->caprel ? g->caprel * 2 : 64;
    release *n = realloc(g->rel, cap * sizeof *n);
    if (!n) {
      /* Not released: the ack stays held and the message is redelivered
       * after the next reconnect; never acknowledged without durability. */
      pthread_mutex_unlock(&g->lock);
      return;
    }
    g->rel = n;
    g->caprel = cap;
  }
  g->rel[g->nrel].gen = gen;
  g->rel[g->nrel].packet_id = packet_id;
  /* One wake per batch: releases come in bursts (a group commit's callbacks,
   * on the host's committer thread), and the relay reads the eventfd before
   * it takes the list, so a non-empty list already has a wake pending. */
  int first = g->nrel++ == 0;
  pthread_mutex_unlock(&g->lock);
  if (first) wake(g);
}

void mqtt_gate_reset(mqtt_gate *g, const char *why) {
  pthread_mutex_lock(&g->lock);
  if (!g->reset_why) g->reset_why = strdup(why ? why : "reset");
  pthread_mutex_unlock(&g->lock);
  wake(g);
}

size_t mqtt_gate_held(mqtt_gate *g) {
  pthread_mutex_lock(&g->lock);
  size_t n = g->nheld;
  pthread_mutex_unlock(&g->lock);
  return n;
}

uint64_t mqtt_gate_acked(mqtt_gate *g) {
  pthread_mutex_lock(&g->lock);
  uint64_t n = g->acked;
  pthread_mutex_unlock(&g->lock);
  return n;
}

int mqtt_gate_flush(mqtt_gate *g, int64_t timeout_ms) {
  pthread_mutex_lock(&g->lock);
  g->unordered = 1;
  pthread_mutex_unlock(&g->lock);
  wake(g);
  for (int64_t waited = 0;; waited += 5) {
    pthread_mutex_lock(&g->lock);
    int done = g->nrel == 0 && g->nready == 0 && !g->reset_why && !g->applying;
    pthread_mutex_unlock(&g->lock);
    if (done) return 0;
    if (waited >= timeout_ms) return -1;
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

void mqtt_gate_free(mqtt_gate *g) {
  if (!g) return;
  if (g->thread_started) {
    pthread_mutex_lock(&g->lock);
    g->stop = 1;
    pthread_mutex_unlock(&g->lock);
    wake(g);
    pthread_join(g->thread, NULL);
  }
  if (g->lfd >= 0) close(g->lfd);
  if (g->wfd >= 0) close(g->wfd);
  if (g->ctx) SSL_CTX_free(g->ctx);
  free(g->cbuf);
  free(g->bbuf);
  free(g->held);
  free(g->rel);
  free(g->reset_why);
  pthread_mutex_destroy(&g->lock);
  free(g);
}
