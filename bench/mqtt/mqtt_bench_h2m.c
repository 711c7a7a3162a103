/* bench_mqtt http2mqtt: HTTP source -> route -> mqtt sink, read back by a
 * plain MQTT 5 subscriber (mqtt_bench_rawsub.h; bench_mqtt.c and README.md
 * say what it measures). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ceb_bench_bridge.h"
#include "mqtt_bench.h"
#include "mqtt_bench_http.h"
#include "mqtt_bench_rawsub.h"

/* The bridge's config for http2mqtt; throttled: the sink delivers at most
 * one event a second (the preload phase). */
static int h2m_conf(ceb_bench_bridge *b, const ceb_mosq *m, const mb_params *p,
                    int throttled) {
  char text[4096], part[1024], il[64];
  mb_conf_bridge(text, sizeof text, b->dir);
  snprintf(part, sizeof part,
           "\n[source intermediary]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "port_file = %s/http.port\nauth = none\n"
           "max_connections_per_ip = 4096\n"
           "\n[sink bus]\nplugin = mqtt\nbroker = %s\nclient_id = bench-sink\n"
           "topic = bench/out\nmode = %s\nqos = 1\n%s%s"
           "\n[route out]\nfrom = intermediary\nto = bus\n"
           "order_by = partitionkey\nmax_inflight = %d\n",
           b->dir, m->addr, p->structured ? "structured" : "binary",
           mb_inflight_line(p, il, sizeof il),
           throttled ? "rate_limit = 1/s\nrate_limit.burst = 1\n" : "",
           /* no more than the sink takes: beyond it deliver says EBUSY,
            * which the engine retries with backoff */
           p->inflight ? p->inflight : 64);
  strncat(text, part, sizeof text - strlen(text) - 1);
  char path[700];
  snprintf(path, sizeof path, "%s/http.port", b->dir);
  unlink(path); /* a restart must not find the last run's ports */
  snprintf(path, sizeof path, "%s/admin.port", b->dir);
  unlink(path);
  return ceb_bench_bridge_conf(b, "00-bench.conf", text);
}

/* With p->preload, the load runs against a throttled sink (events wait in
 * the store), then the bridge restarts with the sink open: the second phase
 * measures the MQTT sink's delivery alone, without ingest competing for the
 * CPU (like bench/http's webhook scenario). */
int mb_http2mqtt(const mb_params *p) {
  char label[160];
  snprintf(label, sizeof label,
           "bench mqtt http2mqtt%s (%ld events, %d conns, %d B, %d keys)",
           p->preload ? " preload" : "", p->events, p->conns, p->size, p->keys);
  ceb_mosq *m = mb_broker_start();
  if (!m) return 2;
  int rc = 2;
  mb_track *t = mb_track_new(p->keys, p->conns, p->events);
  mb_rsub *sub = NULL;
  ceb_bench_bridge b;
  if (ceb_bench_bridge_init(&b, "bench-mqtt") < 0 || !t) goto out_nobridge;
  sub = mb_rsub_start(m->url, "bench-reader", "bench/out", t);
  if (!sub) goto out;
  if (h2m_conf(&b, m, p, p->preload) < 0 || ceb_bench_bridge_start(&b) < 0)
    goto out;
  int port = ceb_bench_bridge_port(&b, "http.port", 20000);
  int admin = ceb_bench_bridge_port(&b, "admin.port", 20000);
  if (port < 0 || admin < 0) goto out;
  mb_outcome o;
  memset(&o, 0, sizeof o);
  o.mock_cpu_s = -1;
  o.loadavg = ceb_bench_loadavg();
  double cpu0 = ceb_bench_bridge_cpu_s(&b), mq0 = mb_proc_cpu_s(m->pid),
         own0 = mb_self_cpu_s();
  static mb_thread_cpu th0, th1;
  mb_thread_snapshot(b.proc.pid, &th0);
  ceb_bench_bridge_rss_start(&b);
  mb_http_opts ho = {.port = port,
                     .conns = p->conns,
                     .count = p->events,
                     .size = p->size,
                     .keys = p->keys,
                     .source = MB_SRC,
                     .type = MB_TYPE};
  mb_http_result hr;
  char err[256];
  if (!p->preload) {
    mb_track *w = mb_track_new(p->keys, p->conns, MB_WARM);
    mb_http_opts wo = ho;
    wo.count = MB_WARM;
    wo.id_prefix = "mw";
    mb_rsub_set_track(sub, w);
    int wrc = w ? mb_http_run(&wo, &hr, err, sizeof err) : -1;
    if (wrc == 0) mb_wait_delivered(w, hr.accepted, 10000, 60000);
    mb_counts wc;
    memset(&wc, 0, sizeof wc);
    if (w) mb_track_snapshot(w, &wc);
    mb_rsub_set_track(sub, t);
    mb_track_free(w);
    if (wrc < 0 || wc.delivered != MB_WARM) {
      fprintf(stderr, "bench mqtt: warm-up: %ld of %d delivered\n",
              wc.delivered, MB_WARM);
      rc = 1;
      goto out;
    }
    cpu0 = ceb_bench_bridge_cpu_s(&b);
    mq0 = mb_proc_cpu_s(m->pid);
    own0 = mb_self_cpu_s();
    mb_thread_snapshot(b.proc.pid, &th0);
  }
  int64_t t0 = mb_now_us();
  if (mb_http_run(&ho, &hr, err, sizeof err) < 0) {
    fprintf(stderr, "bench mqtt: load: %s\n", err);
    goto out;
  }
  printf("%s: accepted %.0f ev/s (202: %ld, other: %ld, errors: %ld) in "
         "%.2f s; accept latency p50 %.1f ms p99 %.1f ms max %.1f ms\n",
         label, hr.elapsed_s > 0 ? (double)hr.accepted / hr.elapsed_s : 0,
         hr.accepted, hr.other, hr.errors, hr.elapsed_s,
         (double)hr.p50 / 1000.0, (double)hr.p99 / 1000.0,
         (double)hr.max / 1000.0);
  mb_counts before;
  memset(&before, 0, sizeof before);
  if (p->preload) {
    /* phase 2: restart with the sink open */
    ceb_bench_bridge_rss_stop(&b);
    int st = ceb_bench_bridge_stop(&b, 60000);
    mb_track_snapshot(t, &before);
    if (st != 0) {
      fprintf(stderr, "bench mqtt: preload bridge exit status %d\n", st);
      rc = 1;
      goto out;
    }
    o.loadavg = ceb_bench_loadavg();
    if (h2m_conf(&b, m, p, 0) < 0 || ceb_bench_bridge_start(&b) < 0 ||
        ceb_bench_bridge_port(&b, "admin.port", 20000) < 0)
      goto out;
    t0 = mb_now_us();
    cpu0 = ceb_bench_bridge_cpu_s(&b);
    mq0 = mb_proc_cpu_s(m->pid);
    own0 = mb_self_cpu_s();
    mb_thread_snapshot(b.proc.pid, &th0);
    ceb_bench_bridge_rss_start(&b);
  }
  mb_wait_delivered(t, hr.accepted, 30000, 600000);
  mb_thread_snapshot(b.proc.pid, &th1);
  ceb_bench_bridge_rss_stop(&b);
  o.cpu_s = ceb_bench_bridge_cpu_s(&b) - cpu0;
  o.mosq_cpu_s = mb_proc_cpu_s(m->pid) - mq0;
  o.own_cpu_s = mb_self_cpu_s() - own0;
  o.rss_kb = b.rss_max_kb;
  mb_collect(t, &o);
  o.stopped = ceb_bench_bridge_stop(&b, 60000);
  long measured = o.c.delivered - before.delivered;
  if (p->preload) {
    double span = (double)(o.c.last_us - t0) / 1e6;
    long n = measured > 0 ? measured : 1;
    printf("%s: after the restart delivered %ld (before it %ld; duplicates "
           "%ld, out of order %ld, unparsable %ld) at %.0f ev/s (%.2f s from "
           "the restart); CPU us/event bridge %.0f, mosquitto %.0f, bench "
           "%.0f; bridge RSS max %ld kB; load average before %.2f\n",
           label, measured, before.delivered, o.c.duplicates, o.c.disorder,
           o.c.unparsable, span > 0 ? (double)measured / span : 0, span,
           o.cpu_s * 1e6 / (double)n, o.mosq_cpu_s * 1e6 / (double)n,
           o.own_cpu_s * 1e6 / (double)n, o.rss_kb, o.loadavg);
  } else {
    mb_print_far_end(label, &o, t0);
  }
  mb_thread_report(label, &th0, &th1, measured);
  rc = mb_judge(&o, p->events) && hr.accepted == p->events &&
               mb_rsub_status(sub) == 0
           ? 0
           : 1;
out:
  mb_rsub_stop(sub);
  ceb_bench_bridge_free(&b, rc != 0);
out_nobridge:
  mb_track_free(t);
  if (rc != 0 && m) mb_broker_log_tail(m);
  ceb_mosq_free(m);
  return rc;
}
