/* The SDK boundary at link level: every function declared in include/ceb/
 * is exported by libceb; libceb exports nothing else but the host-internal
 * cebi_* names listed one by one in sdk/ceb.map; and a plugin exports only
 * ceb_plugin_query. */
#include "ceb_test.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

typedef struct names {
  char **v;
  size_t n;
} names;

static void names_add(names *s, const char *name, size_t len) {
  for (size_t i = 0; i < s->n; i++)
    if (strlen(s->v[i]) == len && strncmp(s->v[i], name, len) == 0) return;
  s->v = realloc(s->v, (s->n + 1) * sizeof *s->v);
  s->v[s->n++] = strndup(name, len);
}

static void names_free(names *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->v[i]);
  free(s->v);
}

/* Function declarations in a header: "ceb_name(" not preceded by "(*" and
 * not on a #define line. Good enough for our own, formatted headers. */
static void scan_header(const char *path, names *out) {
  size_t len;
  char *text = ceb_test_read_file(path, &len);
  CHECK_MSG(text != NULL, "cannot read %s", path);
  if (!text) return;
  int in_comment = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char *p = line;
    while (isspace((unsigned char)*p))
      p++;
    if (in_comment) {
      if (strstr(p, "*/")) in_comment = 0;
      continue;
    }
    if (strncmp(p, "/*", 2) == 0) {
      if (!strstr(p, "*/")) in_comment = 1;
      continue;
    }
    if (*p == '#' || *p == '*' || strncmp(p, "typedef", 7) == 0) continue;
    for (char *q = strstr(p, "ceb_"); q; q = strstr(q + 1, "ceb_")) {
      if (q > p && (isalnum((unsigned char)q[-1]) || q[-1] == '_' ||
                    q[-1] == '*' || q[-1] == '('))
        if (!(q[-1] == '*' && q - 1 > p && q[-2] != '(')) continue;
      size_t n = 0;
      while (isalnum((unsigned char)q[n]) || q[n] == '_')
        n++;
      if (q[n] == '(') names_add(out, q, n);
    }
  }
  free(text);
}

static void read_exports(const char *lib, names *out) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", lib);
  FILE *f = popen(cmd, "r");
  CHECK_MSG(f != NULL, "cannot run nm");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char addr[64], type[8], name[400];
    if (sscanf(line, "%63s %7s %399s", addr, type, name) != 3) continue;
    if (strcmp(type, "T") != 0 && strcmp(type, "D") != 0 &&
        strcmp(type, "B") != 0 && strcmp(type, "R") != 0)
      continue;
    char *at = strchr(name, '@');
    names_add(out, name, at ? (size_t)(at - name) : strlen(name));
  }
  CHECK_INT(pclose(f), 0);
}

static int has(const names *s, const char *name) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->v[i], name) == 0) return 1;
  return 0;
}

/* Every header in include/ceb/, whatever headers are added later. */
static void scan_sdk_headers(names *declared) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/include/ceb", CEB_SOURCE_DIR);
  DIR *d = opendir(dir);
  CHECK_MSG(d != NULL, "cannot open %s", dir);
  if (!d) return;
  size_t headers = 0;
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    size_t n = strlen(e->d_name);
    if (n < 3 || strcmp(e->d_name + n - 2, ".h") != 0) continue;
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    scan_header(path, declared);
    headers++;
  }
  closedir(d);
  CHECK_MSG(headers >= 8, "only %zu headers in %s", headers, dir);
}

/* The host-internal exports sdk/ceb.map lists by name: "cebi_x;" lines. */
static void read_host_internal(names *out) {
  size_t len;
  char *text = ceb_test_read_file(CEB_SOURCE_DIR "/sdk/ceb.map", &len);
  CHECK_MSG(text != NULL, "cannot read sdk/ceb.map");
  if (!text) return;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    while (isspace((unsigned char)*line))
      line++;
    if (strncmp(line, "cebi_", 5) != 0) continue;
    size_t n = 0;
    while (isalnum((unsigned char)line[n]) || line[n] == '_')
      n++;
    if (line[n] == ';') names_add(out, line, n);
  }
  free(text);
}

int main(void) {
  names declared = {0}, exported = {0}, plugin = {0}, host = {0};
  scan_sdk_headers(&declared);
  CHECK_MSG(declared.n > 40, "only %zu declarations found", declared.n);
  read_host_internal(&host);
  read_exports(CEB_LIBCEB, &exported);
  for (size_t i = 0; i < declared.n; i++) {
    /* Declared for plugins to define, not for libceb. */
    if (strcmp(declared.v[i], "ceb_plugin_query") == 0) continue;
    CHECK_MSG(has(&exported, declared.v[i]),
              "%s is declared in include/ceb but not exported by libceb",
              declared.v[i]);
  }
  for (size_t i = 0; i < exported.n; i++)
    CHECK_MSG(has(&declared, exported.v[i]) || has(&host, exported.v[i]),
              "libceb exports %s, which include/ceb/ does not declare and "
              "sdk/ceb.map does not list as host-internal",
              exported.v[i]);
  for (size_t i = 0; i < host.n; i++) {
    CHECK_MSG(!has(&declared, host.v[i]),
              "%s is listed as host-internal but declared in include/ceb",
              host.v[i]);
    CHECK_MSG(has(&exported, host.v[i]),
              "sdk/ceb.map lists %s, which libceb does not define", host.v[i]);
  }

  read_exports(CEB_ABI_DIR "/abigood.so", &plugin);
  CHECK_MSG(plugin.n == 1 && has(&plugin, "ceb_plugin_query"),
            "a plugin must export only ceb_plugin_query (%zu symbols)",
            plugin.n);
  names_free(&declared);
  names_free(&exported);
  names_free(&plugin);
  names_free(&host);
  return ceb_test_done("abi_symbols");
}
