/* Kafka source batching through the real plugin ABI against a mock
 * cluster: records already on a topic are submitted to the host in batches
 * (far fewer submit calls than records), in offset order, all committed; a
 * batch the host refuses because of one event (CEB_EVALIDATION with its
 * failed_index) costs only that record, which goes to the DLQ topic, while
 * the records before and after it are journaled in order, still batched.
 * A mapped source (`map`) with a 1.3 host batches the same way through
 * submit_mapped_batch: the record the mapping refuses is dead-lettered with
 * the host's reason, the others are journaled in offset order. */
#include <stdlib.h>
#include <string.h>

#include "ceb_fake_host.h"
#include "ceb_fake_map.h"
#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "kafka_test_util.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:test"
#define REFUSED_TYPE "nl.edu.refuse"

typedef struct src_fixture {
  ceb_fake_host *f;
  ceb_host host; /* the fake host's, validating, possibly refusing */
  const ceb_plugin *p;
  ceb_config *cfg;
  void *state;
} src_fixture;

/* The fake host, refusing any submit that holds an event of REFUSED_TYPE
 * the way the runtime refuses an invalid one: CEB_EVALIDATION, the
 * violation and the index of the event, nothing taken. */
static ceb_host validating;
static const ceb_host *real_host;

static int refusing_submit(ceb_instance *inst, ceb_event *const *events,
                           size_t count, const ceb_submit_opts *opts,
                           ceb_submit_cb cb, void *cb_arg) {
  for (size_t i = 0; i < count; i++) {
    const char *type = ceb_event_get(events[i], "type");
    if (!type || strcmp(type, REFUSED_TYPE) != 0) continue;
    if (opts && opts->violations) {
      ceb_violations *v = opts->violations;
      memset(v, 0, sizeof *v);
      v->count = v->errors = 1;
      v->items[0].code = "test.refused";
      v->items[0].severity = CEB_SEV_ERROR;
      snprintf(v->items[0].message, sizeof v->items[0].message,
               "type %s is refused by this host", type);
    }
    if (opts && opts->failed_index) *opts->failed_index = i;
    return CEB_EVALIDATION;
  }
  return real_host->submit(inst, events, count, opts, cb, cb_arg);
}

/* The next src_open: the section has `map`, and the host has
 * submit_mapped_batch (ABI 1.3). */
static int g_mapped;

static int src_open(src_fixture *sx, const ceb_plugin *p, int refusing,
                    const char *const *kv) {
  memset(sx, 0, sizeof *sx);
  sx->p = p;
  sx->f = ceb_fake_host_new("in", CEB_ROLE_SOURCE);
  sx->f->mode = CEB_FAKE_COMMIT_NOW;
  if (g_mapped) {
    ceb_fake_host_batch_mapping(sx->f);
    ceb_fake_set_map(sx->f, ceb_fake_map_payload, "value");
  }
  ktest_validating_host(sx->f, &sx->host);
  validating = sx->host;
  real_host = &validating;
  if (refusing) sx->host.submit = refusing_submit;
  sx->cfg = ktest_config(p, CEB_ROLE_SOURCE, kv);
  ceb_instance_info info = {sizeof info, "in", CEB_ROLE_SOURCE, "/tmp",
                            g_mapped};
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

/* Produces n binary-mode records id-0..id-(n-1) to topic[0], without
 * waiting for each acknowledgement; record `odd` (or none, -1) gets
 * REFUSED_TYPE. 0 when the broker acknowledged all of them. */
static int produce_many(rd_kafka_t *pr, const char *topic, const char *id,
                        int n, int odd) {
  for (int i = 0; i < n; i++) {
    char idv[64];
    snprintf(idv, sizeof idv, "%s-%d", id, i);
    rd_kafka_headers_t *h = rd_kafka_headers_new(6);
    rd_kafka_header_add(h, "ce_specversion", -1, "1.0", -1);
    rd_kafka_header_add(h, "ce_id", -1, idv, -1);
    rd_kafka_header_add(h, "ce_source", -1, SRC, -1);
    rd_kafka_header_add(h, "ce_type", -1,
                        i == odd ? REFUSED_TYPE : "nl.edu.batch", -1);
    rd_kafka_header_add(h, "content-type", -1, "application/json", -1);
    rd_kafka_resp_err_t e =
        rd_kafka_producev(pr, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
                          RD_KAFKA_V_VALUE((void *)"{}", 2),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
    if (e) {
      rd_kafka_headers_destroy(h);
      fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
      return -1;
    }
    rd_kafka_poll(pr, 0);
  }
  /* Every delivery report in: acknowledged in order on one partition. */
  return rd_kafka_flush(pr, 20000) == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : -1;
}

typedef struct committed_arg {
  const char *bootstrap, *group, *topic;
  int64_t want;
} committed_arg;

static int committed_is(void *arg) {
  committed_arg *a = arg;
  return ktest_committed(a->bootstrap, a->group, a->topic, 0) == a->want;
}

/* The events the fake host holds are id-0.. in order, skipping `skip`. */
static void check_order(ceb_fake_host *f, const char *id, int n, int skip) {
  size_t k = 0;
  for (int i = 0; i < n; i++) {
    if (i == skip) continue;
    char want[64];
    snprintf(want, sizeof want, "%s-%d", id, i);
    ceb_event *ev = ceb_fake_event(f, k++);
    CHECK_STR(ev ? ceb_event_get(ev, "id") : NULL, want);
    if (ev) ceb_event_unref(ev);
  }
}

static void test_batches(const ceb_plugin *p, ktest_mock *m, rd_kafka_t *pr) {
  enum { N = 600 };
  CHECK_INT(produce_many(pr, "many", "m", N, -1), 0);
  const char *kv[] = {"brokers",
                      m->bootstrap,
                      "group.id",
                      "g-many",
                      "topics",
                      "many",
                      "rdkafka.session.timeout.ms",
                      "6000",
                      NULL};
  src_fixture sx;
  CHECK_INT(src_open(&sx, p, 0, kv), CEB_OK);
  if (!sx.state) return;
  CHECK(ceb_fake_wait_events(sx.f, N, 30000));
  CHECK_INT(ceb_fake_event_count(sx.f), N);
  check_order(sx.f, "m", N, -1);
  /* Read from a full topic, records arrive many per read: one submit per
   * record would make N calls. */
  pthread_mutex_lock(&sx.f->lock);
  size_t submits = sx.f->nsubmits;
  pthread_mutex_unlock(&sx.f->lock);
  CHECK(submits > 0 && submits <= N / 4);
  committed_arg a = {m->bootstrap, "g-many", "many", N};
  CHECK(ceb_test_wait(committed_is, &a, 20000));
  src_close(&sx);
}

static void test_refused_in_batch(const ceb_plugin *p, ktest_mock *m,
                                  rd_kafka_t *pr) {
  enum { N = 40, ODD = 17 };
  CHECK_INT(produce_many(pr, "mixed", "x", N, ODD), 0);
  const char *kv[] = {"brokers",   m->bootstrap, "group.id",
                      "g-mixed",   "topics",     "mixed",
                      "dlq_topic", "mixed.dlq",  "rdkafka.session.timeout.ms",
                      "6000",      NULL};
  src_fixture sx;
  CHECK_INT(src_open(&sx, p, 1, kv), CEB_OK);
  if (!sx.state) return;
  CHECK(ceb_fake_wait_events(sx.f, N - 1, 30000));
  committed_arg a = {m->bootstrap, "g-mixed", "mixed", N};
  CHECK(ceb_test_wait(committed_is, &a, 20000));
  CHECK_INT(ceb_fake_event_count(sx.f), N - 1);
  check_order(sx.f, "x", N, ODD);
  /* Split at the refused event, not retried record by record. */
  pthread_mutex_lock(&sx.f->lock);
  size_t submits = sx.f->nsubmits;
  pthread_mutex_unlock(&sx.f->lock);
  CHECK(submits > 0 && submits <= N / 4);

  rd_kafka_t *r = ktest_reader(m->bootstrap, "mixed.dlq", 1);
  rd_kafka_message_t *dl[2];
  CHECK_INT(ktest_read(r, dl, 2, 5000), 1);
  char *v = ktest_header(dl[0], "ce_id");
  CHECK_STR(v, "x-17");
  free(v);
  v = ktest_header(dl[0], "ceb_dlq_offset");
  CHECK_STR(v, "17");
  free(v);
  v = ktest_header(dl[0], "ceb_dlq_reason");
  CHECK(v && strstr(v, "test.refused") != NULL);
  free(v);
  rd_kafka_message_destroy(dl[0]);
  ktest_reader_close(r);
  src_close(&sx);
}

/* Plain JSON records (no ce_ headers) {"id":"p-<i>"} with keys k0..k2,
 * record ODD {"fail":"bad record"}; 0 once all are acknowledged. */
static int produce_plain(rd_kafka_t *pr, const char *topic, int n, int odd) {
  for (int i = 0; i < n; i++) {
    char val[64], key[8];
    if (i == odd)
      snprintf(val, sizeof val, "{\"fail\":\"bad record\"}");
    else
      snprintf(val, sizeof val, "{\"id\":\"p-%d\"}", i);
    snprintf(key, sizeof key, "k%d", i % 3);
    rd_kafka_resp_err_t e = rd_kafka_producev(
        pr, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
        RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(val, strlen(val)),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (e) {
      fprintf(stderr, "produce: %s\n", rd_kafka_err2str(e));
      return -1;
    }
    rd_kafka_poll(pr, 0);
  }
  return rd_kafka_flush(pr, 20000) == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : -1;
}

static void test_mapped_batch(const ceb_plugin *p, ktest_mock *m,
                              rd_kafka_t *pr) {
  enum { N = 60, ODD = 23 };
  CHECK_INT(produce_plain(pr, "plain", N, ODD), 0);
  const char *kv[] = {"brokers",   m->bootstrap, "group.id",
                      "g-plain",   "topics",     "plain",
                      "dlq_topic", "plain.dlq",  "rdkafka.session.timeout.ms",
                      "6000",      NULL};
  src_fixture sx;
  g_mapped = 1;
  CHECK_INT(src_open(&sx, p, 0, kv), CEB_OK);
  g_mapped = 0;
  if (!sx.state) return;
  CHECK(ceb_fake_wait_events(sx.f, N - 1, 30000));
  committed_arg a = {m->bootstrap, "g-plain", "plain", N};
  CHECK(ceb_test_wait(committed_is, &a, 20000));
  CHECK_INT(ceb_fake_event_count(sx.f), N - 1);
  check_order(sx.f, "p", N, ODD); /* so every key's order too */
  CHECK_INT(ceb_fake_doc_count(sx.f), N);
  /* batched: one submit_mapped_batch (and one submit) per read, not per
   * record */
  size_t batches = ceb_fake_mapped_batches(sx.f);
  pthread_mutex_lock(&sx.f->lock);
  size_t submits = sx.f->nsubmits;
  pthread_mutex_unlock(&sx.f->lock);
  CHECK(batches > 0 && batches <= N / 4);
  CHECK(submits > 0 && submits <= N / 4);

  rd_kafka_t *r = ktest_reader(m->bootstrap, "plain.dlq", 1);
  rd_kafka_message_t *dl[2];
  CHECK_INT(ktest_read(r, dl, 2, 5000), 1);
  char *v = ktest_header(dl[0], "ceb_dlq_offset");
  CHECK_STR(v, "23");
  free(v);
  v = ktest_header(dl[0], "ceb_dlq_reason");
  CHECK_STR(v, "mapping: bad record");
  free(v);
  rd_kafka_message_destroy(dl[0]);
  ktest_reader_close(r);
  src_close(&sx);
}

int main(void) {
  void *dl = NULL;
  const ceb_plugin *p = ktest_plugin(&dl);
  CHECK(p != NULL);
  ktest_mock m;
  const char *topics[] = {"many:1",  "mixed:1",     "mixed.dlq:1",
                          "plain:1", "plain.dlq:1", NULL};
  CHECK_INT(ktest_mock_start(&m, topics), 0);
  rd_kafka_t *pr =
      m.pid > 0 ? ktest_producer_linger(m.bootstrap, "10000") : NULL;
  if (p && pr) {
    test_batches(p, &m, pr);
    test_refused_in_batch(p, &m, pr);
    test_mapped_batch(p, &m, pr);
  }
  if (pr) rd_kafka_destroy(pr);
  ktest_mock_stop(&m);
  ktest_plugin_close(dl);
  return ceb_test_done("kafka_source_batch");
}
