/* Two real bridges share one Kafka consumer group on the mock cluster
 * (tests/helpers/kafka_mock, its own process): the four partitions of "in"
 * are split between them, each republishes what it takes on its own topic
 * (out-a, out-b), every record is handled exactly once while both run,
 * and both take part. Then bridge b is killed (SIGKILL) mid-stream: a
 * takes over its partitions at the rebalance and reads on from b's last
 * commit, b comes back (its store still holds what it had made durable),
 * and every record is handled at least once, none lost (the source commits
 * an offset only after the event is durable); duplicates are counted and
 * reported, and the group's committed offsets cover every record. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "ha_bridge.h"
#include "kafka_test_util.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:ha"
#define PARTS 4
#define N1 1000 /* records while both run */
#define N2 3000 /* records of the kill phase */
#define GROUP "ha-bridges"

static int write_conf(ha_bridge *b, const char *parent, const char *name,
                      const char *bootstrap) {
  char port[700], conf[3072], dir[600];
  snprintf(dir, sizeof dir, "%s/%s", parent, name);
  snprintf(port, sizeof port, "%s/admin.port", dir);
  snprintf(conf, sizeof conf,
           "[bridge]\n"
           "store = %s/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "admin.port_file = %s\n"
           "log.format = text\n"
           "profile = warn\n"
           "drain_timeout = 10s\n"
           "\n[source in]\n"
           "plugin = kafka\n"
           "brokers = %s\n"
           "group.id = " GROUP "\n"
           "topics = in\n"
           "dlq_topic = in.dlq\n"
           "rdkafka.session.timeout.ms = 6000\n"
           "\n[sink out]\n"
           "plugin = kafka\n"
           "brokers = %s\n"
           "topic = out-%s\n"
           "mode = binary\n"
           "\n[route in-out]\n"
           "from = in\n"
           "to = out\n",
           dir, port, bootstrap, bootstrap, name);
  return ha_bridge_init(b, parent, name, conf);
}

/* Partitions the bridge's source holds now, from its log: the count of
 * the last "assigned N partitions" line, 0 when a revoke followed it. */
static int assigned(const ha_bridge *b) {
  char *text = ha_bridge_logs(b);
  int n = 0;
  for (char *p = text; p && *p;) {
    char *nl = strchr(p, '\n');
    if (nl) *nl = 0;
    const char *a = strstr(p, "] assigned ");
    if (a) n = atoi(a + 11);
    if (strstr(p, "] revoked ")) n = 0;
    p = nl ? nl + 1 : NULL;
  }
  free(text);
  return n;
}

typedef struct split_arg {
  ha_bridge *b;
  int want_a, want_b;
} split_arg;

/* want_b < 0: b is dead, its log says nothing about now. */
static int split_is(void *arg) {
  split_arg *s = arg;
  return assigned(&s->b[0]) == s->want_a &&
         (s->want_b < 0 || assigned(&s->b[1]) == s->want_b);
}

static int produce(rd_kafka_t *pr, int i) {
  char id[32], key[32], data[64];
  snprintf(id, sizeof id, "ha-%d", i);
  snprintf(key, sizeof key, "key-%d", i % PARTS);
  snprintf(data, sizeof data, "{\"seq\":%d}", i);
  rd_kafka_headers_t *h = rd_kafka_headers_new(6);
  rd_kafka_header_add(h, "ce_specversion", -1, "1.0", -1);
  rd_kafka_header_add(h, "ce_id", -1, id, -1);
  rd_kafka_header_add(h, "ce_source", -1, SRC, -1);
  rd_kafka_header_add(h, "ce_type", -1, "nl.edu.ha", -1);
  rd_kafka_header_add(h, "content-type", -1, "application/json", -1);
  rd_kafka_resp_err_t e = rd_kafka_producev(
      pr, RD_KAFKA_V_TOPIC("in"), RD_KAFKA_V_PARTITION(i % PARTS),
      RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(data, strlen(data)),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(h),
      RD_KAFKA_V_END);
  if (e) rd_kafka_headers_destroy(h);
  rd_kafka_poll(pr, 0);
  return e ? -1 : 0;
}

typedef struct tally {
  rd_kafka_t *r[2]; /* readers of out-a and out-b */
  int seen[N1 + N2];
  int by_bridge[2];
  int foreign; /* records that are no event of this test */
} tally;

/* Reads what both topics have for up to ms; returns the distinct ids seen
 * in [from, to). */
static int read_some(tally *t, int from, int to, int64_t ms) {
  int64_t until = ceb_test_now_ms() + ms;
  do {
    for (int w = 0; w < 2; w++) {
      rd_kafka_message_t *batch[256];
      size_t n = ktest_read(t->r[w], batch, 256, 50);
      for (size_t i = 0; i < n; i++) {
        char *id = ktest_header(batch[i], "ce_id");
        int seq = id && !strncmp(id, "ha-", 3) ? atoi(id + 3) : -1;
        if (seq >= 0 && seq < N1 + N2) {
          t->seen[seq]++;
          t->by_bridge[w]++;
        } else {
          t->foreign++;
        }
        free(id);
        rd_kafka_message_destroy(batch[i]);
      }
    }
  } while (ceb_test_now_ms() < until);
  int distinct = 0;
  for (int i = from; i < to; i++)
    distinct += t->seen[i] > 0;
  return distinct;
}

/* Reads until every id in [from, to) was seen or the deadline passes. */
static int read_all(tally *t, int from, int to, int64_t ms) {
  int64_t until = ceb_test_now_ms() + ms;
  int d = 0;
  while ((d = read_some(t, from, to, 200)) < to - from &&
         ceb_test_now_ms() < until) {
  }
  return d;
}

typedef struct committed_arg {
  const char *bootstrap;
  int64_t want;
} committed_arg;

static int committed_sum_is(void *arg) {
  committed_arg *a = arg;
  int64_t sum = 0;
  for (int p = 0; p < PARTS; p++) {
    int64_t o = ktest_committed(a->bootstrap, GROUP, "in", p);
    if (o < 0) return 0;
    sum += o;
  }
  return sum == a->want;
}

int main(void) {
  ktest_mock m;
  const char *topics[] = {"in:4", "in.dlq:1", "out-a:1", "out-b:1", NULL};
  CHECK_INT(ktest_mock_start(&m, topics), 0);
  char *dir = ceb_test_tmpdir("ha-kafka-group");
  rd_kafka_t *pr = m.pid > 0 ? ktest_producer(m.bootstrap) : NULL;
  static tally t;
  ha_bridge b[2];
  memset(b, 0, sizeof b);
  CHECK(pr && dir);
  if (!pr || !dir) goto out;
  CHECK_INT(write_conf(&b[0], dir, "a", m.bootstrap), 0);
  CHECK_INT(write_conf(&b[1], dir, "b", m.bootstrap), 0);
  t.r[0] = ktest_reader(m.bootstrap, "out-a", 1);
  t.r[1] = ktest_reader(m.bootstrap, "out-b", 1);

  /* Both in the group, the partitions split two and two, before the first
   * record: a record read before the split would be read by a, then
   * perhaps again by b from an older commit. */
  CHECK_INT(ha_bridge_start(&b[0]), 0);
  CHECK_INT(ha_bridge_start(&b[1]), 0);
  split_arg even = {b, 2, 2};
  CHECK_MSG(ceb_test_wait(split_is, &even, 60000), "a holds %d, b holds %d",
            assigned(&b[0]), assigned(&b[1]));

  for (int i = 0; i < N1; i++)
    CHECK_INT(produce(pr, i), 0);
  CHECK_INT(rd_kafka_flush(pr, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  CHECK_INT(read_all(&t, 0, N1, 60000), N1);
  int dup1 = 0;
  for (int i = 0; i < N1; i++)
    dup1 += t.seen[i] > 1;
  fprintf(stderr, "phase 1: %d records, a %d, b %d, duplicates %d\n", N1,
          t.by_bridge[0], t.by_bridge[1], dup1);
  CHECK_INT(dup1, 0);
  CHECK_MSG(t.by_bridge[0] > 0 && t.by_bridge[1] > 0,
            "both take part: a %d, b %d", t.by_bridge[0], t.by_bridge[1]);
  committed_arg c1 = {m.bootstrap, N1};
  CHECK(ceb_test_wait(committed_sum_is, &c1, 30000));

  /* Kill b mid-stream: a gets all four partitions at the rebalance. */
  for (int i = N1; i < N1 + N2; i++)
    CHECK_INT(produce(pr, i), 0);
  CHECK_INT(rd_kafka_flush(pr, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  int64_t until = ceb_test_now_ms() + 60000;
  while (read_some(&t, N1, N1 + N2, 50) < N2 / 10 &&
         ceb_test_now_ms() < until) {
  }
  ha_bridge_stop(&b[1], SIGKILL);
  int mid = read_some(&t, N1, N1 + N2, 0);
  fprintf(stderr, "killed b with %d of %d kill-phase records out\n", mid, N2);
  CHECK(mid < N2); /* mid-stream, or the kill proves nothing */
  split_arg a_all = {b, PARTS, -1};
  CHECK_MSG(ceb_test_wait(split_is, &a_all, 60000), "a holds %d after b died",
            assigned(&b[0]));
  /* b comes back: what it had made durable, and acknowledged to Kafka by
   * its commit, is still in its store and goes out now. */
  CHECK_INT(ha_bridge_start(&b[1]), 0);
  CHECK_INT(read_all(&t, N1, N1 + N2, 120000), N2);
  int lost = 0, dups = 0;
  for (int i = N1; i < N1 + N2; i++) {
    lost += t.seen[i] == 0;
    dups += t.seen[i] > 1 ? t.seen[i] - 1 : 0;
    CHECK_MSG(t.seen[i] >= 1, "ha-%d lost", i);
  }
  fprintf(stderr,
          "phase 2: %d records, lost %d, duplicates %d (re-read after the "
          "kill), a %d, b %d in all\n",
          N2, lost, dups, t.by_bridge[0], t.by_bridge[1]);
  committed_arg c2 = {m.bootstrap, N1 + N2};
  CHECK(ceb_test_wait(committed_sum_is, &c2, 60000));
  CHECK_INT(t.foreign, 0);
  CHECK_INT(ha_bridge_stop(&b[0], SIGTERM), 0);
  CHECK_INT(ha_bridge_stop(&b[1], SIGTERM), 0);
out:
  for (int i = 0; i < 2; i++) {
    if (b[i].pid > 0) ha_bridge_stop(&b[i], SIGKILL);
    if (ceb_test_failures && b[i].starts) ha_bridge_dump_logs(&b[i]);
    if (t.r[i]) ktest_reader_close(t.r[i]);
  }
  if (pr) rd_kafka_destroy(pr);
  ktest_mock_stop(&m);
  free(dir);
  return ceb_test_done("test_ha_kafka_group");
}
