/* HTTP benchmarks through the real `cebridge run` binary, everything on
 * loopback, each run in a fresh temp dir (store, config, ports via
 * port_file keys, log.level = warn):
 *
 *   accept       64 connections POST 1 KiB events to the intermediary; the
 *                route goes to a sink (testsink: ACKs at once; pull: the
 *                durable pull queue). Measures 202 rate and latency (202 =
 *                durable in the store) and the bridge's RSS.
 *   groupcommit  accept twice: store.group_max = 1, then the default.
 *   webhook      events preloaded into the store (http sink rate-limited to
 *                1/s while posting), then the bridge restarted without the
 *                limit: delivery rate first-to-last at a local receiver
 *                (204), FIFO per key checked where the load defined it
 *                (per key and sending connection), 1,000 subject keys.
 *   all          the three above, then one result table.
 *   smoke        each scenario for about a second with tiny numbers: proves
 *                the harness works (registered in ctest, label bench).
 *
 * Prints figures; it never asserts a target. Exit status: 0 when every
 * request was answered 202, every event was delivered in order and the
 * bridge exited cleanly; 1 otherwise (the temp dir is then kept); 2 usage.
 * Bounded: the load stops by count or duration, every wait has a deadline. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "ceb_bench_bridge.h"
#include "ceb_bench_load.h"
#include "ceb_bench_receiver.h"
#include "ceb_test.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:bench"
#define TYPE "nl.edu.bench.created"

typedef struct params {
  int conns;        /* load connections */
  int64_t dur_ms;   /* accept: load duration */
  long events;      /* webhook: events preloaded */
  int size;         /* event size */
  int keys;         /* distinct subjects */
  int binary;       /* binary mode requests */
  const char *sink; /* accept: testsink | pull */
  long group_max;   /* accept: store.group_max, 0 = default */
  const char *extra; /* one more [bridge] line, or NULL */
  int sink_conns;   /* webhook: http sink max_connections */
  int inflight;     /* webhook: route max_inflight */
  int throttle;     /* accept: sink limited to 1/s (ingest without delivery) */
} params;

typedef struct row {
  char name[64];
  long events;
  double rate;
  ceb_bench_latency lat; /* accept only */
  long rss_max_kb, hwm_kb;
  double bridge_us_ev; /* bridge CPU per event */
  double own_us_ev;    /* this process's CPU per event (load or receiver) */
  double loadavg;      /* 1-minute load average before the run */
  int ok;
} row;

static row g_rows[8];
static int g_nrows;

static double self_cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
         (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void id_prefix(char *buf, size_t n, const char *tag) {
  static int seq;
  snprintf(buf, n, "%s%dx%ldx%d", tag, (int)getpid(), (long)time(NULL), seq++);
}

static void conf_bridge(char *buf, size_t n, const char *dir, long group_max,
                        const char *extra) {
  char gm[320] = "";
  if (group_max) snprintf(gm, sizeof gm, "store.group_max = %ld\n", group_max);
  if (extra)
    snprintf(gm + strlen(gm), sizeof gm - strlen(gm), "%.250s\n", extra);
  snprintf(buf, n,
           "[bridge]\nstore = %s/store.db\nplugin_dir = %s\n"
           "admin.listen = 127.0.0.1:0\nadmin.port_file = %s/admin.port\n"
           "log.format = text\nlog.level = warn\nprofile = warn\n"
           "drain_timeout = 10s\n%s"
           "\n[source intermediary]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "port_file = %s/http.port\nauth = none\n"
           "max_connections_per_ip = 4096\n",
           dir, CEB_PLUGIN_PATH, dir, gm, dir);
}

static void load_opts(ceb_bench_load_opts *o, const params *p, int port,
                      const char *prefix) {
  *o = (ceb_bench_load_opts){.port = port,
                             .path = "/events",
                             .connections = p->conns,
                             .event_size = p->size,
                             .keys = p->keys,
                             .binary = p->binary,
                             .id_prefix = prefix,
                             .source = SRC,
                             .type = TYPE};
}

/* ---- accept ---- */

static int run_accept(const params *p, const char *label) {
  ceb_bench_bridge b;
  if (ceb_bench_bridge_init(&b, "bench-http") < 0) return 1;
  char text[4096], part[1024];
  conf_bridge(text, sizeof text, b.dir, p->group_max, p->extra);
  if (!strcmp(p->sink, "pull"))
    snprintf(part, sizeof part,
             "\n[sink partner]\nplugin = pull\nlisten = 127.0.0.1:0\n"
             "port_file = %s/pull.port\nauth = none\nqueue.max = 100000000\n",
             b.dir);
  else
    snprintf(part, sizeof part,
             "\n[sink partner]\nplugin = testsink\n"
             "mode = ack\n");
  if (p->throttle)
    strncat(part, "rate_limit = 1/s\nrate_limit.burst = 1\n",
            sizeof part - strlen(part) - 1);
  strncat(text, part, sizeof text - strlen(text) - 1);
  strncat(text,
          "\n[route in]\nfrom = intermediary\nto = partner\n"
          "order_by = subject\n",
          sizeof text - strlen(text) - 1);
  int ok = 0;
  if (ceb_bench_bridge_conf(&b, "00-bench.conf", text) < 0 ||
      ceb_bench_bridge_start(&b) < 0)
    goto out;
  int port = ceb_bench_bridge_port(&b, "http.port", 20000);
  int admin = ceb_bench_bridge_port(&b, "admin.port", 20000);
  if (port < 0 || admin < 0) goto out;
  char prefix[64];
  id_prefix(prefix, sizeof prefix, "a");
  ceb_bench_load_opts o;
  load_opts(&o, p, port, prefix);
  o.duration_ms = p->dur_ms;
  ceb_bench_load_result r;
  char err[256];
  double lavg = ceb_bench_loadavg();
  double cpu0 = ceb_bench_bridge_cpu_s(&b), own0 = self_cpu_s();
  ceb_bench_bridge_rss_start(&b);
  int lrc = ceb_bench_load_run(&o, &r, err, sizeof err);
  ceb_bench_bridge_rss_stop(&b);
  double cpu = ceb_bench_bridge_cpu_s(&b) - cpu0, own = self_cpu_s() - own0;
  if (lrc < 0) {
    fprintf(stderr, "bench: load: %s\n", err);
    goto out;
  }
  long hwm = ceb_bench_bridge_status_kb(&b, "VmHWM");
  double acc = ceb_bench_metric_sum(admin, "cebridge_events_accepted_total");
  double del = ceb_bench_metric_sum(admin, "cebridge_events_delivered_total");
  long good = r.status[202];
  ceb_bench_load_print(label, &r);
  printf("%s: bridge RSS max %ld kB, VmHWM %ld kB; accepted_total %.0f, "
         "delivered_total %.0f at the end of the load; CPU s bridge %.2f "
         "(%.0f us/event), load generator %.2f; load average before %.2f\n",
         label, b.rss_max_kb, hwm, acc, del, cpu, good ? cpu * 1e6 / good : 0,
         own, lavg);
  int stopped = ceb_bench_bridge_stop(&b, 60000);
  ok = good == r.sent && r.sent > 0 && !r.transport_errors && !r.timeouts &&
       acc == (double)good && stopped == 0;
  if (stopped != 0) fprintf(stderr, "bench: bridge exit status %d\n", stopped);
  if (g_nrows < 8) {
    row *w = &g_rows[g_nrows++];
    snprintf(w->name, sizeof w->name, "%s", label);
    w->events = good;
    w->rate = r.elapsed_s > 0 ? good / r.elapsed_s : 0;
    w->lat = r.lat;
    w->rss_max_kb = b.rss_max_kb;
    w->hwm_kb = hwm;
    w->bridge_us_ev = good ? cpu * 1e6 / good : 0;
    w->own_us_ev = good ? own * 1e6 / good : 0;
    w->loadavg = lavg;
    w->ok = ok;
  }
out:
  ceb_bench_bridge_free(&b, !ok);
  return ok ? 0 : 1;
}

/* ---- webhook ---- */

static int sink_conf(ceb_bench_bridge *b, const params *p, int rx_port,
                     int throttled) {
  char text[4096], part[1024];
  conf_bridge(text, sizeof text, b->dir, 0, p->extra);
  snprintf(part, sizeof part,
           "\n[sink partner]\nplugin = http\nurl = http://127.0.0.1:%d/hook\n"
           "allow_insecure_http = true\nmode = binary\n"
           "max_connections = %d\n%s"
           "\n[route out]\nfrom = intermediary\nto = partner\n"
           "order_by = subject\nmax_inflight = %d\n",
           rx_port, p->sink_conns,
           throttled ? "rate_limit = 1/s\nrate_limit.burst = 1\n" : "",
           p->inflight);
  strncat(text, part, sizeof text - strlen(text) - 1);
  return ceb_bench_bridge_conf(b, "00-bench.conf", text);
}

typedef struct wait_rx {
  ceb_bench_receiver *rx;
  long want;
} wait_rx;

static int rx_done(void *arg) {
  wait_rx *w = arg;
  ceb_bench_rx_counts n;
  ceb_bench_receiver_snapshot(w->rx, &n);
  return n.delivered >= w->want || n.disorder || n.unparsable;
}

static int run_webhook(const params *p, const char *label) {
  ceb_bench_receiver *rx = ceb_bench_receiver_start(p->keys, p->conns, 2);
  if (!rx) return 1;
  ceb_bench_bridge b;
  int ok = 0;
  if (ceb_bench_bridge_init(&b, "bench-http") < 0) {
    ceb_bench_receiver_stop(rx);
    return 1;
  }
  /* phase 1: preload with the sink throttled to 1/s */
  if (sink_conf(&b, p, ceb_bench_receiver_port(rx), 1) < 0 ||
      ceb_bench_bridge_start(&b) < 0)
    goto out;
  int port = ceb_bench_bridge_port(&b, "http.port", 20000);
  if (port < 0) goto out;
  char prefix[64], err[256];
  id_prefix(prefix, sizeof prefix, "w");
  ceb_bench_load_opts o;
  load_opts(&o, p, port, prefix);
  o.count = p->events;
  ceb_bench_load_result r;
  if (ceb_bench_load_run(&o, &r, err, sizeof err) < 0) {
    fprintf(stderr, "bench: load: %s\n", err);
    goto out;
  }
  char plabel[96];
  snprintf(plabel, sizeof plabel, "%s preload", label);
  ceb_bench_load_print(plabel, &r);
  int st1 = ceb_bench_bridge_stop(&b, 60000);
  long accepted = r.status[202];
  ceb_bench_rx_counts pre;
  ceb_bench_receiver_snapshot(rx, &pre);
  if (st1 != 0 || accepted != p->events) {
    fprintf(stderr, "bench: preload incomplete (exit %d, %ld of %ld)\n", st1,
            accepted, p->events);
    goto out;
  }
  /* phase 2: the same store, the limit lifted */
  ceb_bench_receiver_reset(rx);
  if (sink_conf(&b, p, ceb_bench_receiver_port(rx), 0) < 0) goto out;
  char portfile[600];
  snprintf(portfile, sizeof portfile, "%s/http.port", b.dir);
  unlink(portfile);
  double lavg = ceb_bench_loadavg(), own0 = self_cpu_s();
  int64_t t0 = ceb_test_now_ms();
  if (ceb_bench_bridge_start(&b) < 0) goto out;
  ceb_bench_bridge_rss_start(&b);
  wait_rx w = {rx, accepted - pre.delivered};
  /* bounded: at least 1,000 events/s or give up */
  ceb_test_wait(rx_done, &w, 60000 + p->events);
  ceb_bench_bridge_rss_stop(&b);
  long hwm = ceb_bench_bridge_status_kb(&b, "VmHWM");
  ceb_bench_rx_counts n;
  ceb_bench_receiver_snapshot(rx, &n);
  double cpu = ceb_bench_bridge_cpu_s(&b), own = self_cpu_s() - own0;
  int st2 = ceb_bench_bridge_stop(&b, 60000);
  if (n.disorder || pre.disorder) {
    ceb_bench_rx_counts *d = n.disorder ? &n : &pre;
    fprintf(stderr,
            "bench: FIFO broken on key-%06ld: event %ld (connection %ld) "
            "delivered after event %ld of the same connection (%s)\n",
            d->bad_key, d->bad_seq, d->bad_conn, d->bad_last,
            n.disorder ? "after the restart" : "while throttled");
  }
  double span = (n.last_us - n.first_us) / 1e6;
  double rate = span > 0 ? n.delivered / span : 0;
  printf("%s: %ld events over %d keys preloaded (%ld delivered while "
         "throttled); after restart %ld delivered in %.2f s first-to-last "
         "= %.0f ev/s (first after %.2f s); duplicates %ld, out of order "
         "%ld, unparsable %ld; bridge RSS max %ld kB, VmHWM %ld kB; CPU s "
         "bridge %.2f (since start), receiver %.2f; load average before "
         "%.2f\n",
         label, accepted, p->keys, pre.delivered, n.delivered, span, rate,
         n.first_us ? (n.first_us / 1000 - t0) / 1e3 : 0.0, n.duplicates,
         n.disorder + pre.disorder, n.unparsable + pre.unparsable, b.rss_max_kb,
         hwm, cpu, own, lavg);
  ok = st2 == 0 && n.delivered + pre.delivered == accepted && !n.disorder &&
       !pre.disorder && !n.unparsable && !pre.unparsable;
  if (g_nrows < 8) {
    row *wr = &g_rows[g_nrows++];
    snprintf(wr->name, sizeof wr->name, "%s", label);
    wr->events = n.delivered;
    wr->rate = rate;
    wr->lat = (ceb_bench_latency){-1, -1, -1, -1};
    wr->rss_max_kb = b.rss_max_kb;
    wr->hwm_kb = hwm;
    wr->bridge_us_ev = n.delivered ? cpu * 1e6 / n.delivered : 0;
    wr->own_us_ev = n.delivered ? own * 1e6 / n.delivered : 0;
    wr->loadavg = lavg;
    wr->ok = ok;
  }
out:
  ceb_bench_bridge_free(&b, !ok);
  ceb_bench_receiver_stop(rx);
  return ok ? 0 : 1;
}

/* ---- driver ---- */

static void print_table(void) {
  printf("\n| scenario | events | events/s | p50 ms | p90 ms | p99 ms | max ms "
         "| RSS max MiB | VmHWM MiB | bridge CPU us/ev | bench CPU us/ev "
         "| loadavg | clean |\n"
         "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
         "---: | ---: | ---: | --- |\n");
  for (int i = 0; i < g_nrows; i++) {
    row *w = &g_rows[i];
    printf("| %s | %ld | %.0f |", w->name, w->events, w->rate);
    if (w->lat.max >= 0)
      printf(" %.2f | %.2f | %.2f | %.2f |", w->lat.p50 / 1e3, w->lat.p90 / 1e3,
             w->lat.p99 / 1e3, w->lat.max / 1e3);
    else
      printf(" – | – | – | – |");
    printf(" %.1f | %.1f | %.0f | %.0f | %.1f | %s |\n", w->rss_max_kb / 1024.0,
           w->hwm_kb / 1024.0, w->bridge_us_ev, w->own_us_ev, w->loadavg,
           w->ok ? "yes" : "NO");
  }
}

static int run_groupcommit(params p) {
  char label[64];
  p.group_max = 1;
  snprintf(label, sizeof label, "accept %s group_max=1", p.sink);
  int rc = run_accept(&p, label);
  p.group_max = 0;
  snprintf(label, sizeof label, "accept %s group_max=512", p.sink);
  return run_accept(&p, label) | rc;
}

static void usage(void) {
  fprintf(stderr, "usage: ceb_bench_http accept|groupcommit|webhook|all|smoke "
                  "[options]\n"
                  "  -c CONNS    load connections (64)\n"
                  "  -d SECONDS  accept: load duration (10)\n"
                  "  -n EVENTS   webhook: events preloaded (100000)\n"
                  "  -s BYTES    event size (1024)\n"
                  "  -k KEYS     distinct subjects (1000)\n"
                  "  -b          binary mode requests (default structured)\n"
                  "  -S SINK     accept: testsink | pull (testsink)\n"
                  "  -g N        accept: store.group_max (bridge default)\n"
                  "  -o LINE     one more [bridge] line, e.g. "
                  "'store.group_wait = 1ms'\n"
                  "  -w CONNS    webhook: http sink max_connections (64)\n"
                  "  -i N        webhook: route max_inflight (1024)\n"
                  "  -T          accept: sink rate_limit 1/s (ingest without "
                  "deliveries)\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage();
    return 2;
  }
  const char *mode = argv[1];
  params p = {.conns = 64,
              .dur_ms = 10000,
              .events = 100000,
              .size = 1024,
              .keys = 1000,
              .sink = "testsink",
              .sink_conns = 64,
              .inflight = 1024};
  int opt;
  optind = 2;
  while ((opt = getopt(argc, argv, "c:d:n:s:k:bS:g:o:w:i:T")) != -1) {
    switch (opt) {
    case 'c':
      p.conns = atoi(optarg);
      break;
    case 'd':
      p.dur_ms = (int64_t)(atof(optarg) * 1000);
      break;
    case 'n':
      p.events = atol(optarg);
      break;
    case 's':
      p.size = atoi(optarg);
      break;
    case 'k':
      p.keys = atoi(optarg);
      break;
    case 'b':
      p.binary = 1;
      break;
    case 'S':
      p.sink = optarg;
      break;
    case 'g':
      p.group_max = atol(optarg);
      break;
    case 'o':
      p.extra = optarg;
      break;
    case 'w':
      p.sink_conns = atoi(optarg);
      break;
    case 'i':
      p.inflight = atoi(optarg);
      break;
    case 'T':
      p.throttle = 1;
      break;
    default:
      usage();
      return 2;
    }
  }
  if (p.conns < 1 || p.conns > 4096 || p.dur_ms < 100 || p.dur_ms > 3600000 ||
      p.events < 1 || p.events > 10000000 || p.size < 256 || p.size > 65536 ||
      p.keys < 1 || p.keys > 999999 ||
      (strcmp(p.sink, "testsink") && strcmp(p.sink, "pull")) ||
      p.group_max < 0 || p.group_max > 100000 || p.sink_conns < 1 ||
      p.sink_conns > 1024 || p.inflight < 1 || p.inflight > 100000) {
    usage();
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  char label[96];
  int rc = 0;
  if (!strcmp(mode, "accept")) {
    snprintf(label, sizeof label, "accept %s %dc%s%s", p.sink, p.conns,
             p.throttle ? " sink 1/s" : "", p.binary ? " binary" : "");
    rc = run_accept(&p, label);
  } else if (!strcmp(mode, "groupcommit")) {
    rc = run_groupcommit(p);
  } else if (!strcmp(mode, "webhook")) {
    snprintf(label, sizeof label, "webhook %d keys", p.keys);
    rc = run_webhook(&p, label);
  } else if (!strcmp(mode, "all") || !strcmp(mode, "smoke")) {
    if (!strcmp(mode, "smoke")) {
      p.conns = 4;
      p.dur_ms = 1000;
      p.events = 300;
      p.keys = 10;
      p.sink_conns = 4;
      p.inflight = 16;
    }
    /* group commit's second run is the plain accept with testsink */
    p.sink = "testsink";
    rc |= run_groupcommit(p);
    p.sink = "pull";
    snprintf(label, sizeof label, "accept pull %dc", p.conns);
    rc |= run_accept(&p, label);
    snprintf(label, sizeof label, "webhook %d keys", p.keys);
    rc |= run_webhook(&p, label);
  } else {
    usage();
    rc = 2;
  }
  if (g_nrows > 1) print_table();
  curl_global_cleanup();
  return rc;
}
