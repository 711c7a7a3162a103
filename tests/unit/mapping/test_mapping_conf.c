/* Mapping programs at config load (ceb_bridge_load, what `check` and `run`
 * do): a program that does not compile is a config error with file:line
 * (the key's line for an inline program, the .jq file and jq's line for a
 * file: program), a file: program is read relative to the file that sets
 * it, an unreadable one or an empty one is refused, and a good config
 * loads. */
#include "bridge/ceb_bridge.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_dir[512];

/* Loads the dir; returns the errors (static), count in *n. */
static const ceb_conf_errors *load(size_t *n) {
  static ceb_conf_errors errs;
  ceb_bridge_opts o = {.config_dir = g_dir, .plugin_dir = CEB_PLUGIN_PATH};
  ceb_bridge *b = NULL;
  memset(&errs, 0, sizeof errs);
  int rc = ceb_bridge_load(&o, &b, &errs);
  if (rc == CEB_OK) ceb_bridge_free(b);
  *n = errs.count;
  if (errs.count) ceb_conf_errors_print(&errs, stderr);
  return &errs;
}

static const char *k_head = "[bridge]\nstore = store.db\n"
                            "[sink out]\nplugin = testsink\n";

static void write_conf(const char *body) {
  char text[2048];
  snprintf(text, sizeof text, "%s%s", k_head, body);
  ceb_test_write_file(g_dir, "10-bridge.conf", text);
}

int main(void) {
  char *dir = ceb_test_tmpdir("mapconf");
  snprintf(g_dir, sizeof g_dir, "%s", dir);
  free(dir);
  size_t n;
  char want[700];

  /* good: inline, and file: relative to the conf file */
  ceb_test_write_file(g_dir, "good.jq",
                      "# a ready mapping\n{specversion: \"1.0\", id: .k,\n"
                      " source: \"urn:x\", type: \"t\"}\n");
  write_conf("[source in]\nplugin = testsource\nmap = file:good.jq\n"
             "[route r]\nfrom = in\nto = out\nfilter = .type == \"t\"\n"
             "map = {body: .data}\n");
  load(&n);
  CHECK_INT(n, 0);

  /* inline syntax error: the key's line */
  write_conf("[source in]\nplugin = testsource\n"
             "map = {id: .k ||| }\n");
  const ceb_conf_errors *e = load(&n);
  CHECK_INT(n, 1);
  snprintf(want, sizeof want, "%s/10-bridge.conf", g_dir);
  CHECK_STR(e->items[0].file, want);
  CHECK_INT(e->items[0].line, 7);
  CHECK_MSG(strstr(e->items[0].message, "map: jq: syntax error"), "%s",
            e->items[0].message);
  CHECK_MSG(strstr(e->items[0].hint, "[source in]"), "%s", e->items[0].hint);

  /* a route filter calling an unknown function */
  write_conf("[source in]\nplugin = testsource\n"
             "[route r]\nfrom = in\nto = out\n\nfilter = nope(1)\n");
  e = load(&n);
  CHECK_INT(n, 1);
  CHECK_INT(e->items[0].line, 11);
  CHECK_MSG(strstr(e->items[0].message, "filter: jq: nope/1 is not defined"),
            "%s", e->items[0].message);

  /* file: program with an error on its line 3: the .jq file and line 3 */
  ceb_test_write_file(g_dir, "bad.jq", "# header\n.a\n| ]\n");
  write_conf("[source in]\nplugin = testsource\nmap = file:bad.jq\n");
  e = load(&n);
  CHECK_INT(n, 1);
  snprintf(want, sizeof want, "%s/bad.jq", g_dir);
  CHECK_STR(e->items[0].file, want);
  CHECK_INT(e->items[0].line, 3);
  CHECK_MSG(strstr(e->items[0].hint, "10-bridge.conf:7"), "%s",
            e->items[0].hint);

  /* unreadable file, empty program, module directive */
  write_conf("[source in]\nplugin = testsource\nmap = file:missing.jq\n"
             "[sink out2]\nplugin = testsink\nmap = \"  \" | empty\n"
             "[route r]\nfrom = in\nto = out\nmap = import \"x\" as x; .\n");
  e = load(&n);
  CHECK_INT(n, 2);
  CHECK_INT(e->items[0].line, 7);
  CHECK_MSG(strstr(e->items[0].message, "missing.jq") &&
                strstr(e->items[0].message, "No such file"),
            "%s", e->items[0].message);
  /* the sink's program is fine jq; the import is refused with its line */
  CHECK_INT(n > 1 ? e->items[1].line : 0, 14);
  CHECK_MSG(n > 1 && strstr(e->items[1].message, "'import' is not allowed"),
            "%s", n > 1 ? e->items[1].message : "");
  ceb_test_write_file(g_dir, "empty.jq", "  \n\n");
  write_conf("[source in]\nplugin = testsource\nmap = file:empty.jq\n");
  e = load(&n);
  CHECK_INT(n, 1);
  CHECK_MSG(strstr(e->items[0].message, "map is an empty jq program"), "%s",
            e->items[0].message);
  /* map where the plugin does not take mappings: the pull sink sends
   * events as they are; a route to it with map is refused too */
  write_conf("[source in]\nplugin = testsource\n"
             "[sink q]\nplugin = pull\nlisten = 127.0.0.1:0\nauth = none\n"
             "map = {body: .data}\n"
             "[route r]\nfrom = in\nto = q\nmap = {body: .id}\n");
  e = load(&n);
  CHECK_INT(n, 2);
  CHECK_INT(e->items[0].line, 11);
  CHECK_MSG(
      strstr(e->items[0].message, "map: plugin 'pull' does not take mappings"),
      "%s", e->items[0].message);
  CHECK_INT(n > 1 ? e->items[1].line : 0, 15);
  CHECK_MSG(n > 1 && strstr(e->items[1].message,
                            "map: sink 'q' (plugin 'pull') cannot send a "
                            "mapped body"),
            "%s", n > 1 ? e->items[1].message : "");
  return ceb_test_done("unit_mapping_conf");
}
