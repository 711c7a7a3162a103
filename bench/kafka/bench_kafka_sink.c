/* The kafka sink alone: what one delivery costs the plugin and librdkafka,
 * without the bridge's accept path, store and engine around it.
 *
 *   bench_kafka_sink [-n EVENTS] [-w WINDOW] [-r RATE] [-s DATA_BYTES]
 *                    [-k KEYS] [-p PARTITIONS] [-x 'rdkafka.KEY = VALUE']...
 *
 * Loads kafka.so through dlopen (the real ABI) into a fake host whose
 * settle only counts, starts a mock cluster (ceb-kafka-mock, a separate
 * process) with a PARTITIONS topic and keeps WINDOW deliveries in flight
 * (as a route's max_inflight does) until EVENTS were acknowledged, at most
 * RATE deliveries a second when given (the bridge feeds its sink at the rate
 * it accepts, and librdkafka's batches, so its cost per event, depend on
 * that rate). Prints
 * events/s and this process's CPU per event (deliver calls, the sink's
 * report thread, librdkafka's threads; the fake host's share is a counter
 * and a condition variable), the mock's CPU per event and the load average.
 * Exits 1 when a delivery settles other than ACK or the run times out.
 * The figure to compare is CPU per event: it moves little with the load. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_kafka_proc.h"
#include "ceb_fake_host.h"
#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "kafka_test_util.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:bench"
#define MAX_EXTRA 16

/* The settle side: counts, wakes the deliverer when it waits. */
static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  long acked, failed;
  int waiting;
} g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};

static void count_settle(ceb_instance *inst, ceb_delivery *d,
                         const ceb_settle_info *info) {
  (void)inst;
  (void)d;
  pthread_mutex_lock(&g.lock);
  if (info->outcome == CEB_ACK)
    g.acked++;
  else if (g.failed++ < 5)
    fprintf(stderr, "settle %d: %s %s\n", (int)info->outcome,
            info->reason ? info->reason : "", info->detail ? info->detail : "");
  if (g.waiting) pthread_cond_signal(&g.cond);
  pthread_mutex_unlock(&g.lock);
}

/* Waits until at most `limit` deliveries are unsettled; 0 on timeout. */
static int wait_settled(long sent, long limit, int64_t deadline_ms) {
  pthread_mutex_lock(&g.lock);
  while (sent - (g.acked + g.failed) > limit &&
         ceb_test_now_ms() < deadline_ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 100 * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    g.waiting = 1;
    pthread_cond_timedwait(&g.cond, &g.lock, &ts);
    g.waiting = 0;
  }
  int ok = sent - (g.acked + g.failed) <= limit;
  pthread_mutex_unlock(&g.lock);
  return ok;
}

static double thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A structured-mode-sized event like bench_kafka http2kafka's. */
static ceb_event *make_event(long seq, int keys, const char *pad) {
  char id[32], pk[32], data[8192];
  snprintf(id, sizeof id, "s-%ld", seq);
  snprintf(pk, sizeof pk, "key-%ld", seq % keys);
  snprintf(data, sizeof data, "{\"seq\":%ld,\"pad\":\"%s\"}", seq, pad);
  ceb_event *ev = ceb_event_new();
  if (!ev) return NULL;
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", id);
  ceb_event_set(ev, "source", SRC);
  ceb_event_set(ev, "type", "nl.edu.bench");
  ceb_event_set(ev, "time", "2026-11-22T18:00:00Z");
  ceb_event_set(ev, "datacontenttype", "application/json");
  ceb_event_set(ev, "partitionkey", pk);
  ceb_event_set_data(ev, data, strlen(data), CEB_DATA_JSON);
  return ev;
}

static void usage(void) {
  fprintf(stderr,
          "usage: bench_kafka_sink [-n EVENTS] [-w WINDOW] [-r RATE] "
          "[-s BYTES] [-k KEYS] [-p PARTITIONS] [-x 'KEY = VALUE']...\n");
}

/* "key = value" into two trimmed strings in buf. */
static int split_kv(const char *arg, char *buf, size_t n, const char **k,
                    const char **v) {
  if (strlen(arg) >= n || !strchr(arg, '=')) return -1;
  strcpy(buf, arg);
  char *eq = strchr(buf, '=');
  *eq = '\0';
  char *key = buf, *val = eq + 1, *end = eq;
  while (*key == ' ')
    key++;
  while (end > key && end[-1] == ' ')
    *--end = '\0';
  while (*val == ' ')
    val++;
  if (!*key) return -1;
  *k = key;
  *v = val;
  return 0;
}

int main(int argc, char **argv) {
  long events = 200000;
  int window = 4096, size = 900, keys = 1000, partitions = 16, opt;
  long rate = 0;
  static char extra_buf[MAX_EXTRA][256];
  const char *kv[8 + 2 * MAX_EXTRA + 1];
  int nkv = 0, nextra = 0;
  while ((opt = getopt(argc, argv, "n:w:r:s:k:p:x:")) != -1) {
    switch (opt) {
    case 'r':
      rate = atol(optarg);
      break;
    case 'n':
      events = atol(optarg);
      break;
    case 'w':
      window = atoi(optarg);
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
    case 'x':
      if (nextra == MAX_EXTRA ||
          split_kv(optarg, extra_buf[nextra], sizeof extra_buf[nextra],
                   &kv[8 + 2 * nextra], &kv[8 + 2 * nextra + 1])) {
        usage();
        return 2;
      }
      nextra++;
      break;
    default:
      usage();
      return 2;
    }
  }
  if (events < 1 || events > 10000000 || window < 1 || window > 100000 ||
      size < 0 || size > 7000 || keys < 1 || keys > 100000 || partitions < 1 ||
      partitions > 256 || rate < 0 || rate > 10000000) {
    usage();
    return 2;
  }
  char topic_arg[64];
  snprintf(topic_arg, sizeof topic_arg, "bench.out:%d", partitions);
  const char *topics[] = {topic_arg, NULL};
  ktest_mock m;
  if (ktest_mock_start(&m, topics)) return 2;
  void *dl = NULL;
  const ceb_plugin *p = ktest_plugin(&dl);
  if (!p) {
    ktest_mock_stop(&m);
    return 2;
  }
  /* The extras sit after the fixed keys; move them down to close the gap. */
  kv[nkv++] = "brokers";
  kv[nkv++] = m.bootstrap;
  kv[nkv++] = "topic";
  kv[nkv++] = "bench.out";
  for (int i = 0; i < 2 * nextra; i++)
    kv[nkv++] = kv[8 + i];
  kv[nkv] = NULL;

  ceb_fake_host *f = ceb_fake_host_new("out", CEB_ROLE_SINK);
  ceb_host host = f->host;
  host.settle = count_settle;
  ceb_config *cfg = ktest_config(p, CEB_ROLE_SINK, kv);
  ceb_instance_info info = {sizeof info, "out", CEB_ROLE_SINK, "/tmp"};
  void *state = NULL;
  int rc = p->init(&host, &f->inst, &info, cfg, &state);
  if (rc == CEB_OK && (rc = p->start(state)) != CEB_OK) {
    p->destroy(state);
    state = NULL;
  }
  if (rc != CEB_OK) {
    fprintf(stderr, "sink init/start: %s\n", ceb_strerror(rc));
    cebi_config_free(cfg);
    ceb_fake_host_free(f);
    ktest_plugin_close(dl);
    ktest_mock_stop(&m);
    return 2;
  }

  /* Events are built before the clock starts (the bridge has them already
   * decoded); a pool of distinct ones, each delivered many times. */
  char *pad = malloc((size_t)size + 1);
  memset(pad, 'x', (size_t)size);
  pad[size] = '\0';
  long pool = window * 2L < events ? window * 2L : events;
  ceb_event **evs = calloc((size_t)pool, sizeof *evs);
  ceb_delivery **ds = calloc((size_t)events, sizeof *ds);
  for (long i = 0; i < pool; i++)
    evs[i] = make_event(i, keys, pad);

  double cpu0 = bk_self_cpu_s(), mock0 = bk_proc_cpu_s(m.pid),
         thr0 = thread_cpu_s();
  double sink0 = bk_threads_cpu_s(0, "kafka-sink"),
         rdk0 = bk_threads_cpu_s(0, "rdk:");
  int64_t t0 = ceb_test_now_ms(), deadline = t0 + 300000;
  long sent = 0;
  int ok = 1;
  while (sent < events && ok) {
    ok = wait_settled(sent, window - 1, deadline);
    if (!ok) break;
    /* Paced in steps of 1 ms: sleep until this delivery's due time. */
    if (rate && sent * 1000 / rate > ceb_test_now_ms() - t0) usleep(1000);
    if (rate && sent * 1000 / rate > ceb_test_now_ms() - t0) continue;
    ds[sent] = ceb_fake_delivery_new(f, evs[sent % pool], "r1", NULL, 1);
    rc = p->deliver(state, ds[sent]);
    if (rc != CEB_OK) {
      fprintf(stderr, "deliver %ld: %s\n", sent, ceb_strerror(rc));
      ok = 0;
      ceb_fake_delivery_free(ds[sent]);
      ds[sent] = NULL;
      break;
    }
    sent++;
  }
  double thr = thread_cpu_s() - thr0;
  if (ok) ok = wait_settled(sent, 0, deadline);
  int64_t ms = ceb_test_now_ms() - t0;
  double cpu = bk_self_cpu_s() - cpu0, mock = bk_proc_cpu_s(m.pid) - mock0;
  double sink = bk_threads_cpu_s(0, "kafka-sink") - sink0,
         rdk = bk_threads_cpu_s(0, "rdk:") - rdk0;
  pthread_mutex_lock(&g.lock);
  long acked = g.acked, failed = g.failed;
  pthread_mutex_unlock(&g.lock);
  double n = acked ? (double)acked : 1;
  printf("bench kafka sink: %ld events, window %d, %d B pad, %d keys, %d "
         "partitions: %.0f ev/s acknowledged (ack %ld, other %ld)\n",
         events, window, size, keys, partitions,
         ms ? acked * 1000.0 / (double)ms : 0, acked, failed);
  printf("bench kafka sink cost: CPU %.1f us/event (deliver %.1f, kafka-sink "
         "thread %.1f, librdkafka threads %.1f), mock cluster CPU %.1f "
         "us/event, load average %.2f\n",
         cpu * 1e6 / n, thr * 1e6 / n, sink * 1e6 / n, rdk * 1e6 / n,
         mock * 1e6 / n, bk_loadavg1());

  p->drain(state, ceb_test_now_ms() + 10000);
  p->destroy(state);
  for (long i = 0; i < sent; i++)
    ceb_fake_delivery_free(ds[i]);
  for (long i = 0; i < pool; i++)
    ceb_event_unref(evs[i]);
  free(ds);
  free(evs);
  free(pad);
  cebi_config_free(cfg);
  ceb_fake_host_free(f);
  ktest_plugin_close(dl);
  ktest_mock_stop(&m);
  return ok && acked == events && failed == 0 ? 0 : 1;
}
