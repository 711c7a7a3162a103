/* Interop with MQTT.js: the npm mqtt client publishes MQTT 5 binary-mode
 * CloudEvents that the plugin's source consumes as the same events, and
 * reads back what the plugin's sink publishes (binary and structured). */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ceb_test.h"
#include "mqtt_test_util.h"

typedef struct node_proc {
  pid_t pid;
  FILE *out;
} node_proc;

static int node_start(node_proc *n, const char *url, int expected) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  n->pid = fork();
  if (n->pid < 0) return -1;
  if (n->pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    setenv("NODE_PATH", CEB_NODE_MODULES, 1);
    char exp[16];
    snprintf(exp, sizeof exp, "%d", expected);
    execl(CEB_NODE, "node", CEB_INTEROP_JS, url, exp, (char *)NULL);
    perror("exec node");
    _exit(127);
  }
  close(fds[1]);
  n->out = fdopen(fds[0], "r");
  return n->out ? 0 : -1;
}

/* One line from interop.js; NULL at EOF (it exits after 30 s at most). */
static char *node_line(node_proc *n, char *buf, size_t size) {
  if (!fgets(buf, (int)size, n->out)) return NULL;
  buf[strcspn(buf, "\n")] = 0;
  return buf;
}

static int node_wait(node_proc *n) {
  int st = 0;
  if (n->out) fclose(n->out);
  if (n->pid > 0 && waitpid(n->pid, &st, 0) != n->pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_consumed(mtest_inst *src) {
  CHECK(ceb_fake_wait_events(src->fake, 3, 10000));
  for (int i = 1; i <= 3; i++) {
    char id[16], subject[32], data[64];
    snprintf(id, sizeof id, "js-%d", i);
    snprintf(subject, sizeof subject, "student %d", i);
    snprintf(data, sizeof data, "{\"n\":%d,\"naam\":\"Jan\"}", i);
    ceb_event *ev = NULL;
    for (size_t j = 0; j < ceb_fake_event_count(src->fake) && !ev; j++) {
      ceb_event *e = ceb_fake_event(src->fake, j);
      if (e && strcmp(ceb_event_get(e, "id"), id) == 0)
        ev = e;
      else
        ceb_event_unref(e);
    }
    CHECK_MSG(ev != NULL, "event %s not consumed", id);
    if (!ev) continue;
    CHECK_STR(ceb_event_get(ev, "specversion"), "1.0");
    CHECK_STR(ceb_event_get(ev, "type"), "nl.edu.interop.created");
    CHECK_STR(ceb_event_get(ev, "source"),
              "urn:nld:oin:00000001234567890000:systeem:mqttjs");
    CHECK_STR(ceb_event_get(ev, "subject"), subject);
    CHECK_STR(ceb_event_get(ev, "datacontenttype"), "application/json");
    size_t len;
    const char *d = ceb_event_data(ev, &len);
    CHECK(d && len == strlen(data) && memcmp(d, data, len) == 0);
    ceb_event_unref(ev);
  }
}

static int start_sink(mtest_inst *t, ceb_mosq *b, const char *mode) {
  char id[64];
  snprintf(id, sizeof id, "interop-sink-%s", mode);
  const char *kv[] = {"broker", b->addr, "topic",     "interop/out/${type}",
                      "mode",   mode,    "client_id", id,
                      NULL};
  if (mtest_init(t, CEB_ROLE_SINK, kv) != CEB_OK || mtest_start(t) != CEB_OK)
    return -1;
  return mtest_wait_connected(t, 10000) ? 0 : -1;
}

static void deliver(mtest_inst *t, const char *id, const char *type) {
  ceb_event *ev = mtest_event(id, type);
  ceb_delivery *d = ceb_fake_delivery_new(t->fake, ev, "r", NULL, 1);
  CHECK_INT(t->p->deliver(t->state, d), CEB_OK);
  CHECK(ceb_fake_wait_settles(t->fake, 1, 10000));
  ceb_fake_settle s;
  CHECK(ceb_fake_settle_get(t->fake, 0, &s) && s.info.outcome == CEB_ACK);
  ceb_fake_delivery_free(d);
  ceb_event_unref(ev);
}

/* A line interop.js printed for a received message. */
static void check_received(const char *line) {
  json_error_t e;
  json_t *j = json_loads(line, 0, &e);
  CHECK_MSG(j != NULL, "not JSON: %s", line);
  if (!j) return;
  const char *topic = json_string_value(json_object_get(j, "topic"));
  const char *ct = json_string_value(json_object_get(j, "contentType"));
  const char *payload = json_string_value(json_object_get(j, "payload"));
  json_t *up = json_object_get(j, "userProperties");
  CHECK(topic && payload);
  if (topic && strcmp(topic, "interop/out/nl.edu.bin") == 0) {
    CHECK_STR(ct, "application/json");
    CHECK_STR(json_string_value(json_object_get(up, "id")), "out-bin");
    CHECK_STR(json_string_value(json_object_get(up, "specversion")), "1.0");
    CHECK_STR(json_string_value(json_object_get(up, "subject")), "student 42");
    CHECK_STR(payload, "{\"naam\":\"Jan\",\"jaar\":2026}");
  } else if (topic && strcmp(topic, "interop/out/nl.edu.struct") == 0) {
    CHECK_STR(ct, "application/cloudevents+json");
    json_t *ev = payload ? json_loads(payload, 0, &e) : NULL;
    CHECK(ev != NULL);
    CHECK_STR(json_string_value(json_object_get(ev, "id")), "out-struct");
    CHECK_INT(json_integer_value(
                  json_object_get(json_object_get(ev, "data"), "jaar")),
              2026);
    json_decref(ev);
  } else {
    CHECK_MSG(0, "unexpected topic %s", topic ? topic : "(none)");
  }
  json_decref(j);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  ceb_mosq *b = ceb_mosq_start(NULL);
  CHECK(b != NULL);
  if (!b) return ceb_test_done("test_mqtt_interop");
  const char *skv[] = {"broker", b->addr,        "client_id", "interop-src",
                       "topics", "interop/in/#", NULL};
  mtest_inst src, bin, st;
  CHECK_INT(mtest_init(&src, CEB_ROLE_SOURCE, skv), CEB_OK);
  CHECK_INT(mtest_start(&src), CEB_OK);
  CHECK(mtest_wait_subscribed(&src));
  CHECK_INT(start_sink(&bin, b, "binary"), 0);
  CHECK_INT(start_sink(&st, b, "structured"), 0);

  node_proc n = {0};
  CHECK_INT(node_start(&n, b->url, 2), 0);
  char line[8192];
  char *l = node_line(&n, line, sizeof line);
  CHECK(l && strcmp(l, "published") == 0);
  check_consumed(&src);

  deliver(&bin, "out-bin", "nl.edu.bin");
  deliver(&st, "out-struct", "nl.edu.struct");
  for (int i = 0; i < 2; i++) {
    l = node_line(&n, line, sizeof line);
    CHECK_MSG(l != NULL, "interop.js printed %d of 2 messages", i);
    if (l) check_received(l);
  }
  CHECK_INT(node_wait(&n), 0);

  CHECK_INT(mtest_drain(&src, 5000), CEB_OK);
  mtest_free(&src);
  mtest_free(&bin);
  mtest_free(&st);
  ceb_mosq_free(b);
  return ceb_test_done("test_mqtt_interop");
}
