/* The answer-dropping proxy of pg_drop_proxy.h. Hand-written: no Debian
 * package offers a fault-injecting TCP proxy a C test can drive in-process
 * (toxiproxy is not packaged), and the need is one byte pattern. */
#include "pg_drop_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONNS_MAX 64

struct cebt_proxy {
  int lfd, port, upstream;
  pthread_t acceptor;
  atomic_int stop, armed, dropped;
  pthread_mutex_t lock;
  pthread_t threads[CONNS_MAX];
  int fds[CONNS_MAX][2];
  int nthreads;
};

typedef struct conn {
  cebt_proxy *p;
  int cfd, sfd;
} conn;

static int send_all(int fd, const char *b, size_t n) {
  while (n) {
    ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
    if (w <= 0) return -1;
    b += w;
    n -= (size_t)w;
  }
  return 0;
}

static const char READY_IDLE[6] = {'Z', 0, 0, 0, 5, 'I'};

static int has(const char *b, size_t n, const char *pat, size_t pn) {
  for (size_t i = 0; i + pn <= n; i++)
    if (memcmp(b + i, pat, pn) == 0) return 1;
  return 0;
}

static void *serve(void *arg) {
  conn *c = arg;
  cebt_proxy *p = c->p;
  /* held: the server's bytes of an answer being dropped; tail: the last
   * bytes forwarded, so that a tag split over two reads is still seen */
  char *held = NULL, tail[16];
  size_t nheld = 0, ntail = 0;
  int holding = 0;
  char buf[65536];
  while (!atomic_load(&p->stop)) {
    struct pollfd f[2] = {{.fd = c->cfd, .events = POLLIN},
                          {.fd = c->sfd, .events = POLLIN}};
    if (poll(f, 2, 100) < 0) break;
    if (f[0].revents) {
      ssize_t n = recv(c->cfd, buf, sizeof buf, 0);
      if (n <= 0 || send_all(c->sfd, buf, (size_t)n) != 0) break;
    }
    if (f[1].revents) {
      ssize_t n = recv(c->sfd, buf, sizeof buf, 0);
      if (n <= 0) break;
      if (!holding && atomic_load(&p->armed)) {
        char *j = malloc(ntail + (size_t)n);
        if (!j) break;
        memcpy(j, tail, ntail);
        memcpy(j + ntail, buf, (size_t)n);
        holding = has(j, ntail + (size_t)n, "COMMIT", 7);
        free(j);
        if (holding) atomic_store(&p->armed, 0);
      }
      if (holding) {
        char *h = realloc(held, nheld + (size_t)n);
        if (!h) break;
        held = h;
        memcpy(held + nheld, buf, (size_t)n);
        nheld += (size_t)n;
        if (nheld >= 6 && memcmp(held + nheld - 6, READY_IDLE, 6) == 0) {
          atomic_fetch_add(&p->dropped, 1); /* committed; never told */
          break;
        }
        continue;
      }
      if (send_all(c->cfd, buf, (size_t)n) != 0) break;
      size_t keep = (size_t)n < sizeof tail ? (size_t)n : sizeof tail;
      if (ntail + keep > sizeof tail) ntail = 0;
      memcpy(tail + ntail, buf + n - keep, keep);
      ntail += keep;
    }
  }
  free(held);
  shutdown(c->cfd, SHUT_RDWR);
  shutdown(c->sfd, SHUT_RDWR);
  free(c);
  return NULL;
}

static int dial(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    close(fd);
    fd = -1;
  }
  return fd;
}

static void *accept_main(void *arg) {
  cebt_proxy *p = arg;
  while (!atomic_load(&p->stop)) {
    struct pollfd f = {.fd = p->lfd, .events = POLLIN};
    if (poll(&f, 1, 100) <= 0) continue;
    int cfd = accept(p->lfd, NULL, NULL);
    if (cfd < 0) continue;
    int sfd = dial(p->upstream);
    conn *c = malloc(sizeof *c);
    pthread_mutex_lock(&p->lock);
    int room = p->nthreads < CONNS_MAX;
    if (sfd >= 0 && c && room) {
      *c = (conn){p, cfd, sfd};
      p->fds[p->nthreads][0] = cfd;
      p->fds[p->nthreads][1] = sfd;
      if (pthread_create(&p->threads[p->nthreads], NULL, serve, c) == 0) {
        p->nthreads++;
        c = NULL;
        cfd = sfd = -1;
      }
    }
    pthread_mutex_unlock(&p->lock);
    free(c);
    if (cfd >= 0) close(cfd);
    if (sfd >= 0) close(sfd);
  }
  return NULL;
}

cebt_proxy *cebt_proxy_start(int upstream_port) {
  cebt_proxy *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->upstream = upstream_port;
  pthread_mutex_init(&p->lock, NULL);
  p->lfd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
      listen(p->lfd, 64) != 0 ||
      getsockname(p->lfd, (struct sockaddr *)&a, &len) != 0 ||
      pthread_create(&p->acceptor, NULL, accept_main, p) != 0) {
    if (p->lfd >= 0) close(p->lfd);
    pthread_mutex_destroy(&p->lock);
    free(p);
    return NULL;
  }
  p->port = ntohs(a.sin_port);
  return p;
}

int cebt_proxy_port(const cebt_proxy *p) {
  return p->port;
}

void cebt_proxy_arm(cebt_proxy *p) {
  atomic_store(&p->armed, 1);
}

int cebt_proxy_dropped(cebt_proxy *p) {
  return atomic_load(&p->dropped);
}

void cebt_proxy_stop(cebt_proxy *p) {
  if (!p) return;
  atomic_store(&p->stop, 1);
  pthread_join(p->acceptor, NULL);
  for (int i = 0; i < p->nthreads; i++) {
    pthread_join(p->threads[i], NULL);
    close(p->fds[i][0]);
    close(p->fds[i][1]);
  }
  close(p->lfd);
  pthread_mutex_destroy(&p->lock);
  free(p);
}
