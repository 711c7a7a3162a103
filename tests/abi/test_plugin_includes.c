/* The plugin boundary at compile level: a plugin sees the SDK
 * (include/ceb/), its own folder and plugins/common/, nothing else of the
 * tree. Two checks:
 *  - every `#include "..."` in plugins/<name>/ resolves to a file in
 *    plugins/<name>/, plugins/common/ or include/ceb/ (no "../http/x.h",
 *    no "contracts/x.h" found through core/ on the include path);
 *  - the compile commands CMake wrote for the plugin targets (every
 *    compilation run in <build>/plugins/<name>/) compile only files of
 *    plugins/<name>/ and put no folder of the source tree on the include
 *    path besides include/, the plugin's own folder and plugins/common/
 *    (no core/, no sdk/, no other plugin's folder).
 * plugins/common/ alone may also use lib/ (libraries below both the host
 * and the plugins, e.g. lib/mhd_guard): its headers then stay private to
 * plugins/common/'s files, so a plugin still sees only plugins/common/.
 * Each violation is reported with the file (and line) that makes it. */
#include "ceb_test.h"

#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char src_root[PATH_MAX];
static char lib_root[PATH_MAX]; /* <src>/lib */
static size_t includes_seen;

/* snprintf into a PATH_MAX buffer; a path that does not fit is a failure. */
#define PATHF(buf, ...)                                                        \
  CHECK_MSG(snprintf(buf, sizeof buf, __VA_ARGS__) < (int)sizeof buf,          \
            "path too long")

/* 1 when path (resolved) lies in dir (resolved) or below it. */
static int inside(const char *path, const char *dir) {
  size_t n = strlen(dir);
  return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* The resolved dir/name when it exists, else "". */
static void resolve(const char *dir, const char *name, char *out) {
  char joined[PATH_MAX * 2];
  PATHF(joined, "%s/%s", dir, name);
  if (!realpath(joined, out)) out[0] = '\0';
}

/* name resolved in one of lib/'s libraries (lib/<x>/name), else "". */
static void resolve_in_lib(const char *name, char *out) {
  out[0] = '\0';
  DIR *d = opendir(lib_root);
  for (struct dirent *e = d ? readdir(d) : NULL; e && !out[0]; e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char dir[PATH_MAX];
    PATHF(dir, "%s/%s", lib_root, e->d_name);
    resolve(dir, name, out);
  }
  if (d) closedir(d);
}

/* Checks the quoted includes of one file of plugin folder own. */
static void scan_file(const char *path, const char *own, const char *common,
                      const char *sdk) {
  size_t len;
  char *text = ceb_test_read_file(path, &len);
  CHECK_MSG(text != NULL, "cannot read %s", path);
  if (!text) return;
  char filedir[PATH_MAX];
  PATHF(filedir, "%s", path);
  char *slash = strrchr(filedir, '/');
  if (slash) *slash = '\0';
  char incdir[PATH_MAX];
  PATHF(incdir, "%s/include", src_root);
  int line = 0;
  for (char *p = text; p && *p;
       p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    line++;
    char *q = p;
    while (*q == ' ' || *q == '\t')
      q++;
    if (*q != '#') continue;
    q++;
    while (*q == ' ' || *q == '\t')
      q++;
    if (strncmp(q, "include", 7) != 0) continue;
    q += 7;
    while (*q == ' ' || *q == '\t')
      q++;
    if (*q != '"') continue;
    char *end = strchr(q + 1, '"');
    char *eol = strchr(q, '\n');
    if (!end || (eol && end > eol)) continue;
    char name[PATH_MAX];
    PATHF(name, "%.*s", (int)(end - q - 1), q + 1);
    includes_seen++;
    /* Where the compiler would look for a quoted include a plugin may use:
     * the including file's folder, then the allowed include path. */
    const char *dirs[] = {filedir, own, common, incdir};
    char found[PATH_MAX] = "";
    for (size_t i = 0; i < 4 && !found[0]; i++)
      resolve(dirs[i], name, found);
    int in_common = inside(path, common);
    if (!found[0] && in_common) resolve_in_lib(name, found);
    int ok = found[0] &&
             (inside(found, own) || inside(found, common) ||
              inside(found, sdk) || (in_common && inside(found, lib_root)));
    CHECK_MSG(ok,
              "%s:%d: #include \"%s\" is outside include/ceb/, the plugin's "
              "folder and plugins/common/%s%s",
              path, line, name, found[0] ? " (resolves to " : "",
              found[0] ? found : "");
  }
  free(text);
}

/* Every .c and .h under dir (recursively), checked against folder own. */
static void scan_dir(const char *dir, const char *own, const char *common,
                     const char *sdk) {
  DIR *d = opendir(dir);
  CHECK_MSG(d != NULL, "cannot open %s", dir);
  if (!d) return;
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char path[PATH_MAX];
    PATHF(path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    size_t n = strlen(e->d_name);
    if (S_ISDIR(st.st_mode))
      scan_dir(path, own, common, sdk);
    else if (n > 2 && (strcmp(e->d_name + n - 2, ".c") == 0 ||
                       strcmp(e->d_name + n - 2, ".h") == 0))
      scan_file(path, own, common, sdk);
  }
  closedir(d);
}

/* One include-path flag's directory against the plugin that compiles. */
static void check_flag_dir(const char *dir, const char *file) {
  char real[PATH_MAX];
  if (!realpath(dir, real)) PATHF(real, "%s", dir);
  if (!inside(real, src_root)) return; /* system and package directories */
  char bin[PATH_MAX];
  if (realpath(CEB_BINARY_DIR, bin) && inside(real, bin))
    return; /* generated files of the build tree */
  /* The plugin folder of the file being compiled: plugins/<name>. */
  char own[PATH_MAX];
  PATHF(own, "%s/plugins/", src_root);
  const char *rel = file + strlen(own);
  const char *sep = strchr(rel, '/');
  if (strncmp(file, own, strlen(own)) != 0 || !sep) {
    CHECK_MSG(0, "%s is compiled by a plugin target but is not in plugins/",
              file);
    return;
  }
  CHECK(snprintf(own + strlen(own), sizeof own - strlen(own), "%.*s",
                 (int)(sep - rel), rel) > 0);
  char common[PATH_MAX], inc[PATH_MAX];
  PATHF(common, "%s/plugins/common", src_root);
  PATHF(inc, "%s/include", src_root);
  int ok = strcmp(real, inc) == 0 || inside(real, own) ||
           inside(real, common) ||
           (inside(file, common) && inside(real, lib_root));
  CHECK_MSG(ok,
            "%s is compiled with %s on its include path (a plugin sees only "
            "include/, its own folder and plugins/common/)",
            file, real);
}

static void check_command(const char *command, const char *file) {
  char *copy = strdup(command);
  char *save = NULL;
  int next_is_dir = 0;
  for (char *tok = strtok_r(copy, " ", &save); tok;
       tok = strtok_r(NULL, " ", &save)) {
    if (next_is_dir) {
      check_flag_dir(tok, file);
      next_is_dir = 0;
    } else if (strcmp(tok, "-I") == 0 || strcmp(tok, "-isystem") == 0 ||
               strcmp(tok, "-iquote") == 0 || strcmp(tok, "-idirafter") == 0) {
      next_is_dir = 1;
    } else if (strncmp(tok, "-I", 2) == 0) {
      check_flag_dir(tok + 2, file);
    }
  }
  free(copy);
}

static void check_compile_commands(void) {
  char path[PATH_MAX], plugins_bin[PATH_MAX];
  PATHF(path, "%s/compile_commands.json", CEB_BINARY_DIR);
  PATHF(plugins_bin, "%s/plugins", CEB_BINARY_DIR);
  json_error_t err;
  json_t *all = json_load_file(path, 0, &err);
  CHECK_MSG(all != NULL, "cannot read %s (CMAKE_EXPORT_COMPILE_COMMANDS): %s",
            path, err.text);
  if (!all) return;
  size_t i, plugin_units = 0;
  json_t *entry;
  json_array_foreach(all, i, entry) {
    const char *dir = json_string_value(json_object_get(entry, "directory"));
    const char *file = json_string_value(json_object_get(entry, "file"));
    const char *command = json_string_value(json_object_get(entry, "command"));
    if (!dir || !file || !command || !inside(dir, plugins_bin)) continue;
    plugin_units++;
    char real[PATH_MAX];
    if (!realpath(file, real)) PATHF(real, "%s", file);
    /* Built in <build>/plugins/<name>/: the file is in plugins/<name>/,
     * never compiled from another plugin's folder. */
    const char *sub = dir + strlen(plugins_bin) + 1;
    size_t sublen = strcspn(sub, "/");
    char mine[PATH_MAX];
    PATHF(mine, "%s/plugins/%.*s", src_root, (int)sublen, sub);
    CHECK_MSG(inside(real, mine), "%s is compiled by a target of %s", real,
              mine);
    check_command(command, real);
  }
  CHECK_MSG(plugin_units >= 20, "only %zu plugin compilations in %s",
            plugin_units, path);
  json_decref(all);
}

int main(void) {
  CHECK(realpath(CEB_SOURCE_DIR, src_root) != NULL);
  PATHF(lib_root, "%s/lib", src_root);
  char plugins[PATH_MAX], common[PATH_MAX], sdk[PATH_MAX];
  PATHF(plugins, "%s/plugins", src_root);
  PATHF(common, "%s/plugins/common", src_root);
  PATHF(sdk, "%s/include/ceb", src_root);
  DIR *d = opendir(plugins);
  CHECK_MSG(d != NULL, "cannot open %s", plugins);
  size_t folders = 0;
  for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char own[PATH_MAX];
    PATHF(own, "%s/%s", plugins, e->d_name);
    struct stat st;
    if (stat(own, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    folders++;
    scan_dir(own, own, common, sdk);
  }
  if (d) closedir(d);
  CHECK_MSG(folders >= 5, "only %zu plugin folders in %s", folders, plugins);
  CHECK_MSG(includes_seen >= 50, "only %zu quoted includes found",
            includes_seen);
  check_compile_commands();
  return ceb_test_done("abi_plugin_includes");
}
