/* Slow and idle connections must not shut ingress out (issue 16 C1).
 *
 * 1,100 connections from 18 loopback source addresses (61 each, under the
 * 64-per-address cap) send a request head one byte a second, and are
 * reopened when the intermediary closes them; then 2,000 connections from
 * 32 addresses open and send nothing (reopened too). While each attack runs
 * at full strength, legitimate requests from 127.0.0.1 (a new connection
 * each, retried when refused, as a client would) must all be answered 202
 * within twice request_head_timeout: the head deadline and the slot reserve
 * (the connection waiting longest for its head gives way to a new one) keep
 * ingress open. Before them, connection_timeout (reset by every byte) let
 * the slow connections hold every slot and no legitimate request got in.
 * Latencies are printed (median, max). Then the deadlines one by one: a
 * head sent a byte every 100 ms (never idle) is cut off at
 * request_head_timeout; a body
 * trickling below request_body_min_rate is cut off once the rate grace (5 s)
 * has passed, and a body above the rate but slower than
 * request_body_timeout allows is cut off at that deadline (each reason
 * counted in cebridge_http_connections_closed_total). The whole test is
 * bounded: each phase lasts a few seconds. */
#include "hin_harness.h"
#include "hin_raw.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HEAD_TIMEOUT_S 4
#define LEGIT_REQUESTS 20
#define LEGIT_BOUND_MS (2 * HEAD_TIMEOUT_S * 1000)
#define MAX_ATTACK 2000
#define BODY_TIMEOUT_S 8

typedef struct attack {
  pthread_t thread;
  int port;
  int nconns, naddrs, first_addr;
  int drip; /* 1: one head byte a second; 0: idle */
  atomic_int stop;
  atomic_int server_closed; /* closes seen (deadlines, reserve, refusals) */
  int fds[MAX_ATTACK];
  size_t sent[MAX_ATTACK];
} attack;

static const char DRIP[] = "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                           "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/* 1 when the server closed fd (EOF or error). */
static int peer_closed(int fd) {
  char b[256];
  ssize_t k = recv(fd, b, sizeof b, MSG_DONTWAIT);
  return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* The attacker's loop: a tick a second (that is the attack's pace, not a
 * wait for a condition), bounded by `stop`. */
static void *attack_run(void *arg) {
  attack *a = arg;
  for (int i = 0; i < a->nconns; i++)
    a->fds[i] = -1;
  while (!atomic_load(&a->stop)) {
    for (int i = 0; i < a->nconns && !atomic_load(&a->stop); i++) {
      if (a->fds[i] >= 0 && peer_closed(a->fds[i])) {
        close(a->fds[i]);
        a->fds[i] = -1;
        atomic_fetch_add(&a->server_closed, 1);
      }
      if (a->fds[i] < 0) {
        char src[32];
        snprintf(src, sizeof src, "127.0.0.%d", a->first_addr + i % a->naddrs);
        a->fds[i] = hin_raw_connect(a->port, src, 1);
        a->sent[i] = 0;
        if (a->fds[i] < 0) continue;
      }
      if (a->drip && a->sent[i] < sizeof DRIP - 1 &&
          send(a->fds[i], DRIP + a->sent[i], 1, MSG_DONTWAIT | MSG_NOSIGNAL) ==
              1)
        a->sent[i]++;
    }
    for (int t = 0; t < 20 && !atomic_load(&a->stop); t++)
      poll(NULL, 0, 50);
  }
  for (int i = 0; i < a->nconns; i++)
    if (a->fds[i] >= 0) close(a->fds[i]);
  return NULL;
}

static attack *attack_start(int port, int nconns, int naddrs, int first_addr,
                            int drip) {
  attack *a = calloc(1, sizeof *a);
  a->port = port;
  a->nconns = nconns;
  a->naddrs = naddrs;
  a->first_addr = first_addr;
  a->drip = drip;
  atomic_init(&a->stop, 0);
  atomic_init(&a->server_closed, 0);
  pthread_create(&a->thread, NULL, attack_run, a);
  return a;
}

static void attack_stop(attack *a) {
  atomic_store(&a->stop, 1);
  pthread_join(a->thread, NULL);
  free(a);
}

typedef struct full_arg {
  hin_env *e;
  int want;
} full_arg;

/* The listeners' own count of open connections. */
static int open_connections(hin_env *e) {
  return (int)ceb_metrics_get(e->fake->metrics,
                              "cebridge_http_connections_open", NULL);
}

static int attack_full(void *arg) {
  full_arg *f = arg;
  return open_connections(f->e) >= f->want;
}

/* One legitimate request on a new connection, retried while refused, as a
 * client would; returns the status (0: none within the bound) and the time
 * it took in *ms. */
static int legit_request(int port, int n, int64_t *ms, int *tries) {
  char req[512];
  char body[160];
  int bl = snprintf(body, sizeof body,
                    "{\"specversion\":\"1.0\",\"id\":\"legit-%d\",\"source\":"
                    "\"urn:t\",\"type\":\"nl.edu.t\"}",
                    n);
  int len = snprintf(req, sizeof req,
                     "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Content-Type: application/cloudevents+json\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     bl, body);
  int64_t t0 = ceb_test_now_ms(), until = t0 + LEGIT_BOUND_MS;
  int status = 0;
  while (status == 0 && ceb_test_now_ms() < until) {
    ++*tries;
    int fd = hin_raw_connect(port, "127.0.0.1", 0);
    if (fd < 0) continue;
    hin_raw_resp r;
    if (hin_raw_send(fd, req, (size_t)len, until - ceb_test_now_ms())) {
      hin_raw_read(fd, until - ceb_test_now_ms(), &r);
      status = r.status;
    }
    close(fd);
  }
  *ms = ceb_test_now_ms() - t0;
  return status;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Runs the legitimate requests while the attack `a` is at full strength
 * (`want` connections held). */
static void measure(hin_env *e, attack *a, int want, const char *name) {
  full_arg f = {e, want};
  CHECK_MSG(ceb_test_wait(attack_full, &f, 20000),
            "%s: the attack never held %d connections (%d)", name, want,
            open_connections(e));
  /* past the first head deadline, so that deadlines and reopened
   * connections are in play, not only the first wave */
  int64_t steady = ceb_test_now_ms() + (HEAD_TIMEOUT_S + 1) * 1000;
  while (ceb_test_now_ms() < steady)
    poll(NULL, 0, 100); /* the attack's own duration, not a condition */
  int64_t ms[LEGIT_REQUESTS];
  int ok = 0, tries = 0, held_min = INT32_MAX;
  size_t before = ceb_fake_event_count(e->fake);
  for (int i = 0; i < LEGIT_REQUESTS; i++) {
    /* each request while the attack holds (nearly) all the slots (they
     * come in waves: opened together, cut at the head deadline together) */
    CHECK_MSG(ceb_test_wait(attack_full, &f, 20000),
              "%s: request %d: the attack no longer holds %d connections", name,
              i, want);
    int held = open_connections(e);
    if (held < held_min) held_min = held;
    int st = legit_request(e->port, i, &ms[i], &tries);
    CHECK_MSG(st == 202, "%s: legitimate request %d: status %d after %lld ms",
              name, i, st, (long long)ms[i]);
    CHECK_MSG(ms[i] <= LEGIT_BOUND_MS, "%s: request %d took %lld ms", name, i,
              (long long)ms[i]);
    ok += st == 202;
  }
  qsort(ms, LEGIT_REQUESTS, sizeof ms[0], cmp_i64);
  fprintf(stderr,
          "%s: >= %d connections open at each request (%d attack connections "
          "closed by the intermediary); %d/%d legitimate requests answered "
          "202 (%d connections), latency median %lld ms, max %lld ms\n",
          name, held_min, atomic_load(&a->server_closed), ok, LEGIT_REQUESTS,
          tries, (long long)ms[LEGIT_REQUESTS / 2],
          (long long)ms[LEGIT_REQUESTS - 1]);
  CHECK(ceb_fake_wait_events(e->fake, before + (size_t)ok, 10000));
}

static double closed_metric(hin_env *e, const char *reason) {
  char labels[64];
  snprintf(labels, sizeof labels, "reason=\"%s\"", reason);
  return ceb_metrics_get(e->fake->metrics,
                         "cebridge_http_connections_closed_total", labels);
}

typedef struct body_sender {
  int fd;
  size_t chunk;   /* bytes sent per 100 ms */
  int64_t closed; /* ms after the start when the server closed, or -1 */
} body_sender;

/* A head announcing 1 MiB, then the body in `chunk` bytes every 100 ms. */
static void body_open(hin_env *e, body_sender *b, size_t chunk) {
  static const char head[] = "POST /events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Content-Type: application/cloudevents+json\r\n"
                             "Content-Length: 1048576\r\n\r\n";
  b->fd = hin_raw_connect(e->port, NULL, 0);
  b->chunk = chunk;
  b->closed = -1;
  CHECK(b->fd >= 0 && hin_raw_send(b->fd, head, sizeof head - 1, 5000));
}

static void test_slow_requests(hin_env *e) {
  body_sender slow, steady, head;
  body_open(e, &slow, 1);     /* 10 B/s: under the 1 KiB/s minimum */
  body_open(e, &steady, 300); /* 3 KB/s: over it, but 1 MiB takes 350 s */
  /* a head that never ends: "X-Slow: aaaa..." a byte every 100 ms */
  head.fd = hin_raw_connect(e->port, NULL, 0);
  head.chunk = 1;
  head.closed = -1;
  CHECK(head.fd >= 0 && hin_raw_send(head.fd, DRIP, sizeof DRIP - 1, 5000));
  body_sender *all[] = {&slow, &steady, &head};
  char buf[300];
  memset(buf, 'a', sizeof buf);
  int64_t t0 = ceb_test_now_ms(), until = t0 + (BODY_TIMEOUT_S + 8) * 1000;
  while (ceb_test_now_ms() < until &&
         (slow.closed < 0 || steady.closed < 0 || head.closed < 0)) {
    for (int i = 0; i < 3; i++) {
      body_sender *b = all[i];
      if (b->fd < 0 || b->closed >= 0) continue;
      if (peer_closed(b->fd) ||
          send(b->fd, buf, b->chunk, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
        b->closed = ceb_test_now_ms() - t0;
    }
    poll(NULL, 0, 100); /* the senders' pace */
  }
  fprintf(stderr,
          "slow head closed after %lld ms, slow body after %lld ms, steady "
          "body after %lld ms\n",
          (long long)head.closed, (long long)slow.closed,
          (long long)steady.closed);
  /* connection_timeout (30 s) never fires: a byte comes every 100 ms */
  CHECK_MSG(head.closed >= HEAD_TIMEOUT_S * 1000 - 500 &&
                head.closed <= HEAD_TIMEOUT_S * 1000 + 6000,
            "slow head closed after %lld ms", (long long)head.closed);
  CHECK(closed_metric(e, "head_timeout") >= 1);
  /* the rate is judged after its 5 s grace, not before */
  CHECK_MSG(slow.closed >= 4500 && slow.closed <= 5000 + 6000,
            "slow body closed after %lld ms", (long long)slow.closed);
  CHECK_MSG(steady.closed >= BODY_TIMEOUT_S * 1000 - 500 &&
                steady.closed <= BODY_TIMEOUT_S * 1000 + 6000,
            "steady body closed after %lld ms", (long long)steady.closed);
  CHECK(closed_metric(e, "body_rate") >= 1);
  CHECK(closed_metric(e, "body_timeout") >= 1);
  for (int i = 0; i < 3; i++)
    if (all[i]->fd >= 0) close(all[i]->fd);
}

int main(void) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 8192) {
    rl.rlim_cur = rl.rlim_max < 8192 ? rl.rlim_max : 8192;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  getrlimit(RLIMIT_NOFILE, &rl);
  /* both ends of every connection are in this process */
  CHECK_MSG(rl.rlim_cur >= 2 * MAX_ATTACK + 256,
            "RLIMIT_NOFILE %llu: too low for this test (hard limit)",
            (unsigned long long)rl.rlim_cur);
  char head[64];
  snprintf(head, sizeof head, "request_head_timeout=%ds", HEAD_TIMEOUT_S);
  char body[64];
  snprintf(body, sizeof body, "request_body_timeout=%ds", BODY_TIMEOUT_S);
  const char *const cfg[] = {"auth=none",
                             "threads=2",
                             head,
                             body,
                             "max_connections=1024",
                             "max_connections_per_ip=64",
                             NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (!e) return ceb_test_done("test_http_in_slowloris");
  /* slowloris: 1,100 from 127.0.0.2-19 (62 at most each) */
  attack *a = attack_start(e->port, 1100, 18, 2, 1);
  measure(e, a, 900, "slowloris");
  int closed = atomic_load(&a->server_closed);
  attack_stop(a);
  CHECK_MSG(closed > 0, "no slow connection was closed by the intermediary");
  CHECK(closed_metric(e, "head_timeout") + closed_metric(e, "evicted") >= 1);
  /* idle: 2,000 from 127.0.0.20-51 (63 at most each) */
  a = attack_start(e->port, 2000, 32, 20, 0);
  measure(e, a, 900, "idle");
  attack_stop(a);
  test_slow_requests(e);
  hin_stop(e);
  return ceb_test_done("test_http_in_slowloris");
}
