/* The mapping programs of a configuration: see ceb_mapping_set.h. */
#include "mapping/ceb_mapping_set.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/status.h>

#include "mapping/mapping_text.h"

/* Largest .jq file read: programs are small; this bounds a wrong path
 * (a log file) read into memory at load. */
#define MAX_PROGRAM_FILE (1024 * 1024)

static void origin_split(const char *origin, const ceb_conf_section *sec,
                         char *file, size_t cap, int *line) {
  snprintf(file, cap, "%s", sec->file);
  *line = sec->line;
  const char *colon = origin ? strrchr(origin, ':') : NULL;
  if (colon && strcmp(origin, "default") != 0) {
    snprintf(file, cap, "%.*s", (int)(colon - origin), origin);
    *line = atoi(colon + 1);
  }
}

static char *read_program(const char *path, char *why, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(why, cap, "cannot read %.400s: %s", path, strerror(errno));
    return NULL;
  }
  char *buf = malloc(MAX_PROGRAM_FILE + 1);
  size_t n = buf ? fread(buf, 1, MAX_PROGRAM_FILE + 1, f) : 0;
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad || n > MAX_PROGRAM_FILE) {
    snprintf(why, cap,
             bad ? "cannot read %.400s" : "%.400s is larger than 1 MiB", path);
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  if (strlen(buf) != n) {
    snprintf(why, cap, "%.400s holds a NUL byte", path);
    free(buf);
    return NULL;
  }
  return buf;
}

static int add(ceb_mapping_set *set, const ceb_conf_section *sec,
               const char *key, const char *value, const char *origin,
               ceb_conf_errors *errs) {
  if (!value) return CEB_OK;
  ceb_mapping_prog p = {0};
  origin_split(origin, sec, p.file, sizeof p.file, &p.line);
  if (strncmp(value, "file:", 5) == 0) {
    const char *rel = value + 5;
    char path[4096];
    if (rel[0] == '/') {
      snprintf(path, sizeof path, "%s", rel);
    } else {
      const char *slash = strrchr(p.file, '/');
      snprintf(path, sizeof path, "%.*s/%s", slash ? (int)(slash - p.file) : 1,
               slash ? p.file : ".", rel);
    }
    char why[600];
    p.text = read_program(path, why, sizeof why);
    if (!p.text) {
      ceb_conf_error_add(errs, p.file, p.line,
                         "file: paths are relative to the file that sets "
                         "the key",
                         "%s = %s: %s", key, value, why);
      return CEB_ECONFIG;
    }
    p.path = strdup(path);
  } else {
    p.text = strdup(value);
  }
  const char *t = p.text ? p.text + strspn(p.text, " \t\r\n") : "";
  if (p.text && !*t) {
    ceb_conf_error_add(errs, p.file, p.line,
                       "'.' passes the input through unchanged",
                       "%s is an empty jq program", key);
    free(p.text);
    free(p.path);
    return CEB_ECONFIG;
  }
  p.kind = strdup(sec->kind);
  p.section = strdup(sec->name ? sec->name : "");
  p.key = strdup(key);
  ceb_mapping_prog *v =
      realloc(set->progs, (set->count + 1) * sizeof *set->progs);
  const char **tv =
      v ? realloc(set->texts, (set->count + 1) * sizeof *set->texts) : NULL;
  if (v) set->progs = v;
  if (tv) set->texts = tv;
  if (!p.text || !p.kind || !p.section || !p.key || !v || !tv) {
    free(p.text);
    free(p.path);
    free(p.kind);
    free(p.section);
    free(p.key);
    return CEB_ENOMEM;
  }
  set->progs[set->count] = p;
  set->texts[set->count] = p.text;
  set->count++;
  return CEB_OK;
}

int ceb_mapping_set_build(const ceb_conf *conf, ceb_mapping_set **out,
                          ceb_conf_errors *errs) {
  *out = NULL;
  ceb_mapping_set *set = calloc(1, sizeof *set);
  if (!set) return CEB_ENOMEM;
  int st = CEB_OK;
  for (size_t i = 0; i < conf->count; i++) {
    const ceb_conf_section *s = &conf->sections[i];
    int rc = CEB_OK, rc2 = CEB_OK;
    if (strcmp(s->kind, "source") == 0) {
      rc = add(set, s, "map", s->host.source.map, s->host.source.map_origin,
               errs);
    } else if (strcmp(s->kind, "sink") == 0) {
      rc = add(set, s, "map", s->host.sink.map, s->host.sink.map_origin, errs);
    } else if (strcmp(s->kind, "route") == 0) {
      rc = add(set, s, "filter", s->host.route.filter,
               s->host.route.filter_origin, errs);
      rc2 =
          add(set, s, "map", s->host.route.map, s->host.route.map_origin, errs);
    }
    if (rc == CEB_ENOMEM || rc2 == CEB_ENOMEM) {
      ceb_mapping_set_free(set);
      return CEB_ENOMEM;
    }
    if (rc != CEB_OK || rc2 != CEB_OK) st = CEB_ECONFIG;
  }
  *out = set; /* without the refused ones: the rest can still be checked */
  return st;
}

int ceb_mapping_set_check(const ceb_mapping_set *set,
                          const ceb_mapper_opts *opts, ceb_conf_errors *errs) {
  if (!set || !set->count) return CEB_OK;
  char **reasons = calloc(set->count, sizeof *reasons);
  if (!reasons) return CEB_ENOMEM;
  char err[512] = "";
  int rc =
      ceb_mapper_check(opts, set->texts, set->count, reasons, err, sizeof err);
  if (rc != CEB_OK) {
    const ceb_mapping_prog *p = &set->progs[0];
    ceb_conf_error_add(errs, p->file, p->line,
                       "the mapping worker cebridge-mapper is installed "
                       "beside the plugins (lib/cebridge/)",
                       "cannot compile the jq programs: %s", err);
    free(reasons);
    return CEB_EIO;
  }
  int st = CEB_OK;
  for (size_t i = 0; i < set->count; i++) {
    if (!reasons[i]) continue;
    st = CEB_ECONFIG;
    const ceb_mapping_prog *p = &set->progs[i];
    int jqline = cebm_error_line(reasons[i]);
    char msg[400];
    cebm_error_tidy(reasons[i], msg, sizeof msg);
    char hint[400];
    if (p->path) {
      snprintf(hint, sizeof hint, "%s = file: in [%s %s] at %s:%d", p->key,
               p->kind, p->section, p->file, p->line);
      ceb_conf_error_add(errs, p->path, jqline, hint, "%s: jq: %s", p->key,
                         msg);
    } else {
      snprintf(hint, sizeof hint, "in [%s %s]", p->kind, p->section);
      ceb_conf_error_add(errs, p->file, p->line + (jqline > 1 ? jqline - 1 : 0),
                         hint, "%s: jq: %s", p->key, msg);
    }
    free(reasons[i]);
  }
  free(reasons);
  return st;
}

int ceb_mapping_set_find(const ceb_mapping_set *set, const char *kind,
                         const char *section, const char *key) {
  for (size_t i = 0; set && i < set->count; i++) {
    const ceb_mapping_prog *p = &set->progs[i];
    if (strcmp(p->kind, kind) == 0 && strcmp(p->section, section) == 0 &&
        strcmp(p->key, key) == 0)
      return (int)i;
  }
  return -1;
}

ceb_mapper_opts ceb_mapping_opts(const ceb_bridge_cfg *b) {
  return (ceb_mapper_opts){.workers = (int)b->mapping.workers,
                           .timeout_ms = b->mapping.timeout_ms,
                           .memory_max = b->mapping.memory_max};
}

void ceb_mapping_set_free(ceb_mapping_set *set) {
  if (!set) return;
  for (size_t i = 0; i < set->count; i++) {
    free(set->progs[i].kind);
    free(set->progs[i].section);
    free(set->progs[i].key);
    free(set->progs[i].text);
    free(set->progs[i].path);
  }
  free(set->progs);
  free(set->texts);
  free(set);
}
