/* The admin API gains TLS (admin.tls.cert / admin.tls.key) under the
 * bridge's TLS policy, with the real binary: TLS 1.0 and 1.1 and static
 * RSA are refused, TLS 1.2 with ECDHE and TLS 1.3 are served (probed with
 * `openssl s_client` at security level 0, so each refusal is the
 * bridge's); admin.tls.min_version = 1.3 refuses TLS 1.2; `cebridge admin`
 * and `cebridge health` reach it over HTTPS, trusting exactly the
 * configured certificate's key (the certificate names 127.0.0.1, the CLI
 * pins the key whatever the names); a certificate without its key and a
 * priority string GnuTLS refuses stop the start, and `check` names the
 * priority's file:line. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "ceb_test_tls.h"

#define OLD "-cipher DEFAULT@SECLEVEL=0"

static char g_dir[512], g_conf[600];

static int write_conf(const char *extra) {
  char text[4096];
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/var/store.db\n"
           "admin.listen = 127.0.0.1:0\n"
           "admin.port_file = %s/admin.port\n%s"
           "[source gen]\nplugin = testsource\ncount = 1\n"
           "[sink out]\nplugin = testsink\n"
           "[route r]\nfrom = gen\nto = out\n",
           g_dir, g_dir, extra);
  return ceb_test_write_file(g_conf, "bridge.conf", text);
}

static char *bin(void) {
  static char b[600];
  snprintf(b, sizeof b, "%s/cebridge", CEB_TEST_BIN_DIR);
  return b;
}

/* Starts the bridge; the admin port, or -1. */
static int start(ceb_proc *p) {
  char log[700], port[700];
  snprintf(log, sizeof log, "%s/run.log", g_dir);
  snprintf(port, sizeof port, "%s/admin.port", g_dir);
  unlink(port);
  char *argv[] = {bin(),          "run",           "-c", g_conf,
                  "--plugin-dir", CEB_PLUGIN_PATH, NULL};
  if (ceb_proc_start(p, argv, log) != 0) return -1;
  return ceb_test_wait_port_file(port, 30000);
}

/* Runs `cebridge ARGS...` to its end; its exit status. */
static int cli(char *a1, char *a2, char *a3) {
  char log[700];
  snprintf(log, sizeof log, "%s/cli.log", g_dir);
  char *argv[] = {bin(),           a1, "-c", g_conf, "--plugin-dir",
                  CEB_PLUGIN_PATH, a2, a3,   NULL};
  if (!a2) argv[4] = NULL; /* health takes no --plugin-dir */
  ceb_proc p;
  if (ceb_proc_start(&p, argv, log) != 0) return -1;
  int st = ceb_proc_stop(&p, 0, 60000);
  if (st != 0) {
    char *out = ceb_test_read_file(log, NULL);
    fprintf(stderr, "cebridge %s: exit %d: %s\n", a1, st, out ? out : "");
    free(out);
  }
  return st;
}

int main(void) {
  char *tmp = ceb_test_tmpdir("admin_tls");
  snprintf(g_dir, sizeof g_dir, "%s", tmp);
  snprintf(g_conf, sizeof g_conf, "%s/conf", tmp);
  char var[600];
  snprintf(var, sizeof var, "%s/var", tmp);
  CHECK_INT(mkdir(g_conf, 0700), 0);
  CHECK_INT(mkdir(var, 0700), 0);
  CHECK_INT(ceb_tls_rsa_cert(tmp), 0);
  char files[1400];
  snprintf(files, sizeof files,
           "admin.tls.cert = %s/rsa.crt\nadmin.tls.key = %s/rsa.key\n", tmp,
           tmp);

  CHECK_INT(write_conf(files), 0);
  ceb_proc p;
  int port = start(&p);
  CHECK(port > 0);
  if (port > 0) {
    CHECK_INT(ceb_tls_probe(port, "-tls1 " OLD, 0), 0);
    CHECK_INT(ceb_tls_probe(port, "-tls1_1 " OLD, 0), 0);
    CHECK_INT(ceb_tls_probe(port, "-tls1_2 -cipher AES128-SHA@SECLEVEL=0", 0),
              0);
    CHECK_INT(
        ceb_tls_probe(port, "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256", 1),
        1);
    CHECK_INT(ceb_tls_probe(port, "-tls1_3", 1), 1);
    CHECK_INT(cli("admin", "get", "/v1/routes"), 0);
    CHECK_INT(cli("health", NULL, NULL), 0);
  }
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);

  char strict[1600];
  snprintf(strict, sizeof strict, "%sadmin.tls.min_version = 1.3\n", files);
  CHECK_INT(write_conf(strict), 0);
  port = start(&p);
  CHECK(port > 0);
  if (port > 0) {
    CHECK_INT(
        ceb_tls_probe(port, "-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256", 0),
        0);
    CHECK_INT(ceb_tls_probe(port, "-tls1_3", 1), 1);
    CHECK_INT(cli("admin", "get", "/v1/routes"), 0);
  }
  CHECK_INT(ceb_proc_stop(&p, SIGTERM, 30000), 0);

  /* refused at start: half the material, a priority GnuTLS refuses */
  char half[800];
  snprintf(half, sizeof half, "admin.tls.cert = %s/rsa.crt\n", tmp);
  CHECK_INT(write_conf(half), 0);
  char log[700];
  snprintf(log, sizeof log, "%s/run.log", g_dir);
  char *argv[] = {bin(),          "run",           "-c", g_conf,
                  "--plugin-dir", CEB_PLUGIN_PATH, NULL};
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  CHECK(ceb_proc_stop(&p, 0, 30000) != 0);
  char bad[1600];
  snprintf(bad, sizeof bad, "%sadmin.tls.priority = NORMAL:+BOGUS\n", files);
  CHECK_INT(write_conf(bad), 0);
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  CHECK(ceb_proc_stop(&p, 0, 30000) != 0);
  char *out = ceb_test_read_file(log, NULL);
  CHECK(out && strstr(out, "admin.tls.priority"));
  free(out);
  /* and `check` reports it with the file:line of the key */
  char *cargv[] = {bin(),          "check",         "-c", g_conf,
                   "--plugin-dir", CEB_PLUGIN_PATH, NULL};
  char clog[700];
  snprintf(clog, sizeof clog, "%s/check.log", g_dir);
  CHECK_INT(ceb_proc_start(&p, cargv, clog), 0);
  CHECK(ceb_proc_stop(&p, 0, 30000) != 0);
  out = ceb_test_read_file(clog, NULL);
  CHECK_MSG(out && strstr(out, "bridge.conf:7: admin.tls.priority: GnuTLS"),
            "%s", out ? out : "");
  free(out);

  ceb_test_rmtree(tmp);
  free(tmp);
  return ceb_test_done("integration_admin_tls");
}
