/* The mapping commands of the real binary on a config written here:
 * `event map --source` prints the CloudEvent the source's program makes
 * (exit 0) or says why it is not one (exit 1); `event map --route` runs the
 * route's filter and its sink's map and prints what the sink would send;
 * `check` reports a program that does not compile with file:line; `run
 * --dry-run` accepts and settles every delivery done with reason dry-run,
 * and the sink is never called. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

static char g_dir[512], g_conf[600], g_out[700];

/* Runs cebridge with the NULL-terminated arguments after status; its
 * stdout+stderr (static), *status its exit status. */
static const char *run(int *status, ...) {
  static char *text;
  char bin[700];
  snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
  char *argv[16] = {bin};
  va_list ap;
  va_start(ap, status);
  int n = 1;
  while (n < 15 && (argv[n] = va_arg(ap, char *)))
    n++;
  va_end(ap);
  argv[n] = NULL;
  ceb_proc p;
  *status = -1;
  unlink(g_out);
  if (ceb_proc_start(&p, argv, g_out) == 0)
    *status = ceb_proc_stop(&p, 0, 60000);
  free(text);
  size_t len;
  text = ceb_test_read_file(g_out, &len);
  return text ? text : "";
}

static void write_conf(const char *extra) {
  char text[4096];
  snprintf(text, sizeof text,
           "[bridge]\nstore = %s/store.db\nadmin.listen = off\n"
           "[source hook]\nplugin = testsource\nmap = file:hook.jq\n"
           "[source gen]\nplugin = testsource\ncount = 3\n"
           "record = %s/gen.txt\n"
           "[sink partner]\nplugin = testsink\nrecord = %s/partner.txt\n"
           "map = {body: {type: .type, timestamp: .time, data: .data}, "
           "headers: {\"X-Source\": .source}}\n"
           "[route r]\nfrom = hook, gen\nto = partner\n"
           "filter = .type | startswith(\"nl.\")\n%s",
           g_dir, g_dir, g_dir, extra);
  ceb_test_write_file(g_conf, "bridge.conf", text);
}

/* the three generated events were acknowledged (the store is open and
 * migrated: a status command reads it from here on) */
static int gen_acked(void *arg) {
  (void)arg;
  char path[700];
  snprintf(path, sizeof path, "%s/gen.txt", g_dir);
  size_t len = 0;
  char *t = ceb_test_read_file(path, &len);
  int lines = 0;
  for (size_t i = 0; t && i < len; i++)
    lines += t[i] == '\n';
  free(t);
  return lines >= 3;
}

typedef struct st_arg {
  const char *id;
} st_arg;

static int settled_dry(void *arg) {
  st_arg *a = arg;
  int st;
  const char *o =
      run(&st, "status", a->id, "-c", g_conf, "--json", (char *)NULL);
  return st == 0 && strstr(o, "\"last_reason\": \"dry-run\"") &&
         strstr(o, "\"state\": \"done\"");
}

int main(void) {
  char *dir = ceb_test_tmpdir("mapcli");
  snprintf(g_dir, sizeof g_dir, "%s", dir);
  free(dir);
  snprintf(g_conf, sizeof g_conf, "%s/conf", g_dir);
  snprintf(g_out, sizeof g_out, "%s/out.txt", g_dir);
  char cmd[700];
  snprintf(cmd, sizeof cmd, "mkdir -p %s", g_conf);
  CHECK(system(cmd) == 0);
  ceb_test_write_file(
      g_conf, "hook.jq",
      "# meemoo-style webhook document -> CloudEvent\n"
      "{specversion: \"1.0\", id: .headers[\"webhook-id\"],\n"
      " source: \"urn:nld:oin:00000001234567890000:systeem:meemoo\",\n"
      " type: (\"nl.meemoo.\" + .body.type), time: .body.timestamp,\n"
      " datacontenttype: \"application/json\", data: .body.data}\n");
  write_conf("");
  ceb_test_write_file(g_dir, "doc.json",
                      "{\"headers\":{\"webhook-id\":\"msg_1\"},\"body\":{"
                      "\"type\":\"essence.linked\",\"timestamp\":"
                      "\"2026-01-01T00:00:00Z\",\"data\":{\"pid\":\"x\"}}}");
  ceb_test_write_file(g_dir, "bad.json", "{\"headers\":{},\"body\":{}}");
  char doc[700], bad[700], ev[700];
  snprintf(doc, sizeof doc, "%s/doc.json", g_dir);
  snprintf(bad, sizeof bad, "%s/bad.json", g_dir);
  snprintf(ev, sizeof ev, "%s/ev.json", g_dir);
  int st;

  const char *o = run(&st, "event", "map", "-c", g_conf, "--plugin-dir",
                      CEB_PLUGIN_PATH, "--source", "hook", (char *)NULL);
  CHECK_INT(st, 2); /* no FILE */
  char evtext[1024];
  snprintf(evtext, sizeof evtext,
           "{\"specversion\":\"1.0\",\"id\":\"msg_1\",\"source\":\"urn:nld:"
           "oin:00000001234567890000:systeem:meemoo\",\"type\":\"nl.meemoo."
           "essence.linked\",\"time\":\"2026-01-01T00:00:00Z\","
           "\"datacontenttype\":\"application/json\",\"data\":{\"pid\":\"x\"}"
           "}\n");
  {
    char bin[700];
    snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
    char *argv[] = {bin,
                    "event",
                    "map",
                    "-c",
                    g_conf,
                    "--plugin-dir",
                    CEB_PLUGIN_PATH,
                    "--source",
                    "hook",
                    doc,
                    NULL};
    ceb_proc p;
    unlink(g_out);
    CHECK(ceb_proc_start(&p, argv, g_out) == 0);
    CHECK_INT(ceb_proc_stop(&p, 0, 60000), 0);
    size_t len;
    char *t = ceb_test_read_file(g_out, &len);
    CHECK_STR(t, evtext);
    free(t);
    /* an input the program turns into a non-CloudEvent: exit 1, why */
    argv[9] = bad;
    unlink(g_out);
    CHECK(ceb_proc_start(&p, argv, g_out) == 0);
    CHECK_INT(ceb_proc_stop(&p, 0, 60000), 1);
    t = ceb_test_read_file(g_out, &len);
    CHECK_MSG(t && strstr(t, "event 1: "), "%s", t ? t : "");
    free(t);
    /* the route: filter, then the sink's map, on the event */
    ceb_test_write_file(g_dir, "ev.json", evtext);
    argv[7] = "--route";
    argv[8] = "r";
    argv[9] = ev;
    unlink(g_out);
    CHECK(ceb_proc_start(&p, argv, g_out) == 0);
    CHECK_INT(ceb_proc_stop(&p, 0, 60000), 0);
    t = ceb_test_read_file(g_out, &len);
    CHECK_STR(t, "content-type: application/json\n"
                 "X-Source: urn:nld:oin:00000001234567890000:systeem:meemoo\n"
                 "\n{\"type\":\"nl.meemoo.essence.linked\",\"timestamp\":"
                 "\"2026-01-01T00:00:00Z\",\"data\":{\"pid\":\"x\"}}");
    free(t);
    /* an event the filter skips: exit 1 */
    ceb_test_write_file(g_dir, "ev.json",
                        "{\"specversion\":\"1.0\",\"id\":\"e2\",\"source\":"
                        "\"urn:x\",\"type\":\"com.other\"}");
    unlink(g_out);
    CHECK(ceb_proc_start(&p, argv, g_out) == 0);
    CHECK_INT(ceb_proc_stop(&p, 0, 60000), 1);
    t = ceb_test_read_file(g_out, &len);
    CHECK_MSG(t && strstr(t, "the filter of route r skips this event"), "%s",
              t ? t : "");
    free(t);
  }

  /* check: a program that does not compile, with its file:line */
  ceb_test_write_file(g_conf, "hook.jq", "{id: .a,\n type: }\n");
  o = run(&st, "check", "-c", g_conf, "--plugin-dir", CEB_PLUGIN_PATH,
          (char *)NULL);
  CHECK_INT(st, 1);
  char want[800];
  snprintf(want, sizeof want, "%s/hook.jq:2: map: jq: syntax error", g_conf);
  CHECK_MSG(strstr(o, want), "%s", o);

  /* run --dry-run: accepted, settled dry-run, the sink never called */
  ceb_test_write_file(
      g_conf, "hook.jq",
      "{specversion: \"1.0\", id: .id, source: \"urn:x\", type: \"nl.x\"}\n");
  {
    char bin[700], log[700];
    snprintf(bin, sizeof bin, "%s/cebridge", CEB_TEST_BIN_DIR);
    snprintf(log, sizeof log, "%s/run.log", g_dir);
    char *argv[] = {
        bin,         "run", "-c", g_conf, "--plugin-dir", CEB_PLUGIN_PATH,
        "--dry-run", NULL};
    ceb_proc p;
    CHECK(ceb_proc_start(&p, argv, log) == 0);
    CHECK(ceb_test_wait(gen_acked, NULL, 30000));
    st_arg a = {"gen-2"};
    CHECK(ceb_test_wait(settled_dry, &a, 30000));
    a.id = "gen-0";
    CHECK(settled_dry(&a));
    const char *s =
        run(&st, "status", "gen-0", "-c", g_conf, "--json", (char *)NULL);
    CHECK_MSG(strstr(s, "would send to sink partner: ") &&
                  strstr(s, "application/json"),
              "%s", s);
    CHECK_INT(ceb_proc_stop(&p, SIGTERM, 60000), 0);
    char rec[700];
    snprintf(rec, sizeof rec, "%s/partner.txt", g_dir);
    size_t len = 0;
    char *r = ceb_test_read_file(rec, &len);
    CHECK_MSG(r == NULL || len == 0, "the sink was called: %s", r);
    free(r);
    size_t llen;
    char *l = ceb_test_read_file(log, &llen);
    CHECK_MSG(l && strstr(l, "dry-run: route r: event gen-1"), "%s",
              l ? l : "");
    free(l);
  }
  return ceb_test_done("integration_mapping_cli");
}
