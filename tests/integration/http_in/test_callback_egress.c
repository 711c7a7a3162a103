/* The way out of a client's callback, end to end through the real
 * `cebridge run` binary: the address check of the callbacks sink
 * (http_callback_addr_check) must hold for the connection the callback is
 * actually sent on.
 * - A connection kept from the sink's own delivery to its url (an
 *   operator's destination, here cb.localhost, which libcurl resolves to
 *   127.0.0.1 and which is not a loopback name) is not reused to send a
 *   callback to the same host and port: refused, dead-lettered
 *   (callback.address, one attempt), never received.
 * - A proxy from the environment (http_proxy) is not used for callbacks:
 *   through it, the address checked would be the proxy's. The callback
 *   arrives directly; the proxy sees nothing.
 * - The sink's explicit callback_proxy takes every callback, though it
 *   sits on an inner address and the environment's no_proxy names the
 *   client's host; it is a config error (file:line) without callback_urls
 *   or when it is no URL.
 * - handshake = true with callback_urls = true is a config error at its
 *   file:line (cebridge check). */
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

static long post(int port, const char *id, const char *callback) {
  char url[96], body[512], cbh[600];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(body, sizeof body,
           "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":"
           "\"urn:rio-mapper:a\",\"type\":\"nl.rio.programs.upsert\","
           "\"data\":{\"programId\":\"%s\"}}",
           id, id);
  snprintf(cbh, sizeof cbh, "X-Callback: %s", callback ? callback : "");
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              callback ? cbh : NULL, NULL};
  hin_resp r = hin_request(url, "POST", hdrs, body, strlen(body), 0);
  long st = r.status;
  hin_resp_free(&r);
  return st;
}

typedef struct path_wait {
  rx_server *rx;
  const char *prefix;
} path_wait;

static int has_path(void *arg) {
  path_wait *w = arg;
  return rx_count_path(w->rx, w->prefix) >= 1;
}

typedef struct dlq_wait {
  const char *conf;
  int seen;
} dlq_wait;

/* A dead letter of the callbacks route refused for its address after one
 * attempt. */
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
    const char *last = json_string_value(json_object_get(row, "last_reason"));
    if (route && last && strcmp(route, "callbacks") == 0 &&
        strcmp(last, "callback.address") == 0 &&
        json_integer_value(json_object_get(row, "attempts")) == 1)
      k++;
  }
  json_decref(j);
  w->seen = k;
  return k >= 1;
}

static void write_conf(const char *dir, int tport, int rport,
                       const char *proxy) {
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
           "\n[source plain]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/port-plain\n"
           "auth = none\n"
           "\n[source cb]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/port-cb\n"
           "auth = none\n"
           "\n[sink partner]\n"
           "plugin = http\n"
           "url = http://localhost:%d/a\n"
           "allow_insecure_http = true\n"
           "mode = structured\n"
           "\n[sink callbacks]\n"
           "plugin = http\n"
           "url = https://cb.localhost:%d/op\n"
           "tls.ca_file = %s/cb.crt\n"
           "callback_urls = true\n"
           "timeout = 2s\n"
           "webhook.secrets = %s\n"
           "%s%s%s"
           "\n[route op]\n"
           "from = plain\n"
           "to = callbacks\n"
           "\n[route partner]\n"
           "from = cb\n"
           "to = partner\n"
           "\n[route callbacks]\n"
           "from = cb\n"
           "to = callbacks\n"
           "callbacks = true\n"
           "retry.mode = exponential\n"
           "retry.base = 100ms\n"
           "retry.max_delay = 200ms\n"
           "retry.max_attempts = 50\n",
           dir, dir, dir, rport, tport, dir, k_secret,
           proxy ? "callback_proxy = " : "", proxy ? proxy : "",
           proxy ? "\n" : "");
  ceb_test_write_file(path, "00-bridge.conf", text);
}

/* `cebridge check` on a one-sink configuration with extra keys: 1 when it
 * refused it naming key and 00-bridge.conf:line (key NULL: 1 when it
 * accepted it). */
static int check_refuses(const char *dir, const char *sink_extra,
                         const char *key) {
  char path[512], text[1024], cmd[1200], out[8192] = "";
  snprintf(path, sizeof path, "%s/bad", dir);
  mkdir(path, 0700);
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/bad.db\nprofile = off\n"
           "\n[source cb]\nplugin = http\nlisten = 127.0.0.1:0\n"
           "auth = none\n"
           "\n[sink callbacks]\nplugin = http\n"
           "url = https://partner.example/op\n"
           "webhook.secrets = %s\n%s"
           "\n[route callbacks]\nfrom = cb\nto = callbacks\n%s",
           dir, k_secret, sink_extra,
           strstr(sink_extra, "callback_urls") ? "callbacks = true\n" : "");
  ceb_test_write_file(path, "00-bridge.conf", text);
  snprintf(cmd, sizeof cmd, "%s/cebridge check -c %s 2>&1", CEB_TEST_BIN_DIR,
           path);
  FILE *f = popen(cmd, "r");
  size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
  out[n] = '\0';
  int rc = f ? pclose(f) : -1;
  int ok = key ? rc != 0 && strstr(out, key) && strstr(out, "00-bridge.conf:")
               : rc == 0;
  if (!ok)
    fprintf(stderr, "check (%s) said (rc %d): %s\n", key ? key : "ok", rc,
            out);
  return ok;
}

int main(void) {
  char *dir = ceb_test_tmpdir("callback-egress");

  /* a handshake on a callbacks sink would be an OPTIONS request to the
   * first client's URL, unchecked, standing for every other client's:
   * refused at its file:line; callback_proxy is only for callbacks */
  CHECK(check_refuses(dir, "callback_urls = true\nhandshake = true\n",
                      "handshake"));
  CHECK(check_refuses(dir, "callback_urls = true\n", NULL));
  CHECK(check_refuses(dir, "callback_proxy = http://proxy.internal:3128\n",
                      "callback_proxy"));
  CHECK(check_refuses(dir,
                      "callback_urls = true\ncallback_proxy = http://[x\n",
                      "callback_proxy"));

  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "openssl req -x509 -newkey rsa:2048 -nodes -days 2 "
           "-subj /CN=cb.localhost -addext subjectAltName=DNS:cb.localhost "
           "-keyout '%s/cb.key' -out '%s/cb.crt' >/dev/null 2>&1",
           dir, dir);
  CHECK_INT(system(cmd), 0);
  char kp[512], cp[512];
  snprintf(kp, sizeof kp, "%s/cb.key", dir);
  snprintf(cp, sizeof cp, "%s/cb.crt", dir);
  char *key = ceb_test_read_file(kp, NULL), *crt = ceb_test_read_file(cp, NULL);
  CHECK(key && crt);
  rx_server *tx = key && crt ? rx_start_tls(NULL, NULL, key, crt, NULL) : NULL;
  rx_server *rx = rx_start(NULL, NULL);
  rx_server *px = rx_start(NULL, NULL); /* the environment's proxy */
  CHECK(tx && rx && px);
  if (!tx || !rx || !px) return ceb_test_done("integration_callback_egress");

  char conf[512], log[512], pp[512], pc[512];
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(pp, sizeof pp, "%s/port-plain", dir);
  snprintf(pc, sizeof pc, "%s/port-cb", dir);
  char proxy[64];
  snprintf(proxy, sizeof proxy, "http://127.0.0.1:%d", rx_port(px));
  write_conf(dir, rx_port(tx), rx_port(rx), NULL);
  /* the bridge's environment only (the test's own requests go direct) */
  setenv("http_proxy", proxy, 1);
  setenv("https_proxy", proxy, 1);
  setenv("no_proxy", "cb.localhost,localhost", 1);
  pid_t pid = ceb_test_bridge_start(conf, log);
  unsetenv("http_proxy");
  unsetenv("https_proxy");
  unsetenv("no_proxy");
  int plain = ceb_test_wait_port_file(pp, 15000);
  int cb = ceb_test_wait_port_file(pc, 15000);
  CHECK(plain > 0 && cb > 0);

  /* the sink's own delivery opens (and keeps) a connection to
   * cb.localhost, an address a callback may not reach by that name */
  CHECK_INT(post(plain, "op-1", NULL), 202);
  path_wait wop = {tx, "/op"};
  CHECK_MSG(ceb_test_wait(has_path, &wop, 60000), "the operator delivery");

  /* a callback to the same host and port: refused, not sent on it */
  char url[256];
  snprintf(url, sizeof url, "https://cb.localhost:%d/cb/r-1", rx_port(tx));
  CHECK_INT(post(cb, "r-1", url), 202);
  dlq_wait dw = {conf, 0};
  CHECK_MSG(ceb_test_wait(dlq_has, &dw, 60000),
            "no callback.address dead letter for the kept connection");
  CHECK_INT((int)rx_count_path(tx, "/cb/"), 0);

  /* a proxy from the environment is not a callback's way out */
  snprintf(url, sizeof url, "http://127.0.0.1:%d/cb/p-1", rx_port(rx));
  CHECK_INT(post(cb, "p-1", url), 202);
  path_wait wp = {rx, "/cb/p-1"};
  CHECK_MSG(ceb_test_wait(has_path, &wp, 60000), "the callback, directly");
  CHECK_INT((int)rx_count(px), 0);

  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  char *text = ceb_test_read_file(log, NULL);
  CHECK_MSG(text && strstr(text, "127.0.0.1, a loopback"),
            "the log does not name the refusal");
  if (ceb_test_failures) fprintf(stderr, "--- log ---\n%s\n", text ? text : "");
  free(text);

  /* the operator's explicit callback_proxy is the way out, for every
   * callback: the proxy sits on an inner address (here loopback, for a URL
   * that names no loopback host), which the address check would refuse,
   * and the environment's no_proxy naming the client's host does not
   * send it round the proxy (direct, it would go unchecked) */
  write_conf(dir, rx_port(tx), rx_port(rx), proxy);
  unlink(pp);
  unlink(pc);
  setenv("no_proxy", "cb.localhost,127.0.0.1", 1);
  pid = ceb_test_bridge_start(conf, log);
  unsetenv("no_proxy");
  CHECK((cb = ceb_test_wait_port_file(pc, 15000)) > 0);
  snprintf(url, sizeof url, "https://cb.localhost:%d/cb/q-1", rx_port(tx));
  CHECK_INT(post(cb, "q-1", url), 202);
  path_wait wq = {px, ""};
  CHECK_MSG(ceb_test_wait(has_path, &wq, 60000), "the callback, proxied");
  const rx_request *pq = rx_get(px, 0);
  CHECK_MSG(pq && strcmp(pq->method, "CONNECT") == 0 &&
                strstr(pq->path, "cb.localhost"),
            "the proxy was not asked for cb.localhost: %s %s",
            pq ? pq->method : "-", pq ? pq->path : "-");
  CHECK_INT((int)rx_count_path(tx, "/cb/q-1"), 0);
  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);
  text = ceb_test_read_file(log, NULL);
  if (ceb_test_failures) fprintf(stderr, "--- log ---\n%s\n", text ? text : "");
  free(text);
  rx_stop(px);
  rx_stop(rx);
  rx_stop(tx);
  free(key);
  free(crt);
  free(dir);
  return ceb_test_done("integration_callback_egress");
}
