/* Issue 16 B5, end to end through the real `cebridge run`: a webhook sink in
 * batch mode (batch.max 100) behind a route with default settings fills its
 * batches. The route's max_inflight default (64) used to be below batch.max,
 * so no batch ever filled and one partial batch went out per batch.wait.
 * Here batch.wait is 5 s: every batch the receiver gets must hold exactly
 * 100 events, and the backlog must drain long before 5 s per batch would
 * allow (the wait has a generous deadline; no timing is asserted). The
 * receiver holds every request until all events are posted, so that the
 * backlog is in the store before it drains; the drain time is printed.
 * Also: `cebridge check` warns (exit 0) when a route's explicit
 * max_inflight cannot fill the sink's batch.
 * CEB_DRAIN_EVENTS (default 1000, a multiple of 100) and CEB_DRAIN_WAIT
 * (default 5s) change the load for measurements. */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:drain"
#define BATCH 100

static atomic_int g_hold = 1;

/* Holds each request while g_hold (at most 30 s), then answers 204. */
static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)req;
  (void)index;
  int64_t until = ceb_test_now_ms() + 30000;
  while (atomic_load(&g_hold) && ceb_test_now_ms() < until)
    usleep(2000);
  resp->status = 204;
}

typedef struct tally {
  rx_server *rx;
  size_t seen;  /* requests decoded */
  long events;  /* events in them */
  long partial; /* requests with fewer or more than BATCH events */
  long bad;     /* bodies that do not decode */
} tally;

static void tally_update(tally *t) {
  size_t n = rx_count(t->rx);
  for (; t->seen < n; t->seen++) {
    const rx_request *r = rx_get(t->rx, t->seen);
    ceb_event **evs = NULL;
    size_t count = 0;
    if (!r || ceb_batch_decode(r->body, r->len, &evs, &count, NULL) != CEB_OK) {
      t->bad++;
      continue;
    }
    t->events += (long)count;
    if (count != BATCH) t->partial++;
    ceb_events_free(evs, count);
  }
}

typedef struct want {
  tally *t;
  long events;
} want;

static int reached(void *arg) {
  want *w = arg;
  tally_update(w->t);
  return w->t->events >= w->events;
}

static void write_conf(const char *dir, int rx_port, const char *wait,
                       const char *route_extra) {
  char conf[600], text[2048];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  mkdir(conf, 0700);
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nlog.format = text\n"
           "drain_timeout = 5s\n"
           "\n[source intermediary]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "port_file = %s/in.port\nauth = none\nmax_body = 4MiB\n"
           "\n[sink partner]\nplugin = http\n"
           "url = http://127.0.0.1:%d/hook\nallow_insecure_http = true\n"
           "mode = batch\nbatch.max = %d\nbatch.wait = %s\n"
           "\n[route to-partner]\nfrom = intermediary\nto = partner\n%s",
           dir, dir, rx_port, BATCH, wait, route_extra);
  CHECK_INT(ceb_test_write_file(conf, "00-bridge.conf", text), 0);
}

static int post_batch(int port, int first) {
  size_t cap = (size_t)BATCH * 320 + 16, len = 0;
  char *body = malloc(cap);
  if (!body) return -1;
  body[len++] = '[';
  for (int i = 0; i < BATCH; i++)
    len += (size_t)snprintf(
        body + len, cap - len,
        "%s{\"specversion\":\"1.0\",\"id\":\"d-%d\",\"source\":\"" SRC
        "\",\"type\":\"nl.edu.drain.created\",\"subject\":\"s\","
        "\"time\":\"2026-11-26T10:00:00Z\","
        "\"datacontenttype\":\"application/json\",\"data\":{\"n\":%d}}",
        i ? "," : "", first + i, first + i);
  body[len++] = ']';
  char url[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  const char *h[] = {"Content-Type: application/cloudevents-batch+json", NULL};
  int st = ceb_test_http("POST", url, h, body, len, NULL);
  free(body);
  return st;
}

/* `cebridge check` on a route whose explicit max_inflight cannot fill a
 * batch: exit 0, one warning naming the file and line and both values. */
static void test_check_warns(const char *dir) {
  write_conf(dir, 9, "200ms", "max_inflight = 50\n");
  char conf[600], log[600], bin[600];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/check.log", dir);
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *const argv[] = {bin, "check", "-c", conf, NULL};
  ceb_proc p;
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  CHECK_INT(ceb_proc_stop(&p, 0, 30000), 0);
  char *out = ceb_test_read_file(log, NULL);
  CHECK_MSG(out && strstr(out, "00-bridge.conf:") &&
                strstr(out, ": warning: route to-partner: max_inflight 50 is "
                            "below sink partner's batch.max 100"),
            "check said: %s", out ? out : "(nothing)");
  free(out);
  /* unset (the default) or large enough: no warning */
  write_conf(dir, 9, "200ms", "");
  snprintf(log, sizeof log, "%s/check2.log", dir);
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  CHECK_INT(ceb_proc_stop(&p, 0, 30000), 0);
  out = ceb_test_read_file(log, NULL);
  CHECK_MSG(out && !strstr(out, "warning"), "check said: %s",
            out ? out : "(nothing)");
  free(out);
}

int main(void) {
  const char *ev = getenv("CEB_DRAIN_EVENTS");
  const char *wait = getenv("CEB_DRAIN_WAIT");
  long events = ev ? atol(ev) : 1000;
  if (events < BATCH) events = BATCH;
  events -= events % BATCH;
  char *dir = ceb_test_tmpdir("http-out-drain");
  CHECK(dir != NULL);
  if (!dir) return ceb_test_done("integration_http_out_batch_drain");
  test_check_warns(dir);

  rx_server *rx = rx_start(respond, NULL);
  write_conf(dir, rx_port(rx), wait ? wait : "5s", "");
  char conf[600], log[600], portf[600];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(portf, sizeof portf, "%s/in.port", dir);
  pid_t pid = ceb_test_bridge_start(conf, log);
  CHECK(pid > 0);
  int port = ceb_test_wait_port_file(portf, 30000);
  CHECK(port > 0);
  int64_t t0 = ceb_test_now_ms();
  for (long i = 0; port > 0 && i < events; i += BATCH)
    CHECK_INT(post_batch(port, (int)i), 202);
  atomic_store(&g_hold, 0); /* the backlog is durable: let it drain */
  int64_t t_in = ceb_test_now_ms();
  tally t = {.rx = rx};
  want w = {&t, events};
  CHECK_MSG(ceb_test_wait(reached, &w, 60000),
            "%ld of %ld events delivered in %zu requests (%ld not full)",
            t.events, events, t.seen, t.partial);
  int64_t t_done = ceb_test_now_ms();
  CHECK_INT(t.events, events);
  CHECK_INT(t.bad, 0);
  CHECK_MSG(t.partial == 0, "%ld of %zu batches were not full", t.partial,
            t.seen);
  printf("batch drain: %ld events, %zu requests, posted in %lld ms, all "
         "delivered %lld ms after the receiver let go\n",
         events, t.seen, (long long)(t_in - t0), (long long)(t_done - t_in));
  if (pid > 0) CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  rx_stop(rx);
  if (ceb_test_failures) {
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "---- bridge log ----\n%s\n", text ? text : "");
    free(text);
  }
  free(dir);
  return ceb_test_done("integration_http_out_batch_drain");
}
