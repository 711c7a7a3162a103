/* Two real bridges split one MQTT topic with an MQTT 5 shared subscription
 * (`share_group`, plugins/mqtt/README.md): both subscribe in/# in one share
 * group on a mosquitto started by the test, each with its own client id
 * and its own store, and republish what they take on out/<bridge>/<type>.
 * A publisher sends N QoS 1 events: every one comes out exactly once in
 * total (the broker hands each message to one member, the member
 * acknowledges it only once durable), none is lost, and both bridges took
 * part. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"
#include "ha_bridge.h"
#include "mqtt_test_util.h"

#define N 400

static int write_conf(ha_bridge *b, const char *parent, const char *name,
                      const char *broker) {
  char port[700], conf[3072], dir[600];
  snprintf(dir, sizeof dir, "%s/%s", parent, name);
  snprintf(port, sizeof port, "%s/admin.port", dir);
  snprintf(conf, sizeof conf,
           "[bridge]\n"
           "store = %s/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "admin.port_file = %s\n"
           "log.format = text\n"
           "profile = warn\n"
           "drain_timeout = 10s\n"
           "\n[source in]\n"
           "plugin = mqtt\n"
           "broker = %s\n"
           "client_id = share-in-%s\n"
           "topics = in/#\n"
           "share_group = bridges\n"
           "dlq_topic = dlq/in\n"
           "reconnect.min = 1s\n"
           "\n[sink out]\n"
           "plugin = mqtt\n"
           "broker = %s\n"
           "client_id = share-out-%s\n"
           "topic = out/%s/${type}\n"
           "mode = binary\n"
           "\n[route in-out]\n"
           "from = in\n"
           "to = out\n",
           dir, port, broker, name, broker, name, name);
  return ha_bridge_init(b, parent, name, conf);
}

static int subscribed(void *arg) {
  ha_bridge *b = arg;
  return ha_bridge_metric(b, "cebridge_mqtt_subscribed") == 1;
}

typedef struct tally {
  ceb_mqtt_client *r;
  int seen[N];
  int by_bridge[2];
  int extra; /* messages that are no event of this test */
} tally;

/* Counts what the reader holds (from scratch each call). */
static void count(tally *t) {
  memset(t->seen, 0, sizeof t->seen);
  t->by_bridge[0] = t->by_bridge[1] = t->extra = 0;
  size_t n = ceb_mqtt_count(t->r);
  for (size_t i = 0; i < n; i++) {
    const ceb_mqtt_msg *m = ceb_mqtt_get(t->r, i);
    const char *id = ceb_mqtt_msg_prop(m, "id");
    int seq = id && !strncmp(id, "share-", 6) ? atoi(id + 6) : -1;
    int who = !strncmp(m->topic, "out/a/", 6)   ? 0
              : !strncmp(m->topic, "out/b/", 6) ? 1
                                                : -1;
    if (seq < 0 || seq >= N || who < 0) {
      t->extra++;
      continue;
    }
    t->seen[seq]++;
    t->by_bridge[who]++;
  }
}

static int all_seen(void *arg) {
  tally *t = arg;
  count(t);
  for (int i = 0; i < N; i++)
    if (!t->seen[i]) return 0;
  return 1;
}

int main(void) {
  ceb_mosq *m = ceb_mosq_start(NULL);
  char *dir = ceb_test_tmpdir("ha-mqtt-share");
  CHECK(m && dir);
  if (!m || !dir) return ceb_test_done("test_ha_mqtt_share");
  ha_bridge b[2];
  CHECK_INT(write_conf(&b[0], dir, "a", m->addr), 0);
  CHECK_INT(write_conf(&b[1], dir, "b", m->addr), 0);
  static tally t;
  t.r = ceb_mqtt_client_new(m->url, "share-reader", 5);
  ceb_mqtt_client *pub = ceb_mqtt_client_new(m->url, "share-writer", 5);
  CHECK(t.r && pub);
  if (!t.r || !pub) goto out;
  CHECK_INT(ceb_mqtt_subscribe(t.r, "out/#", 1), 0);
  for (int i = 0; i < 2; i++) {
    CHECK_INT(ha_bridge_start(&b[i]), 0);
    /* Both members must be in the group before the first message, or the
     * broker hands everything to the one that is. */
    CHECK(ceb_test_wait(subscribed, &b[i], 30000));
  }
  for (int i = 0; i < N; i++) {
    char id[32];
    snprintf(id, sizeof id, "share-%d", i);
    ceb_event *ev = mtest_event(id, "nl.edu.share");
    CHECK_INT(mtest_publish_event(pub, "in/x", ev, 5, CEB_MODE_BINARY), CEB_OK);
    ceb_event_unref(ev);
  }
  CHECK(ceb_test_wait(all_seen, &t, 60000));
  /* Drained: whatever either bridge still had in flight is out now, so a
   * duplicate would be counted below. */
  CHECK_INT(ha_bridge_stop(&b[0], SIGTERM), 0);
  CHECK_INT(ha_bridge_stop(&b[1], SIGTERM), 0);
  count(&t);
  int lost = 0, dups = 0;
  for (int i = 0; i < N; i++) {
    lost += t.seen[i] == 0;
    dups += t.seen[i] > 1 ? t.seen[i] - 1 : 0;
  }
  fprintf(stderr, "%d events: bridge a %d, bridge b %d, lost %d, dup %d\n", N,
          t.by_bridge[0], t.by_bridge[1], lost, dups);
  CHECK_INT(lost, 0);
  CHECK_INT(dups, 0);
  CHECK_INT(t.extra, 0);
  CHECK_INT(t.by_bridge[0] + t.by_bridge[1], N);
  CHECK_MSG(t.by_bridge[0] > 0 && t.by_bridge[1] > 0,
            "both bridges take part: a %d, b %d", t.by_bridge[0],
            t.by_bridge[1]);
out:
  for (int i = 0; i < 2; i++) {
    if (b[i].pid > 0) ha_bridge_stop(&b[i], SIGKILL);
    if (ceb_test_failures) ha_bridge_dump_logs(&b[i]);
  }
  ceb_mqtt_client_free(t.r);
  ceb_mqtt_client_free(pub);
  ceb_mosq_free(m);
  free(dir);
  return ceb_test_done("test_ha_mqtt_share");
}
