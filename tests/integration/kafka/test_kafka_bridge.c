/* End to end through the real `cebridge run` binary: Kafka topic "in"
 * (kafka source, consumer group) -> journal -> route ordered by
 * partitionkey -> kafka sink -> topic "out". Every record arrives once, in
 * order per key, keyed by its partitionkey; the source's offsets are
 * committed; SIGTERM drains and exits 0. A malformed record on "in" goes to
 * the source's DLQ topic and does not stop the flow. */
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ceb_test.h"
#include "kafka_test_util.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:e2e"
#define N 60
#define KEYS 6

static pid_t start_bridge(const char *dir) {
  char log[512];
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = freopen(log, "w", stderr);
    (void)f;
    char confdir[512];
    snprintf(confdir, sizeof confdir, "%s/conf", dir);
    execl(CEB_TEST_BIN_DIR "/cebridge", "cebridge", "run", "-c", confdir,
          (char *)NULL);
    perror("exec cebridge");
    _exit(127);
  }
  return pid;
}

static int stop_bridge(pid_t pid) {
  kill(pid, SIGTERM);
  int64_t until = ceb_test_now_ms() + 30000;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (ceb_test_now_ms() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    usleep(20000);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
