#include "ha_bridge.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ceb_test.h"
#include "ceb_test_proc.h"

int ha_bridge_init(ha_bridge *b, const char *parent, const char *name,
                   const char *conf) {
  memset(b, 0, sizeof *b);
  snprintf(b->dir, sizeof b->dir, "%s/%s", parent, name);
  char path[600];
  snprintf(path, sizeof path, "%s/conf", b->dir);
  if (mkdir(b->dir, 0700) != 0 || mkdir(path, 0700) != 0) return -1;
  return ceb_test_write_file(path, "00-bridge.conf", conf);
}

int ha_bridge_write_conf(ha_bridge *b, const char *conf) {
  char path[600];
  snprintf(path, sizeof path, "%s/conf", b->dir);
  return ceb_test_write_file(path, "00-bridge.conf", conf);
}

const char *ha_bridge_port_file(const ha_bridge *b, char *buf, size_t len) {
  snprintf(buf, len, "%s/admin.port", b->dir);
  return buf;
}

int ha_bridge_start(ha_bridge *b) {
  char conf[600], log[600], port[600];
  snprintf(conf, sizeof conf, "%s/conf", b->dir);
  snprintf(log, sizeof log, "%s/bridge-%d.log", b->dir, ++b->starts);
  ha_bridge_port_file(b, port, sizeof port);
  unlink(port); /* the previous start's port must not be taken for this one */
  b->pid = ceb_test_bridge_start(conf, log);
  if (b->pid <= 0) return -1;
  b->admin_port = ceb_test_wait_port_file(port, 30000);
  return b->admin_port > 0 ? 0 : -1;
}

int ha_bridge_stop(ha_bridge *b, int sig) {
  if (b->pid <= 0) return -1;
  int rc = ceb_test_pid_stop(b->pid, sig, 30000);
  b->pid = 0;
  return rc;
}

double ha_bridge_metric(const ha_bridge *b, const char *prefix) {
  char url[128], *body = NULL;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", b->admin_port);
  if (ceb_test_http("GET", url, NULL, NULL, 0, &body) != 200) {
    free(body);
    return -1;
  }
  double v = -1;
  size_t pl = strlen(prefix);
  for (char *line = body; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = 0;
    if (strncmp(line, prefix, pl) == 0) {
      char *sp = strrchr(line, ' ');
      if (sp) v = strtod(sp + 1, NULL);
      break;
    }
    line = nl ? nl + 1 : NULL;
  }
  free(body);
  return v;
}

char *ha_bridge_logs(const ha_bridge *b) {
  size_t cap = 1, len = 0;
  char *all = calloc(1, 1);
  for (int i = 1; all && i <= b->starts; i++) {
    char log[600];
    size_t n = 0;
    snprintf(log, sizeof log, "%s/bridge-%d.log", b->dir, i);
    char *text = ceb_test_read_file(log, &n);
    if (!text) continue;
    char *g = realloc(all, cap + n);
    if (g) {
      all = g;
      memcpy(all + len, text, n);
      len += n;
      cap += n;
      all[len] = 0;
    }
    free(text);
  }
  return all;
}

void ha_bridge_dump_logs(const ha_bridge *b) {
  char *text = ha_bridge_logs(b);
  fprintf(stderr, "---- %s ----\n%s\n", b->dir, text ? text : "(no log)");
  free(text);
}
