/* Mappings end to end through the real `cebridge run`, MQTT side: plain
 * payloads published to Mosquitto (tests/helpers/mosquitto) by a device
 * (JSON with a user property; a text reading) become CloudEvents through
 * the source's program and reach the MQTT sink's topic as structured
 * CloudEvents; the program's error paths (it throws, outputs a non-object,
 * an invalid CloudEvent, loops forever) each put their message raw on the
 * source's DLQ topic with the reason. Counts: the DLQ topic holds exactly
 * the failing messages, the sink's topic exactly the good ones. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "mqtt_test_util.h"

#define SRC "urn:nld:oin:00000001234567890000:systeem:sensors"

/* A device reading: JSON keeps its id, a text payload gets one from the
 * topic; the error paths by the payload's "case". */
static const char k_map[] =
    "if .payload_encoding == \"text\" then {specversion: \"1.0\", id: "
    "(.topic + \"/\" + .payload), source: \"" SRC "\", type: "
    "\"nl.example.sensor.state\", subject: .topic, datacontenttype: "
    "\"text/plain\", data: .payload} "
    "elif .payload.case == \"throw\" then error(\"thrown on purpose\") "
    "elif .payload.case == \"nonobject\" then 42 "
    "elif .payload.case == \"invalid\" then {specversion: \"1.0\", id: "
    ".payload.id, type: \"nl.example.invalid\"} "
    "elif .payload.case == \"loop\" then (def f: f; f) "
    "else {specversion: \"1.0\", id: .payload.id, source: \"" SRC "\", "
    "type: \"nl.example.sensor.reading\", subject: "
    "(.user_properties.device // .topic), datacontenttype: "
    "\"application/json\", data: .payload} end";

static int write_conf(const char *dir, const char *addr) {
  char conf[512];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  mkdir(conf, 0700);
  char text[4096];
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nadmin.listen = 127.0.0.1:0\n"
           "log.format = text\ndrain_timeout = 10s\n"
           "mapping.timeout = 300ms\n"
           "\n[source dev]\nplugin = mqtt\nbroker = %s\n"
           "client_id = bridge-map-in\ntopics = dev/#\n"
           "dlq_topic = dlq/dev\nmap = %s\n"
           "\n[sink out]\nplugin = mqtt\nbroker = %s\n"
           "client_id = bridge-map-out\ntopic = out/${type}\n"
           "mode = structured\n"
           "\n[route r]\nfrom = dev\nto = out\n",
           dir, addr, k_map, addr);
  return ceb_test_write_file(conf, "00-bridge.conf", text);
}

int main(void) {
  ceb_mosq *b = ceb_mosq_start(NULL);
  char *dir = ceb_test_tmpdir("mapping-mqtt");
  CHECK(b && dir);
  if (!b || !dir || write_conf(dir, b->addr) != 0)
    return ceb_test_done("integration_mapping_mqtt");
  ceb_mqtt_client *sub = ceb_mqtt_client_new(b->url, "map-reader", 5);
  ceb_mqtt_client *dlq = ceb_mqtt_client_new(b->url, "map-dlq", 5);
  ceb_mqtt_client *dev = ceb_mqtt_client_new(b->url, "map-device", 5);
  CHECK(sub && dlq && dev);
  if (!sub || !dlq || !dev) return ceb_test_done("integration_mapping_mqtt");
  CHECK_INT(ceb_mqtt_subscribe(sub, "out/#", 1), 0);
  CHECK_INT(ceb_mqtt_subscribe(dlq, "dlq/#", 1), 0);
  char conf[512], log[512];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  pid_t bridge = ceb_test_bridge_start(conf, log);
  CHECK(bridge > 0);
  /* the source subscribes once started: publish until the first arrives
   * (QoS 1, persistent session afterwards) */
  const char *props[] = {"device", "dev-9", NULL};
  const char r1[] = "{\"id\":\"r-1\",\"temp\":21.5}";
  int64_t until = ceb_test_now_ms() + 30000;
  while (ceb_mqtt_count(sub) == 0 && ceb_test_now_ms() < until) {
    CHECK_INT(ceb_mqtt_publish(dev, "dev/9/temp", r1, sizeof r1 - 1, 1,
                               "application/json", props),
              0);
    ceb_mqtt_wait(sub, 1, 1000);
  }
  CHECK(ceb_mqtt_count(sub) >= 1);
  size_t first = ceb_mqtt_count(sub); /* r-1, maybe more than once */
  static const char *const bad[] = {"{\"case\":\"throw\",\"id\":\"e-1\"}",
                                    "{\"case\":\"nonobject\",\"id\":\"e-2\"}",
                                    "{\"case\":\"invalid\",\"id\":\"e-3\"}",
                                    "{\"case\":\"loop\",\"id\":\"e-4\"}"};
  for (size_t i = 0; i < 4; i++)
    CHECK_INT(ceb_mqtt_publish(dev, "dev/9/temp", bad[i], strlen(bad[i]), 1,
                               "application/json", NULL),
              0);
  CHECK_INT(
      ceb_mqtt_publish(dev, "dev/9/state", "on", 2, 1, "text/plain", NULL), 0);
  CHECK_INT(ceb_mqtt_wait(dlq, 4, 30000), 4);
  CHECK_INT(ceb_mqtt_wait(sub, first + 1, 30000), first + 1);
  CHECK_INT(ceb_test_pid_stop(bridge, SIGTERM, 30000), 0);

  /* the sink's topic: r-1 (deduplicated by the host however often it was
   * published) and the text reading, as structured CloudEvents */
  CHECK_INT(ceb_mqtt_count(sub), 2);
  for (size_t i = 0; i < ceb_mqtt_count(sub); i++) {
    const ceb_mqtt_msg *m = ceb_mqtt_get(sub, i);
    json_t *ev = m ? json_loads(m->payload, 0, NULL) : NULL;
    const char *id = json_string_value(json_object_get(ev, "id"));
    if (id && !strcmp(id, "r-1")) {
      CHECK_STR(m->topic, "out/nl.example.sensor.reading");
      CHECK_STR(json_string_value(json_object_get(ev, "subject")), "dev-9");
      CHECK(json_real_value(
                json_object_get(json_object_get(ev, "data"), "temp")) == 21.5);
    } else {
      CHECK_STR(id, "dev/9/state/on");
      CHECK_STR(m ? m->topic : NULL, "out/nl.example.sensor.state");
      CHECK_STR(json_string_value(json_object_get(ev, "data")), "on");
    }
    json_decref(ev);
  }
  /* the DLQ topic: exactly the four failing messages, raw, with reasons */
  static const char *const reasons[] = {
      "mapping: thrown on purpose", "mapping: output 1 is not a JSON object",
      "ce.source.missing", "mapping: mapping timed out after 300 ms"};
  CHECK_INT(ceb_mqtt_count(dlq), 4);
  for (size_t i = 0; i < 4 && i < ceb_mqtt_count(dlq); i++) {
    const ceb_mqtt_msg *m = ceb_mqtt_get(dlq, i);
    CHECK_STR(m->payload, bad[i]);
    const char *reason = ceb_mqtt_msg_prop(m, "ceb_dlq_reason");
    CHECK_MSG(reason && strstr(reason, reasons[i]), "%s: '%s'", bad[i],
              reason ? reason : "(none)");
    CHECK_STR(ceb_mqtt_msg_prop(m, "ceb_dlq_topic"), "dev/9/temp");
  }
  if (ceb_test_failures) {
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "---- bridge log ----\n%s\n", text ? text : "(none)");
    free(text);
  }
  ceb_mqtt_client_free(sub);
  ceb_mqtt_client_free(dlq);
  ceb_mqtt_client_free(dev);
  ceb_mosq_free(b);
  free(dir);
  return ceb_test_done("integration_mapping_mqtt");
}
