#include "ceb_test_bridge.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

static const char *or_empty(const char *s) {
  return s ? s : "";
}

int ceb_test_webhook_conf(char *out, size_t size, const char *dir,
                          const ceb_test_webhook_opts *o) {
  int n = snprintf(out, size,
                   "[bridge]\n"
                   "store = %s/store.db\n"
                   "admin.listen = 127.0.0.1:0\n"
                   "admin.port_file = %s/admin.port\n"
                   "admin.token = %s\n"
                   "log.format = text\n"
                   "%s"
                   "\n[source intermediary]\n"
                   "plugin = http\n"
                   "listen = 127.0.0.1:0\n"
                   "port_file = %s/in.port\n"
                   "auth = none\n"
                   "%s"
                   "\n[sink partner]\n"
                   "plugin = http\n"
                   "url = http://127.0.0.1:%d%s\n"
                   "allow_insecure_http = true\n"
                   "%s"
                   "\n[route to-partner]\n"
                   "from = intermediary\n"
                   "to = partner\n"
                   "%s",
                   dir, dir, o->token, or_empty(o->bridge_extra), dir,
                   or_empty(o->source_extra), o->rx_port,
                   o->path ? o->path : "/hook", or_empty(o->sink_extra),
                   or_empty(o->route_extra));
  return n > 0 && (size_t)n < size ? 0 : -1;
}

static int read_port(const char *dir, const char *name) {
  char path[700];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *t = ceb_test_read_file(path, NULL);
  int v = t ? atoi(t) : 0;
  free(t);
  return v;
}

static int ports_ready(void *arg) {
  ceb_test_bridge *b = arg;
  b->in_port = read_port(b->dir, "in.port");
  b->admin_port = read_port(b->dir, "admin.port");
  return b->in_port > 0 && b->admin_port > 0;
}

int ceb_test_bridge_run(ceb_test_bridge *b, const char *dir,
                        const char *conf_text, int64_t timeout_ms) {
  memset(b, 0, sizeof *b);
  b->pid = -1;
  snprintf(b->dir, sizeof b->dir, "%s", dir);
  char conf_dir[600], log[600];
  snprintf(conf_dir, sizeof conf_dir, "%s/conf", dir);
  snprintf(log, sizeof log, "%s/bridge.log", dir);
  if (mkdir(conf_dir, 0700) != 0 ||
      ceb_test_write_file(conf_dir, "bridge.conf", conf_text) != 0)
    return -1;
  b->pid = ceb_test_bridge_start(conf_dir, log);
  if (b->pid <= 0) return -1;
  return ceb_test_wait(ports_ready, b, timeout_ms) ? 0 : -1;
}

int ceb_test_bridge_cli(const ceb_test_bridge *b, const char *args,
                        char **out) {
  char cmd[2048], log[600];
  snprintf(log, sizeof log, "%s/cli.out", b->dir);
  snprintf(cmd, sizeof cmd,
           "timeout 60 '%s/cebridge' %s -c '%s/conf' >'%s' 2>&1",
           CEB_TEST_BIN_DIR, args, b->dir, log);
  int st = system(cmd);
  char *text = ceb_test_read_file(log, NULL);
  if (out)
    *out = text;
  else
    free(text);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int ceb_test_bridge_log_has(const ceb_test_bridge *b, const char *needle) {
  char path[600];
  snprintf(path, sizeof path, "%s/bridge.log", b->dir);
  char *t = ceb_test_read_file(path, NULL);
  int has = t && strstr(t, needle) != NULL;
  free(t);
  return has;
}

void ceb_test_bridge_log_dump(const ceb_test_bridge *b) {
  char path[600];
  snprintf(path, sizeof path, "%s/bridge.log", b->dir);
  char *t = ceb_test_read_file(path, NULL);
  fprintf(stderr, "---- bridge log ----\n%s\n", t ? t : "");
  free(t);
}

double ceb_test_bridge_metric(const ceb_test_bridge *b, const char *series) {
  char url[128], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", b->admin_port);
  if (ceb_test_http("GET", url, NULL, NULL, 0, &body) != 200) {
    free(body);
    return -1;
  }
  const char *p = body ? strstr(body, series) : NULL;
  double v = p ? atof(p + strlen(series)) : -1;
  free(body);
  return v;
}

int ceb_test_route_state_is(const char *conf_dir, const char *id,
                            const char *route, const char *state) {
  char cmd[1400];
  snprintf(cmd, sizeof cmd,
           "%s/cebridge status '%s' -c '%s' --json 2>/dev/null",
           CEB_TEST_BIN_DIR, id, conf_dir);
  FILE *f = popen(cmd, "r");
  if (!f) return 0;
  char buf[16384];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  pclose(f);
  buf[n] = '\0';
  json_t *j = json_loads(buf, 0, NULL);
  int found = 0;
  size_t i, k;
  json_t *ev, *rt;
  json_t *evs = json_is_array(j) ? j : json_object_get(j, "events");
  json_array_foreach(evs, i, ev) {
    json_array_foreach(json_object_get(ev, "routes"), k, rt) {
      const char *r = json_string_value(json_object_get(rt, "route"));
      const char *s = json_string_value(json_object_get(rt, "state"));
      if (r && s && strcmp(r, route) == 0 && strcmp(s, state) == 0) found = 1;
    }
  }
  json_decref(j);
  return found;
}
