/* Callbacks are requests the bridge makes on a client's behalf, to a URL the
 * client chose: the guards against server-side request forgery, end to end
 * through the real `cebridge run` binary.
 * - callback_allow: an X-Callback outside the listed prefixes (another path,
 *   a dot-segment escape, one percent-encoded (%2e%2e, ..%2F), another
 *   host, a prefix that does not end at a segment) is 400 problem+json
 *   callback.invalid; one inside is served.
 * - At connect time: a callback whose address is a metadata service
 *   (169.254.169.254) or a private network (10.0.0.0/8) is refused by the
 *   sink before any connection, dead-lettered on the callbacks route
 *   (rejected, last reason callback.address) after its one attempt.
 * - A callback_allow item that is not a URL prefix is a config error naming
 *   the key and its file:line (cebridge check). */
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ceb_test_proc.h"
#include "ceb_test_rx.h"
#include "hin_harness.h"

static const char k_secret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

static void handler(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)req;
  (void)index;
  resp->status = 200;
}

/* The code and detail of the last 400 post() got. */
static char g_code[64], g_detail[256];

static long post(int port, const char *id, const char *callback) {
  char url[96], body[512], cbh[600];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":"
           "\"urn:rio-mapper:a\",\"type\":\"nl.rio.programs.upsert\","
           "\"data\":{\"programId\":\"%s\"}}",
           id, id);
  snprintf(cbh, sizeof cbh, "X-Callback: %s", callback);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json", cbh,
                              NULL};
  hin_resp r = hin_request(url, "POST", hdrs, body, strlen(body), 0);
  long st = r.status;
  if (st == 400) {
    char ct[128] = "";
    hin_header(&r, "Content-Type", ct, sizeof ct);
    CHECK_STR(ct, "application/problem+json");
    json_t *p = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    const char *detail = json_string_value(json_object_get(p, "detail"));
    const char *code = json_string_value(json_object_get(p, "code"));
    snprintf(g_code, sizeof g_code, "%s", code ? code : "");
    snprintf(g_detail, sizeof g_detail, "%s", detail ? detail : "");
    CHECK_MSG(detail && strstr(detail, "X-Callback"), "detail: %s",
              detail ? detail : "(none)");
    json_decref(p);
  }
  hin_resp_free(&r);
  return st;
}

static void write_conf(const char *dir, int rport, const char *allow_extra) {
  char path[512];
  snprintf(path, sizeof path, "%s/conf", dir);
  mkdir(path, 0700);
  char text[4096];
  snprintf(text, sizeof text,
           "[bridge]\n"
           "store = %s/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "log.format = text\n"
           "profile = off\n"
           "drain_timeout = 5s\n"
           "\n[source allowed]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/port-allowed\n"
           "auth = none\n"
           "callback_allow = http://127.0.0.1:%d/cb/%s\n"
           "\n[source open]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/port-open\n"
           "auth = none\n"
           "\n[sink partner]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:%d/a\n"
           "allow_insecure_http = true\n"
           "mode = structured\n"
           "\n[sink callbacks]\n"
           "plugin = http\n"
           "url = https://callbacks.invalid/\n"
           "callback_urls = true\n"
           "timeout = 2s\n"
           "webhook.secrets = %s\n"
           "\n[route partner]\n"
           "from = allowed, open\n"
           "to = partner\n"
           "\n[route callbacks]\n"
           "from = allowed, open\n"
           "to = callbacks\n"
           "callbacks = true\n"
           "retry.mode = exponential\n"
           "retry.base = 100ms\n"
           "retry.max_delay = 200ms\n"
           "retry.max_attempts = 50\n",
           dir, dir, rport, allow_extra, dir, rport, k_secret);
  ceb_test_write_file(path, "00-bridge.conf", text);
}

/* Dead letters of the callbacks route refused for their address. */
typedef struct dlq_wait {
  const char *conf;
  int want;
  int seen;
} dlq_wait;

static int dlq_has(void *arg) {
  dlq_wait *w = arg;
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "%s/cebridge dlq list -c %s --json 2>/dev/null",
           CEB_TEST_BIN_DIR, w->conf);
  FILE *f = popen(cmd, "r");
  if (!f) return 0;
  char buf[16384];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  pclose(f);
  buf[n] = '\0';
  json_t *j = json_loads(buf, 0, NULL);
  json_t *rows = json_is_array(j) ? j : json_object_get(j, "rows");
  size_t i;
  json_t *row;
  int k = 0;
  json_array_foreach(rows, i, row) {
    const char *route = json_string_value(json_object_get(row, "route"));
    const char *reason = json_string_value(json_object_get(row, "reason"));
    const char *last = json_string_value(json_object_get(row, "last_reason"));
    /* refused at once: one attempt, no retry */
    if (route && reason && last && strcmp(route, "callbacks") == 0 &&
        strcmp(reason, "rejected") == 0 &&
        strcmp(last, "callback.address") == 0 &&
        json_integer_value(json_object_get(row, "attempts")) == 1)
      k++;
  }
  json_decref(j);
  w->seen = k;
  return k >= w->want;
}

int main(void) {
  char *dir = ceb_test_tmpdir("callback-guard");
  rx_server *rx = rx_start(handler, NULL);
  CHECK(rx != NULL);
  if (!rx) return ceb_test_done("integration_callback_guard");
  int rport = rx_port(rx);
  char conf[512], log[512], pa[512], po[512];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(pa, sizeof pa, "%s/port-allowed", dir);
  snprintf(po, sizeof po, "%s/port-open", dir);

  /* a callback_allow item that is not a URL prefix: a config error at its
   * file:line */
  write_conf(dir, rport, " ftp://x/");
  {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "%s/cebridge check -c %s 2>&1", CEB_TEST_BIN_DIR,
             conf);
    FILE *f = popen(cmd, "r");
    char out[8192] = "";
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = '\0';
    int rc = f ? pclose(f) : -1;
    CHECK_MSG(rc != 0, "check accepted callback_allow = ftp://x/");
    CHECK_MSG(strstr(out, "callback_allow") && strstr(out, "00-bridge.conf:"),
              "check said: %s", out);
  }

  write_conf(dir, rport, "");
  pid_t pid = ceb_test_bridge_start(conf, log);
  int allowed = ceb_test_wait_port_file(pa, 15000);
  int open = ceb_test_wait_port_file(po, 15000);
  CHECK(allowed > 0 && open > 0);

  /* callback_allow */
  char url[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/cb/g-1", rport);
  CHECK_INT(post(allowed, "g-1", url), 202);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/other", rport);
  CHECK_INT(post(allowed, "x-1", url), 400);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/cb/../admin", rport);
  CHECK_INT(post(allowed, "x-2", url), 400);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/cbx", rport);
  CHECK_INT(post(allowed, "x-3", url), 400);
  snprintf(url, sizeof url, "http://127.0.0.2:%d/cb/g-1", rport);
  CHECK_INT(post(allowed, "x-4", url), 400);
  CHECK_INT(post(allowed, "x-5", "https://rio.example.nl/cb/"), 400);
  /* under the prefix as sent, the parent once a server decodes it */
  snprintf(url, sizeof url, "http://127.0.0.1:%d/cb/%%2e%%2e/admin", rport);
  CHECK_INT(post(allowed, "x-6", url), 400);
  CHECK_STR(g_code, "callback.invalid");
  CHECK_MSG(strstr(g_detail, "percent-encoded '.'"), "detail: %s", g_detail);
  snprintf(url, sizeof url, "http://127.0.0.1:%d/cb/..%%2Fadmin", rport);
  CHECK_INT(post(allowed, "x-7", url), 400);
  CHECK_STR(g_code, "callback.invalid");
  CHECK_MSG(rx_wait_exact(rx, "/cb/g-1", 1, 60000), "the allowed callback");

  /* inner addresses: refused at connect, dead-lettered, not retried */
  CHECK_INT(post(open, "m-1", "https://169.254.169.254/latest/meta-data/"),
            202);
  CHECK_INT(post(open, "p-1", "https://10.255.0.1:9/hook"), 202);
  dlq_wait dw = {conf, 2, 0};
  CHECK_MSG(ceb_test_wait(dlq_has, &dw, 60000),
            "%d callback.address dead letters, want 2", dw.seen);
  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  char *text = ceb_test_read_file(log, NULL);
  CHECK_MSG(text && strstr(text, "169.254.169.254, a link-local") &&
                strstr(text, "10.255.0.1, a private"),
            "the log names neither refusal");
  /* the events themselves reached the partner */
  CHECK_INT((int)rx_count_exact(rx, "/a"), 3);
  if (ceb_test_failures) fprintf(stderr, "--- log ---\n%s\n", text ? text : "");
  free(text);
  rx_stop(rx);
  free(dir);
  return ceb_test_done("integration_callback_guard");
}
