/* The admin API cannot be driven from a web page or without its token
 * (issue 16 C3), with the real binary:
 *  - the first start creates the token file (0600, 64 hex digits) beside
 *    the store, the log never shows the token, a restart reuses it;
 *  - a cross-site POST (foreign Origin) and a DNS-rebound Host get 403
 *    problem+json even with the token, and purge nothing;
 *  - a missing or wrong token gets 401 with WWW-Authenticate;
 *  - the right token works, /healthz /readyz /metrics stay open to probes;
 *  - `cebridge admin` finds the token (file, or CEBRIDGE_ADMIN_TOKEN);
 *  - a token file others may read is refused at start;
 *  - admin.listen on a non-loopback address without admin.token is refused
 *    by `check` (file:line) and by `run`;
 *  - the operator console's files (/ui/) need no token but keep the Host and
 *    Origin checks and the strict CSP, and nothing else is served there;
 *    /v1/routes' last-minute figures, /v1/dlq's until, an event's timeline
 *    and the contract document / diff endpoints answer as documented. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

static char g_dir[512], g_conf[600], g_token[600];
static int g_port;

typedef struct reply {
  int status;
  char www_auth[256];
  char ctype[128];
  char csp[512];
  char nosniff[64];
  char location[128];
  char *body;
} reply;

static size_t on_header(char *p, size_t size, size_t n, void *arg) {
  reply *r = arg;
  size_t len = size * n;
  char line[512];
  snprintf(line, sizeof line, "%.*s", (int)(len < 511 ? len : 511), p);
  line[strcspn(line, "\r\n")] = '\0';
  if (strncasecmp(line, "WWW-Authenticate: ", 18) == 0)
    snprintf(r->www_auth, sizeof r->www_auth, "%.200s", line + 18);
  if (strncasecmp(line, "Content-Type: ", 14) == 0)
    snprintf(r->ctype, sizeof r->ctype, "%.100s", line + 14);
  if (strncasecmp(line, "Content-Security-Policy: ", 25) == 0)
    snprintf(r->csp, sizeof r->csp, "%.400s", line + 25);
  if (strncasecmp(line, "X-Content-Type-Options: ", 24) == 0)
    snprintf(r->nosniff, sizeof r->nosniff, "%.40s", line + 24);
  if (strncasecmp(line, "Location: ", 10) == 0)
    snprintf(r->location, sizeof r->location, "%.100s", line + 10);
  return len;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg) {
  reply *r = arg;
  size_t len = size * n, old = r->body ? strlen(r->body) : 0;
  char *nb = realloc(r->body, old + len + 1);
  if (!nb) return 0;
  memcpy(nb + old, p, len);
  nb[old + len] = '\0';
  r->body = nb;
  return len;
}

/* One request to the admin API; h1/h2 extra headers (may be NULL). */
static reply req(const char *method, const char *path, const char *h1,
                 const char *h2) {
  reply r = {-1, "", "", "", "", "", NULL};
  char url[512];
  snprintf(url, sizeof url, "http://127.0.0.1:%d%s", g_port, path);
  CURL *c = curl_easy_init();
  struct curl_slist *hl = NULL;
  if (h1) hl = curl_slist_append(hl, h1);
  if (h2) hl = curl_slist_append(hl, h2);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  if (strcmp(method, "POST") == 0) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
  }
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
  if (curl_easy_perform(c) == CURLE_OK) {
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    r.status = (int)code;
  }
  curl_slist_free_all(hl);
  curl_easy_cleanup(c);
  return r;
}

static char g_bearer[700];

/* Dead letters of route r, -1 when the list cannot be read. */
static int dlq_count(void) {
  reply r = req("GET", "/v1/dlq?route=r", g_bearer, NULL);
  int n = -1;
  json_t *doc = r.status == 200 && r.body ? json_loads(r.body, 0, NULL) : NULL;
  if (json_is_array(doc)) n = (int)json_array_size(doc);
  json_decref(doc);
  free(r.body);
  return n;
}

static int three_dead(void *arg) {
  (void)arg;
  return dlq_count() == 3;
}

static int write_conf(const char *dir, const char *extra) {
  char text[2048];
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/var/store.db\n%s"
           "admin.port_file = %s/admin.port\n"
           "[source gen]\nplugin = testsource\ncount = 3\n"
           "[sink out]\nplugin = testsink\nmode = reject\n"
           "[route r]\nfrom = gen\nto = out\nretry.max_attempts = 1\n",
           g_dir, extra, g_dir);
  return ceb_test_write_file(dir, "bridge.conf", text);
}

static int start(ceb_proc *p, const char *log_name) {
  char log[700], port[700], bin[600];
  snprintf(log, sizeof log, "%s/%s", g_dir, log_name);
  snprintf(port, sizeof port, "%s/admin.port", g_dir);
  unlink(port);
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *argv[] = {bin, "run", "-c", g_conf, "--plugin-dir", CEB_PLUGIN_PATH,
                  NULL};
  if (ceb_proc_start(p, argv, log) != 0) return -1;
  return ceb_test_wait_port_file(port, 30000);
}

/* Runs `cebridge ARGS...` to its end; returns the exit status, output in
 * g_dir/name. */
static int cli(const char *name, char *const *args) {
  char log[700], bin[600];
  snprintf(log, sizeof log, "%s/%s", g_dir, name);
  unlink(log);
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *argv[16] = {bin};
  int n = 1;
  for (; args[n - 1] && n < 15; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  ceb_proc p;
  if (ceb_proc_start(&p, argv, log) != 0) return -1;
  return ceb_proc_stop(&p, 0, 60000);
}

static int file_has(const char *name, const char *needle) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", g_dir, name);
  char *text = ceb_test_read_file(path, NULL);
  int has = text && strstr(text, needle) != NULL;
  free(text);
  return has;
}

static void token_file(void) {
  struct stat st;
  CHECK_MSG(stat(g_token, &st) == 0, "no token file %s", g_token);
  CHECK_INT(st.st_mode & 07777, 0600);
  char *t = ceb_test_read_file(g_token, NULL);
  CHECK(t != NULL);
  size_t n = t ? strspn(t, "0123456789abcdef") : 0;
  CHECK_INT(n, 64);
  if (t) {
    t[n] = '\0';
    snprintf(g_bearer, sizeof g_bearer, "Authorization: Bearer %s", t);
  }
  free(t);
}

static void refused(reply r, int status, const char *code) {
  CHECK_INT(r.status, status);
  CHECK_STR(r.ctype, "application/problem+json");
  CHECK_MSG(r.body && strstr(r.body, code), "body %s", r.body ? r.body : "");
  free(r.body);
}

static void guarded_api(void) {
  CHECK_MSG(ceb_test_wait(three_dead, NULL, 30000), "dead letters: %d",
            dlq_count());
  const char *purge = "/v1/dlq/purge?route=r&confirm=true";
  /* cross-site: a page's POST, with or without the token */
  refused(req("POST", purge, "Origin: http://evil.example", g_bearer), 403,
          "foreign_origin");
  refused(req("POST", purge, "Origin: http://evil.example", NULL), 403,
          "foreign_origin");
  refused(req("POST", purge, "Origin: null", g_bearer), 403, "foreign_origin");
  /* DNS rebinding: the page's own name in Host */
  char host[128];
  snprintf(host, sizeof host, "Host: evil.example:%d", g_port);
  refused(req("POST", purge, host, g_bearer), 403, "foreign_host");
  refused(req("GET", "/v1/dlq?route=r", host, g_bearer), 403, "foreign_host");
  CHECK_INT(dlq_count(), 3);

  /* no token, a wrong one: 401 with the challenge */
  reply r = req("POST", purge, NULL, NULL);
  CHECK_STR(r.www_auth, "Bearer realm=\"cebridge-admin\"");
  refused(r, 401, "unauthorized");
  r = req("GET", "/v1/routes", "Authorization: Bearer 00", NULL);
  CHECK_STR(r.www_auth, "Bearer realm=\"cebridge-admin\"");
  refused(r, 401, "unauthorized");
  CHECK_INT(dlq_count(), 3);

  /* probes and scrapers: no token, any Host */
  const char *open[] = {"/healthz", "/readyz", "/metrics"};
  for (int i = 0; i < 3; i++) {
    r = req("GET", open[i], "Host: 10.1.2.3:9", NULL);
    CHECK_MSG(r.status == 200, "%s answered %d", open[i], r.status);
    free(r.body);
  }
  /* the listener's own origin with the token is fine */
  char own[128];
  snprintf(own, sizeof own, "Origin: http://127.0.0.1:%d", g_port);
  r = req("POST", "/v1/dlq/replay?route=r&dry_run=true", own, g_bearer);
  CHECK_INT(r.status, 200);
  free(r.body);
}

/* ---- request bodies: refused from the head, never read to refuse ---- */

/* A connection to the admin API whose reads give up after 20 s (the
 * listener's idle timeout is 30 s: a reply must come long before). */
static int admin_connect(void) {
  return ceb_test_tcp_connect(g_port, 20);
}

/* Sends head (a request head announcing a body that is never sent) and
 * reads what comes back before the read times out; "" when nothing. */
static void head_only(const char *head, char *out, size_t size) {
  out[0] = '\0';
  int fd = admin_connect();
  CHECK(fd >= 0);
  if (fd < 0) return;
  CHECK_INT(ceb_test_send_all(fd, head, strlen(head)), 0);
  size_t len = 0;
  ssize_t n;
  while (len + 1 < size && (n = recv(fd, out + len, size - 1 - len, 0)) > 0) {
    len += (size_t)n;
    out[len] = '\0';
    if (strstr(out, "\r\n\r\n") && strchr(strstr(out, "\r\n\r\n"), '}')) break;
  }
  close(fd);
}

/* A request announcing a gigabyte body is answered from its head at once:
 * without the token 401, with a foreign Origin 403, with the token 413
 * (the admin API takes no bodies); a chunked body streamed on is cut off
 * instead of read for ever. On the code before, each waited for the body
 * (a client without the token could hold a connection and feed it). */
static void bodies_refused(void) {
  char head[1024], got[4096];
  snprintf(head, sizeof head,
           "POST /v1/dlq/purge?route=r&confirm=true HTTP/1.1\r\n"
           "Host: 127.0.0.1:%d\r\nContent-Length: 1000000000\r\n\r\n",
           g_port);
  head_only(head, got, sizeof got);
  CHECK_MSG(strncmp(got, "HTTP/1.1 401", 12) == 0, "got '%.80s'", got);
  CHECK(strstr(got, "application/problem+json") != NULL);

  snprintf(head, sizeof head,
           "POST /v1/dlq/purge?route=r&confirm=true HTTP/1.1\r\n"
           "Host: 127.0.0.1:%d\r\nOrigin: http://evil.example\r\n"
           "Content-Length: 1000000000\r\n\r\n",
           g_port);
  head_only(head, got, sizeof got);
  CHECK_MSG(strncmp(got, "HTTP/1.1 403", 12) == 0, "got '%.80s'", got);

  snprintf(head, sizeof head,
           "POST /v1/dlq/replay?route=r&dry_run=true HTTP/1.1\r\n"
           "Host: 127.0.0.1:%d\r\n%s\r\n"
           "Content-Length: 1000000000\r\n\r\n",
           g_port, g_bearer);
  head_only(head, got, sizeof got);
  CHECK_MSG(strncmp(got, "HTTP/1.1 413", 12) == 0, "got '%.80s'", got);
  CHECK(strstr(got, "body.unsupported") != NULL);

  /* chunked with the token: cut off after a bounded amount */
  int fd = admin_connect();
  CHECK(fd >= 0);
  if (fd >= 0) {
    snprintf(head, sizeof head,
             "POST /v1/dlq/replay?route=r&dry_run=true HTTP/1.1\r\n"
             "Host: 127.0.0.1:%d\r\n%s\r\n"
             "Transfer-Encoding: chunked\r\n\r\n",
             g_port, g_bearer);
    int cut = ceb_test_send_all(fd, head, strlen(head)) != 0;
    static char chunk[16 * 1024 + 16];
    int hl = snprintf(chunk, sizeof chunk, "4000\r\n");
    memset(chunk + hl, 'x', 16 * 1024);
    memcpy(chunk + hl + 16 * 1024, "\r\n", 2);
    size_t clen = (size_t)hl + 16 * 1024 + 2;
    /* 1 MiB, 16 times the limit, then silence: the server must have
     * closed (end of stream or a reset), not be waiting for more */
    for (int i = 0; i < 64 && !cut; i++)
      cut = ceb_test_send_all(fd, chunk, clen) != 0;
    char b[512];
    ssize_t n = 0;
    int err = 0;
    while ((n = recv(fd, b, sizeof b, 0)) > 0) {
    }
    err = n < 0 ? errno : 0;
    CHECK_MSG(n == 0 || err == ECONNRESET,
              "1 MiB of body were read without closing (recv %zd, %s)", n,
              strerror(err));
    close(fd);
  }
  CHECK_INT(dlq_count(), 3);
}

/* The operator console's files: served without a token (they hold no
 * data) with the strict CSP, Host and Origin still checked, nothing but
 * the embedded names served; the /v1/ additions it is built on. */
static void console_api(void) {
  reply r = req("GET", "/ui/", NULL, NULL);
  CHECK_INT(r.status, 200);
  CHECK_STR(r.ctype, "text/html; charset=utf-8");
  CHECK_MSG(strstr(r.csp, "script-src 'self'") &&
                strstr(r.csp, "default-src 'none'") &&
                strstr(r.csp, "frame-ancestors 'none'") &&
                !strstr(r.csp, "unsafe-inline"),
            "CSP: %s", r.csp);
  CHECK_STR(r.nosniff, "nosniff");
  CHECK(r.body && strstr(r.body, "<script type=\"module\" src=\"app.js\">"));
  CHECK(r.body && !strstr(r.body, "<script>") && !strstr(r.body, "style="));
  free(r.body);
  r = req("GET", "/ui/app.js", NULL, NULL);
  CHECK_INT(r.status, 200);
  CHECK_STR(r.ctype, "text/javascript; charset=utf-8");
  free(r.body);
  r = req("GET", "/ui", NULL, NULL);
  CHECK_INT(r.status, 302);
  CHECK_STR(r.location, "/ui/");
  free(r.body);
  char host[128];
  snprintf(host, sizeof host, "Host: evil.example:%d", g_port);
  refused(req("GET", "/ui/", host, NULL), 403, "foreign_host");
  refused(req("GET", "/ui/app.js", "Origin: http://evil.example", NULL), 403,
          "foreign_origin");
  refused(req("GET", "/ui/nope.js", NULL, NULL), 404, "not_found");
  refused(req("GET", "/ui/%2e%2e/%2e%2e/etc/passwd", NULL, NULL), 404,
          "not_found");
  refused(req("GET", "/ui/app.js%00.html", NULL, NULL), 400, "url.invalid");
  refused(req("GET", "/ui/app.js%0A", NULL, NULL), 400, "url.invalid");
  refused(req("POST", "/ui/", NULL, NULL), 401, "unauthorized");
  /* the API's answers carry the policy too */
  r = req("GET", "/v1/routes", g_bearer, NULL);
  CHECK_INT(r.status, 200);
  CHECK(strstr(r.csp, "default-src 'none'") != NULL);
  json_t *doc = r.body ? json_loads(r.body, 0, NULL) : NULL;
  json_t *route = json_array_get(doc, 0);
  /* three attempts refused by the sink within the last minute */
  CHECK_INT(json_integer_value(json_object_get(route, "failed_1m")), 3);
  CHECK_INT(json_integer_value(json_object_get(route, "delivered_1m")), 0);
  CHECK(json_real_value(json_object_get(route, "failure_rate")) == 1.0);
  CHECK(json_is_real(json_object_get(route, "throughput_per_s")));
  json_decref(doc);
  free(r.body);

  /* the time range of the dead-letter list */
  r = req("GET", "/v1/dlq?route=r&until=2h", g_bearer, NULL);
  CHECK(r.status == 200 && r.body && strcmp(r.body, "[]") == 0);
  free(r.body);
  r = req("GET", "/v1/dlq?route=r&since=1h&until=2999-01-01T00:00:00Z",
          g_bearer, NULL);
  doc = r.body ? json_loads(r.body, 0, NULL) : NULL;
  CHECK_INT(json_array_size(doc), 3);
  const char *id =
      json_string_value(json_object_get(json_array_get(doc, 0), "event_id"));
  char path[512];
  snprintf(path, sizeof path, "/v1/events/%s/timeline", id ? id : "none");
  free(r.body);
  refused(req("GET", "/v1/dlq?until=yesterday", g_bearer, NULL), 400,
          "'until'");

  /* one dead event's timeline: received, its attempt, dead-lettered */
  r = req("GET", path, g_bearer, NULL);
  CHECK_INT(r.status, 200);
  json_t *tl = NULL;
  if (r.body) {
    json_t *t = json_loads(r.body, 0, NULL);
    tl = json_incref(json_object_get(
        json_array_get(json_object_get(t, "events"), 0), "timeline"));
    json_decref(t);
  }
  const char *want[] = {"received", "attempt", "dead_lettered", "settled"};
  CHECK_INT(json_array_size(tl), 4);
  for (size_t i = 0; i < 4 && i < json_array_size(tl); i++)
    CHECK_STR(json_string_value(json_object_get(json_array_get(tl, i), "what")),
              want[i]);
  json_decref(tl);
  json_decref(doc);
  free(r.body);
  refused(req("GET", "/v1/events/no-such-event/timeline", g_bearer, NULL), 404,
          "unknown_event");

  /* the register's version documents and diffs */
  refused(req("GET", "/v1/contracts/none/1.0.0", g_bearer, NULL), 404,
          "unknown_version");
  refused(req("GET", "/v1/contracts/none/diff", g_bearer, NULL), 400,
          "missing_parameter");
  refused(
      req("GET", "/v1/contracts/none/diff?from=1.0.0&to=2.0.0", g_bearer, NULL),
      404, "unknown_version");
  refused(req("GET", "/v1/contracts/none", g_bearer, NULL), 404, "not_found");
}

/* cebridge admin with the token from the file, then a wrong one from the
 * environment (which takes precedence). */
static void cli_uses_token(void) {
  char *args[] = {"admin",
                  "-c",
                  g_conf,
                  "--plugin-dir",
                  CEB_PLUGIN_PATH,
                  "post",
                  "/v1/dlq/purge?route=r&confirm=true",
                  NULL};
  setenv("CEBRIDGE_ADMIN_TOKEN", "wrong", 1);
  CHECK_INT(cli("cli-env.out", args), 1);
  CHECK(file_has("cli-env.out", "unauthorized"));
  CHECK_INT(dlq_count(), 3);
  unsetenv("CEBRIDGE_ADMIN_TOKEN");
  CHECK_INT(cli("cli.out", args), 0);
  CHECK_MSG(file_has("cli.out", "\"purged\":3"), "cli purge did not purge 3");
  CHECK_INT(dlq_count(), 0);
}

static void non_loopback(void) {
  char dir[700];
  snprintf(dir, sizeof dir, "%s/wide.d", g_dir);
  CHECK_INT(mkdir(dir, 0700), 0);
  CHECK_INT(write_conf(dir, "admin.listen = 0.0.0.0:0\n"), 0);
  char *check[] = {"check", "-c", dir, "--plugin-dir", CEB_PLUGIN_PATH, NULL};
  char *run[] = {"run", "-c", dir, "--plugin-dir", CEB_PLUGIN_PATH, NULL};
  CHECK_INT(cli("wide-check.out", check), 1);
  char where[800];
  snprintf(where, sizeof where, "%s/bridge.conf:3: admin.listen = 0.0.0.0:0",
           dir);
  CHECK_MSG(file_has("wide-check.out", where), "no %s", where);
  CHECK(file_has("wide-check.out", "no admin.token"));
  CHECK_INT(cli("wide-run.out", run), 1);
  CHECK(file_has("wide-run.out", "no admin.token"));
  /* [::] too; with a token both are fine for check */
  CHECK_INT(write_conf(dir, "admin.listen = [::]:0\n"), 0);
  CHECK_INT(cli("wide6-check.out", check), 1);
  CHECK_INT(write_conf(dir, "admin.listen = 0.0.0.0:0\n"
                            "admin.token = a-long-operator-token\n"),
            0);
  CHECK_INT(cli("wide-token-check.out", check), 0);
}

/* /v1/cluster lists one bridge, the one running as p, leading the
 * sweeper. */
static int cluster_lists(void *arg) {
  ceb_proc *p = arg;
  reply r = req("GET", "/v1/cluster", g_bearer, NULL);
  json_t *v = r.status == 200 && r.body ? json_loads(r.body, 0, NULL) : NULL;
  free(r.body);
  json_t *in = json_array_get(json_object_get(v, "instances"), 0);
  json_t *leads = json_object_get(in, "leads");
  int ok = json_array_size(json_object_get(v, "instances")) == 1 &&
           json_integer_value(json_object_get(in, "pid")) == p->pid;
  int sweeps = 0;
  size_t i;
  json_t *t;
  json_array_foreach(leads, i, t) sweeps |=
      strcmp(json_string_value(t), "sweeper") == 0;
  json_decref(v);
  return ok && sweeps;
}

int main(void) {
  char *d = ceb_test_tmpdir("admin-security");
  snprintf(g_dir, sizeof g_dir, "%s", d);
  free(d);
  snprintf(g_conf, sizeof g_conf, "%s/bridge.d", g_dir);
  snprintf(g_token, sizeof g_token, "%s/var/admin.token", g_dir);
  char var[600];
  snprintf(var, sizeof var, "%s/var", g_dir);
  CHECK(mkdir(g_conf, 0700) == 0 && mkdir(var, 0755) == 0);
  CHECK_INT(write_conf(g_conf, "admin.listen = 127.0.0.1:0\n"), 0);

  ceb_proc p1;
  g_port = start(&p1, "run1.log");
  CHECK_MSG(g_port > 0, "run 1 did not come up");
  if (g_port > 0) {
    token_file();
    guarded_api();
    bodies_refused();
    console_api();
    cli_uses_token();
  }
  CHECK_INT(ceb_proc_stop(&p1, SIGTERM, 30000), 0);
  CHECK(file_has("run1.log", "admin API token: generated into"));
  /* the token never reaches the log */
  CHECK(strlen(g_bearer) > 30 &&
        !file_has("run1.log", g_bearer + strlen("Authorization: Bearer ")));

  /* a restart reuses the file */
  char *before = ceb_test_read_file(g_token, NULL);
  ceb_proc p2;
  g_port = start(&p2, "run2.log");
  CHECK_MSG(g_port > 0, "run 2 did not come up");
  char *after = ceb_test_read_file(g_token, NULL);
  CHECK(before && after && strcmp(before, after) == 0);
  free(before);
  free(after);
  CHECK(file_has("run2.log", "admin API token: read from"));
  if (g_port > 0) {
    reply r = req("GET", "/v1/routes", g_bearer, NULL);
    CHECK_INT(r.status, 200);
    free(r.body);
    /* the cluster view: token-protected like the rest of /v1/; this bridge
     * listed with its pid, leading the sweeper once its first round ran */
    r = req("GET", "/v1/cluster", NULL, NULL);
    CHECK_INT(r.status, 401);
    free(r.body);
    CHECK(ceb_test_wait(cluster_lists, &p2, 30000));
    /* `cebridge cluster` reads the same from the store beside it */
    char *cl[] = {"cluster", "-c", g_conf, NULL};
    CHECK_INT(cli("cluster.log", cl), 0);
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d ", (int)p2.pid);
    CHECK(file_has("cluster.log", pid) && file_has("cluster.log", "sweeper"));
  }
  CHECK_INT(ceb_proc_stop(&p2, SIGTERM, 30000), 0);
  /* a clean stop leaves the list */
  {
    char *cl[] = {"cluster", "-c", g_conf, NULL};
    CHECK_INT(cli("cluster2.log", cl), 0);
    CHECK(file_has("cluster2.log", "no bridge has registered"));
  }

  /* a token file others can read is refused */
  CHECK_INT(chmod(g_token, 0644), 0);
  char *run[] = {"run", "-c", g_conf, "--plugin-dir", CEB_PLUGIN_PATH, NULL};
  CHECK_INT(cli("run3.log", run), 1);
  CHECK(file_has("run3.log", "chmod 600"));

  non_loopback();
  return ceb_test_done("integration_admin_security");
}
