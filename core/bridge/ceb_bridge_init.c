/* Plugin init, shared by `run` (ceb_bridge_start) and `check`
 * (ceb_bridge_check_init): the same code decides whether an instance's
 * config is acceptable, so that `check` refuses everything `run` would.
 * Much of a plugin's validation can only run in its init (it parses
 * secrets, reads PEM files, decides what a listen address allows): `check`
 * runs every init, up to but not including start, with a throwaway data
 * directory, and destroys the instances again.
 *
 * A failing init reports why through host->log at ERROR level; those
 * lines are captured (runtime_host.c) into the instance and become the
 * error, with the file:line of the key the message starts with (else of
 * the section). */
#include "bridge/ceb_bridge_internal.h"

#include <ctype.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/ceb_runtime.h"

static const char *kind_of(uint32_t role) {
  return role == CEB_ROLE_SOURCE ? "source"
         : role == CEB_ROLE_SINK ? "sink"
                                 : "contracts";
}

/* The file:line a plugin's message is about: the key it starts with
 * ("auth = none is only allowed...", "listen: invalid address"), when the
 * section sets that key; else the section header. */
static void error_origin(const ceb_bridge *b, const ceb_instance *inst,
                         const char *msg, char *file, size_t fsize, int *line) {
  const ceb_conf_section *sec =
      ceb_conf_find(b->conf, kind_of(inst->role), inst->name);
  snprintf(file, fsize, "%s", sec ? sec->file : "?");
  *line = sec ? sec->line : 0;
  if (!sec) return;
  char key[128];
  size_t n = 0;
  while (msg[n] && n < sizeof key - 1 &&
         (isalnum((unsigned char)msg[n]) || msg[n] == '_' || msg[n] == '.' ||
          msg[n] == '-'))
    n++;
  if (n == 0 || (msg[n] != ' ' && msg[n] != ':' && msg[n] != '=')) return;
  memcpy(key, msg, n);
  key[n] = '\0';
  const char *o = ceb_config_origin(sec->cfg, key);
  const char *colon = o ? strrchr(o, ':') : NULL;
  if (colon && strcmp(o, "default") != 0) {
    snprintf(file, fsize, "%.*s", (int)(colon - o), o);
    *line = atoi(colon + 1);
  }
}

/* ceb_instance_info.mapped (ABI 1.2): a source with map; a sink with map,
 * or one a route with map delivers to. */
static int instance_mapped(const ceb_bridge *b, const ceb_instance *inst) {
  if (inst->role == CEB_ROLE_SOURCE) {
    const ceb_conf_section *s = ceb_conf_find(b->conf, "source", inst->name);
    return s && s->host.source.map;
  }
  if (inst->role != CEB_ROLE_SINK) return 0;
  const ceb_conf_section *s = ceb_conf_find(b->conf, "sink", inst->name);
  if (s && s->host.sink.map) return 1;
  for (size_t i = 0; i < b->conf->count; i++) {
    const ceb_conf_section *r = &b->conf->sections[i];
    if (strcmp(r->kind, "route") == 0 && r->host.route.map &&
        r->host.route.to && strcmp(r->host.route.to, inst->name) == 0)
      return 1;
  }
  return 0;
}

int cebb_init_instance(ceb_bridge *b, ceb_instance *inst, const char *data_dir,
                       int quiet, cebb_init_error *e) {
  inst->init_error[0] = '\0';
  atomic_store(&inst->capture, quiet ? CEB_CAPTURE_QUIET : CEB_CAPTURE_ON);
  ceb_instance_info info = {.struct_size = sizeof info,
                            .name = inst->name,
                            .role = inst->role,
                            .data_dir = data_dir,
                            .mapped = instance_mapped(b, inst)};
  int st = inst->plugin->init(ceb_runtime_host(), inst, &info, inst->cfg,
                              &inst->state);
  atomic_store(&inst->capture, CEB_CAPTURE_OFF);
  if (st == CEB_OK) {
    inst->initialised = 1;
    return CEB_OK;
  }
  inst->state = NULL;
  pthread_mutex_lock(&inst->capture_lock);
  char msg[sizeof inst->init_error];
  snprintf(msg, sizeof msg, "%s", inst->init_error);
  pthread_mutex_unlock(&inst->capture_lock);
  error_origin(b, inst, msg, e->file, sizeof e->file, &e->line);
  if (msg[0])
    snprintf(e->message, sizeof e->message, "[%s] %s", inst->component, msg);
  else
    snprintf(e->message, sizeof e->message, "[%s] init failed: %s",
             inst->component, ceb_strerror(st));
  return st;
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

int ceb_bridge_check_init(ceb_bridge *b, ceb_conf_errors *errs) {
  const char *tmp = getenv("TMPDIR");
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s/cebridge-check-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    ceb_conf_error_add(errs, "", 0, "set TMPDIR to a writable directory",
                       "cannot create a temporary directory for the plugins' "
                       "init: %s",
                       strerror(errno));
    return CEB_EIO;
  }
  static const uint32_t order[] = {CEB_ROLE_SINK, CEB_ROLE_CONTRACTS,
                                   CEB_ROLE_SOURCE};
  int rc = CEB_OK;
  for (size_t r = 0; r < 3; r++)
    for (size_t i = 0; i < b->ninstances; i++) {
      ceb_instance *inst = b->instances[i];
      if (inst->role != order[r]) continue;
      char data_dir[PATH_MAX];
      snprintf(data_dir, sizeof data_dir, "%.3000s/%s-%.200s", dir,
               kind_of(inst->role), inst->name);
      mkdir(data_dir, 0700);
      cebb_init_error e;
      if (cebb_init_instance(b, inst, data_dir, 1, &e) != CEB_OK) {
        ceb_conf_error_add(errs, e.file, e.line, NULL, "%s", e.message);
        rc = CEB_ECONFIG;
        continue;
      }
      /* quiet until gone: a client library's threads may still log
       * (connection attempts) */
      atomic_store(&inst->capture, CEB_CAPTURE_QUIET);
      inst->plugin->destroy(inst->state);
      atomic_store(&inst->capture, CEB_CAPTURE_OFF);
      inst->state = NULL;
      inst->initialised = 0;
    }
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return rc;
}
