/* ceb_conf_load: reads every *.conf of a directory in name order with
 * libinih. The Debian libinih is built without INI_HANDLER_LINENO, so the
 * file is fed through a reader that counts lines and classifies each one
 * itself: section headers are handled here (libinih does not report them),
 * comment and malformed lines reach libinih as blank lines, and only
 * well-formed "key = value" lines reach its handler, which then knows the
 * current line. Leading whitespace is stripped, which also keeps libinih's
 * multi-line continuation (indented line = more value) from silently
 * joining an indented key into the previous value. */
#include "config/ceb_conf_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ini.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Longest accepted line (libinih needs 3 more bytes: CR, LF, NUL). */
#define CONF_MAX_LINE 4096

static const char *const section_kinds[] = {"bridge", "source", "sink", "route",
                                            "contracts"};

typedef struct loader {
  ceb_conf *conf;
  size_t cap;
  ceb_conf_errors *errs;
  FILE *fp;
  const char *file; /* display path: dir/name */
  int lineno;
  char *buf; /* getline buffer */
  size_t buf_cap;
  int state;  /* 0: before any section, 1: in section cur, 2: bad header */
  size_t cur; /* index into conf->sections */
  size_t key_cap_reported; /* 1 + section index whose key cap was reported */
  int section_cap_reported;
  int oom;
} loader;

int ceb_conf_name_ok(const char *text) {
  if (!text ||
      !(islower((unsigned char)*text) || isdigit((unsigned char)*text)))
    return 0;
  size_t n = 0;
  for (const char *p = text; *p; p++, n++) {
    unsigned char c = (unsigned char)*p;
    if (!(islower(c) || isdigit(c) || c == '_' || c == '.' || c == '-'))
      return 0;
  }
  return n <= 128;
}

static int key_ok(const char *key) {
  return ceb_conf_name_ok(key);
}

static ceb_conf_section *section_add(loader *ld, const char *kind,
                                     const char *name) {
  ceb_conf *conf = ld->conf;
  if (conf->count == ld->cap) {
    size_t cap = ld->cap ? ld->cap * 2 : 8;
    ceb_conf_section *s = realloc(conf->sections, cap * sizeof *s);
    if (!s) return NULL;
    conf->sections = s;
    ld->cap = cap;
  }
  ceb_conf_section *s = &conf->sections[conf->count];
  memset(s, 0, sizeof *s);
  s->kind = strdup(kind);
  s->name = name ? strdup(name) : NULL;
  s->file = strdup(ld->file);
  s->line = ld->lineno;
  s->cfg = cebi_config_new(name);
  if (!s->kind || (name && !s->name) || !s->file || !s->cfg) {
    free(s->kind);
    free(s->name);
    free(s->file);
    cebi_config_free(s->cfg);
    return NULL;
  }
  conf->count++;
  return s;
}

/* Handles a line starting with '['. */
static void section_header(loader *ld, char *line) {
  ld->state = 2; /* until proven good: keys below it are not reported */
  char *close = strchr(line, ']');
  if (!close) {
    ceb_conf_error_add(ld->errs, ld->file, ld->lineno,
                       "a section header looks like [source NAME]",
                       "section header without closing ']'");
    return;
  }
  char *rest = close + 1;
  while (*rest == ' ' || *rest == '\t')
    rest++;
  if (*rest && *rest != ';' && *rest != '#') {
    ceb_conf_error_add(ld->errs, ld->file, ld->lineno,
                       "only a comment may follow a section header",
                       "unexpected text after section header");
    return;
  }
  *close = '\0';
  char *kind = line + 1;
  while (*kind == ' ' || *kind == '\t')
    kind++;
  char *end = kind + strlen(kind);
  while (end > kind && (end[-1] == ' ' || end[-1] == '\t'))
    *--end = '\0';
  char *name = kind + strcspn(kind, " \t");
  if (*name) {
    *name++ = '\0';
    while (*name == ' ' || *name == '\t')
      name++;
  }
  size_t k = 0, nkinds = sizeof section_kinds / sizeof section_kinds[0];
  while (k < nkinds && strcmp(kind, section_kinds[k]) != 0)
    k++;
  if (k == nkinds) {
    ceb_conf_suggest sg;
    ceb_conf_suggest_init(&sg, kind);
    for (size_t i = 0; i < nkinds; i++)
      ceb_conf_suggest_add(&sg, section_kinds[i]);
    char hint[96];
    if (sg.best)
      snprintf(hint, sizeof hint, "did you mean '%s'?", sg.best);
    else
      snprintf(hint, sizeof hint,
               "sections are bridge, source, sink, route and contracts");
    ceb_conf_error_add(ld->errs, ld->file, ld->lineno, hint,
                       "unknown section kind '%.64s'", kind);
    return;
  }
  if (k == 0) { /* [bridge]: one section, merged across files */
    if (*name) {
      ceb_conf_error_add(ld->errs, ld->file, ld->lineno,
                         "write [bridge] without a name",
                         "[bridge] takes no name");
      return;
    }
    for (size_t i = 0; i < ld->conf->count; i++) {
      if (strcmp(ld->conf->sections[i].kind, "bridge") == 0) {
        ld->cur = i;
        ld->state = 1;
        return;
      }
    }
  } else {
    if (!*name) {
      char hint[64];
      snprintf(hint, sizeof hint, "write [%s NAME]", kind);
      ceb_conf_error_add(ld->errs, ld->file, ld->lineno, hint,
                         "[%s] needs a name", kind);
      return;
    }
    if (!ceb_conf_name_ok(name)) {
      ceb_conf_error_add(ld->errs, ld->file, ld->lineno,
                         "names are lower-case letters, digits, '_', '.', "
                         "'-', starting with a letter or digit",
                         "invalid section name '%.64s'", name);
      return;
    }
    for (size_t i = 0; i < ld->conf->count; i++) {
      const ceb_conf_section *s = &ld->conf->sections[i];
      if (s->name && strcmp(s->kind, kind) == 0 && strcmp(s->name, name) == 0) {
        char hint[320];
        snprintf(hint, sizeof hint, "first defined at %.200s:%d", s->file,
                 s->line);
        ceb_conf_error_add(ld->errs, ld->file, ld->lineno, hint,
                           "duplicate section [%s %s]", kind, name);
        return;
      }
    }
  }
  if (ld->conf->count >= CEB_CONF_MAX_SECTIONS) {
    if (!ld->section_cap_reported)
      ceb_conf_error_add(ld->errs, ld->file, ld->lineno,
                         "split the bridge into several instances",
                         "more than %d sections", CEB_CONF_MAX_SECTIONS);
    ld->section_cap_reported = 1;
    return;
  }
  if (!section_add(ld, kind, k == 0 ? NULL : name)) {
    ld->oom = 1;
    return;
  }
  ld->cur = ld->conf->count - 1;
  ld->state = 1;
}

/* The ini_reader: returns each line, or a blank line in place of what the
 * loader handles itself. */
static char *conf_reader(char *str, int num, void *stream) {
  loader *ld = stream;
  ssize_t n = getline(&ld->buf, &ld->buf_cap, ld->fp);
  if (n < 0 || num < 2) return NULL;
  ld->lineno++;
  char *line = ld->buf;
  strcpy(str, "\n");
  if ((size_t)n != strlen(line)) {
    ceb_conf_error_add(ld->errs, ld->file, ld->lineno, "config files are text",
                       "NUL byte in line");
    return str;
  }
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
    line[--n] = '\0';
  if (ld->lineno == 1 && (unsigned char)line[0] == 0xEF &&
      (unsigned char)line[1] == 0xBB && (unsigned char)line[2] == 0xBF)
    line += 3; /* UTF-8 byte order mark */
  while (*line == ' ' || *line == '\t')
    line++;
  if (!*line || *line == ';' || *line == '#') return str;
  if (*line == '[') {
    section_header(ld, line);
    return str;
  }
  size_t eq = strcspn(line, "=:");
  if (line[eq] != '=') {
    ceb_conf_error_add(ld->errs, ld->file, ld->lineno,
                       "lines are [section], key = value, or ; comment",
                       "expected 'key = value'");
    return str;
  }
  size_t len = strlen(line);
  if (len + 3 > (size_t)num || len > CONF_MAX_LINE) {
    ceb_conf_error_add(ld->errs, ld->file, ld->lineno, "shorten it",
                       "line longer than %d characters", CONF_MAX_LINE);
    return str;
  }
  memcpy(str, line, len);
  str[len] = '\n';
  str[len + 1] = '\0';
  return str;
}

static int conf_handler(void *user, const char *section, const char *name,
                        const char *value) {
  (void)section; /* the loader tracks sections itself */
  loader *ld = user;
  if (ld->state == 2) return 1; /* under a bad header: already reported */
  if (!key_ok(name)) {
    ceb_conf_error_add(ld->errs, ld->file, ld->lineno,
                       "keys are lower-case letters, digits, '_', '.', '-'",
                       *name ? "invalid key '%.64s'" : "empty key%.0s", name);
    return 1;
  }
  if (ld->state == 0) {
    ceb_conf_error_add(ld->errs, ld->file, ld->lineno,
                       "put it under [bridge] or a [source NAME], "
                       "[sink NAME], [route NAME] or [contracts NAME] header",
                       "key '%.64s' outside a section", name);
    return 1;
  }
  ceb_conf_section *s = &ld->conf->sections[ld->cur];
  if (cebi_config_count(s->cfg) >= CEB_CONF_MAX_KEYS) {
    if (ld->key_cap_reported != ld->cur + 1)
      ceb_conf_error_add(ld->errs, ld->file, ld->lineno, NULL,
                         "more than %d keys in one section", CEB_CONF_MAX_KEYS);
    ld->key_cap_reported = ld->cur + 1;
    return 1;
  }
  if (cebi_config_put(s->cfg, name, value, ld->file, ld->lineno) != CEB_OK)
    ld->oom = 1;
  return 1;
}

static int conf_file_cmp(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

static int conf_file_filter(const struct dirent *d) {
  size_t n = strlen(d->d_name);
  return d->d_name[0] != '.' && n > 5 &&
         strcmp(d->d_name + n - 5, ".conf") == 0;
}

static void load_file(loader *ld, const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    ceb_conf_error_add(ld->errs, path, 0, NULL, "cannot read: %s",
                       strerror(errno));
    return;
  }
  if (!S_ISREG(st.st_mode)) {
    ceb_conf_error_add(ld->errs, path, 0, "remove it or rename it",
                       "not a regular file");
    return;
  }
  ld->fp = fopen(path, "r");
  if (!ld->fp) {
    ceb_conf_error_add(ld->errs, path, 0, NULL, "cannot open: %s",
                       strerror(errno));
    return;
  }
  ld->file = path;
  ld->lineno = 0;
  ld->state = 0;
  size_t errs_before = ld->errs->count;
  int saved_max = ini_max_line;
  if (ini_max_line < CONF_MAX_LINE + 3) ini_max_line = CONF_MAX_LINE + 3;
  int rc = ini_parse_stream(conf_reader, ld, conf_handler, ld);
  ini_max_line = saved_max;
  if (ferror(ld->fp))
    ceb_conf_error_add(ld->errs, path, 0, NULL, "read error");
  else if (rc < 0)
    ld->oom = 1;
  else if (rc > 0 && ld->errs->count == errs_before) /* filtered: unlikely */
    ceb_conf_error_add(ld->errs, path, rc, NULL, "syntax error");
  fclose(ld->fp);
  ld->fp = NULL;
}

int ceb_conf_load(const char *dir, ceb_conf **out, ceb_conf_errors *errs) {
  if (!out || !errs) return CEB_EINVAL;
  *out = NULL;
  memset(errs, 0, sizeof *errs);
  if (!dir || !*dir) {
    ceb_conf_error_add(errs, "", 0, NULL, "no config directory given");
    return CEB_ECONFIG;
  }
  struct dirent **names = NULL;
  int n = scandir(dir, &names, conf_file_filter, conf_file_cmp);
  if (n < 0) {
    ceb_conf_error_add(errs, dir, 0, "give the bridge.d directory",
                       "cannot read config directory: %s", strerror(errno));
    return CEB_ECONFIG;
  }
  loader ld = {0};
  ld.errs = errs;
  ld.conf = calloc(1, sizeof *ld.conf);
  if (!ld.conf || !(ld.conf->dir = strdup(dir))) ld.oom = 1;
  if (n == 0)
    ceb_conf_error_add(errs, dir, 0, "files must end in .conf",
                       "no *.conf files in config directory");
  for (int i = 0; i < n; i++) {
    if (!ld.oom) {
      size_t len = strlen(dir) + strlen(names[i]->d_name) + 2;
      char *path = malloc(len);
      if (path) {
        int slash = dir[strlen(dir) - 1] == '/';
        snprintf(path, len, "%s%s%s", dir, slash ? "" : "/", names[i]->d_name);
        load_file(&ld, path);
        free(path);
      } else {
        ld.oom = 1;
      }
    }
    free(names[i]);
  }
  free(names);
  free(ld.buf);
  if (ld.oom) {
    ceb_conf_free(ld.conf);
    ceb_conf_error_add(errs, dir, 0, NULL, "out of memory");
    return CEB_ENOMEM;
  }
  if (!errs->count && !(ld.conf->empty_bridge = cebi_config_new(NULL))) {
    ceb_conf_free(ld.conf);
    ceb_conf_error_add(errs, dir, 0, NULL, "out of memory");
    return CEB_ENOMEM;
  }
  if (errs->count) {
    ceb_conf_free(ld.conf);
    return CEB_ECONFIG;
  }
  /* Typed host fields from the raw values, so that no loaded conf has
   * unbound (zero) ones; ceb_conf_check binds the final values. */
  ceb_conf_bind_raw(ld.conf);
  *out = ld.conf;
  return CEB_OK;
}
