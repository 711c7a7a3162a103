/* A request whose durability callback resumes it is answered, also when
 * the resume's wake-up arrives in the same wake-up of the listener as a
 * full batch of other connections' data (issue 16, D6: under wrk -c256
 * every client once waited more than 9 s for its 202 while the bridge was
 * idle).
 *
 * libmicrohttpd's epoll loop (0.9.75 and later) reads at most 128 events
 * per epoll_wait and, when it got exactly 128, calls epoll_wait again with
 * the timeout it computed before, before processing any of them: when the
 * resume's inter-thread signal was one of those 128 events and nothing
 * else happens, that second call sleeps until the next connection timeout
 * with every resumed request and the 127 requests it read unanswered.
 * This test forces that interleaving: epoll_wait and poll are interposed
 * (the test executable exports them, so libmicrohttpd inside http.so calls
 * these); armed, the listener's next wait that returns writes one request
 * on each of (128 - events so far) idle keep-alive connections and hands
 * them back with the resume's event, a full batch. The resumed request and
 * the 127 others must then be answered within seconds, not after the 60 s
 * connection timeout. */
#include "hin_harness.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define NCONN 160 /* idle keep-alive connections; >= 127 are written to */

static int g_fds[NCONN];
static pthread_t g_test_thread;
static atomic_int g_armed;   /* 1: the listener's next wait fills a batch */
static atomic_int g_filled;  /* requests written by the armed wait */
static atomic_long g_waits;  /* listener waits entered with a timeout */
static atomic_int g_in_wait; /* the listener is inside such a wait */

static char *request(int i, const char *tag) {
  static char buf[NCONN + 1][1024];
  char body[512];
  int n = snprintf(body, sizeof body,
                   "{\"specversion\":\"1.0\",\"id\":\"%s-%d\",\"source\":"
                   "\"urn:nld:oin:00000001234567890000:systeem:t\",\"type\":"
                   "\"nl.edu.t.created\",\"time\":\"2026-11-22T18:00:00Z\"}",
                   tag, i);
  snprintf(buf[i], sizeof buf[i],
           "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
           "application/cloudevents+json\r\nContent-Length: %d\r\n\r\n%s",
           n, body);
  return buf[i];
}

/* Writes one request on each of the first n connections. */
static int fill(int n) {
  for (int i = 0; i < n; i++) {
    const char *r = request(i, "batch");
    if (send(g_fds[i], r, strlen(r), MSG_NOSIGNAL) != (ssize_t)strlen(r))
      return -1;
  }
  atomic_store(&g_filled, n);
  return 0;
}

static int is_listener(void) {
  return !pthread_equal(pthread_self(), g_test_thread);
}

int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout) {
  static int (*real)(int, struct epoll_event *, int, int);
  if (!real) real = dlsym(RTLD_NEXT, "epoll_wait");
  int waiting = is_listener() && timeout != 0;
  if (waiting) {
    atomic_fetch_add(&g_waits, 1);
    atomic_store(&g_in_wait, 1);
  }
  int n = real(epfd, ev, max, timeout);
  if (waiting) atomic_store(&g_in_wait, 0);
  int expect = 1;
  if (n <= 0 || n >= max || !is_listener() ||
      !atomic_compare_exchange_strong(&g_armed, &expect, 0))
    return n;
  /* The resume's signal woke the listener: the rest of a full batch is
   * other connections' requests, read in the same epoll_wait. */
  int want = max - n;
  if (want > NCONN || fill(want) != 0) return n;
  /* The inter-thread signal is level-triggered and not read yet (the
   * listener reads it while going through this batch): skip it when the
   * collecting calls report it again. */
  int first = n;
  int64_t until = ceb_test_now_ms() + 5000;
  while (n < max && ceb_test_now_ms() < until) {
    int k = real(epfd, ev + n, max - n, 10), at = n;
    for (int i = at; i < at + k; i++) {
      int dup = 0;
      for (int j = 0; j < first && !dup; j++)
        dup = ev[j].data.u64 == ev[i].data.u64;
      if (!dup) ev[n++] = ev[i];
    }
  }
  return n;
}

int poll(struct pollfd *fds, nfds_t nfds, int timeout) {
  static int (*real)(struct pollfd *, nfds_t, int);
  if (!real) real = dlsym(RTLD_NEXT, "poll");
  int waiting = is_listener() && timeout != 0;
  if (waiting) {
    atomic_fetch_add(&g_waits, 1);
    atomic_store(&g_in_wait, 1);
  }
  int n = real(fds, nfds, timeout);
  if (waiting) atomic_store(&g_in_wait, 0);
  int expect = 1;
  if (n > 0 && is_listener() &&
      atomic_compare_exchange_strong(&g_armed, &expect, 0))
    fill(127); /* the same requests, seen by the listener's next poll */
  return n;
}

static int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Reads one whole response (head and Content-Length body) from fd within
 * the deadline; returns its status, 0 on timeout or error. */
static int read_response(int fd, int64_t until) {
  char buf[4096];
  size_t have = 0;
  while (ceb_test_now_ms() < until && have + 1 < sizeof buf) {
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    ssize_t k = recv(fd, buf + have, sizeof buf - 1 - have, 0);
    if (k <= 0) return 0;
    have += (size_t)k;
    buf[have] = '\0';
    char *end = strstr(buf, "\r\n\r\n");
    const char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (end && cl) {
      size_t body = strtoul(cl + 17, NULL, 10);
      if (have >= (size_t)(end + 4 - buf) + body) return atoi(buf + 9);
    }
  }
  return 0;
}

/* The listener sits in a wait with a timeout (nothing left to process):
 * the same wait seen in two looks 50 ms apart. */
static int listener_idle(void *arg) {
  (void)arg;
  long a = atomic_load(&g_waits);
  if (!atomic_load(&g_in_wait)) return 0;
  int64_t until = ceb_test_now_ms() + 50;
  while (ceb_test_now_ms() < until)
    if (atomic_load(&g_waits) != a) return 0;
  return atomic_load(&g_in_wait) && atomic_load(&g_waits) == a;
}

int main(void) {
  g_test_thread = pthread_self();
  /* One listener thread so that every connection is on the daemon whose
   * wait is filled; a connection timeout far beyond the test's deadline. */
  const char *entries[] = {"auth=none", "threads=1", "connection_timeout=60s",
                           "max_connections_per_ip=1000", NULL};
  hin_env *e = hin_start(entries, NULL);
  CHECK(e != NULL);
  if (!e) return ceb_test_done("test_http_in_resume");
  int x = connect_to(e->port);
  CHECK(x >= 0);
  int ok = x >= 0;
  for (int i = 0; i < NCONN && ok; i++) {
    g_fds[i] = connect_to(e->port);
    ok = g_fds[i] >= 0;
  }
  CHECK(ok);
  /* Each connection answered once (accepted, keep-alive, idle after). */
  int64_t until = ceb_test_now_ms() + 30000;
  for (int i = 0; i < NCONN && ok; i++) {
    const char *r = request(i, "warm");
    ok = send(g_fds[i], r, strlen(r), MSG_NOSIGNAL) == (ssize_t)strlen(r) &&
         read_response(g_fds[i], until) == 202;
  }
  CHECK(ok);

  /* X's request waits for its (held) durability callback: suspended. */
  size_t before = ceb_fake_event_count(e->fake);
  pthread_mutex_lock(&e->fake->lock);
  e->fake->mode = CEB_FAKE_COMMIT_HOLD;
  pthread_mutex_unlock(&e->fake->lock);
  const char *rx = request(NCONN, "x");
  CHECK(send(x, rx, strlen(rx), MSG_NOSIGNAL) == (ssize_t)strlen(rx));
  CHECK(ceb_fake_wait_events(e->fake, before + 1, 10000));
  pthread_mutex_lock(&e->fake->lock);
  e->fake->mode = CEB_FAKE_COMMIT_NOW; /* the batch's requests: at once */
  pthread_mutex_unlock(&e->fake->lock);
  CHECK(ceb_test_wait(listener_idle, NULL, 10000));

  /* The callback resumes X; the listener's wake-up is a full batch. */
  atomic_store(&g_armed, 1);
  ceb_fake_commit(e->fake, CEB_OK);
  until = ceb_test_now_ms() + 10000;
  CHECK_INT(read_response(x, until), 202);
  int filled = atomic_load(&g_filled);
  CHECK_MSG(filled >= 100, "the armed wait wrote %d requests", filled);
  int answered = 0;
  for (int i = 0; i < filled; i++)
    answered += read_response(g_fds[i], until) == 202;
  CHECK_INT(answered, filled);

  close(x);
  for (int i = 0; i < NCONN; i++)
    if (g_fds[i] >= 0) close(g_fds[i]);
  hin_stop(e);
  return ceb_test_done("test_http_in_resume");
}
