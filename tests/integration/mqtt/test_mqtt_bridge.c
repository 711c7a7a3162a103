/* End to end through the real `cebridge run` binary and mosquitto: events
 * published on in/<n> (MQTT 5 binary) come out of the mqtt sink on
 * out/<type> with their attributes; a malformed message goes to the
 * source's dlq_topic without stopping the flow; SIGTERM drains and exits 0.
 * Then the bridge is killed (SIGKILL) mid-flow and restarted on the same
 * store: every event still comes out (acknowledged only once durable, so the
 * broker redelivers what the dead bridge had not made durable). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ceb_test.h"
#include "mqtt_test_util.h"

#define N 50
#define M 400

static pid_t start_bridge(const char *dir) {
  char log[512], confdir[512];
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(confdir, sizeof confdir, "%s/conf", dir);
  pid_t pid = fork();
  if (pid == 0) {
    FILE *f = freopen(log, "a", stderr);
    (void)f;
    execl(CEB_TEST_BIN_DIR "/cebridge", "cebridge", "run", "-c", confdir,
          (char *)NULL);
    perror("exec cebridge");
    _exit(127);
  }
  return pid;
}

static int stop_bridge(pid_t pid, int sig) {
  kill(pid, sig);
  int64_t until = ceb_test_now_ms() + 30000;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (ceb_test_now_ms() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    usleep(20000);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int write_conf(const char *dir, const char *addr) {
  char path[512];
  snprintf(path, sizeof path, "%s/conf", dir);
  mkdir(path, 0700);
  snprintf(path, sizeof path, "%s/conf/00-bridge.conf", dir);
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f,
          "[bridge]\n"
          "store = %s/store.db\n"
          "admin.listen = 127.0.0.1:0\n"
          "log.format = text\n"
          "profile = warn\n"
          "drain_timeout = 10s\n"
          "\n[source in]\n"
          "plugin = mqtt\n"
          "broker = %s\n"
          "client_id = bridge-in\n"
          "topics = in/#\n"
          "dlq_topic = dlq/in\n"
          "reconnect.min = 1s\n"
          "\n[sink out]\n"
          "plugin = mqtt\n"
          "broker = %s\n"
          "client_id = bridge-out\n"
          "topic = out/${type}\n"
          "mode = binary\n"
          "\n[route in-out]\n"
          "from = in\n"
          "to = out\n",
          dir, addr, addr);
  return fclose(f);
}

static int publish(ceb_mqtt_client *pub, const char *prefix, int i) {
  char id[48], topic[48];
  snprintf(id, sizeof id, "%s-%d", prefix, i);
  snprintf(topic, sizeof topic, "in/%d", i);
  ceb_event *ev = mtest_event(id, "nl.edu.e2e");
  int rc = mtest_publish_event(pub, topic, ev, 5, CEB_MODE_BINARY);
  ceb_event_unref(ev);
  return rc;
}

/* 1 when the reader saw an event with this id on out/nl.edu.e2e. */
static int seen(ceb_mqtt_client *r, const char *id) {
  size_t n = ceb_mqtt_count(r);
  for (size_t i = 0; i < n; i++) {
    const ceb_mqtt_msg *m = ceb_mqtt_get(r, i);
    const char *v = ceb_mqtt_msg_prop(m, "id");
    if (v && strcmp(v, id) == 0) return 1;
  }
  return 0;
}

typedef struct all_wait {
  ceb_mqtt_client *r;
  const char *prefix;
  int n;
} all_wait;

static int all_seen(void *arg) {
  all_wait *w = arg;
  for (int i = 0; i < w->n; i++) {
    char id[48];
    snprintf(id, sizeof id, "%s-%d", w->prefix, i);
    if (!seen(w->r, id)) return 0;
  }
  return 1;
}

/* The bridge is up and its source subscribed: a probe made it through. */
static int bridge_flows(ceb_mqtt_client *pub, ceb_mqtt_client *r) {
  for (int k = 0; k < 60; k++) {
    if (publish(pub, "probe", k) != CEB_OK) return 0;
    int64_t until = ceb_test_now_ms() + 500;
    while (ceb_test_now_ms() < until) {
      for (int j = 0; j <= k; j++) {
        char id[32];
        snprintf(id, sizeof id, "probe-%d", j);
        if (seen(r, id)) return 1;
      }
      usleep(20000);
    }
  }
  return 0;
}

int main(void) {
  ceb_mosq_opts o = {.persistence = 1};
  ceb_mosq *b = ceb_mosq_start(&o);
  char *dir = ceb_test_tmpdir("mqtt-bridge");
  CHECK(b && dir);
  if (!b || !dir) return ceb_test_done("test_mqtt_bridge");
  CHECK_INT(write_conf(dir, b->addr), 0);
  ceb_mqtt_client *reader = ceb_mqtt_client_new(b->url, "e2e-reader", 5);
  ceb_mqtt_client *dlq = ceb_mqtt_client_new(b->url, "e2e-dlq", 5);
  ceb_mqtt_client *pub = ceb_mqtt_client_new(b->url, "e2e-writer", 5);
  CHECK(reader && dlq && pub);
  if (!reader || !dlq || !pub) goto out;
  CHECK_INT(ceb_mqtt_subscribe(reader, "out/#", 1), 0);
  CHECK_INT(ceb_mqtt_subscribe(dlq, "dlq/in", 1), 0);

  pid_t pid = start_bridge(dir);
  CHECK(bridge_flows(pub, reader));
  for (int i = 0; i < N / 2; i++)
    CHECK_INT(publish(pub, "e2e", i), CEB_OK);
  static const char junk[] = "not a cloudevent";
  CHECK_INT(ceb_mqtt_publish(pub, "in/junk", junk, sizeof junk - 1, 1,
                             "application/cloudevents+json", NULL),
            0);
  /* Decodes, but is no valid CloudEvent (no source, no type): the bridge's
   * validation refuses it and the source dead-letters it with the reason. */
  const char *bad[] = {"specversion", "1.0", "id", "bad-1", NULL};
  CHECK_INT(
      ceb_mqtt_publish(pub, "in/bad", "{}", 2, 1, "application/json", bad), 0);
  for (int i = N / 2; i < N; i++)
    CHECK_INT(publish(pub, "e2e", i), CEB_OK);
  all_wait w = {reader, "e2e", N};
  CHECK(ceb_test_wait(all_seen, &w, 30000));
  CHECK_INT(ceb_mqtt_wait(dlq, 2, 10000), 2);
  const ceb_mqtt_msg *m = NULL;
  int junk_seen = 0, bad_seen = 0;
  for (size_t i = 0; i < ceb_mqtt_count(dlq); i++) {
    m = ceb_mqtt_get(dlq, i);
    const char *from = m ? ceb_mqtt_msg_prop(m, "ceb_dlq_topic") : NULL;
    const char *reason = m ? ceb_mqtt_msg_prop(m, "ceb_dlq_reason") : NULL;
    if (from && !strcmp(from, "in/junk")) {
      junk_seen++;
      CHECK_STR(m->payload, junk);
    } else if (from && !strcmp(from, "in/bad")) {
      bad_seen++;
      CHECK_STR(m->payload, "{}");
      CHECK_STR(ceb_mqtt_msg_prop(m, "id"), "bad-1");
      /* the host's violation, e.g. "ce.required: ..." */
      CHECK(reason && strstr(reason, "ce."));
      fprintf(stderr, "dead-letter reason (host validation): %s\n",
              reason ? reason : "");
    }
  }
  CHECK_INT(junk_seen, 1);
  CHECK_INT(bad_seen, 1);
  /* Attributes survive the whole way. */
  for (size_t i = 0; i < ceb_mqtt_count(reader); i++) {
    m = ceb_mqtt_get(reader, i);
    const char *id = ceb_mqtt_msg_prop(m, "id");
    if (!id || strcmp(id, "e2e-7") != 0) continue;
    CHECK_STR(m->topic, "out/nl.edu.e2e");
    CHECK_STR(ceb_mqtt_msg_prop(m, "subject"), "student 42");
    CHECK_STR(ceb_mqtt_msg_prop(m, "partitionkey"), "k-1");
    CHECK_STR(m->content_type, "application/json");
    CHECK_STR(m->payload, "{\"naam\":\"Jan\",\"jaar\":2026}");
  }
  CHECK_INT(stop_bridge(pid, SIGTERM), 0);

  /* Crash mid-flow: SIGKILL while events stream in, restart, nothing lost. */
  pid = start_bridge(dir);
  for (int i = 0; i < M; i++) {
    CHECK_INT(publish(pub, "crash", i), CEB_OK);
    if (i == M / 2) kill(pid, SIGKILL);
  }
  waitpid(pid, NULL, 0);
  pid = start_bridge(dir);
  all_wait wc = {reader, "crash", M};
  CHECK(ceb_test_wait(all_seen, &wc, 60000));
  CHECK_INT(stop_bridge(pid, SIGTERM), 0);
out:
  ceb_mqtt_client_free(reader);
  ceb_mqtt_client_free(dlq);
  ceb_mqtt_client_free(pub);
  ceb_mosq_free(b);
  if (getenv("CEB_KEEP_TMP")) fprintf(stderr, "bridge dir kept: %s\n", dir);
  free(dir);
  return ceb_test_done("test_mqtt_bridge");
}
