/* The CloudEvents 1.0.2 String rule over real HTTP, through the real
 * `cebridge run` binary: a control character (or a C1 control, a
 * noncharacter) in subject or an extension, sent in structured mode (a JSON
 * \u escape), binary mode (a percent-encoded ce-* header), batch mode or
 * through the source's jq map, is refused with 422 application/problem+json
 * whose errors name the attribute and ce.attr.string; nothing of it is
 * journaled (`cebridge status` knows none of the ids), while a clean event
 * beside them is. */
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "ceb_test_proc.h"
#include "hin_harness.h"

#define CT_JSON "Content-Type: application/cloudevents+json"
#define CT_BATCH "Content-Type: application/cloudevents-batch+json"

static void write_conf(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/conf", dir);
  mkdir(path, 0700);
  char text[2048];
  snprintf(text, sizeof text,
           "[bridge]\n"
           "store = %s/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "log.format = text\n"
           "profile = off\n"
           "\n[source intermediary]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/port\n"
           "auth = none\n"
           "\n[source mapped]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/mapped.port\n"
           "auth = none\n"
           "map = {specversion: \"1.0\", id: .body.id, source: \"urn:t\", "
           "type: \"nl.edu.mapped\", subject: .body.subject}\n"
           "\n[sink outbox]\n"
           "plugin = pull\n"
           "listen = 127.0.0.1:0\n"
           "auth = none\n"
           "\n[route all]\n"
           "from = intermediary, mapped\n"
           "to = outbox\n",
           dir, dir, dir);
  ceb_test_write_file(path, "00-bridge.conf", text);
}

/* POSTs and expects a 422 problem whose errors[] holds `code` on
 * `attribute` (and no raw control byte anywhere in the body). */
static void refused(const char *what, const char *url, const char *const *hdrs,
                    const char *body, const char *attribute, const char *code) {
  hin_resp r = hin_request(url, "POST", hdrs, body, strlen(body), 0);
  CHECK_MSG(r.status == 422, "%s: status %ld: %.*s", what, r.status, (int)r.len,
            r.body ? r.body : "");
  char ct[128];
  const char *t = hin_header(&r, "Content-Type", ct, sizeof ct);
  CHECK_MSG(t && strcmp(t, "application/problem+json") == 0, "%s: type %s",
            what, t ? t : "(none)");
  json_t *j = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
  json_t *errs = json_object_get(j, "errors");
  int found = 0;
  size_t i;
  json_t *e;
  json_array_foreach(errs, i, e) {
    const char *a = json_string_value(json_object_get(e, "attribute"));
    const char *c = json_string_value(json_object_get(e, "code"));
    const char *m = json_string_value(json_object_get(e, "message"));
    if (a && c && m && !strcmp(a, attribute) && !strcmp(c, code) &&
        strstr(m, "U+"))
      found = 1;
  }
  CHECK_MSG(found, "%s: no %s on '%s' in %.*s", what, code, attribute,
            (int)r.len, r.body ? r.body : "");
  for (size_t k = 0; k < r.len; k++)
    CHECK_MSG((unsigned char)r.body[k] >= 0x20, "%s: raw control byte", what);
  json_decref(j);
  hin_resp_free(&r);
}

/* Runs `cebridge status -c conf id`; its exit status (0: journaled). */
static int status_of(const char *conf, const char *dir, const char *id) {
  char bin[1024], out[600];
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  snprintf(out, sizeof out, "%s/status.txt", dir);
  char *argv[] = {bin, "status", "-c", (char *)conf, (char *)id, NULL};
  ceb_proc p;
  if (ceb_proc_start(&p, argv, out) != 0) return -1;
  return ceb_proc_stop(&p, 0, 60000);
}

static const char *k_refused_ids[] = {"s-tab", "s-ext",   "b-sub", "b-ext",
                                      "b-nel", "batch-1", "m-tab"};

int main(void) {
  char *dir = ceb_test_tmpdir("ce_string");
  char conf[512], log[512], port[512], mport[512];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(port, sizeof port, "%s/port", dir);
  snprintf(mport, sizeof mport, "%s/mapped.port", dir);
  write_conf(dir);
  pid_t pid = ceb_test_bridge_start(conf, log);
  int p = ceb_test_wait_port_file(port, 15000);
  int mp = ceb_test_wait_port_file(mport, 15000);
  CHECK(p > 0 && mp > 0);
  char url[128], murl[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", p);
  snprintf(murl, sizeof murl, "http://127.0.0.1:%d/events", mp);

  /* structured: a JSON escape decodes to a real tab, or U+FFFF */
  const char *const sh[] = {CT_JSON, NULL};
  refused("structured subject", url, sh,
          "{\"specversion\":\"1.0\",\"id\":\"s-tab\",\"source\":\"urn:t\","
          "\"type\":\"nl.edu.x\",\"subject\":\"a\\u0009b\"}",
          "subject", "ce.attr.string");
  refused("structured extension", url, sh,
          "{\"specversion\":\"1.0\",\"id\":\"s-ext\",\"source\":\"urn:t\","
          "\"type\":\"nl.edu.x\",\"myext\":\"x\\uffff\"}",
          "myext", "ce.attr.string");
  /* binary: percent-decoded per the HTTP binding */
  const char *const bh1[] = {"Content-Type: application/json",
                             "ce-specversion: 1.0",
                             "ce-id: b-sub",
                             "ce-source: urn:t",
                             "ce-type: nl.edu.x",
                             "ce-subject: a%09b",
                             NULL};
  refused("binary subject", url, bh1, "{}", "subject", "ce.attr.string");
  const char *const bh2[] = {"Content-Type: application/json",
                             "ce-specversion: 1.0",
                             "ce-id: b-ext",
                             "ce-source: urn:t",
                             "ce-type: nl.edu.x",
                             "ce-myext: %1B[2J",
                             NULL};
  refused("binary extension", url, bh2, "{}", "myext", "ce.attr.string");
  const char *const bh3[] = {"Content-Type: application/json",
                             "ce-specversion: 1.0",
                             "ce-id: b-nel",
                             "ce-source: urn:t",
                             "ce-type: nl.edu.x",
                             "ce-myext: a%C2%85b", /* U+0085 (NEL) */
                             NULL};
  refused("binary C1", url, bh3, "{}", "myext", "ce.attr.string");
  /* batch: taken or refused whole */
  const char *const bh[] = {CT_BATCH, NULL};
  refused("batch", url, bh,
          "[{\"specversion\":\"1.0\",\"id\":\"batch-0\",\"source\":\"urn:t\","
          "\"type\":\"nl.edu.x\"},"
          "{\"specversion\":\"1.0\",\"id\":\"batch-1\",\"source\":\"urn:t\","
          "\"type\":\"nl.edu.x\",\"subject\":\"\\u001b[31m\"}]",
          "subject", "ce.attr.string");
  /* the source's jq map makes the event: the host validates its output */
  const char *const mh[] = {"Content-Type: application/json", NULL};
  refused("mapped", murl, mh, "{\"id\":\"m-tab\",\"subject\":\"a\\tb\"}",
          "subject", "ce.attr.string");

  /* a clean event beside them is taken, on both sources */
  const char *okbody = "{\"specversion\":\"1.0\",\"id\":\"ok-1\","
                       "\"source\":\"urn:t\",\"type\":\"nl.edu.x\","
                       "\"subject\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}";
  hin_resp r = hin_request(url, "POST", sh, okbody, strlen(okbody), 0);
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);
  const char *mbody = "{\"id\":\"m-ok\",\"subject\":\"a b\"}";
  r = hin_request(murl, "POST", mh, mbody, strlen(mbody), 0);
  CHECK_INT(r.status, 202);
  hin_resp_free(&r);

  /* nothing refused was journaled: a 202 is answered only once durable,
   * so the clean events are in the store by now */
  CHECK_INT(status_of(conf, dir, "ok-1"), 0);
  CHECK_INT(status_of(conf, dir, "m-ok"), 0);
  CHECK_MSG(status_of(conf, dir, "batch-0") != 0,
            "the batch's valid event was journaled");
  for (size_t i = 0; i < sizeof k_refused_ids / sizeof k_refused_ids[0]; i++)
    CHECK_MSG(status_of(conf, dir, k_refused_ids[i]) != 0, "%s was journaled",
              k_refused_ids[i]);

  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  if (ceb_test_failures) {
    char *text = ceb_test_read_file(log, NULL);
    fprintf(stderr, "--- log ---\n%s\n", text ? text : "");
    free(text);
  }
  free(dir);
  return ceb_test_done("integration_ce_string");
}
