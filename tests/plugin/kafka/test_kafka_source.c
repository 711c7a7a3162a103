/* Kafka source through the real plugin ABI against a mock cluster: binary
 * and structured records produced with a plain producer arrive as equal
 * events; offsets are committed once durable; a malformed record goes to
 * the DLQ topic with ceb_dlq_* headers and its partition continues; a host
 * refusing with CEB_EBUSY pauses the partition, which resumes without loss
 * or duplicates once the host accepts again. */
#include <stdlib.h>
#include <string.h>

#include "ceb_fake_host.h"
#include "ceb_fake_map.h"
#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "kafka_test_util.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:test"

typedef struct src_fixture {
  ceb_fake_host *f;
  ceb_host host; /* the fake host's, validating like the bridge */
  const ceb_plugin *p;
  ceb_config *cfg;
  void *state;
} src_fixture;

/* The next src_open tells the instance its section has `map` (ABI 1.2). */
static int g_mapped;

static int src_open(src_fixture *sx, const ceb_plugin *p,
                    ceb_fake_submit_mode mode, const char *const *kv) {
  memset(sx, 0, sizeof *sx);
  sx->p = p;
  sx->f = ceb_fake_host_new("in", CEB_ROLE_SOURCE);
  sx->f->mode = mode;
  ktest_validating_host(sx->f, &sx->host);
  sx->cfg = ktest_config(p, CEB_ROLE_SOURCE, kv);
  ceb_instance_info info = {sizeof info, "in", CEB_ROLE_SOURCE, "/tmp",
                            g_mapped};
  if (g_mapped) ceb_fake_set_map(sx->f, ceb_fake_map_payload, "value");
  int rc = p->init(&sx->host, &sx->f->inst, &info, sx->cfg, &sx->state);
  if (rc == CEB_OK && (rc = p->start(sx->state)) != CEB_OK)
    p->destroy(sx->state);
  if (rc != CEB_OK) sx->state = NULL;
  return rc;
}

static void src_close(src_fixture *sx) {
  if (sx->state) sx->p->destroy(sx->state);
  cebi_config_free(sx->cfg);
  ceb_fake_host_free(sx->f);
}

/* A binary-mode record written by hand (ce_ headers, content-type). */
static int produce_binary(rd_kafka_t *pr, const char *topic, int32_t part,
                          const char *id, const char *key, const char *data) {
  ceb_headers h = {0};
  ceb_headers_add(&h, "ce_specversion", "1.0", 3);
  ceb_headers_add(&h, "ce_id", id, strlen(id));
  ceb_headers_add(&h, "ce_source", SRC, strlen(SRC));
  ceb_headers_add(&h, "ce_type", "nl.edu.binary", 13);
  ceb_headers_add(&h, "ce_subject", "student-7", 9);
  ceb_headers_add(&h, "content-type", "application/json", 16);
  int rc = ktest_produce(pr, topic, part, key, data, strlen(data), &h);
  ceb_headers_clear(&h);
  return rc;
}

static int produce_structured(rd_kafka_t *pr, const char *topic, int32_t part,
                              const char *id) {
  char body[512];
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"" SRC
           "\",\"type\":\"nl.edu.structured\",\"datacontenttype\":"
           "\"application/json\",\"data\":{\"s\":1}}",
           id);
  ceb_headers h = {0};
  ceb_headers_add(&h, "content-type", "application/cloudevents+json", 28);
  int rc = ktest_produce(pr, topic, part, NULL, body, strlen(body), &h);
  ceb_headers_clear(&h);
  return rc;
}

typedef struct committed_arg {
  const char *bootstrap, *group, *topic;
  int32_t partition;
  int64_t want;
} committed_arg;

static int committed_is(void *arg) {
  committed_arg *a = arg;
  return ktest_committed(a->bootstrap, a->group, a->topic, a->partition) ==
         a->want;
}

static void test_binary_structured_dlq(const ceb_plugin *p, ktest_mock *m,
                                       rd_kafka_t *pr) {
  /* Partition 0: binary, malformed (no ce_id), structured, broken JSON,
   * binary. Partition 1: structured. */
  CHECK_INT(produce_binary(pr, "in", 0, "b-1", "k1", "{\"n\":1}"), 0);
  ceb_headers h = {0};
  ceb_headers_add(&h, "ce_specversion", "1.0", 3);
  ceb_headers_add(&h, "ce_source", SRC, strlen(SRC));
  ceb_headers_add(&h, "ce_type", "nl.edu.binary", 13);
  CHECK_INT(ktest_produce(pr, "in", 0, "bad", "{}", 2, &h), 0);
  ceb_headers_clear(&h);
  CHECK_INT(produce_structured(pr, "in", 0, "s-1"), 0);
  ceb_headers_add(&h, "content-type", "application/cloudevents+json", 28);
  CHECK_INT(ktest_produce(pr, "in", 0, NULL, "{not json", 9, &h), 0);
  ceb_headers_clear(&h);
  CHECK_INT(produce_binary(pr, "in", 0, "b-2", "k2", "{\"n\":2}"), 0);
  CHECK_INT(produce_structured(pr, "in", 1, "s-2"), 0);

  const char *kv[] = {"brokers",   m->bootstrap, "group.id",
                      "g-basic",   "topics",     "in",
                      "dlq_topic", "in.dlq",     "rdkafka.session.timeout.ms",
                      "6000",      NULL};
  src_fixture sx;
  CHECK_INT(src_open(&sx, p, CEB_FAKE_COMMIT_NOW, kv), CEB_OK);
  if (!sx.state) return;
  CHECK(ceb_fake_wait_events(sx.f, 4, 30000));
  /* Per-partition order holds; across partitions it does not. */
  const char *p0[] = {"b-1", "s-1", "b-2"};
  size_t i0 = 0, n = ceb_fake_event_count(sx.f);
  CHECK_INT(n, 4);
  for (size_t i = 0; i < n; i++) {
    ceb_event *ev = ceb_fake_event(sx.f, i);
    const char *id = ceb_event_get(ev, "id");
    if (id && !strcmp(id, "s-2")) {
      CHECK_STR(ceb_event_get(ev, "type"), "nl.edu.structured");
    } else if (i0 < 3) {
      CHECK_STR(id, p0[i0]);
      if (id && id[0] == 'b') {
        CHECK_STR(ceb_event_get(ev, "type"), "nl.edu.binary");
        CHECK_STR(ceb_event_get(ev, "source"), SRC);
        CHECK_STR(ceb_event_get(ev, "subject"), "student-7");
        CHECK_STR(ceb_event_get(ev, "datacontenttype"), "application/json");
        /* The record key maps to partitionkey. */
        CHECK_STR(ceb_event_get(ev, "partitionkey"), i0 == 0 ? "k1" : "k2");
        size_t len = 0;
        const char *data = ceb_event_data(ev, &len);
        CHECK(data && len == 7 &&
              !memcmp(data, i0 == 0 ? "{\"n\":1}" : "{\"n\":2}", 7));
      } else if (id) {
        CHECK_STR(ceb_event_get(ev, "type"), "nl.edu.structured");
        size_t len = 0;
        const char *data = ceb_event_data(ev, &len);
        CHECK(data && len == 7 && !memcmp(data, "{\"s\":1}", 7));
      }
      i0++;
    }
    ceb_event_unref(ev);
  }
  CHECK_INT(i0, 3);

  /* Both malformed records are in the DLQ, raw, with their origin. */
  rd_kafka_t *r = ktest_reader(m->bootstrap, "in.dlq", 1);
  rd_kafka_message_t *dl[2];
  CHECK_INT(ktest_read(r, dl, 2, 20000), 2);
  const char *offs[] = {"1", "3"};
  for (int i = 0; i < 2; i++) {
    char *v = ktest_header(dl[i], "ceb_dlq_topic");
    CHECK_STR(v, "in");
    free(v);
    v = ktest_header(dl[i], "ceb_dlq_partition");
    CHECK_STR(v, "0");
    free(v);
    v = ktest_header(dl[i], "ceb_dlq_offset");
    CHECK_STR(v, offs[i]);
    free(v);
    v = ktest_header(dl[i], "ceb_dlq_reason");
    CHECK(v && strlen(v) > 0);
    free(v);
  }
  CHECK(dl[0]->len == 2 && !memcmp(dl[0]->payload, "{}", 2));
  char *t = ktest_header(dl[0], "ce_type");
  CHECK_STR(t, "nl.edu.binary"); /* original headers kept */
  free(t);
  CHECK(dl[1]->len == 9 && !memcmp(dl[1]->payload, "{not json", 9));
  rd_kafka_message_destroy(dl[0]);
  rd_kafka_message_destroy(dl[1]);
  ktest_reader_close(r);

  /* Everything durable or dead-lettered: both partitions fully committed. */
  committed_arg a0 = {m->bootstrap, "g-basic", "in", 0, 5};
  committed_arg a1 = {m->bootstrap, "g-basic", "in", 1, 1};
  CHECK(ceb_test_wait(committed_is, &a0, 20000));
  CHECK(ceb_test_wait(committed_is, &a1, 20000));
  int64_t now = sx.f->host.now_ms(&sx.f->inst);
  CHECK_INT(p->drain(sx.state, now + 10000), CEB_OK);
  src_close(&sx);
}

/* A mapped source (ABI 1.2): plain JSON records (no ce_ headers) go to
 * submit_mapped as input documents (kafka_doc.h); the one the program
 * refuses goes raw to dlq_topic with "mapping: <its error>", the others
 * become events in order; the offsets are committed only once every
 * record is durable or dead-lettered. The fake's C map function stands in
 * for the jq program (ceb_fake_map.h). */
static void test_mapped(const ceb_plugin *p, ktest_mock *m, rd_kafka_t *pr) {
  ceb_headers h = {0};
  ceb_headers_add(&h, "event-id", "h-1", 3);
  CHECK_INT(
      ktest_produce(pr, "map", 0, "s-42", "{\"id\":\"m-1\",\"n\":1}", 18, &h),
      0);
  ceb_headers_clear(&h);
  CHECK_INT(
      ktest_produce(pr, "map", 0, NULL, "{\"fail\":\"bad record\"}", 21, NULL),
      0);
  CHECK_INT(ktest_produce(pr, "map", 0, NULL, "{\"id\":\"m-2\"}", 12, NULL), 0);
  const char *kv[] = {"brokers",   m->bootstrap, "group.id",
                      "g-map",     "topics",     "map",
                      "dlq_topic", "map.dlq",    "rdkafka.session.timeout.ms",
                      "6000",      NULL};
  src_fixture sx;
  g_mapped = 1;
  CHECK_INT(src_open(&sx, p, CEB_FAKE_COMMIT_HOLD, kv), CEB_OK);
  g_mapped = 0;
  if (!sx.state) return;
  CHECK(ceb_fake_wait_events(sx.f, 2, 30000));
  CHECK_INT(ceb_fake_event_count(sx.f), 2);
  for (size_t i = 0; i < 2; i++) {
    ceb_event *ev = ceb_fake_event(sx.f, i);
    CHECK_STR(ev ? ceb_event_get(ev, "id") : NULL, i == 0 ? "m-1" : "m-2");
    ceb_event_unref(ev);
  }
  CHECK_INT(ceb_fake_doc_count(sx.f), 3);
  char *doc = ceb_fake_doc(sx.f, 0);
  CHECK(doc && strstr(doc, "{\"topic\":\"map\",\"partition\":0,"
                           "\"offset\":0,"));
  CHECK(doc && strstr(doc, "\"key\":\"s-42\",\"key_encoding\":\"text\","
                           "\"headers\":{\"event-id\":\"h-1\"}"));
  CHECK(doc && strstr(doc, "\"value\":{\"id\":\"m-1\",\"n\":1},"
                           "\"value_encoding\":\"json\"}"));
  free(doc);

  rd_kafka_t *r = ktest_reader(m->bootstrap, "map.dlq", 1);
  rd_kafka_message_t *dl = NULL;
  CHECK_INT(ktest_read(r, &dl, 1, 20000), 1);
  if (dl) {
    char *v = ktest_header(dl, "ceb_dlq_reason");
    CHECK_STR(v, "mapping: bad record");
    free(v);
    v = ktest_header(dl, "ceb_dlq_offset");
    CHECK_STR(v, "1");
    free(v);
    CHECK(dl->len == 21 &&
          !memcmp(dl->payload, "{\"fail\":\"bad record\"}", 21));
    rd_kafka_message_destroy(dl);
  }
  /* the events are not durable yet: nothing past them is committed */
  CHECK(ktest_committed(m->bootstrap, "g-map", "map", 0) < 1);
  ceb_fake_commit(sx.f, CEB_OK);
  committed_arg a = {m->bootstrap, "g-map", "map", 0, 3};
  CHECK(ceb_test_wait(committed_is, &a, 20000));
  CHECK_INT(ktest_read(r, &dl, 1, 500), 0); /* exactly the failing one */
  ktest_reader_close(r);
  int64_t now = sx.f->host.now_ms(&sx.f->inst);
  CHECK_INT(p->drain(sx.state, now + 10000), CEB_OK);
  src_close(&sx);
}

typedef struct metric_arg {
  ceb_fake_host *f;
  const char *name, *labels;
  double min;
} metric_arg;

static int metric_at_least(void *arg) {
  metric_arg *a = arg;
  return ceb_metrics_get(a->f->metrics, a->name, a->labels) >= a->min;
}

static void test_backpressure(const ceb_plugin *p, ktest_mock *m,
                              rd_kafka_t *pr) {
  enum { N = 6 };
  for (int i = 0; i < N; i++) {
    char id[32];
    snprintf(id, sizeof id, "bp-%d", i);
    CHECK_INT(produce_binary(pr, "bp", 0, id, NULL, "{}"), 0);
  }
  const char *kv[] = {"brokers",
                      m->bootstrap,
                      "group.id",
                      "g-bp",
                      "topics",
                      "bp",
                      "rdkafka.session.timeout.ms",
                      "6000",
                      NULL};
  src_fixture sx;
  CHECK_INT(src_open(&sx, p, CEB_FAKE_REFUSE, kv), CEB_OK);
  if (!sx.state) return;
  pthread_mutex_lock(&sx.f->lock);
  sx.f->accepting = 0;
  pthread_mutex_unlock(&sx.f->lock);
  metric_arg paused = {sx.f, "cebridge_kafka_source_pauses_total", NULL, 1};
  CHECK(ceb_test_wait(metric_at_least, &paused, 30000));
  CHECK_INT(ceb_fake_event_count(sx.f), 0);
  /* The host is back: the partition resumes at the refused record. */
  pthread_mutex_lock(&sx.f->lock);
  sx.f->mode = CEB_FAKE_COMMIT_NOW;
  sx.f->accepting = 1;
  pthread_mutex_unlock(&sx.f->lock);
  CHECK(ceb_fake_wait_events(sx.f, N, 30000));
  committed_arg a = {m->bootstrap, "g-bp", "bp", 0, N};
  CHECK(ceb_test_wait(committed_is, &a, 20000));
  CHECK_INT(ceb_fake_event_count(sx.f), N);
  for (size_t i = 0; i < ceb_fake_event_count(sx.f); i++) {
    char want[32];
    snprintf(want, sizeof want, "bp-%zu", i);
    ceb_event *ev = ceb_fake_event(sx.f, i);
    CHECK_STR(ceb_event_get(ev, "id"), want);
    ceb_event_unref(ev);
  }
  src_close(&sx);
}

/* topic.regex subscribes to matching topics; without dlq_topic a malformed
 * record is skipped (logged, counted) and the partition goes on.
 *
 * Both topics exist (the mock pre-creates them) before the consumer
 * subscribes, so its first join already matches both and the default
 * metadata refresh interval (5 min) is kept on purpose. A short interval
 * (this test once used 500 ms) makes librdkafka 2.0.2 livelock against the
 * mock: a periodic full-metadata reply that lands while the group leader
 * waits for its assignor metadata (join state wait-metadata) is taken by
 * rd_kafka_cgrp_metadata_update_check() as the metadata the join waited
 * for, so the leader abandons the assignment and rejoins. The mock answers
 * that JoinGroup after session.timeout.ms - 1000 = 5000 ms, a multiple of
 * 500 ms, so the next join lands on the next refresh again: no assignment
 * for 30 s (librdkafka#4259 is the same family of mock regex flakiness). */
static void test_regex_and_skip(const ceb_plugin *p, ktest_mock *m,
                                rd_kafka_t *pr) {
  CHECK_INT(produce_binary(pr, "rx.one", 0, "rx-1", NULL, "{}"), 0);
  CHECK_INT(ktest_produce(pr, "rx.two", 0, NULL, "junk", 4, NULL), 0);
  CHECK_INT(produce_binary(pr, "rx.two", 0, "rx-2", NULL, "{}"), 0);
  CHECK_INT(produce_binary(pr, "other", 0, "not-me", NULL, "{}"), 0);
  const char *kv[] = {"brokers",
                      m->bootstrap,
                      "group.id",
                      "g-rx",
                      "topic.regex",
                      "^rx\\..*",
                      "rdkafka.session.timeout.ms",
                      "6000",
                      NULL};
  src_fixture sx;
  CHECK_INT(src_open(&sx, p, CEB_FAKE_COMMIT_NOW, kv), CEB_OK);
  if (!sx.state) return;
  CHECK(ceb_fake_wait_events(sx.f, 2, 30000));
  metric_arg skipped = {sx.f, "cebridge_kafka_source_records_total",
                        "result=\"skipped\"", 1};
  CHECK(ceb_test_wait(metric_at_least, &skipped, 10000));
  committed_arg a = {m->bootstrap, "g-rx", "rx.two", 0, 2};
  CHECK(ceb_test_wait(committed_is, &a, 20000));
  int have1 = 0, have2 = 0;
  for (size_t i = 0; i < ceb_fake_event_count(sx.f); i++) {
    ceb_event *ev = ceb_fake_event(sx.f, i);
    const char *id = ceb_event_get(ev, "id");
    have1 += id && !strcmp(id, "rx-1");
    have2 += id && !strcmp(id, "rx-2");
    ceb_event_unref(ev);
  }
  CHECK_INT(have1, 1);
  CHECK_INT(have2, 1);
  CHECK_INT(ceb_fake_event_count(sx.f), 2);
  src_close(&sx);
}

/* Records the host failed for good (CEB_EIO from the journal) are not
 * committed: the source reads and submits them again, in order. */
static void test_host_failure_rereads(const ceb_plugin *p, ktest_mock *m,
                                      rd_kafka_t *pr) {
  enum { N = 3 };
  for (int i = 0; i < N; i++) {
    char id[32];
    snprintf(id, sizeof id, "f-%d", i);
    CHECK_INT(produce_binary(pr, "fail", 0, id, NULL, "{}"), 0);
  }
  const char *kv[] = {"brokers",
                      m->bootstrap,
                      "group.id",
                      "g-fail",
                      "topics",
                      "fail",
                      "rdkafka.session.timeout.ms",
                      "6000",
                      NULL};
  src_fixture sx;
  CHECK_INT(src_open(&sx, p, CEB_FAKE_COMMIT_HOLD, kv), CEB_OK);
  if (!sx.state) return;
  CHECK(ceb_fake_wait_events(sx.f, N, 30000));
  ceb_fake_commit(sx.f, CEB_EIO);
  CHECK(ceb_fake_wait_events(sx.f, 2 * N, 30000));
  CHECK_INT(ktest_committed(m->bootstrap, "g-fail", "fail", 0),
            RD_KAFKA_OFFSET_INVALID);
  ceb_fake_commit(sx.f, CEB_OK);
  committed_arg a = {m->bootstrap, "g-fail", "fail", 0, N};
  CHECK(ceb_test_wait(committed_is, &a, 20000));
  CHECK_INT(ceb_fake_event_count(sx.f), 2 * N);
  for (size_t i = 0; i < ceb_fake_event_count(sx.f); i++) {
    char want[32];
    snprintf(want, sizeof want, "f-%zu", i % N);
    ceb_event *ev = ceb_fake_event(sx.f, i);
    CHECK_STR(ceb_event_get(ev, "id"), want);
    ceb_event_unref(ev);
  }
  src_close(&sx);
}

static void test_bad_config(const ceb_plugin *p, ktest_mock *m) {
  ceb_fake_host *f = ceb_fake_host_new("bad", CEB_ROLE_SOURCE);
  ceb_instance_info info = {sizeof info, "bad", CEB_ROLE_SOURCE, "/tmp"};
  const char *kv1[] = {"brokers", m->bootstrap, "group.id", "g", NULL};
  const char *kv2[] = {"brokers",     m->bootstrap, "group.id", "g",
                       "topic.regex", "in.*",       NULL};
  const char *kv3[] = {"brokers",
                       m->bootstrap,
                       "group.id",
                       "g",
                       "topics",
                       "in",
                       "rdkafka.enable.auto.commit",
                       "true",
                       NULL};
  const char *kv4[] = {"brokers",
                       m->bootstrap,
                       "group.id",
                       "g",
                       "topics",
                       "in",
                       "rdkafka.fetch.wait.max.ms",
                       "-5",
                       NULL};
  const char *const *kvs[] = {kv1, kv2, kv3, kv4};
  for (int i = 0; i < 4; i++) {
    ceb_config *cfg = ktest_config(p, CEB_ROLE_SOURCE, kvs[i]);
    void *state = NULL;
    CHECK_INT(p->init(&f->host, &f->inst, &info, cfg, &state), CEB_ECONFIG);
    CHECK(state == NULL);
    cebi_config_free(cfg);
  }
  ceb_fake_host_free(f);
}

int main(void) {
  void *dl = NULL;
  const ceb_plugin *p = ktest_plugin(&dl);
  CHECK(p != NULL);
  ktest_mock m;
  const char *topics[] = {"in:2",      "in.dlq:1", "bp:1",   "rx.one:1",
                          "rx.two:1",  "other:1",  "fail:1", "map:1",
                          "map.dlq:1", NULL};
  CHECK_INT(ktest_mock_start(&m, topics), 0);
  rd_kafka_t *pr = m.pid > 0 ? ktest_producer(m.bootstrap) : NULL;
  if (p && pr) {
    test_bad_config(p, &m);
    test_mapped(p, &m, pr);
    test_binary_structured_dlq(p, &m, pr);
    test_backpressure(p, &m, pr);
    test_regex_and_skip(p, &m, pr);
    test_host_failure_rereads(p, &m, pr);
  }
  if (pr) rd_kafka_destroy(pr);
  ktest_mock_stop(&m);
  ktest_plugin_close(dl);
  return ceb_test_done("kafka_source");
}
