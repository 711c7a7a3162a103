/* bench_mqtt mqtt2kafka / mqtt2http: MQTT publishers (mqtt_bench_pub.h) ->
 * mqtt source -> route -> kafka sink (mock cluster) or http sink (local
 * receiver), read back at the far end (bench_mqtt.c and README.md say what
 * it measures). */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ceb_bench_bridge.h"
#include "ceb_test.h"
#include "kafka_test_util.h"
#include "mqtt_bench.h"
#include "mqtt_bench_pub.h"

/* One publisher connection of the measured run, on its own thread. */
typedef struct pub_job {
  mb_pub *c;
  mb_pub_opts o;
  mb_pub_result r;
  pthread_t thread;
} pub_job;

static void *pub_main(void *arg) {
  pub_job *j = arg;
  mb_pub_run(j->c, &j->o, &j->r);
  return NULL;
}

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
    if (ceb_bench_metric_sum(admin, "cebridge_mqtt_subscribed") >= 1) return 0;
    usleep(20000);
  }
  fprintf(stderr, "bench mqtt: the bridge's source never subscribed\n");
  return -1;
}

int mb_mqtt2x(const mb_params *p, int to_kafka) {
  char label[160];
  snprintf(label, sizeof label,
           "bench mqtt %s (%ld events, %d B, %d keys, rate %s)",
           to_kafka ? "mqtt2kafka" : "mqtt2http", p->events, p->size, p->keys,
           p->rate > 0 ? "paced" : "max");
  if (p->rate > 0)
    snprintf(label + strlen(label) - 6, sizeof label - strlen(label) + 6,
             "%.0f/s)", p->rate);
  ceb_mosq *m = mb_broker_start();
  if (!m) return 2;
  int rc = 2, mock_up = 0;
  ktest_mock km;
  kafka_far kf;
  memset(&kf, 0, sizeof kf);
  struct MHD_Daemon *d = NULL;
  mb_pub *pub = NULL;
  pub_job jobs[MB_MAX_PUBS];
  memset(jobs, 0, sizeof jobs);
  mb_track *t = mb_track_new(p->keys, p->pubs, p->events);
  mb_track *w = mb_track_new(p->keys, 1, MB_WARM);
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
  mb_conf_bridge(text, sizeof text, b.dir);
  snprintf(part, sizeof part,
           "\n[source bus]\nplugin = mqtt\nbroker = %s\n"
           "client_id = bench-source\ntopics = bench/in\nqos = 1\n"
           "dlq_topic = bench/dlq\n%s%s"
           "\n[route in]\nfrom = bus\nto = internal\norder_by = partitionkey\n"
           "max_inflight = 1024\n",
           m->addr, mb_inflight_line(p, il, sizeof il), sink);
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
                    .count = MB_WARM,
                    .keys = p->keys,
                    .size = p->size,
                    .source = MB_SRC,
                    .type = MB_TYPE,
                    .id_prefix = "mw",
                    .structured = p->structured};
  mb_pub_result wr;
  mb_counts wc;
  mb_pub_run(pub, &wo, &wr);
  mb_wait_delivered(w, wr.acked, 10000, 60000);
  mb_track_snapshot(w, &wc);
  if (wc.delivered != MB_WARM) {
    fprintf(stderr, "bench mqtt: warm-up: %ld of %d delivered\n", wc.delivered,
            MB_WARM);
    rc = 1;
    goto out;
  }
  atomic_store(&far, t);
  atomic_store(&kf.t, t);
  mb_outcome o;
  memset(&o, 0, sizeof o);
  o.loadavg = ceb_bench_loadavg();
  double cpu0 = ceb_bench_bridge_cpu_s(&b), mq0 = mb_proc_cpu_s(m->pid),
         own0 = mb_self_cpu_s(), km0 = mock_up ? mb_proc_cpu_s(km.pid) : -1;
  static mb_thread_cpu th0, th1;
  mb_thread_snapshot(b.proc.pid, &th0);
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
                              .source = MB_SRC,
                              .type = MB_TYPE,
                              .stream = i,
                              .streams = p->pubs,
                              .structured = p->structured};
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
  mb_wait_delivered(t, pr.acked, 30000, 600000);
  mb_thread_snapshot(b.proc.pid, &th1);
  ceb_bench_bridge_rss_stop(&b);
  o.cpu_s = ceb_bench_bridge_cpu_s(&b) - cpu0;
  o.mosq_cpu_s = mb_proc_cpu_s(m->pid) - mq0;
  o.mock_cpu_s = mock_up ? mb_proc_cpu_s(km.pid) - km0 : -1;
  o.own_cpu_s = mb_self_cpu_s() - own0;
  o.rss_kb = b.rss_max_kb;
  mb_collect(t, &o);
  o.stopped = ceb_bench_bridge_stop(&b, 60000);
  printf("%s: published %ld, PUBACKed %ld, failed %ld; %.0f ev/s into the "
         "broker (%d publishers, window %d each, %.2f s)\n",
         label, pr.sent, pr.acked, pr.failed,
         pr.elapsed_s > 0 ? (double)pr.acked / pr.elapsed_s : 0, p->pubs,
         pr.window, pr.elapsed_s);
  mb_print_far_end(label, &o, t0);
  mb_thread_report(label, &th0, &th1, o.c.delivered);
  rc = mb_judge(&o, p->events) && pr.acked == p->events ? 0 : 1;
out:
  if (kf.reader) {
    atomic_store(&kf.stop, 1);
    pthread_join(kf.thread, NULL);
    ktest_reader_close(kf.reader);
  }
  mb_pub_stop(pub);
  for (int i = 1; i < MB_MAX_PUBS; i++)
    mb_pub_stop(jobs[i].c);
  ceb_bench_bridge_free(&b, rc != 0);
  if (d) MHD_stop_daemon(d);
  if (mock_up) ktest_mock_stop(&km);
  mb_track_free(t);
  mb_track_free(w);
  if (rc != 0 && m) mb_broker_log_tail(m);
  ceb_mosq_free(m);
  return rc;
}
