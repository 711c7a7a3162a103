/* End to end through the real `cebridge run` binary: Kafka topic "in"
 * (kafka source, consumer group) -> journal -> route ordered by
 * partitionkey -> kafka sink -> topic "out". Every record arrives once, in
 * order per key, keyed by its partitionkey; the source's offsets are
 * committed; SIGTERM drains and exits 0. A malformed record on "in" goes to
 * the source's DLQ topic and does not stop the flow. Then the bridge is
 * killed (SIGKILL) mid-flow and restarted on the same store: every record
 * still arrives (at least once). */
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "kafka_test_util.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:e2e"
#define N 60
#define KEYS 6
#define M 3000 /* records of the crash phase */

static pid_t start_bridge(const char *dir) {
  char log[512], conf[512];
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(conf, sizeof conf, "%s/conf", dir);
  return ceb_test_bridge_start(conf, log);
}

static int stop_bridge(pid_t pid) {
  return ceb_test_pid_stop(pid, SIGTERM, 30000);
}

static void write_conf(const char *dir, const char *bootstrap) {
  char path[512];
  snprintf(path, sizeof path, "%s/conf", dir);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/conf/00-bridge.conf", dir);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f,
          "[bridge]\n"
          "store = %s/store.db\n"
          "admin.listen = 127.0.0.1:0\n"
          "log.format = text\n"
          "profile = warn\n"
          "drain_timeout = 10s\n"
          "\n[source in]\n"
          "plugin = kafka\n"
          "brokers = %s\n"
          "group.id = bridge-in\n"
          "topics = in\n"
          "dlq_topic = in.dlq\n"
          "rdkafka.session.timeout.ms = 6000\n"
          "\n[sink out]\n"
          "plugin = kafka\n"
          "brokers = %s\n"
          "topic = out\n"
          "mode = binary\n"
          "\n[route in-out]\n"
          "from = in\n"
          "to = out\n"
          "order_by = partitionkey\n"
          "dlq = out:out.dlq\n",
          dir, bootstrap, bootstrap);
  fclose(f);
}

static int produce(rd_kafka_t *pr, int i) {
  char id[32], key[32], data[64];
  snprintf(id, sizeof id, "e2e-%d", i);
  snprintf(key, sizeof key, "key-%d", i % KEYS);
  snprintf(data, sizeof data, "{\"seq\":%d}", i);
  ceb_headers h = {0};
  ceb_headers_add(&h, "ce_specversion", "1.0", 3);
  ceb_headers_add(&h, "ce_id", id, strlen(id));
  ceb_headers_add(&h, "ce_source", SRC, strlen(SRC));
  ceb_headers_add(&h, "ce_type", "nl.edu.e2e", 10);
  ceb_headers_add(&h, "ce_time", "2026-11-22T18:00:00Z", 20);
  ceb_headers_add(&h, "content-type", "application/json", 16);
  int rc = ktest_produce(pr, "in", i % 2, key, data, strlen(data), &h);
  ceb_headers_clear(&h);
  return rc;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

/* Like produce() without waiting for each acknowledgement. */
static int produce_async(rd_kafka_t *pr, int i) {
  char id[32], key[32], data[64];
  snprintf(id, sizeof id, "e2e-%d", i);
  snprintf(key, sizeof key, "key-%d", i % KEYS);
  snprintf(data, sizeof data, "{\"seq\":%d}", i);
  rd_kafka_headers_t *h = rd_kafka_headers_new(6);
  rd_kafka_header_add(h, "ce_specversion", -1, "1.0", -1);
  rd_kafka_header_add(h, "ce_id", -1, id, -1);
  rd_kafka_header_add(h, "ce_source", -1, SRC, -1);
  rd_kafka_header_add(h, "ce_type", -1, "nl.edu.e2e", -1);
  rd_kafka_header_add(h, "ce_time", -1, "2026-11-22T18:00:00Z", -1);
  rd_kafka_header_add(h, "content-type", -1, "application/json", -1);
  rd_kafka_resp_err_t e = rd_kafka_producev(
      pr, RD_KAFKA_V_TOPIC("in"), RD_KAFKA_V_PARTITION(i % 2),
      RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(data, strlen(data)),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
      RD_KAFKA_V_END);
  if (e) rd_kafka_headers_destroy(h);
  rd_kafka_poll(pr, 0);
  return e ? -1 : 0;
}

typedef struct committed_arg {
  const char *bootstrap;
  int64_t want;
} committed_arg;

/* Sum of the group's committed offsets on both partitions of "in". */
static int committed_sum_is(void *arg) {
  committed_arg *a = arg;
  int64_t sum = 0;
  for (int p = 0; p < 2; p++) {
    int64_t o = ktest_committed(a->bootstrap, "bridge-in", "in", p);
    if (o < 0) return 0;
    sum += o;
  }
  return sum == a->want;
}

/* Reads "out" until every crash-phase record (ids N..N+M-1) was seen at
 * least once or the deadline passes; returns how many distinct ones. */
static int read_crash_ids(rd_kafka_t *r, int *seen, int want,
                          int64_t timeout_ms) {
  int distinct = 0;
  for (int i = 0; i < M; i++)
    distinct += seen[i] > 0;
  int64_t until = ceb_test_now_ms() + timeout_ms;
  while (distinct < want && ceb_test_now_ms() < until) {
    rd_kafka_message_t *batch[64];
    size_t n = ktest_read(r, batch, 64, 200);
    for (size_t i = 0; i < n; i++) {
      char *id = ktest_header(batch[i], "ce_id");
      int seq = id && !strncmp(id, "e2e-", 4) ? atoi(id + 4) - N : -1;
      if (seq >= 0 && seq < M && seen[seq]++ == 0) distinct++;
      free(id);
      rd_kafka_message_destroy(batch[i]);
    }
  }
  return distinct;
}

static void crash_phase(ktest_mock *m, const char *dir, rd_kafka_t *pr) {
  rd_kafka_t *r = ktest_reader(m->bootstrap, "out", 2);
  for (int i = N; i < N + M; i++)
    CHECK_INT(produce_async(pr, i), 0);
  CHECK_INT(rd_kafka_flush(pr, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  pid_t bridge = start_bridge(dir);
  static int seen[M];
  /* Kill it once part of the batch is through, mid-flow. */
  CHECK(read_crash_ids(r, seen, M / 5, 60000) >= M / 5);
  kill(bridge, SIGKILL);
  waitpid(bridge, NULL, 0);
  int before = 0;
  for (int i = 0; i < M; i++)
    before += seen[i] > 0;
  fprintf(stderr, "killed the bridge with %d of %d records seen\n", before, M);
  bridge = start_bridge(dir);
  CHECK_INT(read_crash_ids(r, seen, M, 90000), M);
  for (int i = 0; i < M; i++)
    CHECK_MSG(seen[i] >= 1, "e2e-%d lost across the crash", N + i);
  committed_arg ca = {m->bootstrap, N + 1 + M};
  CHECK(ceb_test_wait(committed_sum_is, &ca, 30000));
  CHECK_INT(stop_bridge(bridge), 0);
  ktest_reader_close(r);
}

int main(void) {
  ktest_mock m;
  const char *topics[] = {"in:2", "in.dlq:1", "out:2", "out.dlq:1", NULL};
  CHECK_INT(ktest_mock_start(&m, topics), 0);
  char *dir = ceb_test_tmpdir("kafka-e2e");
  rd_kafka_t *pr = m.pid > 0 ? ktest_producer(m.bootstrap) : NULL;
  if (!pr || !dir) {
    ktest_mock_stop(&m);
    free(dir);
    CHECK(0);
    return ceb_test_done("kafka_bridge_e2e");
  }
  write_conf(dir, m.bootstrap);
  pid_t bridge = start_bridge(dir);
  CHECK(bridge > 0);

  for (int i = 0; i < N / 2; i++)
    CHECK_INT(produce(pr, i), 0);
  /* A record without ce_id: dead-lettered by the source, flow goes on. */
  ceb_headers h = {0};
  ceb_headers_add(&h, "ce_specversion", "1.0", 3);
  ceb_headers_add(&h, "ce_type", "nl.edu.e2e", 10);
  CHECK_INT(ktest_produce(pr, "in", 0, "key-0", "{}", 2, &h), 0);
  ceb_headers_clear(&h);
  for (int i = N / 2; i < N; i++)
    CHECK_INT(produce(pr, i), 0);

  rd_kafka_t *r = ktest_reader(m.bootstrap, "out", 2);
  rd_kafka_message_t *msgs[N + 1];
  size_t n = ktest_read(r, msgs, N, 60000);
  CHECK_INT(n, N);
  /* Exactly once each, in order per key, keyed by partitionkey. */
  int seen[N] = {0}, last[KEYS];
  for (int k = 0; k < KEYS; k++)
    last[k] = -1;
  for (size_t i = 0; i < n; i++) {
    char *id = ktest_header(msgs[i], "ce_id");
    int seq = id && !strncmp(id, "e2e-", 4) ? atoi(id + 4) : -1;
    CHECK(seq >= 0 && seq < N);
    if (seq >= 0 && seq < N) {
      seen[seq]++;
      char key[32];
      snprintf(key, sizeof key, "key-%d", seq % KEYS);
      CHECK(msgs[i]->key_len == strlen(key) &&
            !memcmp(msgs[i]->key, key, msgs[i]->key_len));
      CHECK_MSG(seq > last[seq % KEYS], "%s after e2e-%d", id,
                last[seq % KEYS]);
      last[seq % KEYS] = seq;
    }
    free(id);
    rd_kafka_message_destroy(msgs[i]);
  }
  for (int i = 0; i < N; i++)
    CHECK_MSG(seen[i] == (int)(n == N), "e2e-%d seen %d times", i, seen[i]);
  ktest_reader_close(r);

  rd_kafka_t *dl = ktest_reader(m.bootstrap, "in.dlq", 1);
  rd_kafka_message_t *bad = NULL;
  CHECK_INT(ktest_read(dl, &bad, 1, 20000), 1);
  if (bad) {
    char *reason = ktest_header(bad, "ceb_dlq_reason");
    CHECK(reason && strstr(reason, "id"));
    free(reason);
    rd_kafka_message_destroy(bad);
  }
  ktest_reader_close(dl);

  committed_arg ca = {m.bootstrap, N + 1};
  CHECK(ceb_test_wait(committed_sum_is, &ca, 30000));
  CHECK_INT(stop_bridge(bridge), 0);

  crash_phase(&m, dir, pr);

  rd_kafka_destroy(pr);
  ktest_mock_stop(&m);
  if (ceb_test_failures) {
    char log[600];
    snprintf(log, sizeof log, "%s/bridge.log", dir);
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "---- bridge log ----\n%s\n", text ? text : "(none)");
    free(text);
  } else {
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
  }
  free(dir);
  return ceb_test_done("kafka_bridge_e2e");
}
