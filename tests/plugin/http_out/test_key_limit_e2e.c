/* Per-key limits end to end, through the real cebridge binary: a route
 * with order_by = subject and max_open_per_key = 2 whose receiver fails
 * (503: the events stay open, retrying). A third open event of one
 * institution's key is refused with 429, Retry-After and problem+json
 * "key.limit" (and counted as rejected for key_limit), while another
 * institution's key is accepted; once the receiver recovers and the open
 * events are delivered, the first key is accepted again. The admin API's
 * GET /v1/routes/{route}/keys (token) shows per key the open events and
 * the last failure, then the last success. */
#include <curl/curl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "ceb_test.h"
#include "ceb_test_bridge.h"
#include "ceb_test_proc.h"
#include "ceb_test_rx.h"

static atomic_int g_fail = 1;

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)req;
  (void)index;
  resp->status = atomic_load(&g_fail) ? 503 : 204;
}

static ceb_test_bridge g_b;

typedef struct reply {
  long status;
  char retry_after[32];
  char content_type[96];
  char body[1024];
  size_t len;
} reply;

static size_t on_header(char *b, size_t size, size_t n, void *arg) {
  reply *r = arg;
  size_t len = size * n;
  char line[256];
  snprintf(line, sizeof line, "%.*s", (int)(len < 255 ? len : 255), b);
  line[strcspn(line, "\r\n")] = '\0';
  if (strncasecmp(line, "Retry-After:", 12) == 0)
    snprintf(r->retry_after, sizeof r->retry_after, "%.31s", line + 13);
  if (strncasecmp(line, "Content-Type:", 13) == 0)
    snprintf(r->content_type, sizeof r->content_type, "%.95s", line + 14);
  return len;
}

static size_t on_body(char *b, size_t size, size_t n, void *arg) {
  reply *r = arg;
  size_t len = size * n, room = sizeof r->body - 1 - r->len;
  memcpy(r->body + r->len, b, len < room ? len : room);
  r->len += len < room ? len : room;
  r->body[r->len] = '\0';
  return len;
}

/* POSTs one event of institution key; the status (-1 transport error). */
static long post(int port, const char *id, const char *key, reply *out) {
  reply local;
  reply *r = out ? out : &local;
  memset(r, 0, sizeof *r);
  char url[128], h_id[96], h_subject[96];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(h_id, sizeof h_id, "ce-id: %s", id);
  snprintf(h_subject, sizeof h_subject, "ce-subject: %s", key);
  struct curl_slist *h = NULL;
  h = curl_slist_append(h, "ce-specversion: 1.0");
  h = curl_slist_append(h, "ce-source: urn:nld:oin:00000001234567890000:"
                           "systeem:rio");
  h = curl_slist_append(h, "ce-type: rio.inschrijving.gewijzigd");
  h = curl_slist_append(h, h_subject);
  h = curl_slist_append(h, h_id);
  h = curl_slist_append(h, "Content-Type: application/json");
  CURL *c = curl_easy_init();
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{}");
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  r->status = curl_easy_perform(c) == CURLE_OK ? 0 : -1;
  if (r->status == 0) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
  curl_easy_cleanup(c);
  curl_slist_free_all(h);
  return r->status;
}

#define TOKEN "a-token-for-the-key-limit-test"

/* The keys view's entry of key (a new reference), NULL when absent. */
static json_t *key_entry(int admin, const char *route, const char *key,
                         long *status) {
  char url[200], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/routes/%s/keys", admin,
           route);
  const char *const auth[] = {"Authorization: Bearer " TOKEN, NULL};
  *status = ceb_test_http("GET", url, auth, NULL, 0, &body);
  json_t *j = body ? json_loads(body, 0, NULL) : NULL;
  free(body);
  json_t *found = NULL;
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(j, "keys"), i, e) {
    const char *k = json_string_value(json_object_get(e, "key"));
    if (k && strcmp(k, key) == 0) found = json_incref(e);
  }
  json_decref(j);
  return found;
}

static int g_admin;
static int a_succeeded(void *arg) {
  (void)arg;
  long st = 0;
  json_t *e = key_entry(g_admin, "to-partner", "inst-a", &st);
  int ok = json_integer_value(json_object_get(e, "last_success_at")) > 0;
  json_decref(e);
  return ok;
}

static int g_in;
static int accepted_again(void *arg) {
  (void)arg;
  return post(g_in, "a-3", "inst-a", NULL) == 202;
}

int main(void) {
  curl_global_init(CURL_GLOBAL_DEFAULT);
  rx_server *rx = rx_start(respond, NULL);
  CHECK(rx != NULL);
  char *dir = ceb_test_tmpdir("key-limit");
  if (!rx) return ceb_test_done("integration_key_limit");
  char text[2048];
  ceb_test_webhook_opts o = {.token = TOKEN,
                             .rx_port = rx_port(rx),
                             .source_extra = "retry_after = 3s\n",
                             .route_extra = "order_by = subject\n"
                                            "max_open_per_key = 2\n"
                                            "retry.schedule = 0s 100ms 200ms\n"
                                            "dlq = store\n"};
  CHECK_INT(ceb_test_webhook_conf(text, sizeof text, dir, &o), 0);
  CHECK_INT(ceb_test_bridge_run(&g_b, dir, text, 30000), 0);
  free(dir);
  g_in = g_b.in_port;
  int admin = g_b.admin_port;

  /* two open events of inst-a (the receiver fails them: retrying) */
  CHECK_INT(post(g_in, "a-1", "inst-a", NULL), 202);
  CHECK_INT(post(g_in, "a-2", "inst-a", NULL), 202);
  CHECK(rx_wait(rx, 1, 30000)); /* a-1 attempted and failed: still open */
  reply r;
  CHECK_INT(post(g_in, "a-3", "inst-a", &r), 429);
  CHECK_STR(r.retry_after, "3");
  CHECK_MSG(strstr(r.content_type, "application/problem+json") != NULL,
            "content type %s", r.content_type);
  CHECK_MSG(strstr(r.body, "\"key.limit\"") && strstr(r.body, "\"status\""),
            "body %s", r.body);
  /* another institution is not held back by inst-a */
  CHECK_INT(post(g_in, "b-1", "inst-b", NULL), 202);
  CHECK(ceb_test_bridge_metric(&g_b, "reason=\"key_limit\"} ") >= 1);

  /* the keys view: inst-a has 2 open, a failure, no success yet */
  g_admin = admin;
  long st = 0;
  json_t *e = key_entry(admin, "to-partner", "inst-a", &st);
  CHECK_INT(st, 200);
  CHECK_INT(json_integer_value(json_object_get(e, "open")), 2);
  CHECK(json_integer_value(json_object_get(e, "last_failure_at")) > 0);
  CHECK(json_is_null(json_object_get(e, "last_success_at")));
  json_decref(e);
  e = key_entry(admin, "to-partner", "inst-b", &st);
  CHECK_INT(json_integer_value(json_object_get(e, "open")), 1);
  json_decref(e);
  e = key_entry(admin, "nope", "inst-a", &st);
  CHECK_INT(st, 404);
  json_decref(e);

  /* the receiver recovers: a-1 and a-2 are delivered, a-3 fits again */
  atomic_store(&g_fail, 0);
  CHECK(ceb_test_wait(accepted_again, NULL, 30000));
  CHECK(ceb_test_wait(a_succeeded, NULL, 30000));

  CHECK_INT(ceb_test_pid_stop(g_b.pid, SIGTERM, 30000), 0);
  rx_stop(rx);
  curl_global_cleanup();
  return ceb_test_done("integration_key_limit");
}
