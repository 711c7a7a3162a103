/* ceb_floor_raw: the least work an HTTP/1.1 server does to answer a durable
 * 202, to measure the floor this machine sets under the bridge's "HTTP ->
 * durable 202" path (issue 18). One epoll thread on non-blocking keep-alive
 * sockets; each loop pass appends every body it read to one file with one
 * pwrite, makes them durable (--sync), then answers each with a 202.
 *
 * A bench tool, not a server: it understands a POST with a Content-Length
 * body over HTTP/1.1 and nothing else (no chunked bodies, no Expect, at
 * most 32 pipelined requests per connection); anything else gets a 400 and
 * the connection is closed.
 *
 *   ceb_floor_raw [--sync none|inline|thread] [--port N] [--port-file P]
 *                 [--file PATH] [--prealloc MIB]
 *
 * --sync none    no fdatasync: the TCP + HTTP floor
 * --sync inline  fdatasync in the loop; a group is what one epoll pass read
 * --sync thread  a second thread syncs group N while the loop reads group
 *                N+1 and hands the answers back through an eventfd (the
 *                bridge's shape: listener, committer/syncer, resume)
 * --prealloc M   the file is M MiB of zeros written and synced before
 *                listening, and the bodies overwrite it as a ring (default
 *                64): in steady state the bridge's SQLite WAL is overwritten
 *                in place (restarted at 4,000 frames, never shrunk), so its
 *                syncs carry no allocation; 0 appends to a growing file.
 *
 * SIGUSR1 prints the counters (answers, events, writes, syncs, bytes) to
 * stderr; SIGTERM or SIGINT prints them and exits 0. Threads: the loop
 * (main) and, with --sync thread, the syncer; they share only the group
 * numbers under one mutex. */
#include "floor_common.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_FDS 8192    /* connections are indexed by fd */
#define IN_CAP 65536    /* a connection's receive buffer: request + body */
#define HDR_MAX 8192    /* header block limit */
#define MAX_OWED 32     /* pipelined requests awaiting their answer */
#define MAX_EVENTS 256  /* epoll events per pass */
#define MAX_ACCEPT 64   /* accepts per pass */
#define RING (1u << 18) /* owed answers in flight (>= MAX_FDS * MAX_OWED) */

enum { SYNC_NONE, SYNC_INLINE, SYNC_THREAD };

static const char ANSWER[] = "HTTP/1.1 202 Accepted\r\n"
                             "Content-Type: application/json\r\n"
                             "Content-Length: 15\r\n\r\n"
                             "{\"accepted\":1}\n";
static const char BAD[] = "HTTP/1.1 400 Bad Request\r\n"
                          "Content-Length: 0\r\nConnection: close\r\n\r\n";

typedef struct conn {
  int fd;
  unsigned owed; /* answers not yet made */
  int queued;    /* in the pass's flush list */
  int want_out;  /* EPOLLOUT registered */
  size_t in_len;
  char *out; /* answers not yet sent */
  size_t out_len, out_off, out_cap;
  char in[IN_CAP];
} conn;

typedef struct owed {
  int fd;
  unsigned gen;
  uint64_t group;
} owed;

typedef struct floor_raw {
  int mode;
  int ep, lfd, sfd, efd;
  floor_file file;
  conn *conns[MAX_FDS];
  unsigned gens[MAX_FDS];
  owed *ring; /* FIFO of owed answers, in group order */
  size_t ring_head, ring_tail;
  char *grp; /* this pass's bodies */
  size_t grp_len, grp_cap;
  uint64_t group;     /* groups written */
  uint64_t durable;   /* groups durable (loop's copy) */
  int flush[MAX_FDS]; /* connections with answers to send this pass */
  size_t nflush;
  floor_counters n;
  /* shared with the syncer */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  uint64_t submitted, synced;
  int stop;
  pthread_t syncer;
} floor_raw;

static void conn_close(floor_raw *f, int fd) {
  conn *c = f->conns[fd];
  if (!c) return;
  close(fd);
  free(c->out);
  free(c);
  f->conns[fd] = NULL;
  f->gens[fd]++;
}

static void bad_request(floor_raw *f, conn *c) {
  (void)!send(c->fd, BAD, sizeof BAD - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
  conn_close(f, c->fd);
}

static int grp_add(floor_raw *f, const char *p, size_t n) {
  if (f->grp_len + n > f->grp_cap) {
    size_t cap = f->grp_cap ? f->grp_cap : 1 << 20;
    while (cap < f->grp_len + n)
      cap *= 2;
    char *g = realloc(f->grp, cap);
    if (!g) return -1;
    f->grp = g;
    f->grp_cap = cap;
  }
  memcpy(f->grp + f->grp_len, p, n);
  f->grp_len += n;
  return 0;
}

/* The Content-Length of a header block (its value, or -1 when it is absent,
 * malformed, or the request is one this tool does not take). */
static long content_length(const char *h, size_t hlen) {
  const char *eol = memchr(h, '\r', hlen);
  if (!eol || strncmp(h, "POST ", 5) != 0 || eol - h < 15 ||
      memcmp(eol - 9, " HTTP/1.1", 9) != 0)
    return -1;
  long len = -1;
  const char *end = h + hlen;
  for (const char *p = eol + 2; p < end; p = eol + 2) {
    eol = memchr(p, '\r', (size_t)(end - p));
    if (!eol) break;
    size_t n = (size_t)(eol - p);
    if (n > 15 && strncasecmp(p, "content-length:", 15) == 0) {
      char *stop;
      const char *v = p + 15;
      while (*v == ' ')
        v++;
      len = strtol(v, &stop, 10);
      if (stop == v || len < 0) return -1;
    } else if ((n > 18 && strncasecmp(p, "transfer-encoding:", 18) == 0) ||
               (n > 7 && strncasecmp(p, "expect:", 7) == 0)) {
      return -1;
    }
  }
  return len;
}

/* Takes every complete request in c's buffer into the pass's group. 0, or
 * -1 when the connection was closed. */
static int parse(floor_raw *f, conn *c) {
  size_t off = 0;
  while (off < c->in_len) {
    char *h = c->in + off;
    size_t avail = c->in_len - off;
    char *e = memmem(h, avail, "\r\n\r\n", 4);
    if (!e) {
      if (avail >= HDR_MAX) goto bad;
      break;
    }
    size_t hlen = (size_t)(e - h) + 4;
    long blen = content_length(h, hlen);
    if (blen < 0 || hlen + (size_t)blen > IN_CAP || c->owed >= MAX_OWED)
      goto bad;
    if (avail < hlen + (size_t)blen) break;
    if (grp_add(f, h + hlen, (size_t)blen) != 0) goto bad;
    f->ring[f->ring_tail++ % RING] =
        (owed){c->fd, f->gens[c->fd], f->group + 1};
    c->owed++;
    f->n.events++;
    off += hlen + (size_t)blen;
  }
  if (off) {
    memmove(c->in, c->in + off, c->in_len - off);
    c->in_len -= off;
  }
  return 0;
bad:
  bad_request(f, c);
  return -1;
}

static void set_out(floor_raw *f, conn *c, int on) {
  if (c->want_out == on) return;
  struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0),
                           .data.fd = c->fd};
  epoll_ctl(f->ep, EPOLL_CTL_MOD, c->fd, &ev);
  c->want_out = on;
}

/* Sends what c holds; one send per call. -1 when c was closed. */
static int conn_flush(floor_raw *f, conn *c) {
  if (c->out_off < c->out_len) {
    ssize_t w =
        send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
      conn_close(f, c->fd);
      return -1;
    }
    if (w > 0) c->out_off += (size_t)w;
  }
  if (c->out_off == c->out_len) c->out_off = c->out_len = 0;
  set_out(f, c, c->out_len > 0);
  return 0;
}

/* Makes the answers of every durable group and sends them, one send per
 * connection. */
static void answer_durable(floor_raw *f) {
  f->nflush = 0;
  while (f->ring_head != f->ring_tail) {
    owed *o = &f->ring[f->ring_head % RING];
    if (o->group > f->durable) break;
    f->ring_head++;
    conn *c = f->conns[o->fd];
    if (!c || f->gens[o->fd] != o->gen) continue; /* closed meanwhile */
    if (c->out_len + sizeof ANSWER > c->out_cap) {
      size_t cap = c->out_cap ? c->out_cap * 2 : 1024;
      while (cap < c->out_len + sizeof ANSWER)
        cap *= 2;
      char *p = realloc(c->out, cap);
      if (!p) {
        conn_close(f, o->fd);
        continue;
      }
      c->out = p;
      c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, ANSWER, sizeof ANSWER - 1);
    c->out_len += sizeof ANSWER - 1;
    c->owed--;
    f->n.answers++;
    if (!c->queued) {
      c->queued = 1;
      f->flush[f->nflush++] = o->fd;
    }
  }
  for (size_t i = 0; i < f->nflush; i++) {
    conn *c = f->conns[f->flush[i]];
    if (!c) continue;
    c->queued = 0;
    conn_flush(f, c);
  }
}

static void on_accept(floor_raw *f) {
  for (int i = 0; i < MAX_ACCEPT; i++) {
    int fd = accept4(f->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    conn *c = fd < MAX_FDS ? malloc(sizeof *c) : NULL;
    if (!c) {
      close(fd);
      continue;
    }
    memset(c, 0, offsetof(conn, in));
    c->fd = fd;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    f->conns[fd] = c;
    if (epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &ev) != 0) conn_close(f, fd);
  }
}

static void on_read(floor_raw *f, conn *c) {
  ssize_t r = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, 0);
  if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
    conn_close(f, c->fd);
    return;
  }
  if (r > 0) {
    c->in_len += (size_t)r;
    parse(f, c);
  }
}

static void *syncer_main(void *arg) {
  floor_raw *f = arg;
  pthread_mutex_lock(&f->mu);
  for (;;) {
    while (f->submitted == f->synced && !f->stop)
      pthread_cond_wait(&f->cv, &f->mu);
    if (f->submitted == f->synced) break; /* stopping, nothing left */
    uint64_t target = f->submitted;
    pthread_mutex_unlock(&f->mu);
    floor_file_sync(&f->file, &f->n);
    pthread_mutex_lock(&f->mu);
    f->synced = target;
    uint64_t one = 1;
    (void)!write(f->efd, &one, sizeof one);
  }
  pthread_mutex_unlock(&f->mu);
  return NULL;
}

/* Writes the pass's group and makes it durable as the mode says. */
static void end_pass(floor_raw *f) {
  if (f->grp_len) {
    floor_file_write(&f->file, f->grp, f->grp_len, &f->n);
    f->grp_len = 0;
    f->group++;
    if (f->mode == SYNC_INLINE) floor_file_sync(&f->file, &f->n);
    if (f->mode != SYNC_THREAD) {
      f->durable = f->group;
    } else {
      pthread_mutex_lock(&f->mu);
      f->submitted = f->group;
      pthread_cond_signal(&f->cv);
      pthread_mutex_unlock(&f->mu);
    }
  }
  if (f->mode == SYNC_THREAD) {
    pthread_mutex_lock(&f->mu);
    f->durable = f->synced;
    pthread_mutex_unlock(&f->mu);
  }
  answer_durable(f);
}

/* The loop: returns when SIGTERM or SIGINT arrives. */
static void run(floor_raw *f) {
  struct epoll_event evs[MAX_EVENTS];
  for (;;) {
    int n = epoll_wait(f->ep, evs, MAX_EVENTS, -1);
    if (n < 0 && errno != EINTR) {
      perror("epoll_wait");
      return;
    }
    for (int i = 0; i < n; i++) {
      int fd = evs[i].data.fd;
      if (fd == f->lfd) {
        on_accept(f);
      } else if (fd == f->sfd) {
        struct signalfd_siginfo si;
        if (read(f->sfd, &si, sizeof si) != sizeof si) continue;
        floor_counters_print("ceb_floor_raw", &f->n);
        if (si.ssi_signo != SIGUSR1) return;
      } else if (fd == f->efd) {
        uint64_t v;
        (void)!read(f->efd, &v, sizeof v);
      } else if (f->conns[fd]) {
        conn *c = f->conns[fd];
        if ((evs[i].events & EPOLLOUT) && conn_flush(f, c) != 0) continue;
        if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_read(f, c);
      }
    }
    end_pass(f);
  }
}

static int add_fd(floor_raw *f, int fd) {
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  return epoll_ctl(f->ep, EPOLL_CTL_ADD, fd, &ev);
}

static void usage(void) {
  fprintf(stderr, "usage: ceb_floor_raw [--sync none|inline|thread] "
                  "[--port N] [--port-file P] [--file PATH] "
                  "[--prealloc MIB]\n");
  exit(2);
}

int main(int argc, char **argv) {
  static floor_raw f;
  floor_opts o;
  if (floor_opts_parse(&o, argc, argv) != 0) usage();
  if (strcmp(o.sync, "none") == 0)
    f.mode = SYNC_NONE;
  else if (strcmp(o.sync, "inline") == 0)
    f.mode = SYNC_INLINE;
  else if (strcmp(o.sync, "thread") == 0)
    f.mode = SYNC_THREAD;
  else
    usage();
  sigset_t sigs;
  floor_block_signals(&sigs);
  f.ring = calloc(RING, sizeof *f.ring);
  if (!f.ring || floor_file_open(&f.file, o.file, o.prealloc_mib) != 0)
    return 1;
  int port = 0;
  f.lfd = floor_listen(o.port, &port);
  f.ep = epoll_create1(EPOLL_CLOEXEC);
  f.sfd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
  f.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (f.lfd < 0 || f.ep < 0 || f.sfd < 0 || f.efd < 0 ||
      add_fd(&f, f.lfd) != 0 || add_fd(&f, f.sfd) != 0 ||
      add_fd(&f, f.efd) != 0) {
    perror("ceb_floor_raw: setup");
    return 1;
  }
  pthread_mutex_init(&f.mu, NULL);
  pthread_cond_init(&f.cv, NULL);
  if (f.mode == SYNC_THREAD &&
      pthread_create(&f.syncer, NULL, syncer_main, &f) != 0)
    return 1;
  if (floor_announce(port, o.port_file) != 0) return 1;
  run(&f);
  if (f.mode == SYNC_THREAD) {
    pthread_mutex_lock(&f.mu);
    f.stop = 1;
    pthread_cond_signal(&f.cv);
    pthread_mutex_unlock(&f.mu);
    pthread_join(f.syncer, NULL);
  }
  for (int fd = 0; fd < MAX_FDS; fd++)
    conn_close(&f, fd);
  floor_file_close(&f.file);
  free(f.ring);
  free(f.grp);
  return 0;
}
