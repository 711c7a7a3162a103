/* Interop with kafkajs (npm, pinned by package-lock.json): binary-mode
 * CloudEvents produced by kafkajs are consumed by the kafka source as equal
 * events, and what the kafka sink produces (binary and structured) is read
 * back by kafkajs with the expected headers, key and value. All against a
 * librdkafka mock cluster. `npm ci` runs at test time; if the registry is
 * unreachable the test fails. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_fake_host.h"
#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "kafka_test_util.h"

#define NPM_TIMEOUT "300"
#define NODE_TIMEOUT "120"

static int npm_ci(void) {
  const char *cmd = "cd '" CEB_KAFKAJS_DIR "' && timeout " NPM_TIMEOUT
                    " npm ci --no-audit --no-fund --loglevel=error >&2";
  int rc = system(cmd);
  if (rc != 0)
    fprintf(stderr, "npm ci failed (%d): is the npm registry reachable?\n", rc);
  return rc;
}

static int kafkajs_produce(const char *bootstrap, const char *topic, int n) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "cd '" CEB_KAFKAJS_DIR "' && timeout " NODE_TIMEOUT
           " node kafkajs_client.js produce '%s' '%s' %d >&2",
           bootstrap, topic, n);
  return system(cmd);
}

/* Runs the kafkajs consumer; returns the parsed JSON lines (array). */
static json_t *kafkajs_consume(const char *bootstrap, const char *topic,
                               int n) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "cd '" CEB_KAFKAJS_DIR "' && timeout " NODE_TIMEOUT
           " node kafkajs_client.js consume '%s' '%s' %d",
           bootstrap, topic, n);
  FILE *pp = popen(cmd, "r");
  if (!pp) return NULL;
  json_t *all = json_array();
  char line[65536];
  while (fgets(line, sizeof line, pp)) {
    json_error_t jerr;
    json_t *j = json_loads(line, 0, &jerr);
    if (j)
      json_array_append_new(all, j);
    else
      fprintf(stderr, "kafkajs output not JSON: %s", line);
  }
  int rc = pclose(pp);
  if (rc != 0) {
    fprintf(stderr, "kafkajs consume exited with %d\n", rc);
    json_decref(all);
    return NULL;
  }
  return all;
}

static const char *jstr(json_t *obj, const char *path1, const char *path2) {
  json_t *v = json_object_get(obj, path1);
  if (path2) v = json_object_get(v, path2);
  return json_string_value(v);
}

static void test_kafkajs_to_source(const ceb_plugin *p, ktest_mock *m) {
  enum { N = 5 };
  CHECK_INT(kafkajs_produce(m->bootstrap, "from-kjs", N), 0);
  ceb_fake_host *f = ceb_fake_host_new("kjs", CEB_ROLE_SOURCE);
  const char *kv[] = {"brokers",
                      m->bootstrap,
                      "group.id",
                      "g-kjs",
                      "topics",
                      "from-kjs",
                      "rdkafka.session.timeout.ms",
                      "6000",
                      NULL};
  ceb_config *cfg = ktest_config(p, CEB_ROLE_SOURCE, kv);
  ceb_instance_info info = {sizeof info, "kjs", CEB_ROLE_SOURCE, "/tmp"};
  void *state = NULL;
  CHECK_INT(p->init(&f->host, &f->inst, &info, cfg, &state), CEB_OK);
  if (state) {
    CHECK_INT(p->start(state), CEB_OK);
    CHECK(ceb_fake_wait_events(f, N, 30000));
    CHECK_INT(ceb_fake_event_count(f), N);
    for (size_t i = 0; i < ceb_fake_event_count(f); i++) {
      char want[64];
      ceb_event *ev = ceb_fake_event(f, i);
      snprintf(want, sizeof want, "kjs-%zu", i);
      CHECK_STR(ceb_event_get(ev, "id"), want);
      CHECK_STR(ceb_event_get(ev, "specversion"), "1.0");
      CHECK_STR(ceb_event_get(ev, "source"),
                "urn:nld:oin:00000001234567890000:systeem:kafkajs");
      CHECK_STR(ceb_event_get(ev, "type"), "nl.edu.interop.kafkajs");
      CHECK_STR(ceb_event_get(ev, "time"), "2026-01-02T03:04:05Z");
      snprintf(want, sizeof want, "student %zu", i);
      CHECK_STR(ceb_event_get(ev, "subject"), want);
      snprintf(want, sizeof want, "corr-%zu", i);
      CHECK_STR(ceb_event_get(ev, "correlationid"), want);
      snprintf(want, sizeof want, "k-%zu", i);
      CHECK_STR(ceb_event_get(ev, "partitionkey"), want);
      CHECK_STR(ceb_event_get(ev, "datacontenttype"), "application/json");
      snprintf(want, sizeof want, "{\"n\":%zu,\"name\":\"kafkajs\"}", i);
      size_t len = 0;
      const char *data = ceb_event_data(ev, &len);
      CHECK(data && len == strlen(want) && !memcmp(data, want, len));
      ceb_event_unref(ev);
    }
    int64_t now = f->host.now_ms(&f->inst);
    CHECK_INT(p->drain(state, now + 10000), CEB_OK);
    p->destroy(state);
  }
  cebi_config_free(cfg);
  ceb_fake_host_free(f);
}

static void sink_to_kafkajs(const ceb_plugin *p, ktest_mock *m,
                            const char *mode, const char *topic) {
  ceb_fake_host *f = ceb_fake_host_new("kjs-out", CEB_ROLE_SINK);
  const char *kv[] = {"brokers", m->bootstrap, "topic", topic,
                      "mode",    mode,         NULL};
  ceb_config *cfg = ktest_config(p, CEB_ROLE_SINK, kv);
  ceb_instance_info info = {sizeof info, "kjs-out", CEB_ROLE_SINK, "/tmp"};
  void *state = NULL;
  enum { N = 3 };
  ceb_delivery *ds[N] = {0};
  CHECK_INT(p->init(&f->host, &f->inst, &info, cfg, &state), CEB_OK);
  if (state) {
    CHECK_INT(p->start(state), CEB_OK);
    for (int i = 0; i < N; i++) {
      char id[32], pk[32], data[64];
      snprintf(id, sizeof id, "%s-%d", mode, i);
      snprintf(pk, sizeof pk, "order-%d", i);
      snprintf(data, sizeof data, "{\"i\":%d}", i);
      ceb_event *ev = ceb_event_new();
      ceb_event_set(ev, "specversion", "1.0");
      ceb_event_set(ev, "id", id);
      ceb_event_set(ev, "source", "urn:nld:oin:00000001234567890000:systeem:b");
      ceb_event_set(ev, "type", "nl.edu.interop.bridge");
      ceb_event_set(ev, "datacontenttype", "application/json");
      ceb_event_set(ev, "partitionkey", pk);
      ceb_event_set_data(ev, data, strlen(data), CEB_DATA_JSON);
      ds[i] = ceb_fake_delivery_new(f, ev, "r", NULL, 1);
      ceb_event_unref(ev);
      CHECK_INT(p->deliver(state, ds[i]), CEB_OK);
    }
    CHECK(ceb_fake_wait_settles(f, N, 30000));
    for (size_t i = 0; i < N; i++) {
      ceb_fake_settle st;
      CHECK(ceb_fake_settle_get(f, i, &st));
      CHECK_INT(st.info.outcome, CEB_ACK);
    }
    json_t *recs = kafkajs_consume(m->bootstrap, topic, N);
    CHECK(recs != NULL);
    CHECK_INT(recs ? json_array_size(recs) : 0, N);
    for (size_t i = 0; recs && i < json_array_size(recs); i++) {
      json_t *r = json_array_get(recs, i);
      char want[64];
      snprintf(want, sizeof want, "order-%zu", i);
      CHECK_STR(jstr(r, "key", NULL), want);
      snprintf(want, sizeof want, "%s-%zu", mode, i);
      const char *value = jstr(r, "value", NULL);
      if (!strcmp(mode, "binary")) {
        CHECK_STR(jstr(r, "headers", "ce_id"), want);
        CHECK_STR(jstr(r, "headers", "ce_specversion"), "1.0");
        CHECK_STR(jstr(r, "headers", "ce_type"), "nl.edu.interop.bridge");
        CHECK_STR(jstr(r, "headers", "content-type"), "application/json");
        char data[64];
        snprintf(data, sizeof data, "{\"i\":%zu}", i);
        CHECK_STR(value, data);
      } else {
        const char *ct = jstr(r, "headers", "content-type");
        CHECK(ct && !strncmp(ct, "application/cloudevents+json", 28));
        json_t *body = value ? json_loads(value, 0, NULL) : NULL;
        CHECK(body != NULL);
        CHECK_STR(jstr(body, "id", NULL), want);
        CHECK_STR(jstr(body, "partitionkey", NULL), jstr(r, "key", NULL));
        CHECK_INT(json_integer_value(
                      json_object_get(json_object_get(body, "data"), "i")),
                  (long long)i);
        json_decref(body);
      }
    }
    json_decref(recs);
    p->destroy(state);
  }
  for (int i = 0; i < N; i++)
    ceb_fake_delivery_free(ds[i]);
  cebi_config_free(cfg);
  ceb_fake_host_free(f);
}

int main(void) {
  CHECK_INT(npm_ci(), 0);
  void *dl = NULL;
  const ceb_plugin *p = ktest_plugin(&dl);
  CHECK(p != NULL);
  ktest_mock m;
  const char *topics[] = {"from-kjs:1", "to-kjs-bin:1", "to-kjs-struct:1",
                          NULL};
  CHECK_INT(ktest_mock_start(&m, topics), 0);
  if (p && m.pid > 0 && ceb_test_failures == 0) {
    test_kafkajs_to_source(p, &m);
    sink_to_kafkajs(p, &m, "binary", "to-kjs-bin");
    sink_to_kafkajs(p, &m, "structured", "to-kjs-struct");
  }
  ktest_mock_stop(&m);
  ktest_plugin_close(dl);
  return ceb_test_done("kafka_interop_kafkajs");
}
