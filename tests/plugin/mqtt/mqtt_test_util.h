/* Helpers for the MQTT plugin tests: mqtt.so loaded with dlopen (the real
 * ABI), one instance on a fake host, section configs, and sample events.
 * Brokers and test clients come from tests/helpers/mosquitto. Single-threaded
 * use from the test's main thread. */
#ifndef CEB_MQTT_TEST_UTIL_H
#define CEB_MQTT_TEST_UTIL_H

#include <ceb/ceb.h>

#include "ceb_fake_host.h"
#include "ceb_mosquitto.h"

typedef struct mtest_inst {
  void *dl;
  const ceb_plugin *p;
  ceb_fake_host *fake;
  ceb_config *cfg;
  void *state;
  int started;
} mtest_inst;

/* Set before mtest_init: the instance is told its section has `map` (ABI
 * 1.2) and the fake host maps with ceb_fake_map_payload on "payload". */
extern int mtest_mapped;

/* Loads mqtt.so, builds a config from key, value pairs (NULL-terminated)
 * with the plugin's and the host's common spec, and runs init. Returns the
 * init status; on success call mtest_start and finally mtest_free. */
int mtest_init(mtest_inst *t, uint32_t role, const char *const *kv);
int mtest_start(mtest_inst *t);
/* Drains with a deadline in ms from now; returns drain's status. */
int mtest_drain(mtest_inst *t, int64_t ms);
/* Destroys the instance (if any), the fake host and the plugin. */
void mtest_free(mtest_inst *t);

/* Waits until the instance's connection gauge says connected. */
int mtest_wait_connected(mtest_inst *t, int64_t timeout_ms);

/* Waits until gauge cebridge_<name> (no labels) equals value. */
int mtest_wait_gauge(mtest_inst *t, const char *name, double value,
                     int64_t timeout_ms);
/* A source instance is subscribed (its SUBACK arrived). */
#define mtest_wait_subscribed(t)                                               \
  mtest_wait_gauge((t), "mqtt_subscribed", 1, 10000)

/* init + start of a source from kv with the fake host's submit mode, then
 * waits for its SUBACK. 0, or -1 when any step failed. */
int mtest_start_source(mtest_inst *t, const char *const *kv,
                       ceb_fake_submit_mode mode);
/* Checks that the i-th event the fake host got has this id. */
void mtest_check_id(mtest_inst *t, size_t i, const char *id);

/* Publishes ev with the MQTT binding (version 5 or 4, mode) through c, at
 * QoS 1 or (the _qos variant) qos, waiting for its completion. */
int mtest_publish_event(ceb_mqtt_client *c, const char *topic,
                        const ceb_event *ev, int version, ceb_mode mode);
int mtest_publish_event_qos(ceb_mqtt_client *c, const char *topic,
                            const ceb_event *ev, int version, ceb_mode mode,
                            int qos);

/* A valid event with id, type and a JSON data body. Unref it. */
ceb_event *mtest_event(const char *id, const char *type);

/* 1 when a and b have the same attributes (names and values) and data. */
int mtest_event_equal(const ceb_event *a, const ceb_event *b);
/* Decodes a received message with the SDK's MQTT binding; NULL on error. */
ceb_event *mtest_decode(const ceb_mqtt_msg *m, int version);
#endif
