/* The admin API's connection guard (ceb_admin_conns.h says why and how). */
#include "admin/ceb_admin_conns.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "log/ceb_log.h"

#define SWEEP_MS 100          /* how often deadlines are checked */
#define EVICT_MIN_AGE_MS 1000 /* a newer connection is not evicted */
#define LOG_EVERY_MS 10000
#define MHD_LOG_SLOTS 16 /* distinct libmicrohttpd messages tracked */

enum { PH_HEAD = 0, PH_BODY = 1, PH_BUSY = 2, PH_CLOSING = 3 };
enum { WHY_HEAD = 0, WHY_BODY, WHY_EVICTED, WHY_N };

static const char *const WHY_CODE[WHY_N] = {"head_timeout", "body_timeout",
                                            "evicted"};

struct ceb_admin_conn {
  ceb_admin_conn *prev, *next; /* g->conns, under g->lock */
  ceb_admin_conns *g;
  int fd;
  char addr[INET6_ADDRSTRLEN];
  atomic_int phase;
  atomic_int kept;          /* answered a request before: keep-alive */
  _Atomic int64_t since_ms; /* start of the current phase */
};

typedef struct why_log {
  uint64_t count;    /* closes since the last line */
  int64_t logged_at; /* last line, monotonic ms; 0: never */
  char last[INET6_ADDRSTRLEN];
} why_log;

typedef struct mhd_log_slot {
  const char *fmt; /* the message's format string: its identity */
  int64_t at;      /* last logged, monotonic ms */
  unsigned left_out;
} mhd_log_slot;

struct ceb_admin_conns {
  ceb_metrics *metrics;
  ceb_admin_conns_cfg cfg;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  pthread_t thread;
  int stop;
  ceb_admin_conn *conns; /* open connections */
  unsigned nconns;
  why_log logs[WHY_N];
  mhd_log_slot mhd_logs[MHD_LOG_SLOTS];
};

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Counts a close; logs at most once per LOG_EVERY_MS per reason, with the
 * count since the last line. Without g->lock held. */
static void note(ceb_admin_conns *g, int why, const char *addr) {
  char labels[48];
  snprintf(labels, sizeof labels, "reason=\"%s\"", WHY_CODE[why]);
  ceb_metrics_add(g->metrics, "cebridge_admin_connections_closed_total", labels,
                  1);
  int64_t now = mono_ms();
  pthread_mutex_lock(&g->lock);
  why_log *l = &g->logs[why];
  l->count++;
  if (addr[0]) snprintf(l->last, sizeof l->last, "%s", addr);
  int emit = l->logged_at == 0 || now - l->logged_at >= LOG_EVERY_MS;
  uint64_t count = l->count;
  char last[INET6_ADDRSTRLEN];
  memcpy(last, l->last, sizeof last);
  if (emit) {
    l->logged_at = now;
    l->count = 0;
  }
  pthread_mutex_unlock(&g->lock);
  if (!emit) return;
  const ceb_admin_conns_cfg *c = &g->cfg;
  char text[200];
  if (why == WHY_HEAD)
    snprintf(text, sizeof text,
             "request head not complete within admin.request_head_timeout "
             "(%lld ms; %lld ms for the next request of a kept-alive "
             "connection)",
             (long long)c->head_ms, (long long)c->keepalive_ms);
  else if (why == WHY_BODY)
    snprintf(text, sizeof text,
             "request body not complete within admin.request_body_timeout "
             "(%lld ms)",
             (long long)c->body_ms);
  else
    snprintf(text, sizeof text,
             "waiting longest for a request head while all %u connections "
             "were taken (closed for a new client)",
             c->max_conn);
  /* the address is inet_ntop's text; ceb_log escapes control characters
   * of whatever it is handed anyway */
  ceb_log_warn("admin API: closed %llu connection(s) (%s): %s; last client "
               "%s (logged at most every %d s)",
               (unsigned long long)count, WHY_CODE[why], text,
               last[0] ? last : "?", LOG_EVERY_MS / 1000);
}

/* Closes rec's connection when it is still in phase `expect`. Under
 * g->lock (the record cannot be freed meanwhile). 1 when closed. */
static int close_locked(ceb_admin_conn *rec, int expect) {
  if (!atomic_compare_exchange_strong(&rec->phase, &expect, PH_CLOSING))
    return 0;
  shutdown(rec->fd, SHUT_RDWR); /* its thread sees the end and cleans up */
  return 1;
}

typedef struct closed_one {
  int why;
  char addr[INET6_ADDRSTRLEN];
} closed_one;

static void *sweeper(void *arg) {
  ceb_admin_conns *g = arg;
  const ceb_admin_conns_cfg *c = &g->cfg;
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
    for (ceb_admin_conn *r = g->conns; r; r = r->next) {
      int ph = atomic_load(&r->phase);
      int64_t age = now - atomic_load(&r->since_ms);
      int why = WHY_N;
      if (ph == PH_HEAD &&
          age > (atomic_load(&r->kept) ? c->keepalive_ms : c->head_ms))
        why = WHY_HEAD;
      else if (ph == PH_BODY && age > c->body_ms)
        why = WHY_BODY;
      if (why == WHY_N || !close_locked(r, ph)) continue;
      if (nb < sizeof batch / sizeof *batch) { /* the rest: next sweep's */
        batch[nb].why = why;
        memcpy(batch[nb].addr, r->addr, sizeof r->addr);
        nb++;
      }
    }
    pthread_mutex_unlock(&g->lock); /* not held over logging */
    for (size_t i = 0; i < nb; i++)
      note(g, batch[i].why, batch[i].addr);
    pthread_mutex_lock(&g->lock);
  }
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

ceb_admin_conns *ceb_admin_conns_new(ceb_metrics *metrics,
                                     const ceb_admin_conns_cfg *cfg) {
  ceb_admin_conns *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->metrics = metrics;
  g->cfg = *cfg;
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->cond, NULL);
  if (pthread_create(&g->thread, NULL, sweeper, g) != 0) {
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
    free(g);
    return NULL;
  }
  pthread_setname_np(g->thread, "admin-guard");
  return g;
}

void ceb_admin_conns_free(ceb_admin_conns *g) {
  if (!g) return;
  pthread_mutex_lock(&g->lock);
  g->stop = 1;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->lock);
  pthread_join(g->thread, NULL);
  for (ceb_admin_conn *r = g->conns, *next; r; r = next) {
    next = r->next; /* none left once the daemon stopped */
    free(r);
  }
  pthread_cond_destroy(&g->cond);
  pthread_mutex_destroy(&g->lock);
  free(g);
}

static void addr_text(struct MHD_Connection *c, char *buf, size_t n) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
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

ceb_admin_conn *ceb_admin_conns_opened(ceb_admin_conns *g,
                                       struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!g || !ci) return NULL;
  ceb_admin_conn *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->g = g;
  r->fd = ci->connect_fd;
  addr_text(c, r->addr, sizeof r->addr);
  atomic_init(&r->phase, PH_HEAD);
  atomic_init(&r->kept, 0);
  atomic_init(&r->since_ms, mono_ms());
  pthread_mutex_lock(&g->lock);
  r->next = g->conns;
  if (g->conns) g->conns->prev = r;
  g->conns = r;
  g->nconns++;
  pthread_mutex_unlock(&g->lock);
  return r;
}

void ceb_admin_conns_closed(ceb_admin_conns *g, ceb_admin_conn *r) {
  if (!g || !r) return;
  pthread_mutex_lock(&g->lock);
  if (r->prev)
    r->prev->next = r->next;
  else
    g->conns = r->next;
  if (r->next) r->next->prev = r->prev;
  g->nconns--;
  pthread_mutex_unlock(&g->lock);
  free(r);
}

int ceb_admin_conns_admit(ceb_admin_conns *g) {
  if (!g) return 1;
  int64_t now = mono_ms();
  char addr[INET6_ADDRSTRLEN] = "";
  int ok = 0, evicted = 0;
  pthread_mutex_lock(&g->lock);
  /* a connection being closed still counts until its thread cleaned up:
   * only the open ones that are not closing hold a slot a new one needs */
  unsigned live = 0;
  for (ceb_admin_conn *r = g->conns; r; r = r->next)
    live += atomic_load(&r->phase) != PH_CLOSING;
  if (live < g->cfg.max_conn) {
    ok = 1;
  } else {
    /* heads are short: the longest wait is the slowest or idlest client */
    ceb_admin_conn *victim = NULL;
    int64_t oldest = now - EVICT_MIN_AGE_MS;
    for (ceb_admin_conn *r = g->conns; r; r = r->next) {
      int64_t since = atomic_load(&r->since_ms);
      if (atomic_load(&r->phase) == PH_HEAD && since <= oldest) {
        oldest = since;
        victim = r;
      }
    }
    if (victim && close_locked(victim, PH_HEAD)) {
      ok = evicted = 1;
      memcpy(addr, victim->addr, sizeof addr);
    }
  }
  pthread_mutex_unlock(&g->lock);
  if (evicted) note(g, WHY_EVICTED, addr);
  return ok;
}

static ceb_admin_conn *rec_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

void ceb_admin_conns_head_done(struct MHD_Connection *c) {
  ceb_admin_conn *r = rec_of(c);
  if (!r) return;
  atomic_store(&r->since_ms, mono_ms());
  int expect = PH_HEAD;
  atomic_compare_exchange_strong(&r->phase, &expect, PH_BODY);
}

int ceb_admin_conns_busy(struct MHD_Connection *c) {
  ceb_admin_conn *r = rec_of(c);
  if (!r) return 1;
  int ph = atomic_load(&r->phase);
  while (ph != PH_CLOSING &&
         !atomic_compare_exchange_weak(&r->phase, &ph, PH_BUSY)) {
  }
  return ph != PH_CLOSING;
}

void ceb_admin_conns_done(struct MHD_Connection *c) {
  ceb_admin_conn *r = rec_of(c);
  if (!r) return;
  atomic_store(&r->kept, 1);
  atomic_store(&r->since_ms, mono_ms());
  int expect = PH_BUSY;
  if (!atomic_compare_exchange_strong(&r->phase, &expect, PH_HEAD)) {
    expect = PH_BODY; /* answered from its head, before a body */
    atomic_compare_exchange_strong(&r->phase, &expect, PH_HEAD);
  }
}

void ceb_admin_conns_mhd_log(void *cls, const char *fmt, va_list ap) {
  ceb_admin_conns *g = cls;
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
    ceb_log_warn("admin API: libmicrohttpd: %s (and %u more like it in the "
                 "last %d s)",
                 msg, left_out, LOG_EVERY_MS / 1000);
  else
    ceb_log_warn("admin API: libmicrohttpd: %s", msg);
}
