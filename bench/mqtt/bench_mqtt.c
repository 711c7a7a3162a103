/* MQTT end-to-end benchmarks through the real `cebridge run` binary, a real
 * mosquitto (tests/helpers/mosquitto, quiet log) and, for Kafka, the
 * librdkafka mock cluster (ceb-kafka-mock); everything on 127.0.0.1, each run
 * in a fresh temp dir:
 *
 *   bench_mqtt http2mqtt [-n EVENTS] [-c CONNECTIONS] [-s BYTES] [-k KEYS]
 *     C connections POST structured CloudEvents of about S bytes to the http
 *     source (auth none) as fast as the 202s come back; the route (ordered
 *     by partitionkey) delivers to an mqtt sink (MQTT 5, binary mode, QoS 1)
 *     on topic bench/out; a paho subscriber reads everything back.
 *   bench_mqtt mqtt2kafka [-n EVENTS] [-k KEYS] [-s BYTES] [-r RATE] [-p P]
 *     P paho publishers (1; each its own keys) send N binary-mode MQTT 5
 *     CloudEvents at QoS 1 to bench/in (each with an in-flight window one
 *     below the broker's Receive Maximum, which bounds one connection's
 *     rate), paced to RATE events/s in total when given; the mqtt source
 *     (persistent session, acknowledging only after the durable submit) ->
 *     route -> kafka sink on the mock cluster; the topic is read back
 *     concurrently.
 *   bench_mqtt mqtt2http [-n EVENTS] [-k KEYS] [-s BYTES] [-r RATE]
 *     the same source, delivered by the http sink to a local libmicrohttpd
 *     receiver (204): separates the MQTT source's cost from the Kafka sink's.
 *
 * Every event carries id mb-STREAM-SEQ, partitionkey key-K and benchsent (the
 * bench's CLOCK_MONOTONIC in us when it was sent): the far end counts first
 * deliveries, duplicates and disorder per (key, stream) and the end-to-end
 * latency (mqtt_bench_track.h). One summary line per run ("bench mqtt ...")
 * with rates, latency p50/p99, the bridge's CPU per event (user + system of
 * all its threads over the run / events) and RSS, and the load average.
 *
 * Exit status: 0 when every event arrived exactly in order per key and the
 * bridge stopped cleanly; 1 otherwise (the temp dir is kept); 2 usage or set
 * up failure. No timing is ever asserted. Bounded: every wait has a
 * deadline. */
#include <arpa/inet.h>
#include <dirent.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <curl/curl.h>

#include "ceb_bench_bridge.h"
#include "ceb_mosquitto.h"
#include "ceb_test.h"
#include "kafka_test_util.h"
#include "mqtt_bench_http.h"
#include "mqtt_bench_paho.h"
#include "mqtt_bench_track.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:bench"
/* Events sent and awaited before the measured run: the first ones pay for
 * connections, metadata and caches being made (a Kafka producer's first
 * send waits about a second), which is not the steady state. */
#define WARM 200
#define TYPE "nl.edu.bench.created"

typedef struct params {
  long events;
  int conns, size, keys;
  double rate;
  int inflight; /* the mqtt source's / sink's max_inflight; 0: default */
  int preload;  /* http2mqtt: load first, then deliver (see http2mqtt) */
  int pubs;     /* mqtt2*: publisher connections */
} params;

#define MAX_PUBS 16

/* One publisher connection of the measured run, on its own thread. */
typedef struct pub_job {
  mb_mqtt *c;
  mb_pub_opts o;
  mb_pub_result r;
  pthread_t thread;
} pub_job;

static void *pub_main(void *arg) {
  pub_job *j = arg;
  mb_pub_run(j->c, &j->o, &j->r);
  return NULL;
}

/* "max_inflight = N\n" for the mqtt section, or "" for its default. */
static const char *inflight_line(const params *p, char *buf, size_t n) {
  if (p->inflight > 0)
    snprintf(buf, n, "max_inflight = %d\n", p->inflight);
  else
    buf[0] = '\0';
  return buf;
}

/* ---- shared pieces ---- */

static double proc_cpu_s(pid_t pid) {
  ceb_bench_bridge b;
  memset(&b, 0, sizeof b);
  b.proc.pid = pid;
  return ceb_bench_bridge_cpu_s(&b);
}

static double self_cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* CPU by thread name (/proc/PID/task/TID/comm): where a pipeline's serial
 * stage is. Threads that ended before the second snapshot are not counted. */
#define MAX_THREADS 256
typedef struct thread_cpu {
  int n;
  long tid[MAX_THREADS];
  char name[MAX_THREADS][20];
  double cpu_s[MAX_THREADS];
} thread_cpu;

static void thread_snapshot(pid_t pid, thread_cpu *t) {
  t->n = 0;
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d) return;
  long hz = sysconf(_SC_CLK_TCK);
  struct dirent *e;
  while ((e = readdir(d)) && t->n < MAX_THREADS) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char p2[384];
    snprintf(p2, sizeof p2, "%s/%s/comm", path, e->d_name);
    char *comm = ceb_test_read_file(p2, NULL);
    snprintf(p2, sizeof p2, "%s/%s/stat", path, e->d_name);
    char *stat = ceb_test_read_file(p2, NULL);
    char *rp = stat ? strrchr(stat, ')') : NULL;
    unsigned long ut = 0, st = 0;
    if (comm && rp &&
        sscanf(rp + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
               &ut, &st) == 2) {
      comm[strcspn(comm, "\n")] = '\0';
      t->tid[t->n] = atol(e->d_name);
      snprintf(t->name[t->n], sizeof t->name[0], "%s", comm);
      t->cpu_s[t->n] = (double)(ut + st) / (double)hz;
      t->n++;
    }
    free(comm);
    free(stat);
  }
  closedir(d);
}

/* Prints "name us/event" per thread name, busiest first (threads of one
 * name summed, with their count). */
static void thread_report(const char *label, const thread_cpu *a,
                          const thread_cpu *b, long events) {
  char names[MAX_THREADS][20];
  double us[MAX_THREADS];
  int cnt[MAX_THREADS], n = 0;
  for (int i = 0; i < b->n; i++) {
    double before = 0;
    for (int j = 0; j < a->n; j++)
      if (a->tid[j] == b->tid[i]) before = a->cpu_s[j];
    double d = b->cpu_s[i] - before;
    int k = 0;
    while (k < n && strcmp(names[k], b->name[i]))
      k++;
    if (k == n) {
      snprintf(names[n], sizeof names[0], "%s", b->name[i]);
      us[n] = 0;
      cnt[n++] = 0;
    }
    us[k] += d * 1e6 / (double)(events ? events : 1);
    cnt[k]++;
  }
  printf("%s: bridge CPU us/event by thread:", label);
  for (int shown = 0; shown < n; shown++) {
    int best = -1;
    for (int k = 0; k < n; k++)
      if (cnt[k] >= 0 && (best < 0 || us[k] > us[best])) best = k;
    if (best < 0 || us[best] < 1) break;
    printf(" %s%s %.0f", names[best], cnt[best] > 1 ? "(xN)" : "", us[best]);
    cnt[best] = -1;
  }
  printf("\n");
}

/* A metric from the admin /metrics page summed over its label sets; -1 when
 * the page or the metric is missing. */
static double metric_sum(int admin_port, const char *name) {
  char url[128], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", admin_port);
  if (ceb_test_http("GET", url, NULL, NULL, 0, &body) != 200) {
    free(body);
    return -1;
  }
  double sum = -1;
  size_t nl = strlen(name);
  for (char *p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
    if (strncmp(p, name, nl) || (p[nl] != '{' && p[nl] != ' ')) continue;
    char *sp = strchr(p, ' ');
    if (p[nl] == '{') {
      char *close = strchr(p, '}');
      sp = close ? strchr(close, ' ') : NULL;
    }
    if (sp) sum = (sum < 0 ? 0 : sum) + strtod(sp + 1, NULL);
  }
  free(body);
  return sum;
}

/* MB_PLUGIN_DIR overrides the plugin directory: A/B runs of two builds of
 * one plugin against the same bench and bridge. */
static void conf_bridge(char *buf, size_t n, const char *dir) {
  const char *pdir = getenv("MB_PLUGIN_DIR");
  snprintf(buf, n,
           "[bridge]\nstore = %s/store.db\nplugin_dir = %s\n"
           "admin.listen = 127.0.0.1:0\nadmin.port_file = %s/admin.port\n"
           "log.format = text\nlog.level = warn\nprofile = warn\n"
           "drain_timeout = 10s\n",
           dir, pdir && *pdir ? pdir : CEB_PLUGIN_PATH, dir);
}

static ceb_mosq *broker_start(void) {
  /* no queue limit: the bench decides how much waits in the broker */
  ceb_mosq_opts mo = {.quiet_log = 1,
                      .extra =
                          getenv("MB_EXTRA")
                              ? getenv("MB_EXTRA")
                              : "max_queued_messages 0\nmax_queued_bytes 0"};
  ceb_mosq *m = ceb_mosq_start(&mo);
  if (!m) fprintf(stderr, "bench mqtt: mosquitto did not start\n");
  return m;
}

/* Waits until the drained counts stop changing or everything arrived. */
static void wait_delivered(mb_track *t, long want, int64_t idle_ms,
                           int64_t max_ms) {
  int64_t until = ceb_test_now_ms() + max_ms, idle_since = ceb_test_now_ms();
  long last = -1;
  while (ceb_test_now_ms() < until) {
    mb_counts c;
    mb_track_snapshot(t, &c);
    long seen = c.delivered + c.duplicates + c.disorder + c.unparsable;
    if (c.delivered >= want) return;
    if (seen != last) {
      last = seen;
      idle_since = ceb_test_now_ms();
    } else if (ceb_test_now_ms() - idle_since > idle_ms) {
      return;
    }
    usleep(20000);
  }
}

typedef struct outcome {
  mb_counts c;
  int64_t lat[3]; /* e2e p50, p99, max (us) */
  double cpu_s, mosq_cpu_s, own_cpu_s, loadavg;
  double mock_cpu_s; /* the Kafka mock cluster's; < 0: none in this run */
  long rss_kb;
  int stopped;
} outcome;

static void collect(mb_track *t, outcome *o) {
  mb_track_snapshot(t, &o->c);
  const double ps[3] = {50, 99, 100};
  if (mb_track_latency(t, ps, o->lat, 3) < 0) memset(o->lat, 0, sizeof o->lat);
}

static int judge(const outcome *o, long want) {
  int ok = o->c.delivered == want && o->c.disorder == 0 &&
           o->c.unparsable == 0 && o->stopped == 0;
  if (o->c.disorder)
    fprintf(stderr,
            "bench mqtt: DISORDER: key-%ld from stream %ld: seq %ld after "
            "%ld\n",
            o->c.bad_key, o->c.bad_stream, o->c.bad_seq, o->c.bad_last);
  if (o->c.delivered != want)
    fprintf(stderr, "bench mqtt: LOST: %ld of %ld events arrived\n",
            o->c.delivered, want);
  if (o->stopped != 0)
    fprintf(stderr, "bench mqtt: bridge exit status %d\n", o->stopped);
  return ok;
}

static void print_far_end(const char *label, const outcome *o, int64_t t0) {
  double span = (double)(o->c.last_us - t0) / 1e6;
  printf("%s: delivered %ld (duplicates %ld, out of order %ld, unparsable "
         "%ld), %.0f ev/s end to end (%.2f s); e2e latency p50 %.1f ms p99 "
         "%.1f ms max %.1f ms\n",
         label, o->c.delivered, o->c.duplicates, o->c.disorder, o->c.unparsable,
         span > 0 ? (double)o->c.delivered / span : 0, span,
         (double)o->lat[0] / 1000.0, (double)o->lat[1] / 1000.0,
         (double)o->lat[2] / 1000.0);
  long n = o->c.delivered ? o->c.delivered : 1;
  char mock[48] = "";
  if (o->mock_cpu_s >= 0)
    snprintf(mock, sizeof mock, ", kafka mock %.0f",
             o->mock_cpu_s * 1e6 / (double)n);
  printf("%s: CPU us/event bridge %.0f, mosquitto %.0f, bench %.0f%s; bridge "
         "RSS max %ld kB; load average before %.2f\n",
         label, o->cpu_s * 1e6 / (double)n, o->mosq_cpu_s * 1e6 / (double)n,
         o->own_cpu_s * 1e6 / (double)n, mock, o->rss_kb, o->loadavg);
}

/* ---- http2mqtt ---- */

/* The bridge's config for http2mqtt; throttled: the sink delivers at most
 * one event a second (the preload phase). */
static int h2m_conf(ceb_bench_bridge *b, const ceb_mosq *m, const params *p,
                    int throttled) {
  char text[4096], part[1024], il[64];
  conf_bridge(text, sizeof text, b->dir);
  snprintf(part, sizeof part,
           "\n[source intermediary]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "port_file = %s/http.port\nauth = none\n"
           "max_connections_per_ip = 4096\n"
           "\n[sink bus]\nplugin = mqtt\nbroker = %s\nclient_id = bench-sink\n"
           "topic = bench/out\nmode = binary\nqos = 1\n%s%s"
           "\n[route out]\nfrom = intermediary\nto = bus\n"
           "order_by = partitionkey\nmax_inflight = %d\n",
           b->dir, m->addr, inflight_line(p, il, sizeof il),
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
static int http2mqtt(const params *p) {
  char label[160];
  snprintf(label, sizeof label,
           "bench mqtt http2mqtt%s (%ld events, %d conns, %d B, %d keys)",
           p->preload ? " preload" : "", p->events, p->conns, p->size, p->keys);
  ceb_mosq *m = broker_start();
  if (!m) return 2;
  int rc = 2;
  mb_track *t = mb_track_new(p->keys, p->conns, p->events);
  mb_mqtt *sub = NULL;
  ceb_bench_bridge b;
  if (ceb_bench_bridge_init(&b, "bench-mqtt") < 0 || !t) goto out_nobridge;
  sub = mb_sub_start(m->url, "bench-reader", "bench/out", t);
  if (!sub) goto out;
  if (h2m_conf(&b, m, p, p->preload) < 0 || ceb_bench_bridge_start(&b) < 0)
    goto out;
  int port = ceb_bench_bridge_port(&b, "http.port", 20000);
  int admin = ceb_bench_bridge_port(&b, "admin.port", 20000);
  if (port < 0 || admin < 0) goto out;
  outcome o;
  memset(&o, 0, sizeof o);
  o.mock_cpu_s = -1;
  o.loadavg = ceb_bench_loadavg();
  double cpu0 = ceb_bench_bridge_cpu_s(&b), mq0 = proc_cpu_s(m->pid),
         own0 = self_cpu_s();
  static thread_cpu th0, th1;
  thread_snapshot(b.proc.pid, &th0);
  ceb_bench_bridge_rss_start(&b);
  mb_http_opts ho = {.port = port,
                     .conns = p->conns,
                     .count = p->events,
                     .size = p->size,
                     .keys = p->keys,
                     .source = SRC,
                     .type = TYPE};
  mb_http_result hr;
  char err[256];
  if (!p->preload) {
    mb_track *w = mb_track_new(p->keys, p->conns, WARM);
    mb_http_opts wo = ho;
    wo.count = WARM;
    wo.id_prefix = "mw";
    mb_sub_set_track(sub, w);
    int wrc = w ? mb_http_run(&wo, &hr, err, sizeof err) : -1;
    if (wrc == 0) wait_delivered(w, hr.accepted, 10000, 60000);
    mb_counts wc;
    memset(&wc, 0, sizeof wc);
    if (w) mb_track_snapshot(w, &wc);
    mb_sub_set_track(sub, t);
    mb_track_free(w);
    if (wrc < 0 || wc.delivered != WARM) {
      fprintf(stderr, "bench mqtt: warm-up: %ld of %d delivered\n",
              wc.delivered, WARM);
      rc = 1;
      goto out;
    }
    cpu0 = ceb_bench_bridge_cpu_s(&b);
    mq0 = proc_cpu_s(m->pid);
    own0 = self_cpu_s();
    thread_snapshot(b.proc.pid, &th0);
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
    mq0 = proc_cpu_s(m->pid);
    own0 = self_cpu_s();
    thread_snapshot(b.proc.pid, &th0);
    ceb_bench_bridge_rss_start(&b);
  }
  wait_delivered(t, hr.accepted, 30000, 600000);
  thread_snapshot(b.proc.pid, &th1);
  ceb_bench_bridge_rss_stop(&b);
  o.cpu_s = ceb_bench_bridge_cpu_s(&b) - cpu0;
  o.mosq_cpu_s = proc_cpu_s(m->pid) - mq0;
  o.own_cpu_s = self_cpu_s() - own0;
  o.rss_kb = b.rss_max_kb;
  collect(t, &o);
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
    print_far_end(label, &o, t0);
  }
  thread_report(label, &th0, &th1, measured);
  rc = judge(&o, p->events) && hr.accepted == p->events ? 0 : 1;
out:
  mb_mqtt_stop(sub);
  ceb_bench_bridge_free(&b, rc != 0);
out_nobridge:
  mb_track_free(t);
  ceb_mosq_free(m);
  return rc;
}

/* ---- the far ends of mqtt2kafka / mqtt2http ---- */

typedef struct kafka_far {
  rd_kafka_t *reader;
  mb_track *_Atomic t; /* the warm-up's, then the run's */
  long want;
  atomic_int stop;
  pthread_t thread;
} kafka_far;

/* A consumer assigned every partition of topic from the beginning, tuned
 * for latency (ktest_reader's defaults let the mock hold a fetch for up to
 * 500 ms, and ktest_read returns batches after up to 100 ms: both would be
 * counted as end-to-end latency). */
static rd_kafka_t *kafka_reader(const char *bootstrap, const char *topic,
                                int partitions) {
  char err[256];
  rd_kafka_conf_t *c = rd_kafka_conf_new();
  const char *kv[][2] = {{"bootstrap.servers", bootstrap},
                         {"group.id", "bench-mqtt-reader"},
                         {"enable.auto.commit", "false"},
                         {"fetch.wait.max.ms", "5"},
                         {"fetch.error.backoff.ms", "5"}};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    if (rd_kafka_conf_set(c, kv[i][0], kv[i][1], err, sizeof err) !=
        RD_KAFKA_CONF_OK) {
      fprintf(stderr, "bench mqtt: kafka reader: %s\n", err);
      rd_kafka_conf_destroy(c);
      return NULL;
    }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, err, sizeof err);
  if (!rk) {
    fprintf(stderr, "bench mqtt: kafka reader: %s\n", err);
    return NULL;
  }
  rd_kafka_poll_set_consumer(rk);
  rd_kafka_topic_partition_list_t *l =
      rd_kafka_topic_partition_list_new(partitions);
  for (int i = 0; i < partitions; i++)
    rd_kafka_topic_partition_list_add(l, topic, i)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, l);
  rd_kafka_topic_partition_list_destroy(l);
  return rk;
}

/* Reads the output topic while the run goes on (the mock cluster keeps only
 * about 5 MiB per partition), recording each record as it arrives. */
static void *kafka_read(void *arg) {
  kafka_far *k = arg;
  int64_t until = ceb_test_now_ms() + 900000;
  while (!atomic_load(&k->stop) && ceb_test_now_ms() < until) {
    rd_kafka_message_t *msg = rd_kafka_consumer_poll(k->reader, 50);
    if (!msg) continue;
    if (!msg->err) {
      char *id = ktest_header(msg, "ce_id");
      char *key = ktest_header(msg, "ce_partitionkey");
      char *sent = ktest_header(msg, "ce_benchsent");
      mb_track_record(atomic_load(&k->t), id, -1, key, -1, sent, -1);
      free(id);
      free(key);
      free(sent);
    }
    rd_kafka_message_destroy(msg);
  }
  return NULL;
}

static enum MHD_Result on_hook(void *cls, struct MHD_Connection *c,
                               const char *url, const char *method,
                               const char *version, const char *data,
                               size_t *size, void **ctx) {
  (void)url;
  (void)method;
  (void)version;
  (void)data;
  if (!*ctx) {
    *ctx = cls;
    return MHD_YES;
  }
  if (*size) {
    *size = 0;
    return MHD_YES;
  }
  mb_track_record(
      atomic_load((mb_track * _Atomic *)cls),
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "ce-id"), -1,
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "ce-partitionkey"), -1,
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "ce-benchsent"), -1);
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  enum MHD_Result r = MHD_queue_response(c, MHD_HTTP_NO_CONTENT, resp);
  MHD_destroy_response(resp);
  return r;
}

/* Polls the admin API until the mqtt source holds its subscription (what
 * the publisher sends before that would be lost: no session yet). */
static int wait_subscribed(int admin, int64_t timeout_ms) {
  int64_t until = ceb_test_now_ms() + timeout_ms;
  while (ceb_test_now_ms() < until) {
    if (metric_sum(admin, "cebridge_mqtt_subscribed") >= 1) return 0;
    usleep(20000);
  }
  fprintf(stderr, "bench mqtt: the bridge's source never subscribed\n");
  return -1;
}

static int mqtt2x(const params *p, int to_kafka) {
  char label[160];
  snprintf(label, sizeof label,
           "bench mqtt %s (%ld events, %d B, %d keys, rate %s)",
           to_kafka ? "mqtt2kafka" : "mqtt2http", p->events, p->size, p->keys,
           p->rate > 0 ? "paced" : "max");
  if (p->rate > 0)
    snprintf(label + strlen(label) - 6, sizeof label - strlen(label) + 6,
             "%.0f/s)", p->rate);
  ceb_mosq *m = broker_start();
  if (!m) return 2;
  int rc = 2, mock_up = 0;
  ktest_mock km;
  kafka_far kf;
  memset(&kf, 0, sizeof kf);
  struct MHD_Daemon *d = NULL;
  mb_mqtt *pub = NULL;
  pub_job jobs[MAX_PUBS];
  memset(jobs, 0, sizeof jobs);
  mb_track *t = mb_track_new(p->keys, p->pubs, p->events);
  mb_track *w = mb_track_new(p->keys, 1, WARM);
  mb_track *_Atomic far = w; /* where the http receiver records */
  ceb_bench_bridge b;
  if (ceb_bench_bridge_init(&b, "bench-mqtt") < 0 || !t || !w) goto out;
  char sink[1024];
  if (to_kafka) {
    const char *topics[] = {"bench.out:16", NULL};
    if (ktest_mock_start(&km, topics)) goto out;
    mock_up = 1;
    snprintf(sink, sizeof sink,
             "\n[sink internal]\nplugin = kafka\nbrokers = %s\n"
             "topic = bench.out\n",
             km.bootstrap);
  } else {
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0,
                         NULL, NULL, on_hook, &far, MHD_OPTION_THREAD_POOL_SIZE,
                         2, MHD_OPTION_CONNECTION_LIMIT, 1024,
                         MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
    const union MHD_DaemonInfo *di =
        d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
    if (!di) goto out;
    snprintf(sink, sizeof sink,
             "\n[sink internal]\nplugin = http\n"
             "url = http://127.0.0.1:%d/hook\nallow_insecure_http = true\n"
             "max_connections = 64\n",
             (int)di->port);
  }
  char text[4096], part[2048], il[64];
  conf_bridge(text, sizeof text, b.dir);
  snprintf(part, sizeof part,
           "\n[source bus]\nplugin = mqtt\nbroker = %s\n"
           "client_id = bench-source\ntopics = bench/in\nqos = 1\n"
           "dlq_topic = bench/dlq\n%s%s"
           "\n[route in]\nfrom = bus\nto = internal\norder_by = partitionkey\n"
           "max_inflight = 1024\n",
           m->addr, inflight_line(p, il, sizeof il), sink);
  strncat(text, part, sizeof text - strlen(text) - 1);
  if (ceb_bench_bridge_conf(&b, "00-bench.conf", text) < 0 ||
      ceb_bench_bridge_start(&b) < 0)
    goto out;
  int admin = ceb_bench_bridge_port(&b, "admin.port", 20000);
  if (admin < 0 || wait_subscribed(admin, 20000) < 0) goto out;
  if (to_kafka) {
    kf.reader = kafka_reader(km.bootstrap, "bench.out", 16);
    atomic_store(&kf.t, w);
    kf.want = p->events;
    if (!kf.reader || pthread_create(&kf.thread, NULL, kafka_read, &kf)) {
      ktest_reader_close(kf.reader);
      kf.reader = NULL;
      goto out;
    }
  }
  pub = mb_pub_start(m->url, "bench-writer");
  if (!pub) goto out;
  mb_pub_opts wo = {.topic = "bench/in",
                    .count = WARM,
                    .keys = p->keys,
                    .size = p->size,
                    .source = SRC,
                    .type = TYPE,
                    .id_prefix = "mw"};
  mb_pub_result wr;
  mb_counts wc;
  mb_pub_run(pub, &wo, &wr);
  wait_delivered(w, wr.acked, 10000, 60000);
  mb_track_snapshot(w, &wc);
  if (wc.delivered != WARM) {
    fprintf(stderr, "bench mqtt: warm-up: %ld of %d delivered\n", wc.delivered,
            WARM);
    rc = 1;
    goto out;
  }
  atomic_store(&far, t);
  atomic_store(&kf.t, t);
  outcome o;
  memset(&o, 0, sizeof o);
  o.loadavg = ceb_bench_loadavg();
  double cpu0 = ceb_bench_bridge_cpu_s(&b), mq0 = proc_cpu_s(m->pid),
         own0 = self_cpu_s(), km0 = mock_up ? proc_cpu_s(km.pid) : -1;
  static thread_cpu th0, th1;
  thread_snapshot(b.proc.pid, &th0);
  ceb_bench_bridge_rss_start(&b);
  /* p->pubs connections, each with its own keys (a key's order is defined
   * by its one publisher) and an equal share of the events and the rate */
  mb_pub_result pr;
  memset(&pr, 0, sizeof pr);
  int started = 0;
  int64_t t0 = mb_now_us();
  for (int i = 0; i < p->pubs; i++) {
    char id[32];
    snprintf(id, sizeof id, "bench-writer-%d", i);
    jobs[i].c = i == 0 ? pub : mb_pub_start(m->url, id);
    jobs[i].o = (mb_pub_opts){.topic = "bench/in",
                              .count = p->events / p->pubs +
                                       (i < p->events % p->pubs ? 1 : 0),
                              .keys = p->keys,
                              .size = p->size,
                              .rate = p->rate / p->pubs,
                              .source = SRC,
                              .type = TYPE,
                              .stream = i,
                              .streams = p->pubs};
    if (!jobs[i].c ||
        pthread_create(&jobs[i].thread, NULL, pub_main, &jobs[i]) != 0)
      break;
    started++;
  }
  for (int i = 0; i < started; i++) {
    pthread_join(jobs[i].thread, NULL);
    pr.sent += jobs[i].r.sent;
    pr.acked += jobs[i].r.acked;
    pr.failed += jobs[i].r.failed;
    pr.window = jobs[i].r.window;
    if (jobs[i].r.elapsed_s > pr.elapsed_s) pr.elapsed_s = jobs[i].r.elapsed_s;
  }
  if (started < p->pubs)
    fprintf(stderr, "bench mqtt: only %d of %d publishers started\n", started,
            p->pubs);
  wait_delivered(t, pr.acked, 30000, 600000);
  thread_snapshot(b.proc.pid, &th1);
  ceb_bench_bridge_rss_stop(&b);
  o.cpu_s = ceb_bench_bridge_cpu_s(&b) - cpu0;
  o.mosq_cpu_s = proc_cpu_s(m->pid) - mq0;
  o.mock_cpu_s = mock_up ? proc_cpu_s(km.pid) - km0 : -1;
  o.own_cpu_s = self_cpu_s() - own0;
  o.rss_kb = b.rss_max_kb;
  collect(t, &o);
  o.stopped = ceb_bench_bridge_stop(&b, 60000);
  printf("%s: published %ld, PUBACKed %ld, failed %ld; %.0f ev/s into the "
         "broker (%d publishers, window %d each, %.2f s)\n",
         label, pr.sent, pr.acked, pr.failed,
         pr.elapsed_s > 0 ? (double)pr.acked / pr.elapsed_s : 0, p->pubs,
         pr.window, pr.elapsed_s);
  print_far_end(label, &o, t0);
  thread_report(label, &th0, &th1, o.c.delivered);
  rc = judge(&o, p->events) && pr.acked == p->events ? 0 : 1;
out:
  if (kf.reader) {
    atomic_store(&kf.stop, 1);
    pthread_join(kf.thread, NULL);
    ktest_reader_close(kf.reader);
  }
  mb_mqtt_stop(pub);
  for (int i = 1; i < MAX_PUBS; i++)
    mb_mqtt_stop(jobs[i].c);
  ceb_bench_bridge_free(&b, rc != 0);
  if (d) MHD_stop_daemon(d);
  if (mock_up) ktest_mock_stop(&km);
  mb_track_free(t);
  mb_track_free(w);
  ceb_mosq_free(m);
  return rc;
}

static void usage(void) {
  fprintf(
      stderr,
      "usage: bench_mqtt http2mqtt [-n EVENTS] [-c CONNS] [-s BYTES] "
      "[-k KEYS] [-i SINK_INFLIGHT] [-P]\n"
      "       bench_mqtt mqtt2kafka|mqtt2http [-n EVENTS] [-k KEYS] "
      "[-s BYTES] [-r EVENTS_PER_S] [-i SOURCE_INFLIGHT] [-p PUBLISHERS]\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage();
    return 2;
  }
  const char *mode = argv[1];
  params p = {
      .events = 100000, .conns = 64, .size = 1024, .keys = 1000, .pubs = 1};
  int opt;
  optind = 2;
  while ((opt = getopt(argc, argv, "n:c:s:k:r:i:Pp:")) != -1) {
    switch (opt) {
    case 'n':
      p.events = atol(optarg);
      break;
    case 'c':
      p.conns = atoi(optarg);
      break;
    case 's':
      p.size = atoi(optarg);
      break;
    case 'k':
      p.keys = atoi(optarg);
      break;
    case 'r':
      p.rate = atof(optarg);
      break;
    case 'i':
      p.inflight = atoi(optarg);
      break;
    case 'P':
      p.preload = 1;
      break;
    case 'p':
      p.pubs = atoi(optarg);
      break;
    default:
      usage();
      return 2;
    }
  }
  if (optind != argc || p.events < 1 || p.events > 10000000 || p.conns < 1 ||
      p.conns > 1024 || p.size < 0 || p.size > 7000 || p.keys < 1 ||
      p.keys > 100000 || p.rate < 0 || p.rate > 1e6 || p.inflight < 0 ||
      p.inflight > 65535 || p.pubs < 1 || p.pubs > MAX_PUBS) {
    usage();
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  curl_global_init(CURL_GLOBAL_DEFAULT);
  int rc;
  if (!strcmp(mode, "http2mqtt"))
    rc = http2mqtt(&p);
  else if (!strcmp(mode, "mqtt2kafka"))
    rc = mqtt2x(&p, 1);
  else if (!strcmp(mode, "mqtt2http"))
    rc = mqtt2x(&p, 0);
  else {
    usage();
    rc = 2;
  }
  curl_global_cleanup();
  return rc;
}
