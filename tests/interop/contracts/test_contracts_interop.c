/* The intermediary's published contracts, read by a partner's tools and by
 * another cebridge, through the real binary:
 *  - bridge A (serve.contracts = true) holds "enrol" 1.1.0 in its register
 *    (`cebridge contracts sync` from a file source);
 *  - GET /openapi.json of A passes @apidevtools/swagger-parser's validation;
 *  - GET /v1/contracts/enrol/1.1.0 of A parses without errors in
 *    @asyncapi/parser (npm, pinned by package-lock.json; `npm ci` runs
 *    when node_modules is missing, so an unreachable registry fails);
 *  - bridge B's contracts role (the asyncapi plugin) pointed at that URL
 *    syncs it into B's own register: `contracts list` and `contracts show`
 *    of B see the version and its message type. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aa_test_docs.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"

#define BIN CEB_TEST_BIN_DIR "/cebridge"

static char g_dir[512];

static int npm_ready(void) {
  struct stat st;
  if (stat(CEB_CONTRACTS_NPM_DIR "/node_modules/@asyncapi/parser", &st) == 0 &&
      stat(CEB_CONTRACTS_NPM_DIR "/node_modules/@apidevtools/swagger-parser",
           &st) == 0)
    return 0;
  int rc = system("cd '" CEB_CONTRACTS_NPM_DIR
                  "' && timeout 300 npm ci --no-audit --no-fund "
                  "--loglevel=error >&2");
  if (rc != 0)
    fprintf(stderr, "npm ci failed (%d): is the npm registry reachable?\n", rc);
  return rc;
}

/* Runs a command line to completion; its output in *out (malloc'd). */
static int run(const char *cmd, char **out) {
  char line[2048], log[600];
  snprintf(log, sizeof log, "%s/cmd.out", g_dir);
  snprintf(line, sizeof line, "%s >'%s' 2>&1", cmd, log);
  int st = system(line);
  *out = ceb_test_read_file(log, NULL);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int cli(const char *conf, const char *args, char **out) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "timeout 60 '%s' contracts %s -c '%s'", BIN, args,
           conf);
  return run(cmd, out);
}

static int check_js(const char *kind, const char *url, char **out) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd,
           "cd '" CEB_CONTRACTS_NPM_DIR "' && timeout 60 node check.js %s '%s'",
           kind, url);
  return run(cmd, out);
}

static void write_conf(const char *name, const char *contracts) {
  char dir[600], text[4096];
  snprintf(dir, sizeof dir, "%s/%s", g_dir, name);
  mkdir(dir, 0700);
  snprintf(text, sizeof text,
           "[bridge]\n"
           "store = %s/%s.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "log.format = text\n"
           "\n[source intermediary]\n"
           "plugin = http\n"
           "listen = 127.0.0.1:0\n"
           "port_file = %s/%s.port\n"
           "auth = none\n"
           "serve.contracts = true\n"
           "\n[sink outbox]\n"
           "plugin = pull\n"
           "listen = 127.0.0.1:0\n"
           "auth = none\n"
           "\n[route partners]\n"
           "from = intermediary\n"
           "to = outbox\n"
           "\n[contracts enrol]\n"
           "plugin = asyncapi\n"
           "interval = 0\n"
           "%s",
           g_dir, name, g_dir, name, contracts);
  ceb_test_write_file(dir, "00-bridge.conf", text);
}

int main(void) {
  char *tmp = ceb_test_tmpdir("contracts-interop");
  snprintf(g_dir, sizeof g_dir, "%s", tmp ? tmp : "/nonexistent");
  free(tmp);
  CHECK_INT(npm_ready(), 0);

  /* bridge A: enrol 1.1.0 from a file into its register, then running */
  ceb_test_write_file(g_dir, "enrol.yaml", AA_DOC_V110);
  char contracts[1024], conf_a[600], conf_b[600], out_log[600], pf[600];
  snprintf(contracts, sizeof contracts, "file = %s/enrol.yaml\n", g_dir);
  write_conf("a", contracts);
  snprintf(conf_a, sizeof conf_a, "%s/a", g_dir);
  char *out = NULL;
  CHECK_INT(cli(conf_a, "sync", &out), 0);
  free(out);
  snprintf(out_log, sizeof out_log, "%s/a.log", g_dir);
  pid_t a = ceb_test_bridge_start(conf_a, out_log);
  snprintf(pf, sizeof pf, "%s/a.port", g_dir);
  int port = ceb_test_wait_port_file(pf, 30000);
  CHECK(port > 0);

  char url[256];
  snprintf(url, sizeof url, "http://127.0.0.1:%d/openapi.json", port);
  CHECK_INT(check_js("openapi", url, &out), 0);
  CHECK_MSG(out && strstr(out, "openapi 3.0.3 \"cebridge intermediary\""),
            "swagger-parser: %s", out ? out : "");
  free(out);

  snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/contracts/enrol/1.1.0",
           port);
  CHECK_INT(check_js("asyncapi", url, &out), 0);
  CHECK_MSG(out && strstr(out, "asyncapi 2.6.0 \"Enrolment\" 1.1.0") &&
                strstr(out, "nl.edu.enrolment"),
            "@asyncapi/parser: %s", out ? out : "");
  free(out);

  /* bridge B fetches it with cebridge's own asyncapi plugin */
  snprintf(contracts, sizeof contracts,
           "url = %s\nallow_insecure_http = true\n", url);
  write_conf("b", contracts);
  snprintf(conf_b, sizeof conf_b, "%s/b", g_dir);
  CHECK_INT(cli(conf_b, "sync", &out), 0);
  free(out);
  CHECK_INT(cli(conf_b, "list", &out), 0);
  CHECK_MSG(out && strstr(out, "enrol") && strstr(out, "1.1.0"), "list: %s",
            out ? out : "");
  free(out);
  CHECK_INT(cli(conf_b, "show enrol@1.1.0 --messages", &out), 0);
  CHECK_MSG(out && strstr(out, "nl.edu.enrolled"), "show: %s", out ? out : "");
  free(out);

  CHECK_INT(ceb_test_pid_stop(a, SIGTERM, 30000), 0);
  ceb_test_rmtree(g_dir);
  return ceb_test_done("interop_contracts");
}
