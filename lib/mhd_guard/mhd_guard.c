/* Connection guard for libmicrohttpd listeners (mhd_guard.h says why and
 * how). Written here because libmicrohttpd offers only an inactivity
 * timeout and a connection limit: no whole-request deadline, no minimum
 * rate, no eviction. */
/* pthread_setname_np: _GNU_SOURCE comes from the build (CMakeLists.txt) */
#include "mhd_guard.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define EVICT_MIN_AGE_MS 1000 /* a newer connection is not evicted */
#define LOG_EVERY_MS 10000
#define MHD_LOG_SLOTS 16 /* distinct libmicrohttpd messages tracked */

enum { PH_HEAD = 0, PH_BODY = 1, PH_BUSY = 2, PH_CLOSING = 3 };

struct mhd_guard_conn {
  mhd_guard_conn *prev, *next; /* g->conns, under g->lock */
  int fd;
  char addr[INET6_ADDRSTRLEN];
  atomic_int phase;
  atomic_int kept; /* a request was answered before: keep-alive deadline */
  _Atomic int64_t since_ms; /* start of the current phase */
  _Atomic uint64_t bytes;   /* body bytes of the current request */
};

typedef struct reason_log {
  uint64_t count;    /* closes since the last line */
  int64_t logged_at; /* last line, monotonic ms; 0: never */
  char example[INET6_ADDRSTRLEN];
} reason_log;

typedef struct mhd_log_slot {
  const char *fmt; /* the message's format string: its identity */
  int64_t at;      /* last logged, monotonic ms */
  unsigned left_out;
} mhd_log_slot;

struct mhd_guard {
  mhd_guard_cfg cfg;
  mhd_guard_hooks h;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
  int stop;
  mhd_guard_conn *conns; /* open connections */
  unsigned nconns;
  reason_log logs[MHD_GUARD_NREASONS];
  mhd_log_slot mhd_logs[MHD_LOG_SLOTS];
};

static const char *const REASON_CODE[MHD_GUARD_NREASONS] = {
    "head_timeout", "body_timeout", "body_rate", "evicted", "body_too_large"};

const char *mhd_guard_reason_code(mhd_guard_reason why) {
  return why < MHD_GUARD_NREASONS ? REASON_CODE[why] : "unknown";
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Counts a close and logs at most once per LOG_EVERY_MS per reason, with
 * the count since the last line. Without g->lock held. */
static void note(mhd_guard *g, mhd_guard_reason why, const char *addr) {
  if (g->h.closed) g->h.closed(g->h.arg, why);
  int64_t now = mono_ms();
  pthread_mutex_lock(&g->lock);
  reason_log *l = &g->logs[why];
  l->count++;
  if (addr && *addr) snprintf(l->example, sizeof l->example, "%s", addr);
  int emit = l->logged_at == 0 || now - l->logged_at >= LOG_EVERY_MS;
  uint64_t count = l->count;
  char example[INET6_ADDRSTRLEN];
  memcpy(example, l->example, sizeof example);
  if (emit) {
    l->logged_at = now;
    l->count = 0;
  }
  pthread_mutex_unlock(&g->lock);
  if (!emit || !g->h.warn) return;
  char text[256] = "";
  if (g->h.describe) g->h.describe(g->h.arg, why, text, sizeof text);
  char line[512];
  snprintf(line, sizeof line,
           "%sclosed %llu connection(s) (%s): %s; last client %s (logged at "
           "most every %d s)",
           g->cfg.log_prefix ? g->cfg.log_prefix : "",
           (unsigned long long)count, REASON_CODE[why], text,
           example[0] ? example : "?", LOG_EVERY_MS / 1000);
  g->h.warn(g->h.arg, line);
}

/* Closes rec's connection when it is still in phase `expect`. Under
 * g->lock (the record cannot be freed meanwhile). 1 when closed. */
static int close_locked(mhd_guard_conn *rec, int expect) {
  if (!atomic_compare_exchange_strong(&rec->phase, &expect, PH_CLOSING))
    return 0;
  shutdown(rec->fd, SHUT_RDWR); /* libmicrohttpd closes on its thread */
  return 1;
}

typedef struct closed_one {
  mhd_guard_reason why;
  char addr[INET6_ADDRSTRLEN];
} closed_one;

static void *sweeper(void *arg) {
  mhd_guard *g = arg;
  const mhd_guard_cfg *c = &g->cfg;
  closed_one batch[64];
  pthread_mutex_lock(&g->lock);
  while (!g->stop) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += (long)c->sweep_ms * 1000000L;
    while (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&g->cond, &g->lock, &ts);
    if (g->stop) break;
    int64_t now = mono_ms();
    size_t nb = 0;
    for (mhd_guard_conn *r = g->conns; r; r = r->next) {
      int ph = atomic_load(&r->phase);
      int64_t age = now - atomic_load(&r->since_ms);
      mhd_guard_reason why = MHD_GUARD_NREASONS;
      if (ph == PH_HEAD &&
          age > (atomic_load(&r->kept) ? c->keepalive_ms : c->head_ms))
        why = MHD_GUARD_HEAD_TIMEOUT;
      else if (ph == PH_BODY && age > c->body_ms)
        why = MHD_GUARD_BODY_TIMEOUT;
      else if (ph == PH_BODY && c->min_rate && age > MHD_GUARD_RATE_GRACE_MS &&
               atomic_load(&r->bytes) * 1000 < c->min_rate * (uint64_t)age)
        why = MHD_GUARD_BODY_RATE;
      if (why == MHD_GUARD_NREASONS || !close_locked(r, ph)) continue;
      if (nb < sizeof batch / sizeof *batch) { /* the rest: counted next time */
        batch[nb].why = why;
        memcpy(batch[nb].addr, r->addr, sizeof r->addr);
        nb++;
      }
    }
    pthread_mutex_unlock(&g->lock); /* not held over the owner's hooks */
    for (size_t i = 0; i < nb; i++)
      note(g, batch[i].why, batch[i].addr);
    pthread_mutex_lock(&g->lock);
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

mhd_guard *mhd_guard_new(const mhd_guard_cfg *cfg, const mhd_guard_hooks *h) {
  mhd_guard *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->cfg = *cfg;
  if (g->cfg.sweep_ms <= 0) g->cfg.sweep_ms = 250;
  g->h = *h;
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->cond, NULL);
  if (pthread_create(&g->thread, NULL, sweeper, g) != 0) {
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g);
    return NULL;
  }
  if (cfg->thread_name) pthread_setname_np(g->thread, cfg->thread_name);
  return g;
}

void mhd_guard_free(mhd_guard *g) {
  if (!g) return;
  pthread_mutex_lock(&g->lock);
  g->stop = 1;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->lock);
  pthread_join(g->thread, NULL);
  for (mhd_guard_conn *r = g->conns, *next; r; r = next) {
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

mhd_guard_conn *mhd_guard_opened(mhd_guard *g, struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!g || !ci) return NULL;
  mhd_guard_conn *r = calloc(1, sizeof *r);
  if (!r) return NULL;
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
  if (g->h.open_changed) g->h.open_changed(g->h.arg, g->nconns);
  pthread_mutex_unlock(&g->lock);
  return r;
}

void mhd_guard_closed(mhd_guard *g, mhd_guard_conn *r) {
  if (!g || !r) return;
  pthread_mutex_lock(&g->lock);
  if (r->prev)
    r->prev->next = r->next;
  else
    g->conns = r->next;
  if (r->next) r->next->prev = r->prev;
  g->nconns--;
  if (g->h.open_changed) g->h.open_changed(g->h.arg, g->nconns);
  pthread_mutex_unlock(&g->lock);
  free(r);
}

unsigned mhd_guard_live(mhd_guard *g) {
  if (!g) return 0;
  unsigned live = 0;
  pthread_mutex_lock(&g->lock);
  /* a connection being closed counts until its thread cleaned up, but no
   * longer holds a slot a new one needs */
  for (mhd_guard_conn *r = g->conns; r; r = r->next)
    live += atomic_load(&r->phase) != PH_CLOSING;
  pthread_mutex_unlock(&g->lock);
  return live;
}

int mhd_guard_evict(mhd_guard *g) {
  if (!g) return 0;
  int64_t now = mono_ms();
  char addr[INET6_ADDRSTRLEN] = "";
  int closed = 0;
  pthread_mutex_lock(&g->lock);
  /* heads are short: the longest wait is the slowest or idlest client */
  mhd_guard_conn *victim = NULL;
  int64_t oldest = now - EVICT_MIN_AGE_MS;
  for (mhd_guard_conn *r = g->conns; r; r = r->next) {
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
  if (closed) note(g, MHD_GUARD_EVICTED, addr);
  return closed;
}

static mhd_guard_conn *rec_of(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

void mhd_guard_head_done(struct MHD_Connection *conn) {
  mhd_guard_conn *r = rec_of(conn);
  if (!r) return;
  atomic_store(&r->bytes, 0);
  atomic_store(&r->since_ms, mono_ms());
  int expect = PH_HEAD;
  if (!atomic_compare_exchange_strong(&r->phase, &expect, PH_BODY)) {
    expect = PH_BUSY; /* back from a wait before the body (e.g. JWKS) */
    atomic_compare_exchange_strong(&r->phase, &expect, PH_BODY);
  }
}

void mhd_guard_body(struct MHD_Connection *conn, size_t n) {
  mhd_guard_conn *r = rec_of(conn);
  if (r) atomic_fetch_add(&r->bytes, n);
}

int mhd_guard_busy(struct MHD_Connection *conn) {
  mhd_guard_conn *r = rec_of(conn);
  if (!r) return 1;
  int ph = atomic_load(&r->phase);
  while (ph != PH_CLOSING &&
         !atomic_compare_exchange_weak(&r->phase, &ph, PH_BUSY)) {
  }
  return ph != PH_CLOSING;
}

void mhd_guard_request_done(struct MHD_Connection *conn) {
  mhd_guard_conn *r = rec_of(conn);
  if (!r) return;
  atomic_store(&r->kept, 1);
  atomic_store(&r->since_ms, mono_ms());
  int expect = PH_BUSY;
  if (!atomic_compare_exchange_strong(&r->phase, &expect, PH_HEAD)) {
    expect = PH_BODY; /* answered before its body was read */
    atomic_compare_exchange_strong(&r->phase, &expect, PH_HEAD);
  }
}

void mhd_guard_note(mhd_guard *g, struct MHD_Connection *conn,
                    mhd_guard_reason why) {
  if (!g || why >= MHD_GUARD_NREASONS) return;
  char addr[INET6_ADDRSTRLEN];
  addr_text(conn, addr, sizeof addr);
  note(g, why, addr);
}

void mhd_guard_mhd_log(mhd_guard *g, const char *fmt, va_list ap) {
  if (!g) return;
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
  if (!emit || !g->h.warn) return;
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
    msg[--n] = '\0';
  char line[640];
  const char *pre = g->cfg.log_prefix ? g->cfg.log_prefix : "";
  if (left_out)
    snprintf(line, sizeof line,
             "%slibmicrohttpd: %s (and %u more like it in the last %d s)", pre,
             msg, left_out, LOG_EVERY_MS / 1000);
  else
    snprintf(line, sizeof line, "%slibmicrohttpd: %s", pre, msg);
  g->h.warn(g->h.arg, line);
}
