/* The intermediary's listeners: N daemons on SO_REUSEPORT sockets, and the
 * connection limits counted across them (http_in_listen.h says why). */
#include "http_in_listen.h"

#include "http_guard.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IP_BUCKETS 256
#define LOG(s, lvl, ...) CEB_LOG((s)->host, (s)->inst, lvl, __VA_ARGS__)

typedef struct ip_count {
  struct ip_count *next;
  unsigned char addr[16];
  size_t len;
  unsigned n;
} ip_count;

/* Open connections: in total and per client address. */
struct http_conns {
  pthread_mutex_t lock;
  unsigned total;
  int64_t warned_at; /* host clock of the last refusal warning */
  ip_count *buckets[IP_BUCKETS];
};

/* The address bytes of a client: 4 for IPv4, 16 for IPv6; 0 otherwise. */
static size_t addr_key(const struct sockaddr *sa, unsigned char out[16]) {
  if (sa && sa->sa_family == AF_INET) {
    memcpy(out, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    return 4;
  }
  if (sa && sa->sa_family == AF_INET6) {
    memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    return 16;
  }
  return 0;
}

static ip_count **slot(http_conns *c, const unsigned char *key, size_t len) {
  unsigned h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < len; i++)
    h = (h ^ key[i]) * 16777619u;
  ip_count **p = &c->buckets[h % IP_BUCKETS];
  while (*p && ((*p)->len != len || memcmp((*p)->addr, key, len) != 0))
    p = &(*p)->next;
  return p;
}

/* Accept policy: refuses a connection over a limit before libmicrohttpd
 * sets it up. Counting happens on the STARTED notification, so a burst can
 * pass the check together and overshoot a limit by a few, never for
 * long. */
static enum MHD_Result accept_policy(void *cls, const struct sockaddr *addr,
                                     socklen_t addrlen) {
  (void)addrlen;
  http_source *s = cls;
  http_conns *c = s->conns;
  unsigned char key[16];
  size_t len = addr_key(addr, key);
  pthread_mutex_lock(&c->lock);
  int ok = 1, may_evict = 1;
  if (len) {
    ip_count *e = *slot(c, key, len);
    ok = !e || e->n < s->max_conn_per_ip;
    /* an address holding half its share already does not push others out
     * (else many connections from few addresses churn every slot) */
    may_evict = !e || e->n < s->max_conn_per_ip / 2;
  }
  unsigned total = c->total;
  pthread_mutex_unlock(&c->lock);
  /* Near the limit the guard closes the connection waiting longest for its
   * head; this one takes its place at once (the count drops when the
   * closed one is cleaned up: a burst overshoots by at most the reserve). */
  if (ok)
    ok = total < s->max_conn ||
         (may_evict && total < s->max_conn + s->guard_cfg.reserve &&
          http_guard_admit(s->guard, total));
  int64_t now = s->host->now_ms(s->inst);
  pthread_mutex_lock(&c->lock);
  int warn = !ok && now - c->warned_at >= 10000;
  if (warn) c->warned_at = now;
  pthread_mutex_unlock(&c->lock);
  if (warn) /* at most every 10 s */
    LOG(s, CEB_LOG_WARN,
        "refusing connections: %u open (max_connections %u, "
        "max_connections_per_ip %u)",
        total, s->max_conn, s->max_conn_per_ip);
  return ok ? MHD_YES : MHD_NO;
}

static void count_connection(void *cls, struct MHD_Connection *conn,
                             void **socket_ctx,
                             enum MHD_ConnectionNotificationCode code) {
  http_source *s = cls;
  http_conns *c = s->conns;
  const union MHD_ConnectionInfo *ci =
      MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  unsigned char key[16];
  size_t len = addr_key(ci ? ci->client_addr : NULL, key);
  int opened = code == MHD_CONNECTION_NOTIFY_STARTED;
  pthread_mutex_lock(&c->lock);
  if (opened)
    c->total++;
  else if (c->total > 0)
    c->total--;
  if (len) {
    ip_count **p = slot(c, key, len);
    if (opened) {
      if (!*p && (*p = calloc(1, sizeof **p)) != NULL) {
        memcpy((*p)->addr, key, len);
        (*p)->len = len;
      }
      if (*p) (*p)->n++;
    } else if (*p && --(*p)->n == 0) {
      ip_count *gone = *p;
      *p = gone->next;
      free(gone);
    }
  }
  pthread_mutex_unlock(&c->lock);
  if (opened)
    *socket_ctx = http_guard_opened(s->guard, conn);
  else
    http_guard_closed(s->guard, *socket_ctx);
}

static void conns_free(http_conns *c) {
  if (!c) return;
  for (size_t i = 0; i < IP_BUCKETS; i++)
    for (ip_count *e = c->buckets[i], *next; e; e = next) {
      next = e->next;
      free(e);
    }
  pthread_mutex_destroy(&c->lock);
  free(c);
}

static socklen_t addr_len(const struct sockaddr_storage *ss) {
  return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                   : sizeof(struct sockaddr_in);
}

static in_port_t *port_of(struct sockaddr_storage *ss) {
  return ss->ss_family == AF_INET6 ? &((struct sockaddr_in6 *)ss)->sin6_port
                                   : &((struct sockaddr_in *)ss)->sin_port;
}

/* Binds a plain socket (no SO_REUSEPORT) to find out whether the address is
 * free, and which port 0 stands for. Without this probe a second bridge of
 * the same user on the same port would join the reuseport group and take
 * half the traffic instead of failing. The port stays unbound for the
 * moment between the probe and the daemons' binds. */
static int probe(http_source *s, struct sockaddr_storage *ss) {
  int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (ss->ss_family == AF_INET6)
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  int rc = 0;
  if (bind(fd, (struct sockaddr *)ss, addr_len(ss)) != 0) {
    rc = errno;
  } else if (*port_of(ss) == 0) {
    struct sockaddr_storage got;
    socklen_t len = sizeof got;
    if (getsockname(fd, (struct sockaddr *)&got, &len) != 0)
      rc = errno;
    else
      *port_of(ss) = *port_of(&got);
  }
  close(fd);
  (void)s;
  return rc;
}

int http_listen_start(http_source *s, const struct sockaddr_storage *ss_in,
                      unsigned flags, const struct MHD_OptionItem *opts) {
  struct sockaddr_storage ss = *ss_in;
  unsigned n = s->threads ? s->threads : 1;
  if (n > HTTP_LISTEN_MAX) n = HTTP_LISTEN_MAX;
  int err = probe(s, &ss);
  if (err) {
    LOG(s, CEB_LOG_ERROR, "cannot listen on %s:%d: %s", s->listen_host,
        s->listen_port, strerror(err));
    return CEB_EIO;
  }
  s->conns = calloc(1, sizeof *s->conns);
  if (!s->conns) return CEB_ENOMEM;
  pthread_mutex_init(&s->conns->lock, NULL);
  s->guard = http_guard_new(s->host, s->inst, &s->guard_cfg);
  if (!s->guard) {
    http_listen_stop(s);
    return CEB_ENOMEM;
  }
  /* the daemons' own connection limits in opts only backstop these (each
   * counts its share) */
  struct MHD_OptionItem all[24];
  size_t k = 0;
  for (; opts[k].option != MHD_OPTION_END; k++) {
    if (k == 20) {
      LOG(s, CEB_LOG_ERROR, "listen: too many daemon options (a bug)");
      return CEB_EINTERNAL;
    }
    all[k] = opts[k];
  }
  all[k++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, &ss};
  all[k++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION,
                                     (intptr_t)count_connection, s};
  if (n > 1)
    all[k++] =
        (struct MHD_OptionItem){MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL};
  all[k] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
  for (unsigned i = 0; i < n; i++) {
    s->daemons[i] =
        MHD_start_daemon(flags, 0, accept_policy, s, http_source_handle, s,
                         MHD_OPTION_ARRAY, all, MHD_OPTION_END);
    if (!s->daemons[i]) {
      LOG(s, CEB_LOG_ERROR,
          "cannot listen on %s:%d (listener %u of %u: address in use, "
          "permissions or TLS material)",
          s->listen_host, s->listen_port, i + 1, n);
      http_listen_stop(s);
      return CEB_EIO;
    }
    s->ndaemons = i + 1;
  }
  s->bound_port = ntohs(*port_of(&ss));
  return CEB_OK;
}

void http_listen_stop(http_source *s) {
  for (unsigned i = 0; i < s->ndaemons; i++)
    MHD_stop_daemon(s->daemons[i]);
  s->ndaemons = 0;
  http_guard_free(s->guard); /* after the daemons: no connection is left */
  s->guard = NULL;
  conns_free(s->conns);
  s->conns = NULL;
}
