/* The admin API's event status and timeline are bounded answers, with the
 * real binary: an event whose route retried it 120 times before it died
 * gets a timeline of its newest 100 failed attempts with "truncated": true
 * (it listed every attempt: a retry-forever route's 100k made one answer
 * of tens of MB, sorted in quadratic time); its status says "truncated":
 * false (one event carries the id); an id over 4096 bytes (the longest an
 * event can carry) is refused with 400 problem+json id_too_long (it was
 * cut to 511 bytes and looked up: a cut id is another event's), and an
 * event posted with a 4096-byte id to an http source is found (its lookup
 * was refused over 512 bytes while ingest took it). */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ceb/event.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

static char g_dir[512], g_conf[600], g_bearer[700];
static int g_port;

/* GET path with the token; the status, the body in *body (caller frees). */
static int get(const char *path, char **body) {
  char url[8192];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", g_port, path);
  const char *h[] = {g_bearer, NULL};
  return ceb_test_http("GET", url, h, NULL, 0, body);
}

/* The id of the route's one dead letter, once it is there. */
static int dead(void *arg) {
  char *id = arg, *body = NULL;
  int ok = 0;
  if (get("/v1/dlq?route=r", &body) == 200) {
    json_t *l = json_loads(body, 0, NULL);
    const char *e =
        json_string_value(json_object_get(json_array_get(l, 0), "event_id"));
    if (e) snprintf(id, 256, "%s", e);
    ok = e != NULL;
    json_decref(l);
  }
  free(body);
  return ok;
}

int main(void) {
  char *d = ceb_test_tmpdir("admin-bounds");
  snprintf(g_dir, sizeof g_dir, "%s", d);
  free(d);
  snprintf(g_conf, sizeof g_conf, "%s/bridge.d", g_dir);
  char var[600], text[2048];
  snprintf(var, sizeof var, "%s/var", g_dir);
  CHECK(mkdir(g_conf, 0700) == 0 && mkdir(var, 0755) == 0);
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/var/store.db\n"
           "admin.listen = 127.0.0.1:0\nadmin.port_file = %s/admin.port\n"
           "admin.token = a-long-operator-token\n"
           "[source gen]\nplugin = testsource\ncount = 1\n"
           "[source in]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "port_file = %s/in.port\nauth = none\n"
           "[sink done]\nplugin = testsink\n"
           "[route in]\nfrom = in\nto = done\n"
           "[sink out]\nplugin = testsink\nmode = retry\n"
           "circuit.failures = 1000000\n"
           "[route r]\nfrom = gen\nto = out\nretry.mode = exponential\n"
           "retry.base = 1ms\nretry.max_delay = 1ms\n"
           "retry.max_attempts = 120\n",
           g_dir, g_dir, g_dir);
  CHECK_INT(ceb_test_write_file(g_conf, "bridge.conf", text), 0);
  snprintf(g_bearer, sizeof g_bearer,
           "Authorization: Bearer a-long-operator-token");
  char log[700], port[700], bin[600];
  snprintf(log, sizeof log, "%s/run.log", g_dir);
  snprintf(port, sizeof port, "%s/admin.port", g_dir);
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *argv[] = {bin, "run", "-c", g_conf, "--plugin-dir", CEB_PLUGIN_PATH,
                  NULL};
  ceb_proc p;
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  g_port = ceb_test_wait_port_file(port, 30000);
  CHECK(g_port > 0);
  char id[256] = "";
  CHECK_MSG(g_port > 0 && ceb_test_wait(dead, id, 120000),
            "no dead letter after 120 attempts");

  char path[CEB_ATTR_VALUE_MAX + 64], *body = NULL;
  snprintf(path, sizeof path, "/v1/events/%s/timeline", id);
  CHECK_INT(get(path, &body), 200);
  json_t *doc = body ? json_loads(body, 0, NULL) : NULL;
  free(body);
  json_t *ev = json_array_get(json_object_get(doc, "events"), 0);
  CHECK(json_is_false(json_object_get(doc, "truncated")));
  CHECK(json_is_true(json_object_get(ev, "truncated")));
  size_t i, attempts = 0;
  json_int_t last_n = 0;
  json_t *e;
  json_array_foreach(json_object_get(ev, "timeline"), i, e) {
    if (strcmp(json_string_value(json_object_get(e, "what")), "attempt"))
      continue;
    attempts++;
    last_n = json_integer_value(json_object_get(e, "n"));
  }
  CHECK_MSG(attempts == 100, "%zu attempts in the timeline", attempts);
  CHECK_INT(last_n, 120); /* the newest are kept */
  json_decref(doc);

  snprintf(path, sizeof path, "/v1/events/%s/status", id);
  CHECK_INT(get(path, &body), 200);
  doc = body ? json_loads(body, 0, NULL) : NULL;
  free(body);
  CHECK(json_is_false(json_object_get(doc, "truncated")));
  CHECK_INT(json_array_size(json_object_get(doc, "events")), 1);
  json_decref(doc);

  /* ids over 4096 bytes are refused, never cut */
  static char longid[CEB_ATTR_VALUE_MAX + 2];
  memset(longid, 'x', CEB_ATTR_VALUE_MAX + 1);
  longid[CEB_ATTR_VALUE_MAX + 1] = '\0';
  snprintf(path, sizeof path, "/v1/events/%s/status", longid);
  CHECK_INT(get(path, &body), 400);
  CHECK(body && strstr(body, "id_too_long"));
  free(body);
  snprintf(path, sizeof path, "/v1/events/%s/timeline", longid);
  CHECK_INT(get(path, &body), 400);
  free(body);
  longid[CEB_ATTR_VALUE_MAX] = '\0';
  snprintf(path, sizeof path, "/v1/events/%s/status", longid);
  CHECK_INT(get(path, &body), 404);
  CHECK(body && strstr(body, "unknown_event"));
  free(body);

  /* the longest id ingest takes is looked up */
  snprintf(path, sizeof path, "%s/in.port", g_dir);
  int in = ceb_test_wait_port_file(path, 30000);
  CHECK(in > 0);
  static char cebody[CEB_ATTR_VALUE_MAX + 256];
  snprintf(cebody, sizeof cebody,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"urn:t\","
           "\"type\":\"nl.edu.t\"}",
           longid);
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", in);
  const char *const ce[] = {"Content-Type: application/cloudevents+json",
                            NULL};
  CHECK_INT(ceb_test_http("POST", url, ce, cebody, strlen(cebody), &body), 202);
  free(body);
  snprintf(path, sizeof path, "/v1/events/%s/status", longid);
  CHECK_INT(get(path, &body), 200);
  json_t *st = body ? json_loads(body, 0, NULL) : NULL;
  CHECK_INT(json_array_size(json_object_get(st, "events")), 1);
  json_decref(st);
  free(body);
  snprintf(path, sizeof path, "/v1/events/%s/timeline", longid);
  CHECK_INT(get(path, &body), 200);
  free(body);

  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);
  return ceb_test_done("integration_admin_bounds");
}
