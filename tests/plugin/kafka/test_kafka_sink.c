/* Kafka sink through the real plugin ABI against a mock cluster: records
 * read back with a plain consumer (binary and structured, headers and key,
 * templated topic, DLQ topic override); settles come from the delivery
 * report, never on enqueue; injected produce errors are retried without loss
 * or duplicates; permanent errors, queue-full and drain are classified. */
#include <stdlib.h>
#include <string.h>

#include "ceb_fake_host.h"
#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "kafka_test_util.h"

static ceb_event *make_event(const char *id, const char *pk, const char *data) {
  ceb_event *ev = ceb_event_new();
  ceb_event_set(ev, "specversion", "1.0");
  ceb_event_set(ev, "id", id);
  ceb_event_set(ev, "source", "urn:nld:oin:00000001234567890000:systeem:test");
  ceb_event_set(ev, "type", "nl.edu.test");
  ceb_event_set(ev, "datacontenttype", "application/json");
  if (pk) ceb_event_set(ev, "partitionkey", pk);
  ceb_event_set_data(ev, data, strlen(data), CEB_DATA_JSON);
  return ev;
}

typedef struct sink_fixture {
  ceb_fake_host *f;
  const ceb_plugin *p;
  ceb_config *cfg;
  void *state;
} sink_fixture;

static int sink_open(sink_fixture *sx, const ceb_plugin *p,
                     const char *const *kv) {
  memset(sx, 0, sizeof *sx);
  sx->p = p;
  sx->f = ceb_fake_host_new("out", CEB_ROLE_SINK);
  sx->cfg = ktest_config(p, CEB_ROLE_SINK, kv);
  ceb_instance_info info = {sizeof info, "out", CEB_ROLE_SINK, "/tmp"};
  int rc = p->init(&sx->f->host, &sx->f->inst, &info, sx->cfg, &sx->state);
  if (rc == CEB_OK && (rc = p->start(sx->state)) != CEB_OK)
    p->destroy(sx->state);
  if (rc != CEB_OK) sx->state = NULL;
  return rc;
}

static void sink_close(sink_fixture *sx) {
  if (sx->state) sx->p->destroy(sx->state);
  cebi_config_free(sx->cfg);
  ceb_fake_host_free(sx->f);
}

/* Delivers ev; returns the delivery (free after it settled). */
static ceb_delivery *deliver(sink_fixture *sx, ceb_event *ev,
                             const char *topic) {
  ceb_delivery *d = ceb_fake_delivery_new(sx->f, ev, "r1", topic, 1);
  int rc = sx->p->deliver(sx->state, d);
  CHECK_INT(rc, CEB_OK);
  return d;
}

static void check_settle(sink_fixture *sx, size_t i, ceb_outcome outcome,
                         const char *reason) {
  ceb_fake_settle st;
  CHECK(ceb_fake_settle_get(sx->f, i, &st));
  CHECK_INT(st.info.outcome, outcome);
  if (reason) CHECK_STR(st.reason, reason);
}

static void test_binary(const ceb_plugin *p, ktest_mock *m) {
  const char *kv[] = {"brokers", m->bootstrap, "topic", "out", NULL};
  sink_fixture sx;
  CHECK_INT(sink_open(&sx, p, kv), CEB_OK);
  if (!sx.state) return;
  /* Broker down: nothing can be acknowledged, so no settle may exist yet
   * after deliver returned (a sink settling on enqueue fails here). */
  CHECK_INT(ktest_mock_cmd(m, "broker_down 1"), 0);
  ceb_event *evs[3];
  ceb_delivery *ds[3];
  char id[32], pk[32], data[64];
  for (int i = 0; i < 3; i++) {
    snprintf(id, sizeof id, "b-%d", i);
    snprintf(pk, sizeof pk, "key-%d", i);
    snprintf(data, sizeof data, "{\"n\":%d}", i);
    evs[i] = make_event(id, pk, data);
    ds[i] = deliver(&sx, evs[i], NULL);
  }
  CHECK_INT(ceb_fake_settle_count(sx.f), 0);
  CHECK_INT(ktest_mock_cmd(m, "broker_up 1"), 0);
  CHECK(ceb_fake_wait_settles(sx.f, 3, 30000));
  for (int i = 0; i < 3; i++)
    check_settle(&sx, (size_t)i, CEB_ACK, NULL);

  rd_kafka_t *r = ktest_reader(m->bootstrap, "out", 1);
  rd_kafka_message_t *msgs[4];
  size_t n = ktest_read(r, msgs, 3, 20000);
  CHECK_INT(n, 3);
  for (size_t i = 0; i < n; i++) {
    char want[64];
    char *h = ktest_header(msgs[i], "ce_id");
    snprintf(want, sizeof want, "b-%zu", i);
    CHECK_STR(h, want);
    free(h);
    h = ktest_header(msgs[i], "ce_type");
    CHECK_STR(h, "nl.edu.test");
    free(h);
    h = ktest_header(msgs[i], "ce_specversion");
    CHECK_STR(h, "1.0");
    free(h);
    h = ktest_header(msgs[i], "content-type");
    CHECK_STR(h, "application/json");
    free(h);
    snprintf(want, sizeof want, "key-%zu", i);
    CHECK_INT(msgs[i]->key_len, strlen(want));
    CHECK(msgs[i]->key && !memcmp(msgs[i]->key, want, msgs[i]->key_len));
    snprintf(want, sizeof want, "{\"n\":%zu}", i);
    CHECK_INT(msgs[i]->len, strlen(want));
    CHECK(!memcmp(msgs[i]->payload, want, msgs[i]->len));
    rd_kafka_message_destroy(msgs[i]);
  }
  ktest_reader_close(r);
  for (int i = 0; i < 3; i++) {
    ceb_fake_delivery_free(ds[i]);
    ceb_event_unref(evs[i]);
  }
  sink_close(&sx);
}

/* key_attribute set empty: records carry no key, even for an event that
 * has a partitionkey (the default key attribute). */
static void test_no_key(const ceb_plugin *p, ktest_mock *m) {
  const char *kv[] = {"brokers",       m->bootstrap, "topic", "nokey",
                      "key_attribute", "",           NULL};
  sink_fixture sx;
  CHECK_INT(sink_open(&sx, p, kv), CEB_OK);
  if (!sx.state) return;
  ceb_event *ev = make_event("k-1", "pk-1", "{}");
  ceb_delivery *d = deliver(&sx, ev, NULL);
  CHECK(ceb_fake_wait_settles(sx.f, 1, 30000));
  check_settle(&sx, 0, CEB_ACK, NULL);
  rd_kafka_t *r = ktest_reader(m->bootstrap, "nokey", 1);
  rd_kafka_message_t *msg = NULL;
  CHECK_INT(ktest_read(r, &msg, 1, 20000), 1);
  if (msg) {
    CHECK(msg->key == NULL);
    CHECK_INT(msg->key_len, 0);
    char *h = ktest_header(msg, "ce_partitionkey");
    CHECK_STR(h, "pk-1");
    free(h);
    rd_kafka_message_destroy(msg);
  }
  ktest_reader_close(r);
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);
  sink_close(&sx);
}

static void test_structured_template_override(const ceb_plugin *p,
                                              ktest_mock *m) {
  const char *kv[] = {"brokers",       m->bootstrap, "topic",
                      "edu.${type}",   "mode",       "structured",
                      "key_attribute", "subject",    NULL};
  sink_fixture sx;
  CHECK_INT(sink_open(&sx, p, kv), CEB_OK);
  if (!sx.state) return;
  ceb_event *ev = make_event("s-1", "pk-ignored", "{\"a\":true}");
  ceb_event_set(ev, "subject", "student-42");
  ceb_delivery *d1 = deliver(&sx, ev, NULL);
  /* An override topic (DLQ) wins over the template. */
  ceb_delivery *d2 = deliver(&sx, ev, "out.dlq");
  /* A template that cannot expand is rejected with a reason. */
  ceb_event *bad = make_event("s-2", NULL, "{}");
  ceb_event_set(bad, "type", "nl edu bad");
  ceb_delivery *d3 = deliver(&sx, bad, NULL);
  CHECK(ceb_fake_wait_settles(sx.f, 3, 30000));
  int acks = 0, rejects = 0;
  for (size_t i = 0; i < 3; i++) {
    ceb_fake_settle st;
    CHECK(ceb_fake_settle_get(sx.f, i, &st));
    if (st.info.outcome == CEB_ACK) acks++;
    if (st.info.outcome == CEB_REJECT) {
      rejects++;
      CHECK_STR(st.event_id, "s-2");
      CHECK_STR(st.reason, "kafka.topic");
    }
  }
  CHECK_INT(acks, 2);
  CHECK_INT(rejects, 1);

  const char *topics[] = {"edu.nl.edu.test", "out.dlq"};
  for (int t = 0; t < 2; t++) {
    rd_kafka_t *r = ktest_reader(m->bootstrap, topics[t], 1);
    rd_kafka_message_t *msg = NULL;
    CHECK_INT(ktest_read(r, &msg, 1, 20000), 1);
    if (msg) {
      char *ct = ktest_header(msg, "content-type");
      CHECK(ct && !strncmp(ct, "application/cloudevents+json", 28));
      free(ct);
      CHECK(msg->key_len == 10 && !memcmp(msg->key, "student-42", 10));
      ceb_event *back = NULL;
      CHECK_INT(ceb_json_decode(msg->payload, msg->len, &back, NULL), CEB_OK);
      if (back) {
        CHECK_STR(ceb_event_get(back, "id"), "s-1");
        CHECK_STR(ceb_event_get(back, "subject"), "student-42");
        size_t len = 0;
        const char *data = ceb_event_data(back, &len);
        CHECK(data && len == 10 && !memcmp(data, "{\"a\":true}", 10));
        ceb_event_unref(back);
      }
      rd_kafka_message_destroy(msg);
    }
    ktest_reader_close(r);
  }
  ceb_fake_delivery_free(d1);
  ceb_fake_delivery_free(d2);
  ceb_fake_delivery_free(d3);
  ceb_event_unref(ev);
  ceb_event_unref(bad);
  sink_close(&sx);
}

/* Produce requests failing with retriable errors are retried by the
 * idempotent producer: every event lands exactly once, all ACKed. */
static void test_injected_errors(const ceb_plugin *p, ktest_mock *m) {
  const char *kv[] = {"brokers", m->bootstrap, "topic", "retry", NULL};
  sink_fixture sx;
  CHECK_INT(sink_open(&sx, p, kv), CEB_OK);
  if (!sx.state) return;
  /* 19 NOT_ENOUGH_REPLICAS, 7 REQUEST_TIMED_OUT: retriable */
  CHECK_INT(ktest_mock_cmd(m, "push_errors 0 4 19 7 19 7"), 0);
  enum { N = 20 };
  ceb_event *evs[N];
  ceb_delivery *ds[N];
  for (int i = 0; i < N; i++) {
    char id[32];
    snprintf(id, sizeof id, "r-%d", i);
    evs[i] = make_event(id, "same-key", "{}");
    ds[i] = deliver(&sx, evs[i], NULL);
  }
  CHECK(ceb_fake_wait_settles(sx.f, N, 60000));
  for (size_t i = 0; i < N; i++)
    check_settle(&sx, i, CEB_ACK, NULL);
  rd_kafka_t *r = ktest_reader(m->bootstrap, "retry", 1);
  rd_kafka_message_t *msgs[N + 1];
  size_t n = ktest_read(r, msgs, N, 20000);
  CHECK_INT(n, N);
  /* No duplicate from a retry, and the key's order is kept. */
  n += ktest_read(r, msgs + n, 1, 1000);
  CHECK_INT(n, N);
  for (size_t i = 0; i < n; i++) {
    char want[32];
    snprintf(want, sizeof want, "r-%zu", i);
    char *h = ktest_header(msgs[i], "ce_id");
    CHECK_STR(h, want);
    free(h);
    rd_kafka_message_destroy(msgs[i]);
  }
  ktest_reader_close(r);
  for (int i = 0; i < N; i++) {
    ceb_fake_delivery_free(ds[i]);
    ceb_event_unref(evs[i]);
  }
  sink_close(&sx);
}

/* Too large -> REJECT with librdkafka's name; queue full -> RETRY with the
 * configured retry_after; drain past its deadline -> RETRY "drain". */
static void test_classification(const ceb_plugin *p, ktest_mock *m) {
  const char *kv[] = {"brokers",
                      m->bootstrap,
                      "topic",
                      "out",
                      "queue_full.retry_after",
                      "250ms",
                      "rdkafka.message.max.bytes",
                      "2000",
                      "rdkafka.queue.buffering.max.messages",
                      "1",
                      NULL};
  sink_fixture sx;
  CHECK_INT(sink_open(&sx, p, kv), CEB_OK);
  if (!sx.state) return;
  char big[4000];
  memset(big, 'x', sizeof big);
  big[0] = '"';
  big[sizeof big - 2] = '"';
  big[sizeof big - 1] = '\0';
  ceb_event *ev_big = make_event("big", NULL, big);
  ceb_delivery *d_big = deliver(&sx, ev_big, NULL);
  CHECK(ceb_fake_wait_settles(sx.f, 1, 10000));
  check_settle(&sx, 0, CEB_REJECT, "kafka.MSG_SIZE_TOO_LARGE");

  CHECK_INT(ktest_mock_cmd(m, "broker_down 1"), 0);
  ceb_event *e1 = make_event("q-1", NULL, "{}");
  ceb_event *e2 = make_event("q-2", NULL, "{}");
  ceb_delivery *d1 = deliver(&sx, e1, NULL);
  ceb_delivery *d2 = deliver(&sx, e2, NULL);
  CHECK(ceb_fake_wait_settles(sx.f, 2, 10000));
  ceb_fake_settle st;
  CHECK(ceb_fake_settle_get(sx.f, 1, &st));
  CHECK_STR(st.event_id, "q-2");
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_STR(st.reason, "kafka._QUEUE_FULL");
  CHECK_INT(st.info.retry_after_ms, 250);

  /* q-1 is stuck behind the down broker: drain gives it back as RETRY. */
  int64_t t0 = sx.f->host.now_ms(&sx.f->inst);
  CHECK_INT(p->drain(sx.state, t0 + 300), CEB_ETIMEOUT);
  CHECK_INT(ceb_fake_settle_count(sx.f), 3);
  CHECK(ceb_fake_settle_get(sx.f, 2, &st));
  CHECK_STR(st.event_id, "q-1");
  CHECK_INT(st.info.outcome, CEB_RETRY);
  CHECK_STR(st.reason, "drain");
  /* Draining: new deliveries are refused without settling. */
  ceb_delivery *d3 = ceb_fake_delivery_new(sx.f, e1, "r1", NULL, 2);
  CHECK_INT(p->deliver(sx.state, d3), CEB_ESHUTDOWN);
  CHECK_INT(ktest_mock_cmd(m, "broker_up 1"), 0);
  sink_close(&sx);
  /* Destroy settles nothing twice. */
  ceb_fake_delivery_free(d_big);
  ceb_fake_delivery_free(d1);
  ceb_fake_delivery_free(d2);
  ceb_fake_delivery_free(d3);
  ceb_event_unref(ev_big);
  ceb_event_unref(e1);
  ceb_event_unref(e2);
}

/* A permanent error from the broker (record too large, 10) is a REJECT
 * named after librdkafka's error; the next delivery still succeeds. */
/* No delivery report by the delivery's deadline: RETRY "timeout"; the
 * late report (the record does get written) settles nothing twice. */
static void test_deadline(const ceb_plugin *p, ktest_mock *m) {
  const char *kv[] = {"brokers", m->bootstrap, "topic", "late", NULL};
  sink_fixture sx;
  CHECK_INT(sink_open(&sx, p, kv), CEB_OK);
  if (!sx.state) return;
  CHECK_INT(ktest_mock_cmd(m, "broker_down 1"), 0);
  ceb_event *ev = make_event("late-1", NULL, "{}");
  ceb_delivery *d = ceb_fake_delivery_new(sx.f, ev, "r1", NULL, 1);
  d->deadline_ms = sx.f->host.now_ms(&sx.f->inst) + 300;
  CHECK_INT(p->deliver(sx.state, d), CEB_OK);
  CHECK(ceb_fake_wait_settles(sx.f, 1, 10000));
  check_settle(&sx, 0, CEB_RETRY, "timeout");
  CHECK_INT(ktest_mock_cmd(m, "broker_up 1"), 0);
  rd_kafka_t *r = ktest_reader(m->bootstrap, "late", 1);
  rd_kafka_message_t *msg = NULL;
  CHECK_INT(ktest_read(r, &msg, 1, 20000), 1);
  if (msg) rd_kafka_message_destroy(msg);
  ktest_reader_close(r);
  /* Destroy serves every outstanding report: none may settle again. */
  int64_t t0 = sx.f->host.now_ms(&sx.f->inst);
  CHECK_INT(p->drain(sx.state, t0 + 5000), CEB_OK);
  p->destroy(sx.state);
  sx.state = NULL;
  CHECK_INT(ceb_fake_settle_count(sx.f), 1);
  sink_close(&sx);
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);
}

static void test_broker_permanent(const ceb_plugin *p, ktest_mock *m) {
  const char *kv[] = {"brokers", m->bootstrap, "topic", "perm", NULL};
  sink_fixture sx;
  CHECK_INT(sink_open(&sx, p, kv), CEB_OK);
  if (!sx.state) return;
  /* Warm up (producer id, metadata) so the error hits the record. */
  ceb_event *e0 = make_event("p-0", NULL, "{}");
  ceb_delivery *d0 = deliver(&sx, e0, NULL);
  CHECK(ceb_fake_wait_settles(sx.f, 1, 20000));
  check_settle(&sx, 0, CEB_ACK, NULL);
  CHECK_INT(ktest_mock_cmd(m, "push_errors 0 1 10"), 0);
  ceb_event *e1 = make_event("p-1", NULL, "{}");
  ceb_delivery *d1 = deliver(&sx, e1, NULL);
  CHECK(ceb_fake_wait_settles(sx.f, 2, 20000));
  check_settle(&sx, 1, CEB_REJECT, "kafka.MSG_SIZE_TOO_LARGE");
  ceb_event *e2 = make_event("p-2", NULL, "{}");
  ceb_delivery *d2 = deliver(&sx, e2, NULL);
  CHECK(ceb_fake_wait_settles(sx.f, 3, 20000));
  check_settle(&sx, 2, CEB_ACK, NULL);
  sink_close(&sx);
  ceb_fake_delivery_free(d0);
  ceb_fake_delivery_free(d1);
  ceb_fake_delivery_free(d2);
  ceb_event_unref(e0);
  ceb_event_unref(e1);
  ceb_event_unref(e2);
}

typedef struct metric_arg {
  ceb_fake_host *f;
  const char *name;
} metric_arg;

static int metric_positive(void *arg) {
  metric_arg *a = arg;
  return ceb_metrics_get(a->f->metrics, a->name, NULL) > 0;
}

/* A fatal idempotence error (the broker answers a produce with
 * OUT_OF_ORDER_SEQUENCE_NUMBER, 45) makes librdkafka's producer unusable:
 * that delivery is retried, the producer is replaced and later deliveries
 * succeed. */
static void test_fatal_producer(const ceb_plugin *p, ktest_mock *m) {
  const char *kv[] = {"brokers", m->bootstrap, "topic", "fatal", NULL};
  sink_fixture sx;
  CHECK_INT(sink_open(&sx, p, kv), CEB_OK);
  if (!sx.state) return;
  ceb_event *e0 = make_event("x-0", NULL, "{}");
  ceb_delivery *d0 = deliver(&sx, e0, NULL);
  CHECK(ceb_fake_wait_settles(sx.f, 1, 20000));
  check_settle(&sx, 0, CEB_ACK, NULL);
  CHECK_INT(ktest_mock_cmd(m, "push_errors 0 1 45"), 0);
  ceb_event *e1 = make_event("x-1", NULL, "{}");
  ceb_delivery *d1 = deliver(&sx, e1, NULL);
  CHECK(ceb_fake_wait_settles(sx.f, 2, 20000));
  check_settle(&sx, 1, CEB_RETRY, NULL);
  metric_arg restarted = {sx.f, "cebridge_kafka_sink_producer_restarts_total"};
  CHECK(ceb_test_wait(metric_positive, &restarted, 20000));
  ceb_event *e2 = make_event("x-2", NULL, "{}");
  ceb_delivery *d2 = deliver(&sx, e2, NULL);
  CHECK(ceb_fake_wait_settles(sx.f, 3, 20000));
  check_settle(&sx, 2, CEB_ACK, NULL);
  sink_close(&sx);
  ceb_fake_delivery_free(d0);
  ceb_fake_delivery_free(d1);
  ceb_fake_delivery_free(d2);
  ceb_event_unref(e0);
  ceb_event_unref(e1);
  ceb_event_unref(e2);
}

static void test_bad_config(const ceb_plugin *p, ktest_mock *m) {
  ceb_fake_host *f = ceb_fake_host_new("bad", CEB_ROLE_SINK);
  ceb_instance_info info = {sizeof info, "bad", CEB_ROLE_SINK, "/tmp"};
  const char *kv1[] = {
      "brokers", m->bootstrap, "topic", "out", "rdkafka.no.such.property",
      "1",       NULL};
  const char *kv2[] = {"brokers", m->bootstrap, "topic", "edu.${type", NULL};
  const char *kv3[] = {
      "brokers", m->bootstrap, "topic", "out", "rdkafka.enable.idempotence",
      "false",   NULL};
  const char *const *kvs[] = {kv1, kv2, kv3};
  for (int i = 0; i < 3; i++) {
    ceb_config *cfg = ktest_config(p, CEB_ROLE_SINK, kvs[i]);
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
  const char *topics[] = {"out:1",   "out.dlq:1", "edu.nl.edu.test:1",
                          "retry:1", "perm:1",    "late:1",
                          "fatal:1", "nokey:1",   NULL};
  CHECK_INT(ktest_mock_start(&m, topics), 0);
  if (p && m.pid > 0) {
    CHECK(p->roles & CEB_ROLE_TOPICS);
    test_bad_config(p, &m);
    test_binary(p, &m);
    test_structured_template_override(p, &m);
    test_no_key(p, &m);
    test_injected_errors(p, &m);
    test_classification(p, &m);
    test_broker_permanent(p, &m);
    test_deadline(p, &m);
    test_fatal_producer(p, &m);
  }
  ktest_mock_stop(&m);
  ktest_plugin_close(dl);
  return ceb_test_done("kafka_sink");
}
