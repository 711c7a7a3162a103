/* Connection guard: request deadlines, minimum body rate, slot reserve
 * (http_guard.h says why and how). */
#include "http_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SWEEP_MS 250          /* how often deadlines are checked */
#define RATE_GRACE_MS 5000    /* a body's rate is judged after this long */
#define EVICT_MIN_AGE_MS 1000 /* a newer connection is not evicted */
#define LOG_EVERY_MS 10000
#define MHD_LOG_SLOTS 16 /* distinct libmicrohttpd messages tracked */

enum { PH_HEAD = 0, PH_BODY = 1, PH_BUSY = 2, PH_CLOSING = 3 };

struct http_guard_conn {
  http_guard_conn *prev, *next; /* g->conns, under g->lock */
  http_guard *g;
  int fd;
  char addr[INET6_ADDRSTRLEN];
  atomic_int phase;
  atomic_int kept; /* a request was answered before: keep-alive deadline */
  _Atomic int64_t since_ms; /* start of the current phase */
  _Atomic uint64_t bytes;   /* body bytes of the current request */
};

typedef struct reason_log {
  uint64_t count;    /* closes since the last line */
  int64_t logged_at; /* last line, monotonic ms */
  char example[INET6_ADDRSTRLEN];
} reason_log;

typedef struct mhd_log_slot {
  const char *fmt; /* the message's format string: its identity */
  int64_t at;      /* last logged, monotonic ms */
  unsigned left_out;
} mhd_log_slot;

struct http_guard {
  const ceb_host *host;
  ceb_instance *inst;
  http_guard_cfg cfg;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
  int stop;
  http_guard_conn *conns; /* open connections, oldest last */
  unsigned nconns;        /* in conns: the http_connections_open gauge */
  reason_log logs[HTTP_CLOSE_NREASONS];
  mhd_log_slot mhd_logs[MHD_LOG_SLOTS];
};

static const char *const REASON_CODE[HTTP_CLOSE_NREASONS] = {
    "head_timeout", "body_timeout", "body_rate", "evicted", "body_too_large"};

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The reason as the log line states it. */
static void reason_text(const http_guard *g, http_close_reason why, char *buf,
                        size_t n) {
  const http_guard_cfg *c = &g->cfg;
  switch (why) {
  case HTTP_CLOSE_HEAD_TIMEOUT:
    snprintf(buf, n,
             "request head not complete within request_head_timeout "
             "(%lld ms; connection_timeout %lld ms for a kept-alive "
             "connection)",
             (long long)c->head_ms, (long long)c->keepalive_ms);
    break;
  case HTTP_CLOSE_BODY_TIMEOUT:
    snprintf(buf, n,
             "request body not complete within request_body_timeout "
             "(%lld ms)",
             (long long)c->body_ms);
    break;
  case HTTP_CLOSE_BODY_RATE:
    snprintf(buf, n,
             "request body slower than request_body_min_rate "
             "(%llu bytes/s after %d ms)",
             (unsigned long long)c->min_rate, RATE_GRACE_MS);
    break;
  case HTTP_CLOSE_EVICTED:
    snprintf(buf, n,
             "waiting longest for a request head while connections ran "
             "short (%u of max_connections %u are kept for new clients)",
             c->reserve, c->max_conn);
    break;
  default:
    snprintf(buf, n, "request body far over max_body (not read to its end)");
    break;
  }
}

/* Counts a close and logs at most once per LOG_EVERY_MS per reason. */
static void note(http_guard *g, http_close_reason why, const char *addr) {
  char labels[48];
  snprintf(labels, sizeof labels, "reason=\"%s\"", REASON_CODE[why]);
  g->host->metric(g->inst, CEB_METRIC_COUNTER, "http_connections_closed_total",
                  labels, 1);
  int64_t now = mono_ms();
  pthread_mutex_lock(&g->lock);
  reason_log *l = &g->logs[why];
  l->count++;
  int emit = l->logged_at == 0 || now - l->logged_at >= LOG_EVERY_MS;
  uint64_t count = l->count;
  char example[INET6_ADDRSTRLEN];
  snprintf(example, sizeof example, "%s", addr && *addr ? addr : l->example);
  if (addr && *addr) snprintf(l->example, sizeof l->example, "%s", addr);
  if (emit) {
    l->logged_at = now;
    l->count = 0;
  }
  pthread_mutex_unlock(&g->lock);
  if (!emit) return;
  char text[256];
  reason_text(g, why, text, sizeof text);
  g->host->log(g->inst, CEB_LOG_WARN,
               "closed %llu connection(s) (%s): %s; last client %s "
               "(logged at most every %d s)",
               (unsigned long long)count, REASON_CODE[why], text,
               example[0] ? example : "?", LOG_EVERY_MS / 1000);
}

/* Closes rec's connection for `why` unless it is being handled. Under
 * g->lock (the record cannot be freed meanwhile). 1 when closed. */
static int close_locked(http_guard_conn *rec, int expect) {
  if (!atomic_compare_exchange_strong(&rec->phase, &expect, PH_CLOSING))
    return 0;
  shutdown(rec->fd, SHUT_RDWR); /* libmicrohttpd closes on its thread */
  return 1;
}

typedef struct closed_one {
  http_close_reason why;
  char addr[INET6_ADDRSTRLEN];
} closed_one;

static void *sweeper(void *arg) {
  http_guard *g = arg;
  const http_guard_cfg *c = &g->cfg;
  closed_one batch[64];
  pthread_mutex_lock(&g->lock);
  while (!g->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += SWEEP_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&g->cond, &g->lock, &ts);
    if (g->stop) break;
    int64_t now = mono_ms();
    size_t nb = 0;
    for (http_guard_conn *r = g->conns; r; r = r->next) {
      int ph = atomic_load(&r->phase);
      int64_t age = now - atomic_load(&r->since_ms);
      http_close_reason why = HTTP_CLOSE_NREASONS;
      if (ph == PH_HEAD &&
          age > (atomic_load(&r->kept) ? c->keepalive_ms : c->head_ms))
        why = HTTP_CLOSE_HEAD_TIMEOUT;
      else if (ph == PH_BODY && age > c->body_ms)
        why = HTTP_CLOSE_BODY_TIMEOUT;
      else if (ph == PH_BODY && c->min_rate && age > RATE_GRACE_MS &&
               atomic_load(&r->bytes) * 1000 < c->min_rate * (uint64_t)age)
        why = HTTP_CLOSE_BODY_RATE;
      if (why == HTTP_CLOSE_NREASONS || !close_locked(r, ph)) continue;
      if (nb < sizeof batch / sizeof *batch) {
        batch[nb].why = why;
        memcpy(batch[nb].addr, r->addr, sizeof r->addr);
        nb++;
      }
    }
    /* logged without the lock held over the host's log call */
    pthread_mutex_unlock(&g->lock);
    for (size_t i = 0; i < nb; i++)
      note(g, batch[i].why, batch[i].addr);
    pthread_mutex_lock(&g->lock);
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

http_guard *http_guard_new(const ceb_host *host, ceb_instance *inst,
                           const http_guard_cfg *cfg) {
  http_guard *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->host = host;
  g->inst = inst;
  g->cfg = *cfg;
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->cond, NULL);
  if (pthread_create(&g->thread, NULL, sweeper, g) != 0) {
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g);
    return NULL;
  }
  return g;
}

void http_guard_free(http_guard *g) {
  if (!g) return;
  pthread_mutex_lock(&g->lock);
  g->stop = 1;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->lock);
  pthread_join(g->thread, NULL);
  for (http_guard_conn *r = g->conns, *next; r; r = next) {
    next = r->next; /* none left once the daemons stopped */
    free(r);
  }
  pthread_cond_destroy(&g->cond);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

static void addr_text(struct MHD_Connection *conn, char *buf, size_t n) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  buf[0] = '\0';
  if (!ci || !ci->client_addr) return;
  const struct sockaddr *sa = ci->client_addr;
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET,
              &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf,
              (socklen_t)n);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6,
              &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf,
              (socklen_t)n);
}

http_guard_conn *http_guard_opened(http_guard *g, struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!g || !ci) return NULL;
  http_guard_conn *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->g = g;
  r->fd = ci->connect_fd;
  addr_text(conn, r->addr, sizeof r->addr);
  atomic_init(&r->phase, PH_HEAD);
  atomic_init(&r->kept, 0);
  atomic_init(&r->since_ms, mono_ms());
  atomic_init(&r->bytes, 0);
  pthread_mutex_lock(&g->lock);
  r->next = g->conns;
  if (g->conns) g->conns->prev = r;
  g->conns = r;
  g->nconns++;
  /* set under the lock: the last value set is the current count */
  g->host->metric(g->inst, CEB_METRIC_GAUGE, "http_connections_open", NULL,
                  (double)g->nconns);
  pthread_mutex_unlock(&g->lock);
  return r;
}

void http_guard_closed(http_guard *g, http_guard_conn *r) {
  if (!g || !r) return;
  pthread_mutex_lock(&g->lock);
  if (r->prev)
    r->prev->next = r->next;
  else
    g->conns = r->next;
  if (r->next) r->next->prev = r->prev;
  g->nconns--;
  g->host->metric(g->inst, CEB_METRIC_GAUGE, "http_connections_open", NULL,
                  (double)g->nconns);
  pthread_mutex_unlock(&g->lock);
  free(r);
}

int http_guard_admit(http_guard *g, unsigned open) {
  if (!g || open + g->cfg.reserve < g->cfg.max_conn) return 0;
  int64_t now = mono_ms();
  char addr[INET6_ADDRSTRLEN] = "";
  int closed = 0;
  pthread_mutex_lock(&g->lock);
  /* the oldest waiting for a head: heads are short, so the longest wait is
   * the slowest or idlest client */
  http_guard_conn *victim = NULL;
  int64_t oldest = now - EVICT_MIN_AGE_MS;
  for (http_guard_conn *r = g->conns; r; r = r->next) {
    int64_t since = atomic_load(&r->since_ms);
    if (atomic_load(&r->phase) == PH_HEAD && since <= oldest) {
      oldest = since;
      victim = r;
    }
  }
  if (victim && close_locked(victim, PH_HEAD)) {
    closed = 1;
    memcpy(addr, victim->addr, sizeof addr);
  }
  pthread_mutex_unlock(&g->lock);
  if (closed) note(g, HTTP_CLOSE_EVICTED, addr);
  return closed;
}

static http_guard_conn *rec_of(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

void http_guard_head_done(struct MHD_Connection *conn) {
  http_guard_conn *r = rec_of(conn);
  if (!r) return;
  atomic_store(&r->bytes, 0);
  atomic_store(&r->since_ms, mono_ms());
  int expect = PH_HEAD;
  if (!atomic_compare_exchange_strong(&r->phase, &expect, PH_BODY)) {
    expect = PH_BUSY; /* back from a wait before the body (JWKS) */
    atomic_compare_exchange_strong(&r->phase, &expect, PH_BODY);
  }
}

void http_guard_body(struct MHD_Connection *conn, size_t n) {
  http_guard_conn *r = rec_of(conn);
  if (r) atomic_fetch_add(&r->bytes, n);
}

int http_guard_busy(struct MHD_Connection *conn) {
  http_guard_conn *r = rec_of(conn);
  if (!r) return 1;
  int ph = atomic_load(&r->phase);
  while (ph != PH_CLOSING &&
         !atomic_compare_exchange_weak(&r->phase, &ph, PH_BUSY)) {
  }
  return ph != PH_CLOSING;
}

void http_guard_request_done(struct MHD_Connection *conn) {
  http_guard_conn *r = rec_of(conn);
  if (!r) return;
  atomic_store(&r->kept, 1);
  atomic_store(&r->since_ms, mono_ms());
  int expect = PH_BUSY;
  if (!atomic_compare_exchange_strong(&r->phase, &expect, PH_HEAD)) {
    expect = PH_BODY; /* answered before its body was read */
    atomic_compare_exchange_strong(&r->phase, &expect, PH_HEAD);
  }
}

void http_guard_mhd_log(http_guard *g, const char *fmt, va_list ap) {
  int64_t now = mono_ms();
  pthread_mutex_lock(&g->lock);
  mhd_log_slot *slot = &g->mhd_logs[0];
  for (size_t i = 0; i < MHD_LOG_SLOTS; i++) {
    if (g->mhd_logs[i].fmt == fmt) {
      slot = &g->mhd_logs[i];
      break;
    }
    if (g->mhd_logs[i].at < slot->at) slot = &g->mhd_logs[i];
  }
  int emit = slot->fmt != fmt || now - slot->at >= LOG_EVERY_MS;
  unsigned left_out = 0;
  if (emit) {
    left_out = slot->fmt == fmt ? slot->left_out : 0;
    slot->fmt = fmt;
    slot->at = now;
    slot->left_out = 0;
  } else {
    slot->left_out++;
  }
  pthread_mutex_unlock(&g->lock);
  if (!emit) return;
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
    msg[--n] = '\0';
  if (left_out)
    g->host->log(g->inst, CEB_LOG_WARN,
                 "libmicrohttpd: %s (and %u more like it in the last %d s)",
                 msg, left_out, LOG_EVERY_MS / 1000);
  else
    g->host->log(g->inst, CEB_LOG_WARN, "libmicrohttpd: %s", msg);
}

void http_guard_note(http_guard *g, struct MHD_Connection *conn,
                     http_close_reason why) {
  if (!g) return;
  char addr[INET6_ADDRSTRLEN];
  addr_text(conn, addr, sizeof addr);
  note(g, why, addr);
}
