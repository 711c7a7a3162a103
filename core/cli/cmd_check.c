/* check, plugins and config-reference: everything that loads a
 * configuration without running it. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/ceb_bridge.h"
#include "cli/cli.h"
#include "config/ceb_core_spec.h"
#include "loader/ceb_loader.h"
#include "router/ceb_route_batch.h"

static int load_or_report(const ceb_cli_common *c, ceb_bridge **b) {
  ceb_bridge_opts o = {.config_dir = c->config_dir,
                       .plugin_dir = c->plugin_dir};
  ceb_conf_errors errs;
  memset(&errs, 0, sizeof errs);
  int st = ceb_bridge_load(&o, b, &errs);
  if (st != CEB_OK) {
    if (errs.count)
      ceb_conf_errors_print(&errs, stderr);
    else
      fprintf(stderr, "%s: %s\n", c->config_dir, ceb_strerror(st));
    fprintf(stderr, "%zu error%s in %s\n", errs.count ? errs.count : 1,
            errs.count == 1 ? "" : "s", c->config_dir);
  }
  return st;
}

/* Valid but self-defeating combinations, as "file:line: warning: ..." on
 * stderr (the exit status stays 0). Returns how many. */
static size_t check_warnings(const ceb_conf *conf) {
  size_t n = 0;
  for (size_t k = 0; k < conf->count; k++) {
    const ceb_conf_section *r = &conf->sections[k];
    if (strcmp(r->kind, "route") != 0) continue;
    const char *to = ceb_config_str(r->cfg, "to");
    const ceb_config *sink = NULL;
    for (size_t j = 0; to && j < conf->count; j++)
      if (strcmp(conf->sections[j].kind, "sink") == 0 &&
          strcmp(conf->sections[j].name, to) == 0)
        sink = conf->sections[j].cfg;
    ceb_route_batch fit = ceb_route_batch_fit(
        r->cfg, (uint32_t)ceb_config_int(r->cfg, "max_inflight", 64), sink);
    if (!fit.cannot_fill) continue;
    fprintf(stderr,
            "%s: warning: route %s: max_inflight %u is below sink %s's "
            "batch.max %u: no batch ever fills, one goes out per batch.wait "
            "(raise max_inflight to %u or more, or leave it unset)\n",
            ceb_config_origin(r->cfg, "max_inflight"), r->name,
            fit.max_inflight, to, fit.batch_max, 2 * fit.batch_max);
    n++;
  }
  return n;
}

static const char k_check_usage[] =
    "usage: cebridge check [-c DIR] [--plugin-dir DIR] [--no-init]\n"
    "Checks a config directory (default bridge.d): syntax, keys, types,\n"
    "ranges, secrets, references and plugins, then runs every plugin's\n"
    "init as 'run' would (nothing is started; data directories are\n"
    "temporary), so that check refuses what run refuses. --no-init skips\n"
    "that step, for a config meant for another machine: the files, hosts\n"
    "and addresses it names are then not looked at. Prints every error as\n"
    "file:line: message (hint). Exit 0 valid, 1 invalid, 2 usage error.\n";

int ceb_cmd_check(int argc, char **argv) {
  ceb_cli_common c = {"bridge.d", NULL};
  /* --no-init is check's own; the rest are the common options */
  char *args[64];
  int nargs = 0, no_init = 0;
  for (int k = 0; k < argc && nargs < 63; k++) {
    if (k > 0 && strcmp(argv[k], "--no-init") == 0)
      no_init = 1;
    else
      args[nargs++] = argv[k];
  }
  args[nargs] = NULL;
  argc = nargs;
  argv = args;
  int i = ceb_cli_parse_common(argc, argv, &c, k_check_usage);
  if (i < 0)
    return i == -2 ? 0 : 2;
  if (i < argc) {
    fprintf(stderr, "cebridge check: unexpected argument '%s'\n%s", argv[i],
            k_check_usage);
    return 2;
  }
  ceb_bridge *b;
  if (load_or_report(&c, &b) != CEB_OK)
    return 1;
  /* what only the plugins' init can tell (run refuses it the same way) */
  ceb_conf_errors errs;
  memset(&errs, 0, sizeof errs);
  if (!no_init && ceb_bridge_check_init(b, &errs) != CEB_OK) {
    ceb_conf_errors_print(&errs, stderr);
    fprintf(stderr, "%zu error%s in %s\n", errs.count ? errs.count : 1,
            errs.count == 1 ? "" : "s", c.config_dir);
    ceb_bridge_free(b);
    return 1;
  }
  size_t n[4] = {0};
  for (size_t k = 0; k < ceb_bridge_instance_count(b); k++) {
    uint32_t r = ceb_bridge_instance(b, k)->role;
    n[r == CEB_ROLE_SOURCE ? 0 : r == CEB_ROLE_SINK ? 1 : 2]++;
  }
  const ceb_conf *conf = ceb_bridge_conf(b);
  check_warnings(conf);
  for (size_t k = 0; k < conf->count; k++)
    if (strcmp(conf->sections[k].kind, "route") == 0)
      n[3]++;
  printf("%s: OK (%zu sources, %zu sinks, %zu contract sources, %zu routes)\n",
         c.config_dir, n[0], n[1], n[2], n[3]);
  ceb_bridge_free(b);
  return 0;
}

static void print_plugin(const ceb_loaded_plugin *p) {
  char roles[64];
  printf("%-10s %-8s ABI %u.%u  %-22s %s\n", p->desc->name,
         p->desc->version ? p->desc->version : "?", p->desc->abi_major,
         p->desc->abi_minor,
         ceb_roles_str(p->desc->roles, roles, sizeof roles), p->path);
}

static const char k_plugins_usage[] =
    "usage: cebridge plugins [-c DIR] [--plugin-dir DIR] [FILE.so ...]\n"
    "Lists the plugins the config directory uses (name, version, ABI,\n"
    "roles, file), loading each exactly as 'run' would. With files, loads\n"
    "and checks those instead. Exit 0 when all load, 1 otherwise.\n";

int ceb_cmd_plugins(int argc, char **argv) {
  ceb_cli_common c = {"bridge.d", NULL};
  int i = ceb_cli_parse_common(argc, argv, &c, k_plugins_usage);
  if (i < 0)
    return i == -2 ? 0 : 2;
  if (i < argc) {
    int rc = 0;
    for (; i < argc; i++) {
      ceb_loaded_plugin *p;
      char err[768];
      if (ceb_loaded_open(argv[i], NULL, &p, err, sizeof err) != CEB_OK) {
        fprintf(stderr, "%s\n", err);
        rc = 1;
        continue;
      }
      print_plugin(p);
      ceb_loaded_free(p);
    }
    return rc;
  }
  ceb_bridge *b;
  if (load_or_report(&c, &b) != CEB_OK)
    return 1;
  printf("%-10s %-8s %-7s %-22s %s\n", "NAME", "VERSION", "ABI", "ROLES",
         "FILE");
  const ceb_loaded_plugin *seen[64];
  size_t nseen = 0;
  for (size_t k = 0; k < ceb_bridge_instance_count(b); k++) {
    const ceb_loaded_plugin *p = ceb_bridge_instance(b, k)->lib;
    int dup = 0;
    for (size_t s = 0; s < nseen; s++)
      dup |= seen[s] == p;
    if (dup || nseen == 64)
      continue;
    seen[nseen++] = p;
    print_plugin(p);
  }
  ceb_bridge_free(b);
  return 0;
}

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
  if (i < 0)
    return i == -2 ? 0 : 2;
  char dirbuf[4096];
  const char *dir =
      c.plugin_dir ? c.plugin_dir : ceb_plugin_dir_default(dirbuf, sizeof dirbuf);
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
      refs[nrefs] = (ceb_conf_plugin_ref){p->name, p->description,
                                          p->config_source, p->config_sink,
                                          p->config_contracts};
      nrefs++;
    }
    free(files[k]);
  }
  if (ceb_conf_write_reference(stdout, refs, nrefs) != CEB_OK)
    rc = 2;
  for (size_t k = 0; k < nrefs; k++)
    ceb_loaded_free(loaded[k]);
  return rc;
}
