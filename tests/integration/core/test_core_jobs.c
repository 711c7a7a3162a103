/* The job status host service (ceb_host.event_status, ABI 1.2) through
 * the runtime, on the injected clock: pending behind its key's head,
 * in-progress while held and while a retry waits, done with what the sink
 * handed over (settle info body, bounded by CEB_SETTLE_BODY_MAX), error
 * with phase and message, time-out once the route's deadline passed, and
 * only for the client that sent the event. A settle info of ABI 1.0 size
 * (a plugin built before the body was added) is taken as it is: done,
 * nothing read past its end. A body that is not UTF-8 is kept as text
 * with U+FFFD for what is not. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *k_conf =
    "[source in]\nplugin = testsource\n"
    "[sink out]\nplugin = testsink\n"
    "[route r]\nfrom = in\nto = out\norder_by = partitionkey\n"
    "retry.schedule = 0s 10s 10s 10s\ndeadline = 15s\n";

static char *g_big; /* CEB_SETTLE_BODY_MAX + 100 bytes of 'x' */

/* ok*: ACK with a body; old*: ACK in a 1.0-sized info whose body fields
 * (past its end) hold garbage; bin*: ACK with NUL and a stray byte in the
 * body; bad*: REJECT; never*: RETRY; big*: ACK with a body longer than the
 * host keeps. */
static ceb_outcome script(void *arg, const ceb_delivery *d,
                          ceb_settle_info *info) {
  (void)arg;
  const char *id = ceb_event_get(d->event, "id");
  info->status_code = 200;
  info->reason = "http.200";
  if (strncmp(id, "ok", 2) == 0) {
    info->body = "{\"opleidingseenheidcode\":\"1234\"}";
    info->body_len = strlen(info->body);
    return CEB_ACK;
  }
  if (strncmp(id, "old", 3) == 0) {
    info->struct_size = CEB_SETTLE_INFO_SIZE_1_0;
    info->body = (const char *)(uintptr_t)1; /* never to be read */
    info->body_len = 99;
    return CEB_ACK;
  }
  if (strncmp(id, "bin", 3) == 0) { /* NUL and a byte that is not UTF-8 */
    info->body = "ok\0\xff\xc3\xa9";
    info->body_len = 6;
    return CEB_ACK;
  }
  if (strncmp(id, "big", 3) == 0) {
    info->body = g_big;
    info->body_len = strlen(g_big);
    return CEB_ACK;
  }
  info->status_code = strncmp(id, "bad", 3) == 0 ? 422 : 503;
  info->reason = strncmp(id, "bad", 3) == 0 ? "http.422" : "http.503";
  info->detail = "the partner says no";
  return strncmp(id, "bad", 3) == 0 ? CEB_REJECT : CEB_RETRY;
}

/* The job status of id as client, or NULL (*st gets the status). */
static json_t *job(const ceb_host *host, ceb_instance *inst, const char *client,
                   const char *id, int *st) {
  char *text = NULL;
  size_t len = 0;
  *st = host->event_status(inst, client, id, &text, &len);
  json_t *o = text ? json_loadb(text, len, 0, NULL) : NULL;
  if (text) CHECK_INT(strlen(text), len);
  free(text);
  return o;
}

static const char *status_of(json_t *o) {
  return json_string_value(json_object_get(o, "status"));
}

typedef struct job_wait {
  const ceb_host *host;
  ceb_instance *inst;
  const char *client, *id, *want;
} job_wait;

static int job_is(void *arg) {
  job_wait *w = arg;
  int st;
  json_t *o = job(w->host, w->inst, w->client, w->id, &st);
  int ok = o && strcmp(status_of(o) ? status_of(o) : "", w->want) == 0;
  json_decref(o);
  return ok;
}

static int submit_as(testsource *src, const char *client, const char *id,
                     const char *key) {
  ceb_event *ev = harness_event(id, "nl.edu.job", key);
  ceb_submit_opts opts = {.struct_size = sizeof opts, .client = client};
  ceb_submit_result res;
  int st = testsource_submit(src, &ev, 1, &opts, &res);
  if (st != CEB_OK) ceb_event_unref(ev);
  return st;
}

int main(void) {
  harness h;
  if (harness_open(&h, "jobs", NULL, k_conf) != 0)
    return ceb_test_done("integration_core_jobs");
  g_big = malloc(CEB_SETTLE_BODY_MAX + 101);
  memset(g_big, 'x', CEB_SETTLE_BODY_MAX + 100);
  g_big[CEB_SETTLE_BODY_MAX + 100] = '\0';
  testsource *src = harness_source(&h, "in");
  testsink *out = harness_sink(&h, "out");
  const ceb_host *host = testsource_host(src);
  ceb_instance *inst = testsource_instance(src);
  CHECK(CEB_HOST_HAS(host, event_status));
  testsink_script(out, script, NULL);
  int st;

  /* held at the sink: in-progress; the next of its key: pending */
  testsink_hold(out, 1);
  CHECK_INT(submit_as(src, "inst-a", "ok1", "A"), CEB_OK);
  CHECK_INT(submit_as(src, "inst-a", "ok2", "A"), CEB_OK);
  CHECK(harness_wait_count(out, 1));
  json_t *o = job(host, inst, "inst-a", "ok1", &st);
  CHECK_INT(st, CEB_OK);
  CHECK_STR(status_of(o), "in-progress");
  CHECK_STR(json_string_value(json_object_get(o, "id")), "ok1");
  json_decref(o);
  o = job(host, inst, "inst-a", "ok2", &st);
  CHECK_STR(status_of(o), "pending");
  json_decref(o);
  /* another client's event is not found, as an unknown id */
  o = job(host, inst, "inst-b", "ok1", &st);
  CHECK_INT(st, CEB_ENOTFOUND);
  CHECK(o == NULL);
  o = job(host, inst, NULL, "ok1", &st);
  CHECK_INT(st, CEB_ENOTFOUND);
  o = job(host, inst, "inst-a", "nobody", &st);
  CHECK_INT(st, CEB_ENOTFOUND);
  CHECK_INT(host->event_status(inst, "inst-a", NULL, NULL, NULL), CEB_EINVAL);

  /* done: the partner's status and the body the sink handed over */
  testsink_hold(out, 0);
  CHECK_INT(testsink_settle_held(out, CEB_ACK, "ok"), 1);
  job_wait w = {host, inst, "inst-a", "ok2", "done"};
  CHECK(ceb_test_wait(job_is, &w, 10000));
  o = job(host, inst, "inst-a", "ok2", &st);
  json_t *resp = json_object_get(o, "response");
  CHECK_INT(json_integer_value(json_object_get(resp, "status")), 200);
  CHECK_STR(json_string_value(json_object_get(resp, "body")),
            "{\"opleidingseenheidcode\":\"1234\"}");
  json_decref(o);

  /* a 1.0-sized info: done, its (absent) body fields not read */
  CHECK_INT(submit_as(src, "inst-a", "old1", NULL), CEB_OK);
  w.id = "old1";
  CHECK(ceb_test_wait(job_is, &w, 10000));
  o = job(host, inst, "inst-a", "old1", &st);
  CHECK(json_is_null(json_object_get(json_object_get(o, "response"), "body")));
  json_decref(o);

  /* the host keeps at most CEB_SETTLE_BODY_MAX bytes */
  CHECK_INT(submit_as(src, "inst-a", "big1", NULL), CEB_OK);
  w.id = "big1";
  CHECK(ceb_test_wait(job_is, &w, 10000));
  o = job(host, inst, "inst-a", "big1", &st);
  CHECK_INT(strlen(json_string_value(
                json_object_get(json_object_get(o, "response"), "body"))),
            CEB_SETTLE_BODY_MAX);
  json_decref(o);

  /* the body is kept as UTF-8 text: NUL and stray bytes read U+FFFD */
  CHECK_INT(submit_as(src, "inst-a", "bin1", NULL), CEB_OK);
  w.id = "bin1";
  CHECK(ceb_test_wait(job_is, &w, 10000));
  o = job(host, inst, "inst-a", "bin1", &st);
  CHECK_STR(json_string_value(
                json_object_get(json_object_get(o, "response"), "body")),
            "ok\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9");
  json_decref(o);

  /* error: refused by the partner */
  CHECK_INT(submit_as(src, "inst-b", "bad1", NULL), CEB_OK);
  w = (job_wait){host, inst, "inst-b", "bad1", "error"};
  CHECK(ceb_test_wait(job_is, &w, 10000));
  o = job(host, inst, "inst-b", "bad1", &st);
  CHECK_STR(json_string_value(json_object_get(o, "phase")), "delivering");
  CHECK_STR(json_string_value(json_object_get(o, "route")), "r");
  CHECK_STR(json_string_value(json_object_get(o, "message")),
            "http.422: the partner says no");
  json_decref(o);

  /* in-progress while a retry waits; time-out past the deadline (15 s) */
  CHECK_INT(submit_as(src, "inst-c", "never1", NULL), CEB_OK);
  CHECK(harness_wait_state(&h, "never1", "r", "retrying"));
  o = job(host, inst, "inst-c", "never1", &st);
  CHECK_STR(status_of(o), "in-progress");
  json_decref(o);
  harness_advance(&h, 10000);
  w = (job_wait){host, inst, "inst-c", "never1", "time-out"};
  CHECK(ceb_test_wait(job_is, &w, 10000));
  o = job(host, inst, "inst-c", "never1", &st);
  const char *msg = json_string_value(json_object_get(o, "message"));
  CHECK_MSG(msg && strstr(msg, "deadline") && strstr(msg, "http.503"),
            "message: %s", msg ? msg : "(none)");
  json_decref(o);

  /* the status is the store's: the same after a restart */
  CHECK_INT(harness_restart(&h), 0);
  src = harness_source(&h, "in");
  host = testsource_host(src);
  inst = testsource_instance(src);
  o = job(host, inst, "inst-a", "ok2", &st);
  CHECK_STR(status_of(o), "done");
  json_decref(o);
  o = job(host, inst, "inst-c", "never1", &st);
  CHECK_STR(status_of(o), "time-out");
  json_decref(o);

  harness_close(&h);
  free(g_big);
  return ceb_test_done("integration_core_jobs");
}
