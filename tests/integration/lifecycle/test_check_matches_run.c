/* `check` refuses everything `run` refuses (issue 16, D4): for each config
 * of the table, valid as far as keys and types go but refused by a
 * plugin's init, `check` exits 1 with "file:line: message", and `run`
 * exits 1 with the same "file:line: message" in its log. Before, `check`
 * did not run the plugins' init and said OK to all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

typedef struct row {
  const char *name;
  const char *sections; /* after [bridge] */
  int line;             /* of 00.conf the error must name */
  const char *text;     /* part of the message */
} row;

#define PULL_OK                                                                \
  "[sink out]\nplugin = pull\nlisten = 127.0.0.1:0\nauth = none\n\n"
#define ROUTE "[route r]\nfrom = in\nto = out\n"

static const row k_rows[] = {
    {"intermediary auth = none off loopback",
     "[source in]\nplugin = http\nlisten = 0.0.0.0:0\nauth = none\n\n" PULL_OK
         ROUTE,
     9, "auth = none is only allowed on a loopback"},
    {"pull auth = none off loopback",
     "[source in]\nplugin = http\nlisten = 127.0.0.1:0\nauth = none\n\n"
     "[sink out]\nplugin = pull\nlisten = 10.1.2.3:0\nauth = none\n\n" ROUTE,
     14, "auth = none is only allowed on a loopback listener"},
    {"oauth2 without a JWKS",
     "[source in]\nplugin = http\nlisten = 127.0.0.1:0\nauth = "
     "oauth2\n\n" PULL_OK ROUTE,
     9, "needs exactly one of oauth2.jwks_url and oauth2.jwks_file"},
    {"client types without oauth2",
     "[source in]\nplugin = http\nlisten = 127.0.0.1:0\nauth = none\n"
     "clients.x.types = a.*\n\n" PULL_OK ROUTE,
     6, "clients.<client>.types needs auth = oauth2"},
    {"mqtt binary mode on MQTT 3.1.1",
     "[source in]\nplugin = http\nlisten = 127.0.0.1:0\nauth = none\n\n"
     "[sink out]\nplugin = mqtt\nbroker = 127.0.0.1:1883\n"
     "mqtt_version = 3.1.1\ntopic = a/b\n\n" ROUTE,
     11, "mode = binary needs mqtt_version = 5"},
    {"mqtt source dlq_topic with a wildcard",
     "[source in]\nplugin = mqtt\nbroker = 127.0.0.1:1883\nclient_id = c\n"
     "topics = a/#\ndlq_topic = a/+\n\n" PULL_OK ROUTE,
     11, "dlq_topic: \"a/+\" is not a valid topic name"},
};

static char g_bin[600];

/* Runs cmd; *out gets its stdout+stderr; returns its exit status. */
static int run_capture(const char *cmd, char **out) {
  FILE *p = popen(cmd, "r");
  size_t cap = 65536, len = 0;
  char *buf = calloc(1, cap);
  size_t n;
  while (p && buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0)
    len += n;
  int st = p ? pclose(p) : -1;
  *out = buf;
  return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void one(const char *dir, const row *r, size_t i) {
  char conf[600], text[4096], log[700], cmd[1600], portf[700];
  snprintf(conf, sizeof conf, "%s/c%zu", dir, i);
  CHECK_INT(mkdir(conf, 0700), 0);
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nplugin_dir = %s\n"
           "admin.listen = off\nlog.format = text\n%s",
           conf, CEB_PLUGIN_DIR, r->sections);
  CHECK_INT(ceb_test_write_file(conf, "00.conf", text), 0);

  snprintf(cmd, sizeof cmd, "%s check -c %s 2>&1", g_bin, conf);
  char *out = NULL;
  int st = run_capture(cmd, &out);
  CHECK_MSG(st == 1, "%s: check exited %d: %s", r->name, st, out);
  /* the line naming the error: file:line: message */
  char want[700];
  snprintf(want, sizeof want, "%s/00.conf:%d: ", conf, r->line);
  char *at = out ? strstr(out, want) : NULL;
  CHECK_MSG(at && strstr(at, r->text), "%s: check does not say %s...%s: %s",
            r->name, want, r->text, out ? out : "");
  char line[700] = "";
  if (at) {
    size_t n = strcspn(at, "\n");
    snprintf(line, sizeof line, "%.*s", (int)n, at);
  }
  free(out);

  snprintf(log, sizeof log, "%s/run.log", conf);
  snprintf(portf, sizeof portf, "%s/port", conf);
  char *argv[] = {g_bin, "run", "-c", conf, NULL};
  ceb_proc p;
  CHECK_INT(ceb_proc_start(&p, argv, log), 0);
  /* it refuses at init: the exit comes without any signal */
  st = ceb_proc_stop(&p, 0, 30000);
  CHECK_MSG(st == 1, "%s: run exited %d", r->name, st);
  char *l = ceb_test_read_file(log, NULL);
  CHECK_MSG(l && line[0] && strstr(l, line),
            "%s: run's log lacks check's line \"%s\": %s", r->name, line,
            l ? l : "");
  free(l);
}

int main(void) {
  snprintf(g_bin, sizeof g_bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *dir = ceb_test_tmpdir("checkrun");
  for (size_t i = 0; i < sizeof k_rows / sizeof k_rows[0]; i++)
    one(dir, &k_rows[i], i);
  ceb_test_rmtree(dir);
  free(dir);
  return ceb_test_done("integration_check_matches_run");
}
