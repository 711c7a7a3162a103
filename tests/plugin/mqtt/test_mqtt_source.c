/* The MQTT source turns what a plain libmosquitto publisher sends into the same
 * CloudEvents: MQTT 5 binary and structured, MQTT 3.1.1 structured, through
 * wildcard subscriptions. A malformed message goes raw to dlq_topic with its
 * reason and the next message still flows. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "mqtt_test_util.h"

static void check_event(mtest_inst *t, size_t i, const ceb_event *want) {
  ceb_event *got = ceb_fake_event(t->fake, i);
  CHECK(got != NULL);
  CHECK(mtest_event_equal(want, got));
  ceb_event_unref(got);
}

static void run(ceb_mosq *b, int version) {
  fprintf(stderr, "-- source MQTT %d\n", version);
  const char *ver = version == 5 ? "5" : "3.1.1";
  const char *kv[] = {"broker",
                      b->addr,
                      "mqtt_version",
                      ver,
                      "client_id",
                      version == 5 ? "src-v5" : "src-v4",
                      "topics",
                      "edu/+/events, other/#",
                      "dlq_topic",
                      "cebridge/dlq",
                      NULL};
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SOURCE, kv), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_subscribed(&t));

  ceb_mqtt_client *pub = ceb_mqtt_client_new(b->url, "writer", version);
  ceb_mqtt_client *dlq = ceb_mqtt_client_new(b->url, "dlq-reader", version);
  CHECK(pub && dlq);
  if (!pub || !dlq) goto out;
  CHECK_INT(ceb_mqtt_subscribe(dlq, "cebridge/dlq", 1), 0);

  size_t n = 0;
  ceb_event *e1 = mtest_event("src-1", "nl.edu.inschrijving.created");
  ceb_event *e2 = mtest_event("src-2", "nl.edu.inschrijving.updated");
  ceb_event_set(e2, "dataschema", "https://example.nl/schema/v1");
  if (version == 5) {
    CHECK_INT(mtest_publish_event(pub, "edu/inschrijving/events", e1, 5,
                                  CEB_MODE_BINARY),
              CEB_OK);
    CHECK(ceb_fake_wait_events(t.fake, ++n, 10000));
    check_event(&t, n - 1, e1);
  }
  CHECK_INT(
      mtest_publish_event(pub, "other/a/b", e2, version, CEB_MODE_STRUCTURED),
      CEB_OK);
  CHECK(ceb_fake_wait_events(t.fake, ++n, 10000));
  check_event(&t, n - 1, e2);

  /* Not a CloudEvent: dead-lettered raw, with the reason and the topic. */
  static const char junk[] = "{\"specversion\": 1.0, \"id\": [1]}";
  const char *props[] = {"trace", "abc", NULL};
  CHECK_INT(ceb_mqtt_publish(
                pub, "edu/x/events", junk, sizeof junk - 1, 1,
                version == 5 ? "application/cloudevents+json" : NULL, props),
            0);
  CHECK_INT(ceb_mqtt_wait(dlq, 1, 10000), 1);
  const ceb_mqtt_msg *m = ceb_mqtt_get(dlq, 0);
  if (m) {
    CHECK_STR(m->payload, junk);
    if (version == 5) {
      const char *reason = ceb_mqtt_msg_prop(m, "ceb_dlq_reason");
      CHECK(reason && *reason);
      fprintf(stderr, "dead-letter reason: %s\n", reason ? reason : "");
      CHECK_STR(ceb_mqtt_msg_prop(m, "ceb_dlq_topic"), "edu/x/events");
      CHECK_STR(ceb_mqtt_msg_prop(m, "trace"), "abc");
      CHECK_STR(m->content_type, "application/cloudevents+json");
    }
  }
  /* A binary message missing required attributes decodes; the host's
   * validation refuses it (the fake host stands in for that refusal: the
   * real one is in tests/integration/mqtt) and the source dead-letters it
   * raw, acknowledged only after the dead letter is. */
  if (version == 5) {
    const char *bad[] = {"specversion", "1.0", "id", "x", NULL};
    pthread_mutex_lock(&t.fake->lock);
    t.fake->mode = CEB_FAKE_REFUSE;
    t.fake->refuse_status = CEB_EVALIDATION;
    pthread_mutex_unlock(&t.fake->lock);
    CHECK_INT(ceb_mqtt_publish(pub, "edu/y/events", "{}", 2, 1,
                               "application/json", bad),
              0);
    CHECK_INT(ceb_mqtt_wait(dlq, 2, 10000), 2);
    m = ceb_mqtt_get(dlq, 1);
    CHECK(m && strcmp(m->topic, "cebridge/dlq") == 0);
    if (m) {
      CHECK_STR(ceb_mqtt_msg_prop(m, "ceb_dlq_topic"), "edu/y/events");
      CHECK_STR(m->payload, "{}");
      const char *reason = ceb_mqtt_msg_prop(m, "ceb_dlq_reason");
      CHECK(reason && strstr(reason, "EVALIDATION"));
    }
    pthread_mutex_lock(&t.fake->lock);
    t.fake->mode = CEB_FAKE_COMMIT_NOW;
    pthread_mutex_unlock(&t.fake->lock);
  }
  /* ...and the next message still flows. */
  ceb_event *e3 = mtest_event("src-3", "nl.edu.x");
  CHECK_INT(mtest_publish_event(pub, "edu/z/events", e3, version,
                                CEB_MODE_STRUCTURED),
            CEB_OK);
  CHECK(ceb_fake_wait_events(t.fake, ++n, 10000));
  check_event(&t, n - 1, e3);
  CHECK_INT(ceb_fake_event_count(t.fake), n);

  /* Nothing outside the filters is consumed. */
  CHECK_INT(mtest_publish_event(pub, "elsewhere/events", e3, version,
                                CEB_MODE_STRUCTURED),
            CEB_OK);
  ceb_event *e4 = mtest_event("src-4", "nl.edu.y");
  CHECK_INT(
      mtest_publish_event(pub, "other/4", e4, version, CEB_MODE_STRUCTURED),
      CEB_OK);
  CHECK(ceb_fake_wait_events(t.fake, ++n, 10000));
  check_event(&t, n - 1, e4);
  CHECK_INT(ceb_fake_event_count(t.fake), n);
  ceb_event_unref(e1);
  ceb_event_unref(e2);
  ceb_event_unref(e3);
  ceb_event_unref(e4);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
out:
  ceb_mqtt_client_free(pub);
  ceb_mqtt_client_free(dlq);
  mtest_free(&t);
}

/* A shared subscription ($share/<group>/<filter>, MQTT 5, written out or
 * built from share_group): the broker hands each message to one member of
 * the group; with one member, all of them arrive, acknowledged through the
 * gate as any other. The two-bridge split: tests/integration/ha. */
static void shared(ceb_mosq *b, int by_key) {
  fprintf(stderr, "-- source shared subscription%s\n",
          by_key ? " (share_group)" : "");
  const char *kv_prefix[] = {"broker",    b->addr,  "client_id",
                             "src-share", "topics", "$share/cebridge/shared/#",
                             NULL};
  const char *kv_key[] = {"broker",      b->addr,    "client_id",
                          "src-share",   "topics",   "shared/#",
                          "share_group", "cebridge", NULL};
  const char *const *kv = by_key ? kv_key : kv_prefix;
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SOURCE, kv), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_subscribed(&t));
  ceb_mqtt_client *pub = ceb_mqtt_client_new(b->url, "share-writer", 5);
  CHECK(pub != NULL);
  for (int i = 0; pub && i < 3; i++) {
    char id[32];
    snprintf(id, sizeof id, "share-%d", i);
    ceb_event *e = mtest_event(id, "nl.edu.shared");
    CHECK_INT(mtest_publish_event(pub, "shared/a", e, 5, CEB_MODE_BINARY),
              CEB_OK);
    CHECK(ceb_fake_wait_events(t.fake, (size_t)i + 1, 10000));
    check_event(&t, (size_t)i, e);
    ceb_event_unref(e);
  }
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  ceb_mqtt_client_free(pub);
  mtest_free(&t);
}

/* A mapped source (ABI 1.2): plain payloads (no CloudEvent) go to
 * submit_mapped as input documents (mqtt_doc.h); one the program refuses
 * is dead-lettered raw with "mapping: <its error>"; the acknowledgement of
 * a mapped event waits for the host (drain cannot finish while it is
 * held). The fake's C map function stands in for the jq program. */
static void mapped(ceb_mosq *b, int version) {
  fprintf(stderr, "-- mapped source MQTT %d\n", version);
  const char *kv[] = {"broker",
                      b->addr,
                      "mqtt_version",
                      version == 5 ? "5" : "3.1.1",
                      "client_id",
                      version == 5 ? "map-v5" : "map-v4",
                      "topics",
                      "dev/#",
                      "dlq_topic",
                      "cebridge/map-dlq",
                      NULL};
  mtest_inst t;
  mtest_mapped = 1;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SOURCE, kv), CEB_OK);
  mtest_mapped = 0;
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_subscribed(&t));
  ceb_mqtt_client *pub = ceb_mqtt_client_new(b->url, "map-writer", version);
  ceb_mqtt_client *dlq = ceb_mqtt_client_new(b->url, "map-dlq", version);
  CHECK(pub && dlq);
  if (!pub || !dlq) goto out;
  CHECK_INT(ceb_mqtt_subscribe(dlq, "cebridge/map-dlq", 1), 0);
  const char *props[] = {"device", "dev-9", NULL};
  const char reading[] = "{\"id\":\"r-1\",\"temp\":21.5}";
  CHECK_INT(ceb_mqtt_publish(pub, "dev/9/temp", reading, sizeof reading - 1, 1,
                             version == 5 ? "application/json" : NULL,
                             version == 5 ? props : NULL),
            0);
  CHECK(ceb_fake_wait_events(t.fake, 1, 10000));
  mtest_check_id(&t, 0, "r-1");
  char *doc = ceb_fake_doc(t.fake, 0);
  CHECK(doc && strstr(doc, "{\"topic\":\"dev/9/temp\",\"qos\":1,"
                           "\"retain\":false,"));
  CHECK(doc && strstr(doc, "\"payload\":{\"id\":\"r-1\",\"temp\":21.5},"
                           "\"payload_encoding\":\"json\"}"));
  if (version == 5)
    CHECK(doc && strstr(doc, "\"user_properties\":{\"device\":\"dev-9\"}"));
  free(doc);

  const char bad[] = "{\"fail\":\"no reading\"}";
  CHECK_INT(
      ceb_mqtt_publish(pub, "dev/9/temp", bad, sizeof bad - 1, 1, NULL, NULL),
      0);
  CHECK_INT(ceb_mqtt_wait(dlq, 1, 10000), 1);
  const ceb_mqtt_msg *m = ceb_mqtt_get(dlq, 0);
  if (m) {
    CHECK_STR(m->payload, bad);
    if (version == 5) {
      CHECK_STR(ceb_mqtt_msg_prop(m, "ceb_dlq_reason"),
                "mapping: no reading");
      CHECK_STR(ceb_mqtt_msg_prop(m, "ceb_dlq_topic"), "dev/9/temp");
    }
  }
  /* a text payload is the program's too; held by the host: not acked */
  pthread_mutex_lock(&t.fake->lock);
  t.fake->mode = CEB_FAKE_COMMIT_HOLD;
  pthread_mutex_unlock(&t.fake->lock);
  CHECK_INT(ceb_mqtt_publish(pub, "dev/9/state", "on", 2, 1, NULL, NULL), 0);
  CHECK(ceb_fake_wait_events(t.fake, 2, 10000));
  CHECK_INT(mtest_drain(&t, 300), CEB_ETIMEOUT);
  ceb_fake_commit(t.fake, CEB_OK);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  CHECK_INT(ceb_fake_event_count(t.fake), 2);
  CHECK_INT(ceb_mqtt_count(dlq), 1);
out:
  ceb_mqtt_client_free(pub);
  ceb_mqtt_client_free(dlq);
  mtest_free(&t);
}

int main(void) {
  ceb_mosq *b = ceb_mosq_start(NULL);
  CHECK(b != NULL);
  if (!b) return ceb_test_done("test_mqtt_source");
  run(b, 5);
  run(b, 4);
  mapped(b, 5);
  mapped(b, 4);
  shared(b, 0);
  shared(b, 1);

  /* Config errors name the problem before anything connects. */
  const char *no_id[] = {"broker", b->addr, "topics", "a/#", NULL};
  mtest_inst t;
  CHECK(mtest_init(&t, CEB_ROLE_SOURCE, no_id) != CEB_OK);
  mtest_free(&t);
  const char *bad_filter[] = {"broker", b->addr, "client_id", "x",
                              "topics", "a/#/b", NULL};
  CHECK_INT(mtest_init(&t, CEB_ROLE_SOURCE, bad_filter), CEB_ECONFIG);
  mtest_free(&t);
  /* Shared subscriptions: a share name is non-empty and has no '/', '+' or
   * '#' (MQTT 5 4.8.2), a filter follows it; share_group builds the
   * $share/ filters and refuses filters that are shared already. */
  const char *bad_share[] = {
      "$share//a/#", "$share/g",       "$share/g/",
      "$share/g+/a", "$share/g/a/#/b", "$share/g/$share/h/a",
      NULL};
  for (int i = 0; bad_share[i]; i++) {
    const char *kv[] = {"broker", b->addr,      "client_id", "x",
                        "topics", bad_share[i], NULL};
    CHECK_MSG(mtest_init(&t, CEB_ROLE_SOURCE, kv) == CEB_ECONFIG, "%s",
              bad_share[i]);
    mtest_free(&t);
  }
  const char *bad_group[] = {"", "a/b", "a+", "#", NULL};
  for (int i = 0; bad_group[i]; i++) {
    const char *kv[] = {"broker", b->addr,       "client_id",  "x", "topics",
                        "a/#",    "share_group", bad_group[i], NULL};
    CHECK_MSG(mtest_init(&t, CEB_ROLE_SOURCE, kv) == CEB_ECONFIG, "'%s'",
              bad_group[i]);
    mtest_free(&t);
  }
  const char *twice[] = {"broker",      b->addr,  "client_id",
                         "x",           "topics", "$share/g/a/#",
                         "share_group", "g",      NULL};
  CHECK_INT(mtest_init(&t, CEB_ROLE_SOURCE, twice), CEB_ECONFIG);
  mtest_free(&t);
  /* QoS 0 has no acknowledgement to hold until the event is durable. */
  const char *qos0[] = {"broker", b->addr, "client_id", "x", "topics",
                        "a/#",    "qos",   "0",         NULL};
  CHECK_INT(mtest_init(&t, CEB_ROLE_SOURCE, qos0), CEB_ECONFIG);
  mtest_free(&t);
  ceb_mosq_free(b);
  return ceb_test_done("test_mqtt_source");
}
