/* Replay by time range end to end, through the real cebridge binary:
 * events posted in three windows (A, B, C) are delivered; replaying window
 * B (the admin API's POST /v1/routes/{route}/replay, token-protected, and
 * `cebridge replay` with --type) makes the receiver get exactly B's events
 * again, once each per replay, in order per ordering key, each with a new
 * Idempotency-Key; A and C are not replayed; a dry run only counts; a
 * route that does not exist is a clear error (CLI exit 2, API 404). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "ceb_test.h"
#include "ceb_test_bridge.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"

#define TOKEN "an-operator-token-for-the-replay-test"

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)req;
  (void)index;
  resp->status = 204;
}

static ceb_test_bridge g_b;

/* The bridge stamps received_at from the wall clock. */
static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static int past(void *arg) {
  return wall_ms() > *(int64_t *)arg;
}

static int post(int port, const char *id, const char *key, const char *type) {
  char url[128], h_id[96], h_subject[96], h_type[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(h_id, sizeof h_id, "ce-id: %s", id);
  snprintf(h_subject, sizeof h_subject, "ce-subject: %s", key);
  snprintf(h_type, sizeof h_type, "ce-type: %s", type);
  const char *const hdrs[] = {"ce-specversion: 1.0",
                              "ce-source: urn:nld:oin:00000001234567890000:"
                              "systeem:rio",
                              h_type,
                              h_subject,
                              h_id,
                              "Content-Type: application/json",
                              NULL};
  return ceb_test_http("POST", url, hdrs, "{}", 2, NULL);
}

static const char *hdr(rx_server *rx, size_t i, const char *name) {
  const rx_request *r = rx_get(rx, i);
  const char *v = r ? ceb_headers_get(&r->headers, name) : NULL;
  return v ? v : "";
}

/* ids of requests [from, to) with subject key, in arrival order, joined
 * with ','. */
static void of_key(rx_server *rx, size_t from, size_t to, const char *key,
                   char *out, size_t size) {
  out[0] = '\0';
  for (size_t i = from; i < to; i++)
    if (strcmp(hdr(rx, i, "ce-subject"), key) == 0) {
      size_t n = strlen(out);
      snprintf(out + n, size - n, "%s%s", n ? "," : "", hdr(rx, i, "ce-id"));
    }
}

/* 1 when the Idempotency-Key of request i was seen in no other request. */
static int key_new(rx_server *rx, size_t i) {
  const char *k = hdr(rx, i, "idempotency-key");
  if (!*k) return 0;
  for (size_t j = 0; j < rx_count(rx); j++)
    if (j != i && strcmp(hdr(rx, j, "idempotency-key"), k) == 0) return 0;
  return 1;
}

int main(void) {
  rx_server *rx = rx_start(respond, NULL);
  CHECK(rx != NULL);
  char *dir = ceb_test_tmpdir("replay-range");
  if (!rx) return ceb_test_done("integration_replay_range");
  char text[2048];
  ceb_test_webhook_opts o = {.token = TOKEN,
                             .rx_port = rx_port(rx),
                             .bridge_extra = "store.poll_interval = 200ms\n"
                                             "retention = 7d\n",
                             .route_extra = "order_by = subject\n"
                                            "dlq = store\n"};
  CHECK_INT(ceb_test_webhook_conf(text, sizeof text, dir, &o), 0);
  CHECK_INT(ceb_test_bridge_run(&g_b, dir, text, 30000), 0);
  free(dir);
  int in = g_b.in_port, admin = g_b.admin_port;
  const char *T = "rio.inschrijving.gewijzigd", *O = "rio.other";

  /* window A */
  CHECK_INT(post(in, "a1", "inst-1", T), 202);
  CHECK_INT(post(in, "a2", "inst-2", T), 202);
  CHECK(rx_wait(rx, 2, 30000));
  /* every event of A was received at or before t1: B starts after it */
  int64_t since = wall_ms() + 1;
  CHECK(ceb_test_wait(past, &since, 5000));
  CHECK_INT(post(in, "b1", "inst-1", T), 202);
  CHECK_INT(post(in, "b2", "inst-2", T), 202);
  CHECK_INT(post(in, "b3", "inst-1", T), 202);
  CHECK_INT(post(in, "b4", "inst-1", O), 202);
  CHECK(rx_wait(rx, 6, 30000));
  int64_t until = wall_ms() + 1;
  CHECK(ceb_test_wait(past, &until, 5000));
  CHECK_INT(post(in, "c1", "inst-1", T), 202);
  CHECK(rx_wait(rx, 7, 30000));
  CHECK_INT(rx_count(rx), 7);

  /* a route that does not exist */
  char args[512], *out = NULL;
  CHECK_INT(ceb_test_bridge_cli(&g_b, "replay --route nope --since -1h", &out),
            2);
  CHECK_MSG(out && strstr(out, "no route 'nope'"), "cli: %s", out ? out : "");
  free(out);
  char url[256], *body = NULL;
  const char *const auth[] = {"Authorization: Bearer " TOKEN, NULL};
  snprintf(url, sizeof url,
           "http://127.0.0.1:%d/v1/routes/nope/replay?since=-1h", admin);
  CHECK_INT(ceb_test_http("POST", url, auth, "", 0, &body), 404);
  CHECK(body && strstr(body, "unknown_route"));
  free(body);

  /* RFC 3339 times of the window */
  char s3339[40], u3339[40];
  time_t ss = (time_t)(since / 1000), us = (time_t)(until / 1000);
  struct tm tm;
  gmtime_r(&ss, &tm);
  size_t n = strftime(s3339, sizeof s3339, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(s3339 + n, sizeof s3339 - n, ".%03dZ", (int)(since % 1000));
  gmtime_r(&us, &tm);
  n = strftime(u3339, sizeof u3339, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(u3339 + n, sizeof u3339 - n, ".%03dZ", (int)(until % 1000));

  /* dry runs only count */
  snprintf(args, sizeof args,
           "replay --route to-partner --since %s --until %s --dry-run", s3339,
           u3339);
  CHECK_INT(ceb_test_bridge_cli(&g_b, args, &out), 0);
  CHECK_MSG(out && strstr(out, "dry run: 4 events would be replayed"),
            "cli: %s", out ? out : "");
  free(out);
  snprintf(args, sizeof args,
           "replay --route to-partner --since %s --until %s --type %s "
           "--dry-run",
           s3339, u3339, T);
  CHECK_INT(ceb_test_bridge_cli(&g_b, args, &out), 0);
  CHECK_MSG(out && strstr(out, "dry run: 3 events would be replayed"),
            "cli: %s", out ? out : "");
  free(out);

  /* the admin API replays window B (the token is needed) */
  snprintf(url, sizeof url,
           "http://127.0.0.1:%d/v1/routes/to-partner/replay?since=%s&until=%s",
           admin, s3339, u3339);
  CHECK_INT(ceb_test_http("POST", url, NULL, "", 0, &body), 401);
  free(body);
  body = NULL;
  CHECK_INT(ceb_test_http("POST", url, auth, "", 0, &body), 200);
  json_t *j = body ? json_loads(body, 0, NULL) : NULL;
  CHECK_INT(json_integer_value(json_object_get(j, "replayed")), 4);
  json_decref(j);
  free(body);
  /* sentinels per key: what was queued before them on their key came */
  CHECK_INT(post(in, "z1", "inst-1", T), 202);
  CHECK_INT(post(in, "z2", "inst-2", T), 202);
  CHECK(rx_wait(rx, 13, 30000));
  char k1[256], k2[256];
  of_key(rx, 7, rx_count(rx), "inst-1", k1, sizeof k1);
  of_key(rx, 7, rx_count(rx), "inst-2", k2, sizeof k2);
  CHECK_STR(k1, "b1,b3,b4,z1");
  CHECK_STR(k2, "b2,z2");
  for (size_t i = 7; i < 11; i++)
    CHECK_MSG(key_new(rx, i), "request %zu (%s) reused an Idempotency-Key", i,
              hdr(rx, i, "ce-id"));

  /* the CLI replays B again, of type T only: a further new key each */
  snprintf(args, sizeof args,
           "replay --route to-partner --since %s --until %s --type %s", s3339,
           u3339, T);
  CHECK_INT(ceb_test_bridge_cli(&g_b, args, &out), 0);
  CHECK_MSG(out && strstr(out, "3 events replayed"), "cli: %s", out ? out : "");
  free(out);
  CHECK_INT(post(in, "y1", "inst-1", T), 202);
  CHECK_INT(post(in, "y2", "inst-2", T), 202);
  CHECK(rx_wait(rx, 18, 30000));
  size_t total = rx_count(rx);
  of_key(rx, 13, total, "inst-1", k1, sizeof k1);
  of_key(rx, 13, total, "inst-2", k2, sizeof k2);
  CHECK_STR(k1, "b1,b3,y1");
  CHECK_STR(k2, "b2,y2");
  for (size_t i = 13; i < total; i++)
    CHECK_MSG(key_new(rx, i), "request %zu (%s) reused an Idempotency-Key", i,
              hdr(rx, i, "ce-id"));
  CHECK_INT(total, 18);

  CHECK_INT(ceb_test_pid_stop(g_b.pid, SIGTERM, 30000), 0);
  rx_stop(rx);
  return ceb_test_done("integration_replay_range");
}
