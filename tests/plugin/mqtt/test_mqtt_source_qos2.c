/* qos = 2 on the source: messages published at QoS 2 reach the host once
 * each, in order; the broker gets the PUBREC only once the host made the
 * event durable (while the host holds the commit it gets none, and a new
 * connection receives the message again); after the PUBREC the broker's
 * PUBREL is answered with PUBCOMP, and nothing comes back after a reconnect.
 * The broker's own log (log_type all) is the witness of what it received.
 * Runs on MQTT 5 (binary) and 3.1.1 (structured). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "mqtt_test_util.h"

#define NMSG 20

typedef struct log_count {
  ceb_mosq *b;
  char needle[96];
  size_t want;
} log_count;

/* Occurrences of needle in the broker's log. */
static size_t broker_log_count(ceb_mosq *b, const char *needle) {
  char path[512];
  snprintf(path, sizeof path, "%s/mosquitto.log", b->dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = 0;
  char line[1024];
  while (fgets(line, sizeof line, f))
    if (strstr(line, needle)) n++;
  fclose(f);
  return n;
}

static int log_reached(void *arg) {
  log_count *c = arg;
  return broker_log_count(c->b, c->needle) >= c->want;
}

/* Waits until the broker logged "Received <pkt> from <client> " want times;
 * returns the count it saw last. */
static size_t wait_received(ceb_mosq *b, const char *pkt, const char *client,
                            size_t want, int64_t ms) {
  log_count c = {b, "", want};
  snprintf(c.needle, sizeof c.needle, "Received %s from %s ", pkt, client);
  ceb_test_wait(log_reached, &c, ms);
  return broker_log_count(b, c.needle);
}

static int start_source(mtest_inst *t, ceb_mosq *b, const char *ver,
                        const char *client, ceb_fake_submit_mode mode) {
  const char *kv[] = {"broker",    b->addr, "mqtt_version",  ver,
                      "client_id", client,  "topics",        "orders/#",
                      "qos",       "2",     "reconnect.min", "1s",
                      NULL};
  return mtest_start_source(t, kv, mode);
}

static int publish(ceb_mqtt_client *pub, int version, const char *topic,
                   const char *id) {
  ceb_event *ev = mtest_event(id, "nl.edu.order");
  int rc = mtest_publish_event_qos(
      pub, topic, ev, version,
      version == 5 ? CEB_MODE_BINARY : CEB_MODE_STRUCTURED, 2);
  ceb_event_unref(ev);
  return rc;
}

static void run(ceb_mosq *b, int version) {
  fprintf(stderr, "-- source qos 2, MQTT %d\n", version);
  const char *ver = version == 5 ? "5" : "3.1.1";
  const char *client = version == 5 ? "q2-v5" : "q2-v4";
  ceb_mqtt_client *pub = ceb_mqtt_client_new(
      b->url, version == 5 ? "q2-writer5" : "q2-writer4", version);
  CHECK(pub != NULL);
  if (!pub) return;
  mtest_inst t;
  char id[32];

  /* 1. Once each, in order; every one PUBREC'd and its PUBREL answered. */
  CHECK_INT(start_source(&t, b, ver, client, CEB_FAKE_COMMIT_NOW), 0);
  for (int i = 0; i < NMSG; i++) {
    snprintf(id, sizeof id, "q2-%d", i);
    CHECK_INT(publish(pub, version, "orders/a", id), CEB_OK);
  }
  CHECK(ceb_fake_wait_events(t.fake, NMSG, 10000));
  for (int i = 0; i < NMSG; i++) {
    snprintf(id, sizeof id, "q2-%d", i);
    mtest_check_id(&t, (size_t)i, id);
  }
  CHECK_INT(wait_received(b, "PUBREC", client, NMSG, 10000), NMSG);
  CHECK_INT(wait_received(b, "PUBCOMP", client, NMSG, 10000), NMSG);
  CHECK_INT(wait_received(b, "PUBACK", client, 1, 0), 0);
  CHECK_INT(ceb_fake_event_count(t.fake), NMSG);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);

  /* 2. Held by the host: no PUBREC reaches the broker. */
  CHECK_INT(start_source(&t, b, ver, client, CEB_FAKE_COMMIT_HOLD), 0);
  CHECK_INT(publish(pub, version, "orders/b", "q2-held"), CEB_OK);
  CHECK(ceb_fake_wait_events(t.fake, 1, 10000));
  mtest_check_id(&t, 0, "q2-held");
  CHECK_INT(wait_received(b, "PUBREC", client, NMSG + 1, 300), NMSG);
  ceb_fake_commit(t.fake, CEB_ESHUTDOWN); /* the host gave up on it */
  mtest_free(&t);

  /* 3. So the broker redelivers it to the next connection; durable now, it
   * gets its PUBREC, and the PUBREL its PUBCOMP. */
  CHECK_INT(start_source(&t, b, ver, client, CEB_FAKE_COMMIT_HOLD), 0);
  CHECK(ceb_fake_wait_events(t.fake, 1, 10000));
  mtest_check_id(&t, 0, "q2-held");
  CHECK_INT(wait_received(b, "PUBREC", client, NMSG + 1, 300), NMSG);
  ceb_fake_commit(t.fake, CEB_OK);
  CHECK_INT(ceb_fake_committed_count(t.fake), 1);
  CHECK_INT(wait_received(b, "PUBREC", client, NMSG + 1, 10000), NMSG + 1);
  CHECK_INT(wait_received(b, "PUBCOMP", client, NMSG + 1, 10000), NMSG + 1);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);

  /* 4. Nothing comes back: a marker sent after reconnecting arrives alone
   * (redeliveries would precede it on the resumed session). */
  CHECK_INT(start_source(&t, b, ver, client, CEB_FAKE_COMMIT_NOW), 0);
  CHECK_INT(publish(pub, version, "orders/c", "q2-marker"), CEB_OK);
  CHECK(ceb_fake_wait_events(t.fake, 1, 10000));
  mtest_check_id(&t, 0, "q2-marker");
  CHECK_INT(wait_received(b, "PUBCOMP", client, NMSG + 2, 10000), NMSG + 2);
  CHECK_INT(ceb_fake_event_count(t.fake), 1);
  CHECK_INT(mtest_drain(&t, 5000), CEB_OK);
  mtest_free(&t);
  ceb_mqtt_client_free(pub);
}

int main(void) {
  ceb_mosq *b = ceb_mosq_start(NULL);
  CHECK(b != NULL);
  if (!b) return ceb_test_done("test_mqtt_source_qos2");
  run(b, 5);
  run(b, 4);
  ceb_mosq_free(b);
  return ceb_test_done("test_mqtt_source_qos2");
}
