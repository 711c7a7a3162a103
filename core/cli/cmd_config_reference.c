/* cebridge config-reference: the Markdown reference of every config key
 * (docs/config-reference.md is this output). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_common.h"
#include "loader/ceb_loader.h"

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char k_ref_usage[] =
    "usage: cebridge config-reference [--plugin-dir DIR]\n"
    "Prints the Markdown reference of every config key: the host sections\n"
    "and every plugin found in the plugin directory (docs/config-reference.md\n"
    "is this output).\n";

int ceb_cmd_config_reference(int argc, char **argv) {
  ceb_cli_common c = {NULL, NULL};
  int i = ceb_cli_parse_common(argc, argv, &c, k_ref_usage);
  if (i < 0) return i == -2 ? 0 : 2;
  char dirbuf[4096];
  const char *dir = c.plugin_dir
                        ? c.plugin_dir
                        : ceb_plugin_dir_default(dirbuf, sizeof dirbuf);
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "cebridge config-reference: cannot open %s\n", dir);
    return 2;
  }
  char *files[64];
  size_t nfiles = 0;
  struct dirent *de;
  while ((de = readdir(d)) && nfiles < 64) {
    size_t len = strlen(de->d_name);
    if (len > 3 && strcmp(de->d_name + len - 3, ".so") == 0)
      files[nfiles++] = strdup(de->d_name);
  }
  closedir(d);
  qsort(files, nfiles, sizeof *files, cmp_str);
  ceb_conf_plugin_ref refs[64];
  ceb_loaded_plugin *loaded[64];
  size_t nrefs = 0;
  int rc = 0;
  for (size_t k = 0; k < nfiles; k++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, files[k]);
    char err[768];
    if (ceb_loaded_open(path, NULL, &loaded[nrefs], err, sizeof err) != 0) {
      fprintf(stderr, "%s\n", err);
      rc = 1;
    } else {
      const ceb_plugin *p = loaded[nrefs]->desc;
      refs[nrefs] =
          (ceb_conf_plugin_ref){p->name, p->description, p->config_source,
                                p->config_sink, p->config_contracts};
      nrefs++;
    }
    free(files[k]);
  }
  if (ceb_conf_write_reference(stdout, refs, nrefs) != CEB_OK) rc = 2;
  for (size_t k = 0; k < nrefs; k++)
    ceb_loaded_free(loaded[k]);
  return rc;
}
