/* Interop with the CloudEvents JavaScript SDK (npm cloudevents, pinned by
 * package-lock.json; `npm ci` runs when node_modules is missing, so an
 * unreachable registry fails the test). The intermediary runs under the
 * fake host; `node emit.js URL` emits binary and structured events and a
 * batch with the SDK's own HTTP transport (chunked bodies, Idempotency-Key
 * per request), and this driver checks what the host received. */
#include "hin_harness.h"

#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>

#define NPM_TIMEOUT "300"

static int npm_ready(void) {
  struct stat st;
  if (stat(CEB_HTTP_IN_NPM_DIR "/node_modules/cloudevents", &st) == 0) return 0;
  int rc = system("cd '" CEB_HTTP_IN_NPM_DIR "' && timeout " NPM_TIMEOUT
                  " npm ci --no-audit --no-fund --loglevel=error >&2");
  if (rc != 0)
    fprintf(stderr, "npm ci failed (%d): is the npm registry reachable?\n", rc);
  return rc;
}

static ceb_event *find_event(ceb_fake_host *f, const char *id) {
  for (size_t i = 0; i < ceb_fake_event_count(f); i++) {
    ceb_event *ev = ceb_fake_event(f, i);
    const char *v = ev ? ceb_event_get(ev, "id") : NULL;
    if (v && strcmp(v, id) == 0) return ev;
    ceb_event_unref(ev);
  }
  fprintf(stderr, "event %s not received\n", id);
  return NULL;
}

static int json_data_equal(ceb_event *ev, const char *want) {
  size_t len = 0;
  const char *d = ceb_event_data(ev, &len);
  json_t *a = d ? json_loadb(d, len, 0, NULL) : NULL;
  json_t *b = json_loads(want, 0, NULL);
  int eq = a && b && json_equal(a, b);
  if (!eq) fprintf(stderr, "data %.*s, want %s\n", (int)len, d ? d : "", want);
  json_decref(a);
  json_decref(b);
  return eq;
}

static void check_events(ceb_fake_host *f) {
  CHECK_INT(ceb_fake_event_count(f), 6);
  ceb_event *ev = find_event(f, "js-bin-1");
  CHECK(ev != NULL);
  if (ev) {
    CHECK_STR(ceb_event_get(ev, "source"),
              "urn:nld:oin:00000001234567890000:interop");
    CHECK_STR(ceb_event_get(ev, "type"), "nl.edu.interop.binary");
    CHECK_STR(ceb_event_get(ev, "subject"), "student-42");
    CHECK_STR(ceb_event_get(ev, "partitionkey"), "k1");
    CHECK(json_data_equal(ev, "{\"student\":42,\"name\":\"Zo\\u00eb\"}"));
    ceb_event_unref(ev);
  }
  ev = find_event(f, "js-str-1");
  CHECK(ev != NULL);
  if (ev) {
    CHECK_STR(ceb_event_get(ev, "time"), "2024-01-02T03:04:05.678Z");
    CHECK_STR(ceb_event_get(ev, "datacontenttype"), "application/json");
    CHECK(json_data_equal(ev, "{\"ok\":true,\"list\":[1,2,3]}"));
    ceb_event_unref(ev);
  }
  ev = find_event(f, "js-b64-1");
  CHECK(ev != NULL);
  if (ev) {
    size_t len = 0;
    const unsigned char *d = ceb_event_data(ev, &len);
    static const unsigned char want[] = {0, 1, 2, 255};
    CHECK(d && len == 4 && memcmp(d, want, 4) == 0);
    CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_BINARY);
    ceb_event_unref(ev);
  }
  ev = find_event(f, "js-txt-1");
  CHECK(ev != NULL);
  if (ev) {
    size_t len = 0;
    const char *d = ceb_event_data(ev, &len);
    CHECK(d && len == 11 && memcmp(d, "hello world", 11) == 0);
    CHECK_STR(ceb_event_get(ev, "datacontenttype"), "text/plain");
    ceb_event_unref(ev);
  }
  for (int i = 1; i <= 2; i++) {
    char id[32], want[32];
    snprintf(id, sizeof id, "js-batch-%d", i);
    snprintf(want, sizeof want, "{\"n\":%d}", i);
    ev = find_event(f, id);
    CHECK(ev != NULL);
    if (ev) {
      CHECK(json_data_equal(ev, want));
      ceb_event_unref(ev);
    }
  }
}

int main(void) {
  int rc = npm_ready();
  CHECK_INT(rc, 0);
  if (rc != 0) return ceb_test_done("interop_http_in");
  curl_global_init(CURL_GLOBAL_DEFAULT);
  static const char *const cfg[] = {"auth=none", "idempotency=required", NULL};
  hin_env *e = hin_start(cfg, NULL);
  CHECK(e != NULL);
  if (e) {
    char cmd[512];
    snprintf(cmd, sizeof cmd,
             "cd '" CEB_HTTP_IN_NPM_DIR "' && timeout 60 node emit.js '%s'",
             e->url);
    rc = system(cmd);
    CHECK_INT(rc, 0);
    check_events(e->fake);
    hin_stop(e);
  }
  curl_global_cleanup();
  return ceb_test_done("interop_http_in");
}
