/* cebridge plugins: the plugins a configuration uses, loaded exactly as
 * `run` loads them, or the plugin files named on the command line. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_common.h"
#include "loader/ceb_loader.h"

static void print_plugin(const ceb_loaded_plugin *p) {
  char roles[64];
  printf("%-10s %-8s ABI %u.%u  %-22s %s\n", p->desc->name,
         p->desc->version ? p->desc->version : "?", p->desc->abi_major,
         p->desc->abi_minor, ceb_roles_str(p->desc->roles, roles, sizeof roles),
         p->path);
}

static const char k_plugins_usage[] =
    "usage: cebridge plugins [-c DIR] [--plugin-dir DIR] [FILE.so ...]\n"
    "Lists the plugins the config directory uses (name, version, ABI,\n"
    "roles, file), loading each exactly as 'run' would. With files, loads\n"
    "and checks those instead. Exit 0 when all load, 1 otherwise.\n";

int ceb_cmd_plugins(int argc, char **argv) {
  ceb_cli_common c = {"bridge.d", NULL};
  int i = ceb_cli_parse_common(argc, argv, &c, k_plugins_usage);
  if (i < 0) return i == -2 ? 0 : 2;
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
  if (ceb_cli_load_or_report(&c, &b) != CEB_OK) return 1;
  printf("%-10s %-8s %-7s %-22s %s\n", "NAME", "VERSION", "ABI", "ROLES",
         "FILE");
  const ceb_loaded_plugin *seen[64];
  size_t nseen = 0;
  for (size_t k = 0; k < ceb_bridge_instance_count(b); k++) {
    const ceb_loaded_plugin *p = ceb_bridge_instance(b, k)->lib;
    int dup = 0;
    for (size_t s = 0; s < nseen; s++)
      dup |= seen[s] == p;
    if (dup || nseen == 64) continue;
    seen[nseen++] = p;
    print_plugin(p);
  }
  ceb_bridge_free(b);
  return 0;
}
