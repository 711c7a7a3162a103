/* The MQTT sink publishes CloudEvents that a plain libmosquitto client reads
 * back intact: MQTT 5 binary (attributes as user properties, Content Type)
 * and structured, MQTT 3.1.1 structured; topic templates and overrides;
 * settles ACK only from the broker's acknowledgement. Structured mode
 * publishes the host's journaled bytes (ceb_delivery.encoded, ABI 1.1) as
 * they are; binary mode ignores them. An egress mapping's result
 * (ceb_delivery.mapped, ABI 1.2) is published instead of the event. */
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "mqtt_test_util.h"

static int settle_outcome(mtest_inst *t, size_t i, ceb_fake_settle *s) {
  if (!ceb_fake_wait_settles(t->fake, i + 1, 10000)) return -1;
  ceb_fake_settle_get(t->fake, i, s);
  return (int)s->info.outcome;
}

static void run(ceb_mosq *b, int version, const char *mode) {
  fprintf(stderr, "-- sink MQTT %d %s\n", version, mode);
  ceb_mqtt_client *sub = ceb_mqtt_client_new(b->url, "reader", version);
  CHECK(sub != NULL);
  if (!sub) return;
  CHECK_INT(ceb_mqtt_subscribe(sub, "edu/#", 1), 0);
  CHECK_INT(ceb_mqtt_subscribe(sub, "dlq/#", 1), 0);
  const char *kv[] = {
      "broker", b->addr,       "mqtt_version", version == 5 ? "5" : "3.1.1",
      "topic",  "edu/${type}", "mode",         mode,
      NULL};
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SINK, kv), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_connected(&t, 10000));

  ceb_event *ev = mtest_event("sink-1", "nl.edu.inschrijving.created");
  ceb_delivery *d = ceb_fake_delivery_new(t.fake, ev, "r1", NULL, 1);
  /* journaled bytes ceb_json_encode would not write (a leading space) */
  char *enc = NULL, *journal = NULL;
  size_t enc_len = 0;
  CHECK_INT(ceb_json_encode(ev, &enc, &enc_len), CEB_OK);
  if (enc && (journal = malloc(enc_len + 2))) {
    journal[0] = ' ';
    memcpy(journal + 1, enc, enc_len + 1);
    d->encoded = journal;
    d->encoded_len = enc_len + 1;
  }
  ceb_free(enc);
  CHECK_INT(t.p->deliver(t.state, d), CEB_OK);
  ceb_fake_settle s;
  CHECK_INT(settle_outcome(&t, 0, &s), CEB_ACK);
  CHECK_INT(ceb_mqtt_wait(sub, 1, 10000), 1);
  const ceb_mqtt_msg *m = ceb_mqtt_get(sub, 0);
  if (m) {
    CHECK_STR(m->topic, "edu/nl.edu.inschrijving.created");
    CHECK_INT(m->qos, 1);
    if (version == 5 && strcmp(mode, "binary") == 0) {
      CHECK_STR(m->content_type, "application/json");
      CHECK_STR(ceb_mqtt_msg_prop(m, "specversion"), "1.0");
      CHECK_STR(ceb_mqtt_msg_prop(m, "id"), "sink-1");
      CHECK_STR(ceb_mqtt_msg_prop(m, "subject"), "student 42");
      CHECK_STR(ceb_mqtt_msg_prop(m, "partitionkey"), "k-1");
      CHECK_STR(m->payload, "{\"naam\":\"Jan\",\"jaar\":2026}");
    } else if (version == 5) {
      CHECK_STR(m->content_type, "application/cloudevents+json");
      CHECK_INT(m->nprops, 0);
      CHECK_STR(m->payload, journal ? journal : "");
    } else {
      CHECK(m->content_type == NULL);
      CHECK_STR(m->payload, journal ? journal : "");
    }
    ceb_event *got = mtest_decode(m, version == 5 ? 5 : 4);
    CHECK(mtest_event_equal(ev, got));
    ceb_event_unref(got);
  }
  ceb_fake_delivery_free(d);
  free(journal);

  /* A DLQ-style topic override wins over the template. */
  d = ceb_fake_delivery_new(t.fake, ev, "r1", "dlq/sink", 2);
  CHECK_INT(t.p->deliver(t.state, d), CEB_OK);
  CHECK_INT(settle_outcome(&t, 1, &s), CEB_ACK);
  CHECK_INT(ceb_mqtt_wait(sub, 2, 10000), 2);
  m = ceb_mqtt_get(sub, 1);
  CHECK(m && strcmp(m->topic, "dlq/sink") == 0);
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);

  /* A template attribute the event lacks is permanent: REJECT, unpublished. */
  ev = mtest_event("sink-2", "nl.edu.x");
  ceb_event_set(ev, "type", "bad/+/type");
  d = ceb_fake_delivery_new(t.fake, ev, "r1", NULL, 1);
  CHECK_INT(t.p->deliver(t.state, d), CEB_OK);
  CHECK_INT(settle_outcome(&t, 2, &s), CEB_REJECT);
  CHECK_STR(s.reason, "mqtt.topic_invalid");
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);

  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);
  CHECK_INT(ceb_mqtt_count(sub), 2);
  ceb_mqtt_client_free(sub);
}

/* An egress mapping's result (ABI 1.2): its body is the payload byte for
 * byte, its topic the destination (a DLQ override still wins), on MQTT 5
 * its content type and headers the Content Type and User Properties, no
 * CloudEvents attributes. */
static void run_mapped(ceb_mosq *b, int version) {
  fprintf(stderr, "-- sink MQTT %d mapped\n", version);
  ceb_mqtt_client *sub = ceb_mqtt_client_new(b->url, "reader-map", version);
  CHECK(sub != NULL);
  if (!sub) return;
  CHECK_INT(ceb_mqtt_subscribe(sub, "partner/#", 1), 0);
  CHECK_INT(ceb_mqtt_subscribe(sub, "dlq/#", 1), 0);
  const char *kv[] = {"broker",
                      b->addr,
                      "mqtt_version",
                      version == 5 ? "5" : "3.1.1",
                      "topic",
                      "partner/default",
                      "mode",
                      version == 5 ? "binary" : "structured",
                      NULL};
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SINK, kv), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_connected(&t, 10000));
  ceb_event *ev = mtest_event("map-1", "nl.edu.inschrijving.created");
  const char body[] = "{\"type\":\"nl.edu.inschrijving.created\"}";
  ceb_mapped_header hs[] = {{"tenant", "uva"}};
  ceb_mapped_out mo = {sizeof mo, body, sizeof body - 1, "application/json", hs,
                       1,         NULL, "partner/uva"};
  ceb_delivery *d = ceb_fake_delivery_new(t.fake, ev, "r1", NULL, 1);
  d->mapped = &mo;
  CHECK_INT(t.p->deliver(t.state, d), CEB_OK);
  ceb_fake_settle s;
  CHECK_INT(settle_outcome(&t, 0, &s), CEB_ACK);
  ceb_fake_delivery_free(d);
  /* without a topic: the sink's own */
  mo.topic = NULL;
  d = ceb_fake_delivery_new(t.fake, ev, "r1", NULL, 1);
  d->mapped = &mo;
  CHECK_INT(t.p->deliver(t.state, d), CEB_OK);
  CHECK_INT(settle_outcome(&t, 1, &s), CEB_ACK);
  ceb_fake_delivery_free(d);
  /* a mapping's topic that is not a topic name: rejected */
  mo.topic = "partner/+";
  d = ceb_fake_delivery_new(t.fake, ev, "r1", NULL, 1);
  d->mapped = &mo;
  CHECK_INT(t.p->deliver(t.state, d), CEB_OK);
  CHECK_INT(settle_outcome(&t, 2, &s), CEB_REJECT);
  CHECK_STR(s.reason, "mqtt.topic_invalid");
  ceb_fake_delivery_free(d);
  CHECK_INT(ceb_mqtt_wait(sub, 2, 10000), 2);
  for (size_t i = 0; i < 2; i++) {
    const ceb_mqtt_msg *m = ceb_mqtt_get(sub, i);
    if (!m) continue;
    CHECK_STR(m->topic, i == 0 ? "partner/uva" : "partner/default");
    CHECK_STR(m->payload, body);
    CHECK(ceb_mqtt_msg_prop(m, "id") == NULL);
    if (version == 5) {
      CHECK_STR(m->content_type, "application/json");
      CHECK_STR(ceb_mqtt_msg_prop(m, "tenant"), "uva");
    } else {
      CHECK(m->content_type == NULL);
    }
  }
  ceb_event_unref(ev);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);
  CHECK_INT(ceb_mqtt_count(sub), 2);
  ceb_mqtt_client_free(sub);
}

int main(void) {
  ceb_mosq *b = ceb_mosq_start(NULL);
  CHECK(b != NULL);
  if (!b) return ceb_test_done("test_mqtt_sink");
  run_mapped(b, 5);
  run_mapped(b, 4);
  run(b, 5, "binary");
  run(b, 5, "structured");
  run(b, 4, "structured");

  /* 3.1.1 has no properties: binary mode is a config error. */
  const char *kv[] = {"broker", b->addr, "mqtt_version", "3.1.1", "topic",
                      "edu/x",  "mode",  "binary",       NULL};
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SINK, kv), CEB_ECONFIG);
  mtest_free(&t);
  ceb_mosq_free(b);
  return ceb_test_done("test_mqtt_sink");
}
