/* LISTEN/NOTIFY between the bridges sharing a database (pg_cluster.h).
 *
 * One thread, one connection of its own: it LISTENs on "ceb_work" (routes
 * with new claimable deliveries) and "ceb_pull" (pull queues appended to),
 * sends the notifications the engine queued (one statement per round for
 * every route and queue queued meanwhile, so a busy committer costs one
 * round trip per round, not per group) and turns the other bridges'
 * notifications into calls of the wake listener (routes) and of the
 * store's pull listener (queues: the long polls of pull consumers). Its own
 * notifications come back to it too (a session hears what it sends on a channel
 * it listens to): they are recognised by the backend pid and dropped. A
 * notification is a hint: one lost with a connection is made up by a wake-up of
 * every route after the reconnect, and by the engine's poll
 * (store.poll_interval).
 *
 * Only to listeners: a NOTIFY is a transaction of its own with a commit
 * record (a WAL flush) and a wake-up of every listening session, paid per
 * round even when no other bridge listens (one bridge alone: 7 % of
 * PostgreSQL's CPU under load, bench/store/RESULTS.md 2026-12-06 session
 * 14). So the thread sends only while it knows of another listener: it
 * counts the other "cebridge-listen" sessions of the database when it
 * connects and at each ping, and a listener that starts says hello (an
 * empty notification: "look at every route"), which tells the others at
 * once. The count is read before the notifications that arrived with it
 * are handled, so a hello sent after the count's snapshot is never
 * overwritten by it. While none listens, queued names are dropped: the
 * bridge that starts looks at every route itself. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/postgres/pg_cluster.h"
#include "store/postgres/pg_internal.h"

#define NOTIFY_CHANNEL "ceb_work"
#define PULL_CHANNEL "ceb_pull"
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
/* A frozen bridge's listener must not hold the server's notification queue
 * (PostgreSQL keeps every notification until each listener read it): the
 * session ends after LISTEN_IDLE_MS idle, and a live thread's ping every
 * LISTEN_PING_MS keeps it. */
#define LISTEN_IDLE_MS 30000
#define LISTEN_PING_MS 5000

struct cebpg_cluster {
  ceb_store_impl *s;
  pthread_t thread;
  int started;
  int pipe[2]; /* wakes the thread's poll: routes queued, or stop */
  pthread_mutex_t lock;
  int stop;
  char **routes; /* to notify, distinct */
  size_t nroutes, cap;
  char **pulls; /* pull queues to notify, distinct */
  size_t npulls, pcap;
  ceb_store_wake_fn wake;
  void *wake_arg;
  /* other listeners: 1 some, 0 none, -1 not counted yet (before the
   * first connection: names wait for it). Set by the thread. */
  _Atomic int peers;
  _Atomic uint64_t sent, skipped; /* names (cebpg_notify_counts) */
};

static void poke(cebpg_cluster *c) {
  char b = 1;
  ssize_t w = write(c->pipe[1], &b, 1); /* full: a poke is pending anyway */
  (void)w;
}

void cebpg_notify_set_listener(cebpg_cluster *c, ceb_store_wake_fn fn,
                               void *arg) {
  if (!c) return;
  pthread_mutex_lock(&c->lock);
  c->wake = fn;
  c->wake_arg = arg;
  pthread_mutex_unlock(&c->lock);
}

/* Adds name to a distinct list under c->lock; 1 when the list was empty
 * (the thread needs a poke). A name not added (out of memory) is a lost
 * hint: the others' polls find the work. */
static int add_name(char ***list, size_t *n, size_t *cap, const char *name) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*list)[i], name) == 0) return 0;
  if (*n == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    char **nl = realloc(*list, nc * sizeof *nl);
    if (!nl) return 0;
    *list = nl;
    *cap = nc;
  }
  char *d = strdup(name);
  if (d) (*list)[(*n)++] = d;
  return d && *n == 1;
}

/* Queues name on a route's (pull 0) or a pull queue's (pull 1) list for
 * the thread. Dropped at once while no other bridge is known to listen
 * (no lock, no wake-up of the thread per group); one queued meanwhile is
 * dropped by the thread. */
static void queue_name(cebpg_cluster *c, int pull, const char *name) {
  if (!c || !name) return;
  if (atomic_load(&c->peers) == 0) {
    atomic_fetch_add(&c->skipped, 1);
    return;
  }
  pthread_mutex_lock(&c->lock);
  int first = pull ? add_name(&c->pulls, &c->npulls, &c->pcap, name)
                   : add_name(&c->routes, &c->nroutes, &c->cap, name);
  pthread_mutex_unlock(&c->lock);
  if (first) poke(c);
}

void cebpg_notify_route(cebpg_cluster *c, const char *route) {
  queue_name(c, 0, route);
}

void cebpg_notify_pull(cebpg_cluster *c, const char *queue) {
  queue_name(c, 1, queue);
}

void cebpg_notify_counts(cebpg_cluster *c, uint64_t *sent, uint64_t *skipped) {
  *sent = c ? atomic_load(&c->sent) : 0;
  *skipped = c ? atomic_load(&c->skipped) : 0;
}

/* Another bridge's work: to the listener set here, else to the store
 * handle's wake listener (the delivery engine, ceb_store_woken). */
static void wake(cebpg_cluster *c, const char *route) {
  pthread_mutex_lock(&c->lock);
  ceb_store_wake_fn fn = c->wake;
  void *arg = c->wake_arg;
  pthread_mutex_unlock(&c->lock);
  if (fn)
    fn(arg, route);
  else if (c->s->owner)
    ceb_store_woken(c->s->owner, route);
}

static void free_names(char **list, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(list[i]);
  free(list);
}

/* Sends the queued notifications (routes and pull queues) in one
 * statement. 0, or -1 when the connection failed (they are dropped:
 * hints). */
static int send_queued(cebpg_cluster *c, PGconn *conn) {
  pthread_mutex_lock(&c->lock);
  char **routes = c->routes, **pulls = c->pulls;
  size_t n = c->nroutes, np = c->npulls;
  c->routes = c->pulls = NULL;
  c->nroutes = c->cap = c->npulls = c->pcap = 0;
  pthread_mutex_unlock(&c->lock);
  if (atomic_load(&c->peers) == 0) { /* no one else listens */
    atomic_fetch_add(&c->skipped, n + np);
    free_names(routes, n);
    free_names(pulls, np);
    return 0;
  }
  if (!n && !np) return 0;
  cebpg_buf ch = {0}, arr = {0};
  cebpg_buf_add(&ch, "{", 1);
  cebpg_buf_add(&arr, "{", 1);
  for (size_t i = 0; i < n + np; i++) {
    const char *chan = i < n ? NOTIFY_CHANNEL : PULL_CHANNEL;
    const char *name = i < n ? routes[i] : pulls[i - n];
    cebpg_buf_elem(&ch, chan, strlen(chan), i == 0);
    cebpg_buf_elem(&arr, name, strlen(name), i == 0);
  }
  cebpg_buf_add(&ch, "}", 1);
  cebpg_buf_add(&arr, "}", 1);
  int rc = 0;
  if (!arr.oom && !ch.oom) {
    const char *v[2] = {ch.p, arr.p};
    PGresult *r = PQexecPrepared(conn, "ceb_notify", 2, v, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
      rc = -1;
    else
      atomic_fetch_add(&c->sent, n + np);
    PQclear(r);
  }
  cebpg_buf_free(&ch);
  cebpg_buf_free(&arr);
  free_names(routes, n);
  free_names(pulls, np);
  return rc;
}

/* The other listeners of the database: 1 when there is one, 0 when
 * none, -1 when the connection failed. Also the session's ping. */
static int count_peers(PGconn *conn) {
  PGresult *r = PQexec(conn, "SELECT count(*) > 0 FROM pg_stat_activity"
                             " WHERE datname = current_database() AND"
                             " application_name = 'cebridge-listen' AND"
                             " pid <> pg_backend_pid()");
  int rc = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1
               ? PQgetvalue(r, 0, 0)[0] == 't'
               : -1;
  PQclear(r);
  return rc;
}

/* Waits ms (or until poked), draining the pipe. */
static void nap(cebpg_cluster *c, int ms) {
  struct pollfd p = {.fd = c->pipe[0], .events = POLLIN};
  if (poll(&p, 1, ms) > 0) {
    char buf[64];
    while (read(c->pipe[0], buf, sizeof buf) > 0)
      ;
  }
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int stopping(cebpg_cluster *c) {
  pthread_mutex_lock(&c->lock);
  int s = c->stop;
  pthread_mutex_unlock(&c->lock);
  return s;
}

static void *listener_main(void *arg) {
  cebpg_cluster *c = arg;
  PGconn *conn = NULL;
  int mypid = 0, backoff = BACKOFF_MIN_MS, had = 0;
  int64_t ping_at = 0;
  while (!stopping(c)) {
    if (!conn) {
      char err[400] = "";
      conn = cebpg_pool_connect(c->s->pool, err, sizeof err);
      char set[80];
      snprintf(set, sizeof set, "SET idle_session_timeout = %d",
               LISTEN_IDLE_MS);
      if (conn) PQclear(PQexec(conn, set)); /* refused before 14: harmless */
      PGresult *r =
          conn ? PQexec(conn, "LISTEN " NOTIFY_CHANNEL "; LISTEN " PULL_CHANNEL)
               : NULL;
      int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
      PQclear(r);
      if (!ok) {
        if (conn) {
          cebpg_scrub(NULL, PQerrorMessage(conn), err, sizeof err);
          PQfinish(conn);
          conn = NULL;
        }
        ceb_log_debug("store: notifications: %s", err);
        nap(c, backoff);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
        continue;
      }
      backoff = BACKOFF_MIN_MS;
      /* named for pg_stat_activity (operators, tests) once it listens */
      PQclear(PQexec(conn, "SET application_name = 'cebridge-listen'"));
      mypid = PQbackendPID(conn);
      /* the others hear of this listener at once (they notify only while
       * they know of one), then this one counts them */
      PGresult *h = PQexec(conn, "NOTIFY " NOTIFY_CHANNEL);
      ok = PQresultStatus(h) == PGRES_COMMAND_OK;
      PQclear(h);
      if (ok) {
        h = PQprepare(conn, "ceb_notify",
                      "SELECT pg_notify(ch, r) FROM"
                      " unnest($1::text[], $2::text[]) AS x(ch, r)",
                      2, NULL);
        ok = PQresultStatus(h) == PGRES_COMMAND_OK;
        PQclear(h);
      }
      c->peers = ok ? count_peers(conn) : -1;
      if (c->peers < 0) {
        PQfinish(conn);
        conn = NULL;
        nap(c, backoff);
        continue;
      }
      ping_at = mono_ms() + LISTEN_PING_MS;
      if (had) {
        /* what the others sent while we were away is lost: look again */
        ceb_log_info("store: listening for other bridges' work again");
        wake(c, NULL);
        ceb_store_pull_woken(c->s->owner, NULL);
      }
      had = 1;
    }
    if (mono_ms() >= ping_at) {
      int peers = count_peers(conn);
      ping_at = mono_ms() + LISTEN_PING_MS;
      if (peers >= 0) c->peers = peers;
      if (peers < 0) {
        PQfinish(conn);
        conn = NULL;
        continue;
      }
    }
    if (send_queued(c, conn) != 0 || PQstatus(conn) != CONNECTION_OK) {
      PQfinish(conn);
      conn = NULL;
      continue;
    }
    struct pollfd p[2] = {{.fd = PQsocket(conn), .events = POLLIN},
                          {.fd = c->pipe[0], .events = POLLIN}};
    if (poll(p, 2, 1000) < 0 && errno != EINTR) {
      PQfinish(conn);
      conn = NULL;
      continue;
    }
    if (p[1].revents & POLLIN) {
      char buf[64];
      while (read(c->pipe[0], buf, sizeof buf) > 0)
        ;
    }
    if (!PQconsumeInput(conn)) {
      PQfinish(conn);
      conn = NULL;
      continue;
    }
    PGnotify *n;
    while ((n = PQnotifies(conn)) != NULL) {
      const char *what = n->extra && *n->extra ? n->extra : NULL;
      if (n->be_pid != mypid) { /* not our own */
        c->peers = 1; /* another listener: it hears ours from now on */
        if (strcmp(n->relname, PULL_CHANNEL) == 0)
          ceb_store_pull_woken(c->s->owner, what);
        else
          wake(c, what);
      }
      PQfreemem(n);
    }
  }
  /* what was queued last (a CLI replay that exits now) still goes out */
  if (conn && PQstatus(conn) == CONNECTION_OK) send_queued(c, conn);
  PQfinish(conn);
  return NULL;
}

int cebpg_notify_start(ceb_store_impl *s, cebpg_cluster **out, char *err,
                       size_t errlen) {
  *out = NULL;
  cebpg_cluster *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(err, errlen, "store: out of memory");
    return CEB_ENOMEM;
  }
  c->s = s;
  atomic_init(&c->peers, -1);
  if (pipe(c->pipe) != 0) {
    snprintf(err, errlen, "store: cannot make a pipe: %s", strerror(errno));
    free(c);
    return CEB_EIO;
  }
  for (int i = 0; i < 2; i++)
    fcntl(c->pipe[i], F_SETFL, fcntl(c->pipe[i], F_GETFL) | O_NONBLOCK);
  pthread_mutex_init(&c->lock, NULL);
  if (pthread_create(&c->thread, NULL, listener_main, c) != 0) {
    snprintf(err, errlen, "store: cannot start the notification thread");
    close(c->pipe[0]);
    close(c->pipe[1]);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return CEB_EINTERNAL;
  }
  pthread_setname_np(c->thread, "store-notify");
  c->started = 1;
  *out = c;
  return CEB_OK;
}

void cebpg_notify_stop(cebpg_cluster *c) {
  if (!c) return;
  pthread_mutex_lock(&c->lock);
  c->stop = 1;
  pthread_mutex_unlock(&c->lock);
  poke(c);
  if (c->started) pthread_join(c->thread, NULL);
  free_names(c->routes, c->nroutes);
  free_names(c->pulls, c->npulls);
  close(c->pipe[0]);
  close(c->pipe[1]);
  pthread_mutex_destroy(&c->lock);
  free(c);
}
