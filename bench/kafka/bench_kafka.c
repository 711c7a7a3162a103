/* Kafka end-to-end benchmarks through the real `cebridge run` binary and a
 * librdkafka mock cluster (ceb-kafka-mock), everything on loopback:
 *
 *   bench_kafka http2kafka [-n EVENTS] [-c CONNECTIONS] [-s PAD_BYTES]
 *     C keep-alive connections (bench/http's raw-socket load generator)
 *     POST structured CloudEvents (PAD_BYTES of data padding, ~260 B more of
 *     JSON) to the http source as fast as the 202s come back; the route
 *     orders by subject (1,000 keys) and the kafka sink produces them to a
 *     topic. Reports request rate, 202 latency p50/p99/max, and the time
 *     until the last event was on the topic (all read back: each exactly
 *     once, in order per key and sending connection).
 *     Target: >= 12k ev/s, p99 <= 30 ms at 64 connections, 1 KiB events.
 *
 *   bench_kafka kafka2http [-n EVENTS] [-k KEYS] [-p PARTITIONS]
 *     EVENTS records over KEYS keys are produced to a topic first; the
 *     bridge consumes them and the http sink delivers them to a local
 *     receiver (libmicrohttpd) that checks order per key. Reports the
 *     delivery rate from the first to the last delivery.
 *     Target: >= 10k ev/s with 1,000 ordering keys.
 *
 *   bench_kafka kafka2kafka / kafka2null: the same, delivered to a Kafka
 *     topic (read back) or to testsink (ACKs at once, writes one line per
 *     delivery that the bench reads back): kafka2null is the ingest side
 *     (consume, decode, journal, claim, settle) without a sink's cost.
 *
 * Prints one summary line per run ("bench kafka ... ev/s ...") and one
 * cost line (bridge CPU per event, split out for the kafka plugin's and
 * librdkafka's threads and the engine workers; the mock cluster's CPU; this
 * process's own CPU: load generation, the kafka2* topic filled ahead and
 * the read-back, which share the cores; bridge peak RSS; load average: on
 * a shared machine CPU per event is the comparable figure), and
 * exits non-zero when an event is missing or out of order (not on a missed
 * target: targets are for the report). Bounded: every wait has a deadline. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_kafka_proc.h"
#include "ceb_bench_load.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "kafka_test_util.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:bench"

/* ---- bridge process ---- */

/* A "Key:   123 kB" line of /proc/pid/status (VmHWM: peak RSS); -1 when
 * unavailable. */
static long proc_status_kb(pid_t pid, const char *key) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long kb = -1;
  size_t kl = strlen(key);
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, key, kl) && line[kl] == ':') {
      kb = atol(line + kl + 1);
      break;
    }
  fclose(f);
  return kb;
}

/* One line with what the run cost: bridge and mock-cluster CPU per event,
 * the bridge's peak RSS, the load average. */
typedef struct bridge_cost {
  double cpu_s, source_s, sink_s; /* whole bridge, kafka poll threads */
  double rdk_s;                   /* librdkafka's own threads ("rdk:...") */
  double engine_s; /* delivery engine workers: claims and sink deliver */
  double self_s;   /* this process: load generator and read-back */
  double map_s;    /* the bridge's mapping worker processes */
  long hwm_kb;     /* peak RSS */
} bridge_cost;

/* Reads what the running bridge has cost so far (before it is stopped). */
static bridge_cost cost_sample(pid_t bridge) {
  bridge_cost c = {bk_proc_cpu_s(bridge),
                   bk_threads_cpu_s(bridge, "kafka-source"),
                   bk_threads_cpu_s(bridge, "kafka-sink"),
                   bk_threads_cpu_s(bridge, "rdk:"),
                   bk_threads_cpu_s(bridge, "engine-"),
                   bk_self_cpu_s(),
                   bk_children_cpu_s(bridge),
                   proc_status_kb(bridge, "VmHWM")};
  return c;
}

static void print_cost(const char *mode, long events, const bridge_cost *c,
                       double mock_cpu_s) {
  double n = (double)events;
  printf("bench kafka %s cost: bridge CPU %.2f s = %.1f us/event (kafka "
         "source thread %.1f, kafka sink thread %.1f, librdkafka threads "
         "%.1f, engine workers %.1f), mapping workers %.1f us/event, mock "
         "cluster CPU %.1f us/event, bench process CPU %.1f us/event, bridge "
         "peak RSS %ld MiB, load average %.2f\n",
         mode, c->cpu_s, c->cpu_s * 1e6 / n, c->source_s * 1e6 / n,
         c->sink_s * 1e6 / n, c->rdk_s * 1e6 / n, c->engine_s * 1e6 / n,
         c->map_s * 1e6 / n, mock_cpu_s * 1e6 / n, c->self_s * 1e6 / n,
         c->hwm_kb / 1024, bk_loadavg1());
}

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Extra "key = value" lines for the kafka sink's section (-x), to compare
 * producer settings (rdkafka.linger.ms = 20) without rebuilding. */
static char sink_extra[2048];
/* http2kafka -m PROGRAM: the intermediary's `map` (an ingress mapping on
 * every request: the cost of a mapping on the same path, same run) */
static const char *source_map;
/* -M JQ: the kafka source of kafka2* maps every record with this program
 * (its input document, plugins/kafka/kafka_doc.h), e.g. the CloudEvent
 * rebuilt from the record's ce_ headers, key and value. */
static const char *kafka_source_map;
/* http2kafka -t N: the intermediary's listener threads (default 2) */
static int source_threads = 2;

static int sink_extra_add(const char *kv) {
  size_t used = strlen(sink_extra), n = strlen(kv);
  if (!strchr(kv, '=') || strchr(kv, '\n') || used + n + 2 > sizeof sink_extra)
    return -1;
  memcpy(sink_extra + used, kv, n);
  memcpy(sink_extra + used + n, "\n", 2);
  return 0;
}

/* ---- http2kafka ---- */

/* Load: bench/http's raw-socket generator (ceb_bench_load.h), structured
 * CloudEvents with ids H2K_PREFIX-CCCC-SSSSSSSSSS (sending connection,
 * global sequence from 0) and subject key-(seq mod H2K_KEYS); the route
 * orders by subject and the sink keys records by it. libcurl cost this
 * process 37-49 us of CPU per event (on the 2 cores the bridge needs); the
 * generator about 16. */
#define H2K_KEYS 1000
#define H2K_PREFIX "h2k"
/* The event's JSON around the pad is about this long: -s is the pad. */
#define H2K_ENVELOPE 260

/* Reads the output topic while the load runs: the mock cluster keeps only
 * about 5 MiB per partition, so reading afterwards would miss the start. */
typedef struct topic_counter {
  rd_kafka_t *reader;
  atomic_long want;
  atomic_long count;
  int64_t last_us; /* read after join */
  atomic_llong deadline_ms;
  long *seq, *conn; /* per record in read order; -1: no id of this run */
  long capacity;    /* of seq and conn */
} topic_counter;

/* Sending connection and sequence from a record's ce_id header
 * (binary mode); 0, or -1 when it is not an id of this run. */
static int record_id(const rd_kafka_message_t *m, long *conn, long *seq) {
  rd_kafka_headers_t *h = NULL;
  const void *v;
  size_t n;
  char id[64];
  if (rd_kafka_message_headers(m, &h) || !h ||
      rd_kafka_header_get_last(h, "ce_id", &v, &n) || !v || n >= sizeof id)
    return -1;
  memcpy(id, v, n);
  id[n] = '\0';
  char *end;
  if (strncmp(id, H2K_PREFIX "-", sizeof H2K_PREFIX)) return -1;
  *conn = strtol(id + sizeof H2K_PREFIX, &end, 10);
  if (*end != '-') return -1;
  *seq = strtol(end + 1, &end, 10);
  return *end ? -1 : 0;
}

static void *count_topic(void *arg) {
  topic_counter *tc = arg;
  while (atomic_load(&tc->count) < atomic_load(&tc->want) &&
         ceb_test_now_ms() < atomic_load(&tc->deadline_ms)) {
    rd_kafka_message_t *batch[512];
    size_t n = ktest_read(tc->reader, batch, 512, 100);
    long at = atomic_load(&tc->count);
    for (size_t i = 0; i < n; i++) {
      long k = at + (long)i, conn = -1, seq = -1;
      if (k < tc->capacity && !record_id(batch[i], &conn, &seq)) {
        tc->seq[k] = seq;
        tc->conn[k] = conn;
      } else if (k < tc->capacity) {
        tc->seq[k] = tc->conn[k] = -1;
      }
      rd_kafka_message_destroy(batch[i]);
    }
    if (n) {
      atomic_fetch_add(&tc->count, (long)n);
      tc->last_us = now_us();
    }
  }
  return NULL;
}

/* Checks what was read back: every sequence 0..events-1 on the topic
 * exactly once, and per (key, sending connection) in sending order: the
 * generator writes a connection's next request only after the previous
 * answer, so those are the events of a key whose order the bridge must
 * keep (concurrent senders define no order between them). Prints the
 * findings; 0 when all is well. */
static int check_topic(const topic_counter *tc, long events, int conns) {
  long n = atomic_load(&tc->count), missing = 0, dups = 0, foreign = 0;
  long disorder = 0;
  unsigned char *seen = calloc((size_t)events, 1);
  long *last = malloc((size_t)H2K_KEYS * (size_t)conns * sizeof *last);
  if (!seen || !last) {
    free(seen);
    free(last);
    return -1;
  }
  for (size_t i = 0; i < (size_t)H2K_KEYS * (size_t)conns; i++)
    last[i] = -1;
  if (n > tc->capacity) n = tc->capacity;
  for (long i = 0; i < n; i++) {
    long seq = tc->seq[i], conn = tc->conn[i];
    if (seq < 0 || seq >= events || conn < 0 || conn >= conns) {
      foreign++;
      continue;
    }
    if (seen[seq]++) dups++;
    long *l = &last[(seq % H2K_KEYS) * conns + conn];
    if (seq < *l) disorder++;
    if (seq > *l) *l = seq;
  }
  for (long seq = 0; seq < events; seq++)
    if (!seen[seq]) missing++;
  free(seen);
  free(last);
  printf("bench kafka http2kafka check: %ld records read, %ld missing, %ld "
         "duplicates, %ld out of order per key and connection, %ld not from "
         "this run\n",
         atomic_load(&tc->count), missing, dups, disorder, foreign);
  return missing || dups || disorder || foreign ? 1 : 0;
}

typedef struct load_run {
  ceb_bench_load_opts o;
  ceb_bench_load_result r;
  int rc;
  char err[256];
} load_run;

/* The mappings http2kafka-map compares (issue 15): an ingress program on
 * the intermediary that rebuilds the CloudEvent from the request's input
 * document (what a mapping of a plain JSON body does: read the body, build
 * an event object), and an egress program on the kafka sink that makes a
 * partner-style body ({type, timestamp, id, data}), keeps the ordering key
 * and passes the id as the ce_id header the read-back checks. */
static const char k_ingress_map[] =
    "map = .body | {specversion, id, source, type, subject, time, "
    "datacontenttype, data}\n";
static const char k_egress_map[] =
    "map = {body: {type, timestamp: .time, id, data}, headers: {ce_id: .id}, "
    "key: .subject}\n";

/* What one http2kafka run measured (for http2kafka-map's comparison). */
typedef struct h2k_result {
  double rate;      /* events a second accepted (202) */
  double us_per_ev; /* bridge + mapping workers CPU per event */
} h2k_result;

static int http2kafka(long events, int conns, int size, const char *src_map,
                      const char *sink_map, h2k_result *res) {
  ktest_mock m;
  const char *topics[] = {"bench.out:16", NULL};
  if (ktest_mock_start(&m, topics)) return 2;
  char *dir = ceb_test_tmpdir("bench-kafka");
  char path[600], text[4096];
  snprintf(path, sizeof path, "%s/conf", dir);
  mkdir(path, 0700);
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nadmin.listen = 127.0.0.1:0\n"
           "log.format = text\nlog.level = warn\nprofile = warn\n"
           "\n[source intermediary]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "port_file = %s/port\nauth = none\nidempotency = off\n"
           "threads = %d\n%s%s%s%s"
           "\n[sink internal]\nplugin = kafka\nbrokers = %s\n"
           "topic = bench.out\nkey_attribute = subject\n%s%s"
           "\n[route in]\nfrom = intermediary\nto = internal\n"
           "order_by = subject\nmax_inflight = 4096\n",
           dir, dir, source_threads, source_map ? "map = " : "",
           source_map ? source_map : "", source_map ? "\n" : "",
           src_map ? src_map : "", m.bootstrap, sink_extra,
           sink_map ? sink_map : "");
  snprintf(path, sizeof path, "%s/conf", dir);
  ceb_test_write_file(path, "00.conf", text);
  double mock0 = bk_proc_cpu_s(m.pid);
  char logpath[600];
  snprintf(logpath, sizeof logpath, "%s/bridge.log", dir);
  pid_t bridge = ceb_test_bridge_start(path /* dir/conf */, logpath);
  snprintf(path, sizeof path, "%s/port", dir);
  int port = 0;
  for (int64_t until = ceb_test_now_ms() + 20000;
       !port && ceb_test_now_ms() < until; usleep(20000)) {
    char *p = ceb_test_read_file(path, NULL);
    port = p ? atoi(p) : 0;
    free(p);
  }
  topic_counter tc = {.want = events,
                      .deadline_ms = ceb_test_now_ms() + 600000,
                      .seq = calloc((size_t)events * 2, sizeof(long)),
                      .conn = calloc((size_t)events * 2, sizeof(long)),
                      .capacity = events * 2};
  if (!port || !tc.seq || !tc.conn) {
    fprintf(stderr, "%s\n",
            port ? "out of memory" : "bridge did not write its port");
    free(tc.seq);
    free(tc.conn);
    ceb_test_pid_stop(bridge, SIGTERM, 60000);
    ktest_mock_stop(&m);
    fprintf(stderr, "kept %s for inspection\n", dir);
    free(dir);
    return 2;
  }
  tc.reader = ktest_reader(m.bootstrap, "bench.out", 16);
  pthread_t counter;
  pthread_create(&counter, NULL, count_topic, &tc);

  load_run L = {.o = {.port = port,
                      .path = "/events",
                      .connections = conns,
                      .count = events,
                      .drain_ms = 30000,
                      .event_size = size + H2K_ENVELOPE,
                      .keys = H2K_KEYS,
                      .binary = 0,
                      .id_prefix = H2K_PREFIX,
                      .source = SRC,
                      .type = "nl.edu.bench"}};
  int64_t t0 = now_us();
  L.rc = ceb_bench_load_run(&L.o, &L.r, L.err, sizeof L.err);
  long accepted = L.rc == 0 ? L.r.status[202] : 0;
  long other =
      L.rc == 0 ? L.r.completed - accepted + L.r.transport_errors + L.r.timeouts
                : 0;
  if (L.rc) fprintf(stderr, "load: %s\n", L.err);

  /* Everything accepted must be on the topic. */
  atomic_store(&tc.deadline_ms, ceb_test_now_ms() + 120000);
  atomic_store(&tc.want, accepted);
  pthread_join(counter, NULL);
  bridge_cost cost = cost_sample(bridge);
  double mock_cpu = bk_proc_cpu_s(m.pid) - mock0;
  long on_topic = atomic_load(&tc.count);
  int64_t t_kafka = tc.last_us - t0;
  ktest_reader_close(tc.reader);

  double secs = L.r.elapsed_s > 0 ? L.r.elapsed_s : 1;
  printf("bench kafka http2kafka: %ld events, %d connections, %d B event: "
         "%.0f ev/s accepted (202: %ld, other: %ld), latency p50 %.1f ms "
         "p99 %.1f ms max %.1f ms; on topic %ld after %.2f s (%.0f ev/s)\n",
         events, conns, L.o.event_size, (double)accepted / secs, accepted,
         other, L.r.lat.p50 / 1000.0, L.r.lat.p99 / 1000.0,
         L.r.lat.max / 1000.0, on_topic, t_kafka / 1e6,
         t_kafka > 0 ? (double)on_topic / (t_kafka / 1e6) : 0);
  print_cost("http2kafka", on_topic ? on_topic : 1, &cost, mock_cpu);
  if (res) {
    res->rate = (double)accepted / secs;
    /* the bridge and its mapping worker processes */
    res->us_per_ev =
        (cost.cpu_s + cost.map_s) * 1e6 / (double)(on_topic ? on_topic : 1);
  }
  int bad = check_topic(&tc, events, conns);
  free(tc.seq);
  free(tc.conn);
  int rc = ceb_test_pid_stop(bridge, SIGTERM, 60000) == 0 && L.rc == 0 &&
                   other == 0 && on_topic == accepted && accepted == events &&
                   bad == 0
               ? 0
               : 1;
  ktest_mock_stop(&m);
  if (rc == 0)
    ceb_test_rmtree(dir);
  else
    fprintf(stderr, "kept %s for inspection\n", dir);
  free(dir);
  return rc;
}

/* HTTP -> Kafka without a mapping, with the ingress mapping, with the
 * egress mapping, one after the other in one run (a fresh bridge and mock
 * each), then the cost of each mapping against the first: the issue's
 * target is at most 25 % of the path's throughput. */
static int http2kafka_map(long events, int conns, int size) {
  static const char *const names[] = {"none", "ingress map", "egress map"};
  const char *src[] = {NULL, k_ingress_map, NULL};
  const char *snk[] = {NULL, NULL, k_egress_map};
  h2k_result r[3] = {{0}};
  int rc = 0;
  source_map = NULL; /* -m is http2kafka's: the runs here set their own */
  for (int i = 0; i < 3; i++) {
    printf("bench kafka http2kafka-map: -- %s\n", names[i]);
    fflush(stdout);
    rc |= http2kafka(events, conns, size, src[i], snk[i], &r[i]);
  }
  for (int i = 1; i < 3; i++)
    printf("bench kafka http2kafka-map: %s: %.0f ev/s vs %.0f without "
           "(%+.1f %%), bridge + mapping workers CPU %.1f vs %.1f us/event "
           "(%+.1f us)\n",
           names[i], r[i].rate, r[0].rate,
           r[0].rate > 0 ? (r[i].rate / r[0].rate - 1) * 100 : 0,
           r[i].us_per_ev, r[0].us_per_ev, r[i].us_per_ev - r[0].us_per_ev);
  return rc;
}

/* ---- kafka2http ---- */

typedef struct receiver {
  pthread_mutex_t lock;
  long count, disorder, bad;
  long *last; /* per key: last seq seen, -1 none */
  int keys;
  int64_t first_us, last_us;
} receiver;

static void record(receiver *rx, const char *id);

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *size, void **ctx) {
  (void)url;
  (void)method;
  (void)version;
  (void)data;
  receiver *rx = cls;
  if (!*ctx) {
    *ctx = rx;
    return MHD_YES;
  }
  if (*size) {
    *size = 0;
    return MHD_YES;
  }
  record(rx, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "ce-id"));
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  enum MHD_Result r = MHD_queue_response(c, MHD_HTTP_NO_CONTENT, resp);
  MHD_destroy_response(resp);
  return r;
}

/* Counts one delivery of id "o-KEY-SEQ"; checks order per key. */
static void record(receiver *rx, const char *id) {
  int key = -1;
  long seq = -1;
  if (!id || sscanf(id, "o-%d-%ld", &key, &seq) != 2 || key < 0 ||
      key >= rx->keys)
    key = -1;
  pthread_mutex_lock(&rx->lock);
  int64_t t = now_us();
  if (!rx->first_us) rx->first_us = t;
  rx->last_us = t;
  if (key < 0) {
    rx->bad++;
  } else {
    /* Retried deliveries may repeat the last one; never go backwards. */
    if (seq < rx->last[key]) rx->disorder++;
    if (seq > rx->last[key]) {
      rx->last[key] = seq;
      rx->count++;
    }
  }
  pthread_mutex_unlock(&rx->lock);
}

/* Where kafka2* delivers: an HTTP receiver, a Kafka topic, or testsink
 * (ACKs at once; one line per delivery in a file) to measure the ingest
 * side without a sink's own cost. */
enum { OUT_HTTP = 0, OUT_KAFKA = 1, OUT_NULL = 2 };
static const char *const out_names[] = {"kafka2http", "kafka2kafka",
                                        "kafka2null"};

/* Reads the delivery lines ("route id attempt topic") testsink appended to
 * path since *pos; complete lines only. */
static void read_record(receiver *rx, const char *path, long *pos) {
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[512];
  if (fseek(f, *pos, SEEK_SET) == 0) {
    while (fgets(line, sizeof line, f)) {
      size_t n = strlen(line);
      if (n == 0 || line[n - 1] != '\n') break; /* still being written */
      *pos += (long)n;
      char route[64], id[128];
      if (sscanf(line, "%63s %127s", route, id) == 2)
        record(rx, id);
      else
        record(rx, NULL);
    }
  }
  fclose(f);
}

static int kafka2http(long events, int keys, int partitions, int out_kind) {
  int to_kafka = out_kind == OUT_KAFKA;
  ktest_mock m;
  char topic_arg[64];
  snprintf(topic_arg, sizeof topic_arg, "bench.in:%d", partitions);
  const char *topics[] = {topic_arg, "bench.out:8", NULL};
  if (ktest_mock_start(&m, topics)) return 2;
  receiver rx = {.keys = keys};
  pthread_mutex_init(&rx.lock, NULL);
  rx.last = malloc(sizeof *rx.last * (size_t)keys);
  for (int i = 0; i < keys; i++)
    rx.last[i] = -1;
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct MHD_Daemon *d =
      MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL,
                       NULL, on_request, &rx, MHD_OPTION_THREAD_POOL_SIZE, 2,
                       MHD_OPTION_CONNECTION_LIMIT, 1024, MHD_OPTION_SOCK_ADDR,
                       &sa, MHD_OPTION_END);
  if (!d) {
    ktest_mock_stop(&m);
    return 2;
  }
  const union MHD_DaemonInfo *di =
      MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  int port = di ? di->port : 0;

  /* Produce everything first: the bridge starts on a full topic. */
  rd_kafka_t *pr = ktest_producer(m.bootstrap);
  char err[256];
  int64_t tp0 = now_us();
  for (long i = 0; i < events; i++) {
    char id[48], key[32], val[64];
    int k = (int)(i % keys);
    snprintf(id, sizeof id, "o-%d-%ld", k, i);
    snprintf(key, sizeof key, "key-%d", k);
    snprintf(val, sizeof val, "{\"seq\":%ld}", i);
    rd_kafka_headers_t *h = rd_kafka_headers_new(6);
    rd_kafka_header_add(h, "ce_specversion", -1, "1.0", -1);
    rd_kafka_header_add(h, "ce_id", -1, id, -1);
    rd_kafka_header_add(h, "ce_source", -1, SRC, -1);
    rd_kafka_header_add(h, "ce_type", -1, "nl.edu.bench", -1);
    rd_kafka_header_add(h, "ce_time", -1, "2026-11-22T18:00:00Z", -1);
    rd_kafka_header_add(h, "content-type", -1, "application/json", -1);
    rd_kafka_resp_err_t e;
    while ((e = rd_kafka_producev(pr, RD_KAFKA_V_TOPIC("bench.in"),
                                  RD_KAFKA_V_KEY(key, strlen(key)),
                                  RD_KAFKA_V_VALUE(val, strlen(val)),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END)) ==
           RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(pr, 10);
    if (e) {
      rd_kafka_headers_destroy(h);
      fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
      break;
    }
    rd_kafka_poll(pr, 0);
  }
  rd_kafka_flush(pr, 60000);
  rd_kafka_destroy(pr);
  (void)err;
  double produce_s = (now_us() - tp0) / 1e6;

  char sink[3072];
  char *dir = ceb_test_tmpdir("bench-kafka");
  char record_path[600];
  long record_pos = 0;
  snprintf(record_path, sizeof record_path, "%s/delivered.txt", dir);
  if (to_kafka)
    snprintf(sink, sizeof sink,
             "\n[sink partner]\nplugin = kafka\nbrokers = %s\n"
             "topic = bench.out\n%s",
             m.bootstrap, sink_extra);
  else if (out_kind == OUT_NULL)
    snprintf(sink, sizeof sink,
             "\n[sink partner]\nplugin = testsink\nmode = ack\n"
             "record = %s\n",
             record_path);
  else
    snprintf(sink, sizeof sink,
             "\n[sink partner]\nplugin = http\n"
             "url = http://127.0.0.1:%d/hook\nallow_insecure_http = true\n"
             "max_connections = 64\n",
             port);
  char path[600], text[5120];
  snprintf(path, sizeof path, "%s/conf", dir);
  mkdir(path, 0700);
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nadmin.listen = 127.0.0.1:0\n"
           "plugin_dir = " CEB_PLUGIN_PATH "\n"
           "log.format = text\nlog.level = warn\nprofile = warn\n"
           "\n[source bus]\nplugin = kafka\nbrokers = %s\ngroup.id = bench\n"
           "topics = bench.in\nrdkafka.session.timeout.ms = 6000\n"
           "%s%s%s%s"
           "\n[route out]\nfrom = bus\nto = partner\norder_by = partitionkey\n"
           "max_inflight = 1024\n",
           dir, m.bootstrap, kafka_source_map ? "map = " : "",
           kafka_source_map ? kafka_source_map : "",
           kafka_source_map ? "\n" : "", sink);
  snprintf(path, sizeof path, "%s/conf", dir);
  ceb_test_write_file(path, "00.conf", text);
  int64_t t0 = now_us();
  rd_kafka_t *out = to_kafka ? ktest_reader(m.bootstrap, "bench.out", 8) : NULL;
  double mock0 = bk_proc_cpu_s(m.pid);
  char logpath[600];
  snprintf(logpath, sizeof logpath, "%s/bridge.log", dir);
  pid_t bridge = ceb_test_bridge_start(path /* dir/conf */, logpath);
  int64_t until = ceb_test_now_ms() + 600000;
  long got = 0;
  while (ceb_test_now_ms() < until) {
    if (out) {
      /* Kafka sink: read the output topic back, check order per key. */
      rd_kafka_message_t *batch[512];
      size_t n = ktest_read(out, batch, 512, 100);
      for (size_t i = 0; i < n; i++) {
        char *id = ktest_header(batch[i], "ce_id");
        record(&rx, id);
        free(id);
        rd_kafka_message_destroy(batch[i]);
      }
    }
    if (out_kind == OUT_NULL) read_record(&rx, record_path, &record_pos);
    pthread_mutex_lock(&rx.lock);
    got = rx.count;
    pthread_mutex_unlock(&rx.lock);
    if (got >= events) break;
    if (!out) usleep(20000);
  }
  bridge_cost cost = cost_sample(bridge);
  double mock_cpu = bk_proc_cpu_s(m.pid) - mock0;
  ktest_reader_close(out);
  int stopped = ceb_test_pid_stop(bridge, SIGTERM, 60000);
  MHD_stop_daemon(d);
  double span = (rx.last_us - rx.first_us) / 1e6;
  printf("bench kafka %s: %ld events, %d keys, %d partitions "
         "(produced in %.2f s): delivered %ld, %.0f ev/s first-to-last "
         "(%.2f s), %.2f s from bridge start; out of order %ld, "
         "unparsable %ld\n",
         out_names[out_kind], events, keys, partitions, produce_s, rx.count,
         span > 0 ? (double)rx.count / span : 0, span, (rx.last_us - t0) / 1e6,
         rx.disorder, rx.bad);
  print_cost(out_names[out_kind], rx.count ? rx.count : 1, &cost, mock_cpu);
  int rc = stopped == 0 && rx.count == events && rx.disorder == 0 && rx.bad == 0
               ? 0
               : 1;
  ktest_mock_stop(&m);
  if (rc == 0)
    ceb_test_rmtree(dir);
  else
    fprintf(stderr, "kept %s for inspection\n", dir);
  free(dir);
  free(rx.last);
  pthread_mutex_destroy(&rx.lock);
  return rc;
}

static void usage(void) {
  fprintf(stderr,
          "usage: bench_kafka http2kafka|http2kafka-map [-n EVENTS] "
          "[-c CONNS] [-s BYTES] [-m JQ] [-t THREADS]\n"
          "       -t THREADS: the intermediary's listener threads (2)\n"
          "       -m JQ: http2kafka: the intermediary maps every request "
          "with this program (its input document: body = the posted event)\n"
          "       http2kafka-map: without a mapping, with an ingress and "
          "with an egress mapping, one after the other\n"
          "       bench_kafka kafka2http|kafka2kafka|kafka2null [-n EVENTS] "
          "[-k KEYS] "
          "[-p PARTITIONS]\n"
          "       -M JQ: kafka2*: the kafka source maps every record with "
          "this program\n"
          "       -x 'KEY = VALUE' (repeatable) adds a line to the kafka "
          "sink's section\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage();
    return 2;
  }
  const char *mode = argv[1];
  long events = 100000;
  int conns = 64, size = 900, keys = 1000, partitions = 8, opt;
  optind = 2;
  while ((opt = getopt(argc, argv, "n:c:s:k:p:x:m:t:M:")) != -1) {
    switch (opt) {
    case 't':
      source_threads = atoi(optarg);
      if (source_threads < 1 || source_threads > 64) {
        usage();
        return 2;
      }
      break;
    case 'm':
      if (strchr(optarg, '\n')) {
        fprintf(stderr, "-m wants a one-line jq program\n");
        return 2;
      }
      source_map = optarg;
      break;
    case 'M':
      kafka_source_map = optarg;
      break;
    case 'x':
      if (sink_extra_add(optarg)) {
        fprintf(stderr, "-x wants 'key = value' (one line)\n");
        return 2;
      }
      break;
    case 'n':
      events = atol(optarg);
      break;
    case 'c':
      conns = atoi(optarg);
      break;
    case 's':
      size = atoi(optarg);
      break;
    case 'k':
      keys = atoi(optarg);
      break;
    case 'p':
      partitions = atoi(optarg);
      break;
    default:
      usage();
      return 2;
    }
  }
  if (events < 1 || events > 10000000 || conns < 1 || conns > 1024 ||
      size < 0 || size > 7000 || keys < 1 || keys > 100000 || partitions < 1 ||
      partitions > 256) {
    usage();
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  int rc;
  if (!strcmp(mode, "http2kafka"))
    rc = http2kafka(events, conns, size, NULL, NULL, NULL);
  else if (!strcmp(mode, "http2kafka-map"))
    rc = http2kafka_map(events, conns, size);
  else if (!strcmp(mode, "kafka2http"))
    rc = kafka2http(events, keys, partitions, OUT_HTTP);
  else if (!strcmp(mode, "kafka2kafka"))
    rc = kafka2http(events, keys, partitions, OUT_KAFKA);
  else if (!strcmp(mode, "kafka2null"))
    rc = kafka2http(events, keys, partitions, OUT_NULL);
  else {
    usage();
    rc = 2;
  }
  return rc;
}
