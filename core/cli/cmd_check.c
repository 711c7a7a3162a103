/* cebridge check: loads and checks a configuration without running it,
 * then runs every plugin's init as `run` would. */
#include <stdio.h>
#include <string.h>

#include "bridge/ceb_bridge.h"
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "config/ceb_core_spec.h"
#include "loader/ceb_loader.h"
#include "router/ceb_route_batch.h"

/* Valid but self-defeating combinations, as "file:line: warning: ..." on
 * stderr (the exit status stays 0). Returns how many. */
static size_t check_warnings(const ceb_conf *conf) {
  size_t n = 0;
  for (size_t k = 0; k < conf->count; k++) {
    const ceb_conf_section *r = &conf->sections[k];
    if (strcmp(r->kind, "route") != 0) continue;
    const ceb_route_cfg *rc = &r->host.route;
    const char *to = rc->to;
    const ceb_config *sink = NULL;
    for (size_t j = 0; to && j < conf->count; j++)
      if (strcmp(conf->sections[j].kind, "sink") == 0 &&
          strcmp(conf->sections[j].name, to) == 0)
        sink = conf->sections[j].cfg;
    ceb_route_batch fit =
        ceb_route_batch_fit(rc, (uint32_t)rc->max_inflight, sink);
    if (!fit.cannot_fill) continue;
    fprintf(stderr,
            "%s: warning: route %s: max_inflight %u is below sink %s's "
            "batch.max %u: no batch ever fills, one goes out per batch.wait "
            "(raise max_inflight to %u or more, or leave it unset)\n",
            rc->max_inflight_origin, r->name, fit.max_inflight, to,
            fit.batch_max, 2 * fit.batch_max);
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
  if (i < 0) return i == -2 ? 0 : 2;
  if (i < argc) {
    fprintf(stderr, "cebridge check: unexpected argument '%s'\n%s", argv[i],
            k_check_usage);
    return 2;
  }
  ceb_bridge *b;
  if (ceb_cli_load_or_report(&c, &b) != CEB_OK) return 1;
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
    if (strcmp(conf->sections[k].kind, "route") == 0) n[3]++;
  printf("%s: OK (%zu sources, %zu sinks, %zu contract sources, %zu routes)\n",
         c.config_dir, n[0], n[1], n[2], n[3]);
  ceb_bridge_free(b);
  return 0;
}
