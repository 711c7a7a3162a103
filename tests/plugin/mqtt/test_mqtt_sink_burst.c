/* The MQTT sink under a burst: far more deliveries than the broker's window
 * (mosquitto's Receive Maximum 20) and the sink's max_inflight, on a fixed
 * topic (no template: published as configured, without a per-delivery copy).
 * Every delivery settles ACK exactly once, only after the broker has it: a
 * reader subscribed before the burst gets each event once, in delivery order
 * (one MQTT connection, QoS 1), with its attributes intact. A full sink
 * answers CEB_EBUSY and takes the delivery again once a slot frees. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "mqtt_test_util.h"

#define N 300

static void run(ceb_mosq *b, const char *mode) {
  fprintf(stderr, "-- sink burst %s\n", mode);
  ceb_mqtt_client *sub = ceb_mqtt_client_new(b->url, "burst-reader", 5);
  CHECK(sub != NULL);
  if (!sub) return;
  CHECK_INT(ceb_mqtt_subscribe(sub, "edu/burst", 1), 0);
  const char *kv[] = {
      "broker", b->addr, "mqtt_version", "5",  "topic", "edu/burst",
      "mode",   mode,    "max_inflight", "32", NULL};
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SINK, kv), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_connected(&t, 10000));

  ceb_event *evs[N];
  ceb_delivery *ds[N];
  size_t busy = 0;
  int made = 0;
  for (int i = 0; i < N; i++) {
    char id[32];
    snprintf(id, sizeof id, "burst-%03d", i);
    evs[i] = mtest_event(id, "nl.edu.burst");
    ds[i] = ceb_fake_delivery_new(t.fake, evs[i], "r1", NULL, 1);
    made++;
    int rc;
    /* EBUSY: wait for one more settle (bounded), then offer it again */
    while ((rc = t.p->deliver(t.state, ds[i])) == CEB_EBUSY) {
      busy++;
      if (!ceb_fake_wait_settles(t.fake, ceb_fake_settle_count(t.fake) + 1,
                                 10000))
        break;
    }
    CHECK_INT(rc, CEB_OK);
    if (rc != CEB_OK) break;
  }
  CHECK(busy > 0); /* the burst did fill the sink */
  CHECK(ceb_fake_wait_settles(t.fake, N, 20000));
  CHECK_INT(ceb_fake_settle_count(t.fake), N);
  size_t acks = 0;
  for (size_t i = 0; i < ceb_fake_settle_count(t.fake); i++) {
    ceb_fake_settle s;
    ceb_fake_settle_get(t.fake, i, &s);
    acks += s.info.outcome == CEB_ACK;
  }
  CHECK_INT(acks, N);

  CHECK_INT(ceb_mqtt_wait(sub, N, 20000), N);
  int in_order = 1;
  for (int i = 0; i < made; i++) {
    const ceb_mqtt_msg *m = ceb_mqtt_get(sub, (size_t)i);
    if (!m) {
      in_order = 0;
      break;
    }
    CHECK_STR(m->topic, "edu/burst");
    ceb_event *got = mtest_decode(m, 5);
    if (!mtest_event_equal(evs[i], got)) {
      fprintf(stderr, "message %d is not event %d (%s)\n", i, i,
              got ? ceb_event_get(got, "id") : "undecodable");
      in_order = 0;
    }
    ceb_event_unref(got);
    if (!in_order) break;
  }
  CHECK(in_order);

  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);
  CHECK_INT(ceb_mqtt_count(sub), N); /* no duplicate arrived late */
  ceb_mqtt_client_free(sub);
  for (int i = 0; i < made; i++) {
    ceb_fake_delivery_free(ds[i]);
    ceb_event_unref(evs[i]);
  }
}

int main(void) {
  ceb_mosq *b = ceb_mosq_start(NULL);
  CHECK(b != NULL);
  if (!b) return ceb_test_done("test_mqtt_sink_burst");
  run(b, "binary");
  run(b, "structured");
  ceb_mosq_free(b);
  return ceb_test_done("test_mqtt_sink_burst");
}
