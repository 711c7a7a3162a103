/* End to end through the real `cebridge` binary: a local registry stub
 * serves versions of the "enrol" contract; `cebridge contracts sync` puts
 * them in the register; `cebridge run` resolves the route's pin
 * enrol@^1 once at start and checks events at the intermediary: a valid
 * one 202, a payload violation 422 with the instance and schema path, an
 * unknown type 422. Upstream then edits 1.0.0 in place: the next sync
 * flags a conflict (`contracts list` shows it) and the held document stays;
 * 2.0.0 appears: `contracts list` reports it, the running bridge keeps its
 * pin, and `contracts diff` calls out the BREAKING changes. `contracts
 * check` judges an event file; a pin resolving to nothing stops the bridge
 * from starting, unless the route says contract.mode = warn. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aa_registry_stub.h"
#include "aa_test_docs.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"

#define PREFIX "/apis/registry/v3"
#define SRC "urn:nld:oin:00000001234567890000:systeem:contracts"
#define BIN CEB_TEST_BIN_DIR "/cebridge"

static char g_dir[512];

/* Runs `cebridge contracts ...` to completion; output in *out (malloc'd). */
static int cli(char **out, const char *a1, const char *a2, const char *a3,
               const char *a4) {
  char conf[600], log[600];
  snprintf(conf, sizeof conf, "%s/conf", g_dir);
  snprintf(log, sizeof log, "%s/cli.out", g_dir);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) _exit(126);
    dup2(fd, 1);
    dup2(fd, 2);
    const char *argv[10] = {"cebridge", "contracts", a1};
    int n = 3;
    if (a2) argv[n++] = a2;
    if (a3) argv[n++] = a3;
    if (a4) argv[n++] = a4;
    argv[n++] = "-c";
    argv[n++] = conf;
    argv[n] = NULL;
    execv(BIN, (char *const *)argv);
    _exit(127);
  }
  int status = 0;
  int64_t until = ceb_test_now_ms() + 60000;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (ceb_test_now_ms() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    usleep(10000);
  }
  if (out) *out = ceb_test_read_file(log, NULL);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void write_conf(int reg_port, const char *pin) {
  char dir[600], text[4096];
  snprintf(dir, sizeof dir, "%s/conf", g_dir);
  mkdir(dir, 0700);
  snprintf(text, sizeof text,
           "[bridge]\n"
           "store = %s/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "log.format = text\n"
           "profile = enforce\n"
           "drain_timeout = 10s\n"
           "\n[source intermediary]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/port\n"
           "auth = none\n"
           "idempotency = optional\n"
           "\n[sink outbox]\n"
           "plugin = pull\n"
           "listen = 127.0.0.1:0\n"
           "auth = none\n"
           "\n[contracts enrol]\n"
           "plugin = asyncapi\n"
           "registry.url = http://127.0.0.1:%d" PREFIX "\n"
           "registry.group = edu\n"
           "registry.artifact = enrol\n"
           "allow_insecure_http = true\n"
           "interval = 0\n"
           "\n[route partners]\n"
           "from = intermediary\n"
           "to = outbox\n"
           "contract = %s\n",
           g_dir, g_dir, reg_port, pin);
  ceb_test_write_file(dir, "00-bridge.conf", text);
}

static pid_t start_bridge(void) {
  char conf[600], log[600], port[600];
  snprintf(conf, sizeof conf, "%s/conf", g_dir);
  snprintf(log, sizeof log, "%s/bridge.log", g_dir);
  snprintf(port, sizeof port, "%s/port", g_dir);
  unlink(port);
  return ceb_test_bridge_start(conf, log);
}

static int wait_exit(pid_t pid, int sig, int64_t timeout_ms) {
  return ceb_test_pid_stop(pid, sig, timeout_ms);
}

static int post(int port, const char *id, const char *type, const char *data,
                char **body) {
  char url[128], h_id[96], h_type[128];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
  snprintf(h_id, sizeof h_id, "ce-id: %s", id);
  snprintf(h_type, sizeof h_type, "ce-type: %s", type);
  const char *const hdrs[] = {"ce-specversion: 1.0",
                              "ce-source: " SRC,
                              "ce-time: 2026-01-01T00:00:00Z",
                              h_id,
                              h_type,
                              "Content-Type: application/json",
                              NULL};
  return ceb_test_http("POST", url, hdrs, data, strlen(data), body);
}

static int contains(const char *text, const char *needle) {
  return text && strstr(text, needle) != NULL;
}

int main(void) {
  char *tmp = ceb_test_tmpdir("contracts-e2e");
  snprintf(g_dir, sizeof g_dir, "%s", tmp ? tmp : "/nonexistent");
  free(tmp);
  aa_stub *reg = aa_stub_start(PREFIX);
  CHECK(reg != NULL);
  if (!reg) return ceb_test_done("integration_contracts");
  aa_stub_set_version(reg, "edu", "enrol", "1.0.0", AA_DOC_V100);
  aa_stub_set_version(reg, "edu", "enrol", "1.1.0", AA_DOC_V110);
  int rport = aa_stub_port(reg);

  /* A pin that resolves to nothing: the bridge refuses to start. */
  write_conf(rport, "enrol@^1");
  pid_t pid = start_bridge();
  CHECK_INT(wait_exit(pid, 0, 30000) != 0, 1);
  char log[600];
  snprintf(log, sizeof log, "%s/bridge.log", g_dir);
  char *text = ceb_test_read_file(log, NULL);
  CHECK_MSG(contains(text, "enrol@^1") && contains(text, "contracts sync"),
            "bridge log: %s", text ? text : "");
  free(text);

  /* Sync, then the register holds both versions. A second sync sends the
   * ETags the first one kept: nothing changed, 304s. */
  char *out = NULL;
  CHECK_INT(cli(&out, "sync", NULL, NULL, NULL), 0);
  free(out);
  size_t n304 = aa_stub_count(reg, 304);
  CHECK_INT(cli(&out, "sync", NULL, NULL, NULL), 0);
  free(out);
  CHECK_INT(aa_stub_count(reg, 304), n304 + 2);
  CHECK_INT(cli(&out, "list", NULL, NULL, NULL), 0);
  CHECK_MSG(contains(out, "1.0.0") && contains(out, "1.1.0") &&
                contains(out, "pin enrol@^1 -> 1.1.0"),
            "list: %s", out ? out : "");
  free(out);
  CHECK_INT(cli(&out, "show", "enrol@1.1.0", "--messages", NULL), 0);
  CHECK_MSG(contains(out, "enrolled") && contains(out, "nl.edu.enrolled") &&
                contains(out, "nl.edu.enrolment"),
            "show: %s", out ? out : "");
  free(out);

  /* The bridge checks events against enrol@1.1.0. */
  pid = start_bridge();
  char portfile[600];
  snprintf(portfile, sizeof portfile, "%s/port", g_dir);
  int port = ceb_test_wait_port_file(portfile, 30000);
  CHECK(port > 0);
  char *body = NULL;
  CHECK_INT(post(port, "c-1", "nl.edu.enrolled",
                 "{\"student\":{\"name\":\"Ada\",\"birthdate\":"
                 "\"2004-02-29\"},\"level\":\"wo\"}",
                 &body),
            202);
  free(body);
  body = NULL;
  CHECK_INT(post(port, "c-2", "nl.edu.enrolled",
                 "{\"student\":{\"birthdate\":\"29-02-2004\"}}", &body),
            422);
  CHECK_MSG(contains(body, "contract.payload") &&
                contains(body, "/student/birthdate") &&
                contains(body, "birthdate/format"),
            "422 body: %s", body ? body : "");
  free(body);
  body = NULL;
  CHECK_INT(post(port, "c-3", "nl.edu.unknown", "{}", &body), 422);
  CHECK_MSG(contains(body, "contract.type_unknown"), "422 body: %s",
            body ? body : "");
  free(body);

  /* Upstream edits 1.0.0 in place and publishes 2.0.0. */
  aa_stub_set_version(reg, "edu", "enrol", "1.0.0", AA_DOC_V100_CHANGED);
  aa_stub_set_version(reg, "edu", "enrol", "2.0.0", AA_DOC_V200);
  CHECK_INT(cli(&out, "sync", "enrol", NULL, NULL), 0);
  free(out);
  CHECK_INT(cli(&out, "list", NULL, NULL, NULL), 0);
  CHECK_MSG(contains(out, "CONFLICT") && contains(out, "2.0.0") &&
                contains(out, "new version 2.0.0 available"),
            "list: %s", out ? out : "");
  free(out);
  CHECK_INT(cli(&out, "show", "enrol@1.0.0", NULL, NULL), 0);
  CHECK_MSG(contains(out, "\"title\":\"Enrolment\"") &&
                !contains(out, "edited upstream"),
            "held 1.0.0: %s", out ? out : "");
  free(out);

  /* The running bridge keeps 1.1.0: "remark" is fine, no "institution". */
  body = NULL;
  CHECK_INT(post(port, "c-4", "nl.edu.enrolled",
                 "{\"student\":{\"birthdate\":\"2004-02-29\"},\"remark\":"
                 "\"x\"}",
                 &body),
            202);
  free(body);
  CHECK_INT(wait_exit(pid, SIGTERM, 30000), 0);

  /* diff: 1.1.0 -> 2.0.0 is breaking, 1.0.0 -> 1.1.0 is not. */
  CHECK_INT(cli(&out, "diff", "enrol@1.1.0", "enrol@2.0.0", NULL), 0);
  CHECK_MSG(contains(out, "BREAKING") && contains(out, "property removed") &&
                contains(out, "new required property 'institution'") &&
                contains(out, "enum value \"mbo\" removed") &&
                contains(out, "narrower range"),
            "diff: %s", out ? out : "");
  free(out);
  CHECK_INT(cli(&out, "diff", "enrol@1.0.0", "enrol@1.1.0", NULL), 0);
  CHECK_MSG(!contains(out, "BREAKING") && contains(out, "property added"),
            "diff: %s", out ? out : "");
  free(out);

  /* check: an event file against a version. */
  ceb_test_write_file(g_dir, "good.json",
                      "{\"specversion\":\"1.0\",\"id\":\"f1\",\"source\":"
                      "\"" SRC "\",\"type\":\"nl.edu.enrolled\","
                      "\"datacontenttype\":\"application/json\",\"data\":"
                      "{\"student\":{\"birthdate\":\"2004-02-29\"}}}");
  ceb_test_write_file(g_dir, "bad.json",
                      "{\"specversion\":\"1.0\",\"id\":\"f2\",\"source\":"
                      "\"" SRC "\",\"type\":\"nl.edu.enrolled\","
                      "\"datacontenttype\":\"application/json\",\"data\":"
                      "{\"student\":{\"birthdate\":\"2004-02-29\"}}}");
  char good[700], bad[700];
  snprintf(good, sizeof good, "%s/good.json", g_dir);
  snprintf(bad, sizeof bad, "%s/bad.json", g_dir);
  CHECK_INT(cli(&out, "check", "enrol@1.1.0", good, NULL), 0);
  free(out);
  CHECK_INT(cli(&out, "check", "enrol@2.0.0", bad, NULL), 1);
  CHECK_MSG(contains(out, "institution"), "check: %s", out ? out : "");
  free(out);

  /* Warn mode: a pin resolving to nothing is logged, the bridge starts and
   * the route's events pass. */
  write_conf(rport, "enrol@^9\ncontract.mode = warn");
  pid = start_bridge();
  port = ceb_test_wait_port_file(portfile, 30000);
  CHECK(port > 0);
  body = NULL;
  CHECK_INT(post(port, "c-5", "nl.edu.enrolled", "{}", &body), 202);
  free(body);
  CHECK_INT(wait_exit(pid, SIGTERM, 30000), 0);
  text = ceb_test_read_file(log, NULL);
  CHECK_MSG(contains(text, "contract.mode = warn"), "bridge log: %s",
            text ? text : "");
  free(text);

  aa_stub_stop(reg);
  ceb_test_rmtree(g_dir);
  return ceb_test_done("integration_contracts");
}
