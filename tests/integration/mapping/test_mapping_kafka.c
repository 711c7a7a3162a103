/* Mappings end to end through the real `cebridge run`, Kafka side: plain
 * records produced to the mock cluster (ceb-kafka-mock) with headers and
 * keys become CloudEvents through the ready mappings and reach a Kafka
 * sink (read back from its topic):
 *  - contrib/mappings/kafka-plain-json.jq: the id from the event-id header,
 *    else topic-partition-offset; the key as partitionkey (and the out
 *    record's key); the record's timestamp as time; a value that is not
 *    JSON goes to the source's dlq_topic with the program's error;
 *  - contrib/mappings/debezium-cdc.jq: a Debezium update record becomes
 *    nl.example.cdc.customers.updated with subject, time and before/after;
 *    a tombstone goes to the DLQ topic;
 *  - a program's error paths: it throws, outputs a non-object, an invalid
 *    CloudEvent, loops forever: each record on the DLQ topic with its
 *    reason, the good ones around them delivered.
 * Counts: each DLQ topic holds exactly the failing records, the out topic
 * exactly the good ones, and every source offset is committed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "kafka_test_util.h"
#include "map_test_util.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:"

static const char k_errors_map[] =
    "if .value.case == \"throw\" then error(\"thrown on purpose\") "
    "elif .value.case == \"nonobject\" then 42 "
    "elif .value.case == \"invalid\" then {specversion: \"1.0\", id: "
    ".value.id, type: \"nl.example.invalid\"} "
    "elif .value.case == \"loop\" then (def f: f; f) "
    "else {specversion: \"1.0\", id: .value.id, source: \"" SRC "errors\", "
    "type: \"nl.example.good\", datacontenttype: \"application/json\", "
    "data: .value} end";

static const char k_debezium[] =
    "{\"before\":{\"id\":1004,\"email\":\"a@example.org\"},\"after\":{\"id\":"
    "1004,\"email\":\"b@example.org\"},\"source\":{\"version\":\"2.5.0.Final\","
    "\"connector\":\"postgresql\",\"name\":\"dbserver1\",\"ts_ms\":"
    "1758548009000,\"db\":\"inventory\",\"schema\":\"public\",\"table\":"
    "\"customers\",\"lsn\":24023128},\"op\":\"u\",\"ts_ms\":1758548009100}";

static int write_conf(const char *dir, const char *bootstrap) {
  char conf[512];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  mkdir(conf, 0700);
  const char *plain[] = {"ce_source", "\"" SRC "sis\"", "ce_type",
                         "\"nl.example.sis.record\"", NULL};
  const char *cdc[] = {"ce_source", "\"" SRC "cdc\"", NULL};
  if (map_copy_ready(conf, "kafka-plain-json.jq", plain) != 0 ||
      map_copy_ready(conf, "debezium-cdc.jq", cdc) != 0)
    return -1;
  char text[4096];
  snprintf(text, sizeof text,
           "[bridge]\n"
           "store = %s/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "log.format = text\n"
           "drain_timeout = 10s\n"
           "mapping.timeout = 300ms\n"
           "\n[source sis]\nplugin = kafka\nbrokers = %s\n"
           "group.id = map-sis\ntopics = sis\ndlq_topic = sis.dlq\n"
           "rdkafka.session.timeout.ms = 6000\n"
           "map = file:kafka-plain-json.jq\n"
           "\n[source cdc]\nplugin = kafka\nbrokers = %s\n"
           "group.id = map-cdc\ntopics = cdc\ndlq_topic = cdc.dlq\n"
           "rdkafka.session.timeout.ms = 6000\n"
           "map = file:debezium-cdc.jq\n"
           "\n[source errs]\nplugin = kafka\nbrokers = %s\n"
           "group.id = map-errs\ntopics = errs\ndlq_topic = errs.dlq\n"
           "rdkafka.session.timeout.ms = 6000\n"
           "map = %s\n"
           "\n[sink out]\nplugin = kafka\nbrokers = %s\ntopic = out\n"
           "mode = structured\n"
           "\n[route all]\nfrom = sis, cdc, errs\nto = out\n",
           dir, bootstrap, bootstrap, bootstrap, k_errors_map, bootstrap);
  return ceb_test_write_file(conf, "00-bridge.conf", text);
}

static void produce_all(rd_kafka_t *pr) {
  ceb_headers h = {0};
  ceb_headers_add(&h, "event-id", "sis-0001", 8);
  ceb_headers_add(&h, "trace", "t-1", 3);
  const char *v1 = "{\"student\":\"s-42\",\"status\":\"enrolled\"}";
  CHECK_INT(ktest_produce(pr, "sis", 0, "s-42", v1, strlen(v1), &h), 0);
  ceb_headers_clear(&h);
  const char *v2 = "{\"student\":\"s-7\",\"status\":\"left\"}";
  CHECK_INT(ktest_produce(pr, "sis", 1, NULL, v2, strlen(v2), NULL), 0);
  ceb_headers_add(&h, "content-type", "text/plain", 10);
  CHECK_INT(ktest_produce(pr, "sis", 0, "s-9", "not json", 8, &h), 0);
  ceb_headers_clear(&h);

  CHECK_INT(ktest_produce(pr, "cdc", 0, "{\"id\":1004}", k_debezium,
                          strlen(k_debezium), NULL),
            0);
  CHECK_INT(ktest_produce(pr, "cdc", 0, "{\"id\":1004}", NULL, 0, NULL), 0);

  const char *errs[] = {"{\"id\":\"e-good-1\"}",
                        "{\"case\":\"throw\",\"id\":\"e-1\"}",
                        "{\"case\":\"nonobject\",\"id\":\"e-2\"}",
                        "{\"case\":\"invalid\",\"id\":\"e-3\"}",
                        "{\"case\":\"loop\",\"id\":\"e-4\"}",
                        "{\"id\":\"e-good-2\"}"};
  for (size_t i = 0; i < 6; i++)
    CHECK_INT(
        ktest_produce(pr, "errs", 0, NULL, errs[i], strlen(errs[i]), NULL), 0);
}

/* Reads `want` records of topic, and one more if one came (there must be
 * none: the caller stopped the bridge or waited for every commit). The
 * reader is returned open: librdkafka's destroy waits for every message
 * read from it, so close it after destroying them. */
static size_t read_all(const char *bootstrap, const char *topic, int parts,
                       rd_kafka_message_t **out, size_t max, size_t want,
                       rd_kafka_t **reader) {
  rd_kafka_t *r = ktest_reader(bootstrap, topic, parts);
  size_t n = ktest_read(r, out, want, 30000);
  if (n == want && n < max) n += ktest_read(r, out + n, 1, 1000);
  *reader = r;
  return n;
}

static json_t *value_of(const rd_kafka_message_t *m) {
  return json_loadb(m->payload, m->len, 0, NULL);
}

static void check_out(const char *bootstrap) {
  rd_kafka_message_t *m[8];
  rd_kafka_t *r = NULL;
  size_t n = read_all(bootstrap, "out", 1, m, 8, 5, &r);
  CHECK_INT(n, 5);
  int seen_sis1 = 0, seen_sis2 = 0, seen_cdc = 0, seen_g1 = 0, seen_g2 = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *ev = value_of(m[i]);
    const char *id = json_string_value(json_object_get(ev, "id"));
    const char *time = json_string_value(json_object_get(ev, "time"));
    CHECK(id != NULL);
    if (id && !strcmp(id, "sis-0001")) {
      seen_sis1++;
      CHECK_STR(json_string_value(json_object_get(ev, "source")), SRC "sis");
      CHECK_STR(json_string_value(json_object_get(ev, "type")),
                "nl.example.sis.record");
      CHECK_STR(json_string_value(json_object_get(ev, "partitionkey")), "s-42");
      CHECK(time && strlen(time) == 24 && time[23] == 'Z'); /* ms precision */
      CHECK(m[i]->key_len == 4 && !memcmp(m[i]->key, "s-42", 4));
      json_t *want =
          json_loads("{\"student\":\"s-42\",\"status\":\"enrolled\"}", 0, NULL);
      CHECK(json_equal(json_object_get(ev, "data"), want));
      json_decref(want);
    } else if (id && !strcmp(id, "sis-1-0")) { /* no id header: place */
      seen_sis2++;
      CHECK(json_object_get(ev, "partitionkey") == NULL);
    } else if (id && !strcmp(id, "cdc-0-0")) {
      seen_cdc++;
      CHECK_STR(json_string_value(json_object_get(ev, "type")),
                "nl.example.cdc.customers.updated");
      CHECK_STR(json_string_value(json_object_get(ev, "subject")), "1004");
      CHECK_STR(time, "2025-09-22T13:33:29.000Z");
      json_t *d = json_object_get(ev, "data");
      CHECK_STR(json_string_value(json_object_get(d, "op")), "u");
      CHECK_STR(json_string_value(
                    json_object_get(json_object_get(d, "after"), "email")),
                "b@example.org");
    } else if (id && !strcmp(id, "e-good-1")) {
      seen_g1++;
    } else if (id && !strcmp(id, "e-good-2")) {
      seen_g2++;
    } else {
      CHECK_MSG(0, "unexpected event %s", id ? id : "(none)");
    }
    json_decref(ev);
    rd_kafka_message_destroy(m[i]);
  }
  CHECK(seen_sis1 == 1 && seen_sis2 == 1 && seen_cdc == 1 && seen_g1 == 1 &&
        seen_g2 == 1);
  ktest_reader_close(r);
}

static void check_dlq(const char *bootstrap, const char *topic, size_t want,
                      const char *const *reasons) {
  rd_kafka_message_t *m[8];
  rd_kafka_t *r = NULL;
  size_t n = read_all(bootstrap, topic, 1, m, 8, want, &r);
  CHECK_MSG(n == want, "%s: %zu records, want %zu", topic, n, want);
  for (size_t i = 0; i < n; i++) {
    char *reason = ktest_header(m[i], "ceb_dlq_reason");
    CHECK_MSG(i < want && reason && strstr(reason, reasons[i]),
              "%s[%zu]: reason '%s', want '%s'", topic, i,
              reason ? reason : "(none)", i < want ? reasons[i] : "-");
    free(reason);
    rd_kafka_message_destroy(m[i]);
  }
  ktest_reader_close(r);
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

int main(void) {
  ktest_mock m;
  const char *topics[] = {"sis:2",  "sis.dlq:1",  "cdc:1", "cdc.dlq:1",
                          "errs:1", "errs.dlq:1", "out:1", NULL};
  CHECK_INT(ktest_mock_start(&m, topics), 0);
  char *dir = ceb_test_tmpdir("mapping-kafka");
  rd_kafka_t *pr = m.pid > 0 ? ktest_producer(m.bootstrap) : NULL;
  if (!pr || !dir || write_conf(dir, m.bootstrap) != 0) {
    CHECK(0);
    ktest_mock_stop(&m);
    return ceb_test_done("integration_mapping_kafka");
  }
  produce_all(pr);
  char conf[512], log[512];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  pid_t bridge = ceb_test_bridge_start(conf, log);
  CHECK(bridge > 0);
  /* every record taken: durable or dead-lettered, offsets committed */
  committed_arg c[] = {{m.bootstrap, "map-sis", "sis", 0, 2},
                       {m.bootstrap, "map-sis", "sis", 1, 1},
                       {m.bootstrap, "map-cdc", "cdc", 0, 2},
                       {m.bootstrap, "map-errs", "errs", 0, 6}};
  for (size_t i = 0; i < 4; i++)
    CHECK_MSG(ceb_test_wait(committed_is, &c[i], 20000), "%s[%d] at %lld",
              c[i].topic, (int)c[i].partition,
              (long long)ktest_committed(m.bootstrap, c[i].group, c[i].topic,
                                         c[i].partition));
  check_out(m.bootstrap);
  CHECK_INT(ceb_test_pid_stop(bridge, SIGTERM, 30000), 0);
  const char *sis_r[] = {"mapping: value is not JSON (text)"};
  check_dlq(m.bootstrap, "sis.dlq", 1, sis_r);
  const char *cdc_r[] = {"mapping: a tombstone, not a change record"};
  check_dlq(m.bootstrap, "cdc.dlq", 1, cdc_r);
  const char *err_r[] = {
      "mapping: thrown on purpose", "mapping: output 1 is not a JSON object",
      "refused: ", "mapping: mapping timed out after 300 ms"};
  check_dlq(m.bootstrap, "errs.dlq", 4, err_r);

  rd_kafka_destroy(pr);
  ktest_mock_stop(&m);
  if (ceb_test_failures) {
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "---- bridge log ----\n%s\n", text ? text : "(none)");
    free(text);
  }
  free(dir);
  return ceb_test_done("integration_mapping_kafka");
}
