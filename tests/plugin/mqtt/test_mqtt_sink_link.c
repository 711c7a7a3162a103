/* The sink's own publisher connection (plain TCP, mqtt_pub.h) against a
 * real mosquitto:
 * - keep-alive: idle for over three keep-alive periods, the session
 *   survives (mosquitto drops a client silent for 1.5 of them, and
 *   reconnect.min is long, so a missing PINGREQ would leave the sink
 *   disconnected); 5 s is libmosquitto's shortest keep-alive;
 * - QoS 0 settles once written, QoS 2 after PUBCOMP; the reader gets both
 *   at the QoS asked for;
 * - broker killed mid-stream: every delivery settles exactly once (ACK
 *   before the loss, RETRY after), the sink reconnects once the broker is
 *   back and publishes again;
 * - MQTT 3.1.1: structured events are acknowledged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ceb_test.h"
#include "mqtt_test_util.h"

/* Delivers one event and waits for its settle: its outcome, or -1. */
static int publish_one(mtest_inst *t, const char *id, ceb_fake_settle *s) {
  ceb_event *ev = mtest_event(id, "nl.edu.link");
  ceb_delivery *d = ceb_fake_delivery_new(t->fake, ev, "r1", NULL, 1);
  size_t n = ceb_fake_settle_count(t->fake);
  int rc = t->p->deliver(t->state, d);
  int out = -1;
  if (rc == CEB_OK && ceb_fake_wait_settles(t->fake, n + 1, 10000) &&
      ceb_fake_settle_get(t->fake, n, s))
    out = (int)s->info.outcome;
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);
  return out;
}

static void keepalive_and_qos(ceb_mosq *b) {
  fprintf(stderr, "-- keep-alive, QoS 0 and 2\n");
  ceb_mqtt_client *sub = ceb_mqtt_client_new(b->url, "link-reader", 5);
  CHECK(sub != NULL);
  if (!sub) return;
  CHECK_INT(ceb_mqtt_subscribe(sub, "link/#", 2), 0);
  const char *qos[] = {"0", "2"};
  for (int i = 0; i < 2; i++) {
    const char *kv[] = {
        "broker",        b->addr, "topic",     i ? "link/q2" : "link/q0",
        "qos",           qos[i],  "keepalive", "5s",
        "reconnect.min", "30s",   NULL};
    mtest_inst t;
    CHECK_INT(mtest_init(&t, CEB_ROLE_SINK, kv), CEB_OK);
    CHECK_INT(mtest_start(&t), CEB_OK);
    CHECK(mtest_wait_connected(&t, 10000));
    ceb_fake_settle s;
    CHECK_INT(publish_one(&t, i ? "q2-a" : "q0-a", &s), CEB_ACK);
    if (i == 1) {
      /* An observation window, not a wait for a condition: without
       * PINGREQs mosquitto 2.0 closes a silent session 1.5 keep-alives
       * (7.5 s) after its last packet, checked at a coarse interval of a
       * few seconds; 16 s leaves it room twice over. */
      sleep(16);
      CHECK(mtest_wait_connected(&t, 10));
      CHECK_INT(publish_one(&t, "q2-b", &s), CEB_ACK);
    }
    CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
    mtest_free(&t);
  }
  CHECK_INT(ceb_mqtt_wait(sub, 3, 10000), 3);
  const char *topics[] = {"link/q0", "link/q2", "link/q2"};
  const int qoses[] = {0, 2, 2};
  for (size_t i = 0; i < 3 && i < ceb_mqtt_count(sub); i++) {
    const ceb_mqtt_msg *m = ceb_mqtt_get(sub, i);
    CHECK_STR(m->topic, topics[i]);
    CHECK_INT(m->qos, qoses[i]);
  }
  ceb_mqtt_client_free(sub);
}

static void broker_loss(ceb_mosq *b) {
  fprintf(stderr, "-- broker killed mid-stream\n");
  const char *kv[] = {"broker",        b->addr, "topic", "link/loss",
                      "reconnect.min", "1s",    NULL};
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SINK, kv), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_connected(&t, 10000));
  enum { N = 200 };
  ceb_event *evs[N];
  ceb_delivery *ds[N];
  int made = 0;
  for (int i = 0; i < N; i++) {
    char id[32];
    snprintf(id, sizeof id, "loss-%03d", i);
    evs[i] = mtest_event(id, "nl.edu.link");
    ds[i] = ceb_fake_delivery_new(t.fake, evs[i], "r1", NULL, 1);
    made++;
    if (i == N / 2) CHECK_INT(ceb_mosq_kill(b), 0);
    int rc;
    while ((rc = t.p->deliver(t.state, ds[i])) == CEB_EBUSY) {
      if (!ceb_fake_wait_settles(t.fake, ceb_fake_settle_count(t.fake) + 1,
                                 10000))
        break;
    }
    CHECK_INT(rc, CEB_OK);
    if (rc != CEB_OK) break;
  }
  /* every delivery settles exactly once: ACK before the loss, RETRY after */
  CHECK(ceb_fake_wait_settles(t.fake, (size_t)made, 20000));
  CHECK(mtest_wait_gauge(&t, "mqtt_connected", 0, 10000));
  size_t acks = 0, retries = 0;
  for (size_t i = 0; i < ceb_fake_settle_count(t.fake); i++) {
    ceb_fake_settle s;
    ceb_fake_settle_get(t.fake, i, &s);
    acks += s.info.outcome == CEB_ACK;
    retries += s.info.outcome == CEB_RETRY;
  }
  CHECK_INT(acks + retries, (size_t)made);
  CHECK(retries >= (size_t)N / 2); /* everything from the kill on */
  CHECK_INT(ceb_fake_settle_count(t.fake), (size_t)made);

  CHECK_INT(ceb_mosq_restart(b), 0);
  CHECK(mtest_wait_connected(&t, 15000));
  ceb_fake_settle s;
  CHECK_INT(publish_one(&t, "after-restart", &s), CEB_ACK);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);
  for (int i = 0; i < made; i++) {
    ceb_fake_delivery_free(ds[i]);
    ceb_event_unref(evs[i]);
  }
}

static void v311(ceb_mosq *b) {
  fprintf(stderr, "-- MQTT 3.1.1\n");
  const char *kv[] = {"broker",    b->addr, "mqtt_version", "3.1.1", "topic",
                      "link/v311", "mode",  "structured",   NULL};
  mtest_inst t;
  CHECK_INT(mtest_init(&t, CEB_ROLE_SINK, kv), CEB_OK);
  CHECK_INT(mtest_start(&t), CEB_OK);
  CHECK(mtest_wait_connected(&t, 10000));
  ceb_fake_settle s;
  CHECK_INT(publish_one(&t, "v311-a", &s), CEB_ACK);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);
}

int main(void) {
  ceb_mosq *b = ceb_mosq_start(NULL);
  CHECK(b != NULL);
  if (!b) return ceb_test_done("test_mqtt_sink_link");
  keepalive_and_qos(b);
  v311(b);
  broker_loss(b);
  ceb_mosq_free(b);
  return ceb_test_done("test_mqtt_sink_link");
}
