/* Log forging through the real `cebridge run` binary with the text log
 * format (bridge.d's default). An event id with a newline, CR, ESC, BEL or
 * the C1 CSI breaks the CloudEvents String rule and is refused (422
 * ce.attr.string). What the rule allows but a log reader or terminal may
 * still act on, the line and paragraph separators and the bidi overrides,
 * is escaped: such an id (logged as unrouted) and a bearer token whose kid
 * holds a newline (logged as an unknown kid) each leave one escaped record,
 * never a line of their own: every line of the log starts with a record's
 * timestamp. The same kind of id dead-lettered: `cebridge dlq list` and
 * `cebridge status` print it escaped (stores written before the rule may
 * also hold control characters: the same escaper handles those,
 * unit_log_escape). */
#include <ctype.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "ceb_test_proc.h"
#include "hin_harness.h"

#define FORGED "2026-01-01T00:00:00.000Z error engine: FORGED"
/* U+202E (right-to-left override) and U+2029 (paragraph separator) */
#define DEAD_ID                                                                \
  "d\xe2\x80\xae"                                                              \
  "DER\xe2\x80\xa9"                                                            \
  "x"

typedef struct log_wait {
  char path[512];
  const char *needle[2];
} log_wait;

static int log_has(void *arg) {
  log_wait *w = arg;
  char *text = ceb_test_read_file(w->path, NULL);
  int ok = text && strstr(text, w->needle[0]) && strstr(text, w->needle[1]);
  free(text);
  return ok;
}

/* 1 when the line starts like a record: 2026-11-22T18:28:27.009Z level */
static int is_record(const char *line, size_t n) {
  return n > 25 && isdigit((unsigned char)line[0]) && line[4] == '-' &&
         line[10] == 'T' && line[23] == 'Z' && line[24] == ' ';
}

static void write_conf(const char *dir, const char *jwks) {
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
           "auth = oauth2\n"
           "oauth2.jwks_file = %s\n"
           "oauth2.audience = cebridge\n"
           "oauth2.jwks_min_refresh = 0s\n"
           "\n[sink outbox]\n"
           "plugin = pull\n"
           "listen = 127.0.0.1:0\n"
           "auth = none\n"
           "\n[route routed]\n"
           "from = intermediary\n"
           "to = outbox\n"
           "match.type = nl.edu.routed\n"
           /* nothing listens on port 1: dead-lettered at the first try */
           "\n[sink nowhere]\n"
           "plugin = http\n"
           "url = http://127.0.0.1:1/hook\n"
           "allow_insecure_http = true\n"
           "\n[route dead]\n"
           "from = intermediary\n"
           "to = nowhere\n"
           "match.type = nl.edu.dead\n"
           "retry.max_attempts = 1\n",
           dir, dir, jwks);
  ceb_test_write_file(path, "00-bridge.conf", text);
}

static long post(const char *url, const char *token, const char *body) {
  char authz[4096];
  snprintf(authz, sizeof authz, "Authorization: Bearer %s", token);
  const char *const hdrs[] = {"Content-Type: application/cloudevents+json",
                              authz, NULL};
  hin_resp r = hin_request(url, "POST", hdrs, body, strlen(body), 0);
  long st = r.status;
  hin_resp_free(&r);
  return st;
}

/* Runs `cebridge ARGS` to its end with its output in out_path; returns
 * its exit status. */
static int cli(char *const *args, const char *out_path) {
  char bin[1024];
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *argv[12] = {bin};
  int n = 1;
  for (; args[n - 1] && n < 11; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  unlink(out_path);
  ceb_proc p;
  if (ceb_proc_start(&p, argv, out_path) != 0) return -1;
  return ceb_proc_stop(&p, 0, 60000);
}

typedef struct dlq_wait {
  char *const *args;
  const char *out;
} dlq_wait;

static int dlq_listed(void *arg) {
  dlq_wait *w = arg;
  return cli(w->args, w->out) == 0;
}

/* 1 when text holds no control byte but line ends, no DEL, no C1
 * control in UTF-8 (U+0080..U+009F: 0xc2 0x80..0x9f) and no separator or
 * bidi override (U+2028..U+202E: 0xe2 0x80 0xa8..0xae). */
static int terminal_safe(const char *text, size_t len) {
  for (size_t i = 0; i < len; i++) {
    unsigned char b = (unsigned char)text[i];
    if ((b < 0x20 && b != '\n') || b == 0x7f) return 0;
    if (b == 0xc2 && i + 1 < len && (unsigned char)text[i + 1] >= 0x80 &&
        (unsigned char)text[i + 1] <= 0x9f)
      return 0;
    if (b == 0xe2 && i + 2 < len && (unsigned char)text[i + 1] == 0x80 &&
        (unsigned char)text[i + 2] >= 0xa8 &&
        (unsigned char)text[i + 2] <= 0xae)
      return 0;
  }
  return 1;
}

static void cli_escapes(const char *conf, const char *dir) {
  char out[600];
  snprintf(out, sizeof out, "%s/dlq-list.txt", dir);
  char *list[] = {"dlq", "list", "-c", (char *)conf, NULL};
  dlq_wait w = {list, out};
  CHECK_MSG(ceb_test_wait(dlq_listed, &w, 30000), "no dead letter listed");
  size_t len = 0;
  char *text = ceb_test_read_file(out, &len);
  CHECK(text && strstr(text, "d\\u202eDER\\u2029x"));
  CHECK_MSG(text && terminal_safe(text, len), "dlq list: %s", text);
  free(text);
  snprintf(out, sizeof out, "%s/status.txt", dir);
  char *status[] = {"status", "-c", (char *)conf, DEAD_ID, NULL};
  CHECK_INT(cli(status, out), 0);
  text = ceb_test_read_file(out, &len);
  CHECK(text && strstr(text, "event d\\u202eDER\\u2029x "));
  CHECK_MSG(text && terminal_safe(text, len), "status: %s", text);
  free(text);
}

int main(void) {
  char *dir = ceb_test_tmpdir("log_forging");
  hin_issuer *iss = hin_issuer_new();
  char jwks[512], conf[512], log[512], port[512];
  snprintf(jwks, sizeof jwks, "%s/jwks.json", dir);
  snprintf(conf, sizeof conf, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  snprintf(port, sizeof port, "%s/port", dir);
  CHECK_INT(hin_issuer_write_jwks(iss, jwks, "RS256", 0), CEB_OK);
  write_conf(dir, jwks);
  pid_t pid = ceb_test_bridge_start(conf, log);
  int p = ceb_test_wait_port_file(port, 15000);
  CHECK(p > 0);
  char url[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", p);

  char *claims = hin_claims("partner-a", 300, -10, NULL, NULL);
  char *good = hin_token(iss, "RS256", "rsa1", claims);
  /* control characters in an id: refused by the String rule */
  CHECK_INT(post(url, good,
                 "{\"specversion\":\"1.0\",\"id\":\"x\\n" FORGED
                 "\\r\\n\\u001b[2J\",\"source\":\"urn:t\","
                 "\"type\":\"nl.edu.other\"}"),
            422);
  CHECK_INT(post(url, good,
                 "{\"specversion\":\"1.0\",\"id\":\"d\\u001b[31mRED\\u0007"
                 "\\u009b2J\",\"source\":\"urn:t\",\"type\":\"nl.edu.dead\"}"),
            422);
  /* a line separator, of a type no route takes */
  CHECK_INT(post(url, good,
                 "{\"specversion\":\"1.0\",\"id\":\"x\\u2028" FORGED
                 "\\u2029\",\"source\":\"urn:t\",\"type\":\"nl.edu.other\"}"),
            202);
  /* a right-to-left override and a paragraph separator, dead-lettered */
  CHECK_INT(post(url, good,
                 "{\"specversion\":\"1.0\",\"id\":\"d\\u202eDER\\u2029x\","
                 "\"source\":\"urn:t\",\"type\":\"nl.edu.dead\"}"),
            202);
  /* a kid with a newline: refused, and logged as an unknown kid */
  char *bad = hin_token(iss, "RS256", "k\n" FORGED, claims);
  CHECK_INT(post(url, bad, "{}"), 401);
  free(bad);
  free(good);
  free(claims);

  log_wait w = {{0}, {"matches no route", "unknown kid"}};
  snprintf(w.path, sizeof w.path, "%s", log);
  CHECK(ceb_test_wait(log_has, &w, 15000));
  cli_escapes(conf, dir);
  CHECK_INT(ceb_test_pid_stop(pid, SIGTERM, 30000), 0);

  size_t len = 0;
  char *text = ceb_test_read_file(log, &len);
  CHECK(text != NULL);
  size_t lines = 0, records = 0;
  for (char *s = text; s && s < text + len;) {
    char *e = memchr(s, '\n', (size_t)(text + len - s));
    size_t n = e ? (size_t)(e - s) : (size_t)(text + len - s);
    lines++;
    if (is_record(s, n))
      records++;
    else
      fprintf(stderr, "not a record: %.*s\n", (int)n, s);
    for (size_t i = 0; i < n; i++)
      CHECK_MSG((unsigned char)s[i] >= 0x20 && s[i] != 0x7f,
                "control byte in: %.*s", (int)n, s);
    s += n + 1;
  }
  CHECK(lines > 2);
  CHECK_INT(records, lines);
  /* both hostile values are there, escaped */
  CHECK(text && strstr(text, "event x\\u2028" FORGED "\\u2029 from"));
  CHECK(text && strstr(text, "unknown kid k\\n" FORGED));
  if (ceb_test_failures) fprintf(stderr, "--- log ---\n%s\n", text);
  free(text);
  hin_issuer_free(iss);
  free(dir);
  return ceb_test_done("integration_log_forging");
}
