/* cebridge: dispatches to one function per command. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

typedef struct command {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
} command;

static const command k_commands[] = {
    {"run", ceb_cmd_run, "run the bridge on a config directory"},
    {"check", ceb_cmd_check, "check a config directory, with file:line errors"},
    {"plugins", ceb_cmd_plugins, "list the plugins a config uses (or a file)"},
    {"config-reference", ceb_cmd_config_reference,
     "print the Markdown config reference of the host and plugins"},
    {"admin", ceb_cmd_admin,
     "call the running bridge's admin API with its token"},
    {"event", ceb_cmd_event, "validate or convert CloudEvents"},
    {"schema", ceb_cmd_schema, "validate a JSON document against a schema"},
    {"status", ceb_cmd_status, "delivery status of an event per route"},
    {"dlq", ceb_cmd_dlq, "list, show, replay or purge dead letters"},
    {"sink", ceb_cmd_sink, "list sinks' life cycle, enable a disabled sink"},
    {"replay", ceb_cmd_replay,
     "offer a route's archived events of a time range again"},
    {"contracts", ceb_cmd_contracts, "sync, list, show, diff, check contracts"},
    {"cluster", ceb_cmd_cluster,
     "the bridges sharing the store, what each leads and holds"},
    {"store", ceb_cmd_store,
     "store migrate: bring the store's schema up to date"},
    {"health", ceb_cmd_health,
     "ask the running bridge whether it is ready (admin API /readyz)"},
    {"version", ceb_cmd_version, "print the version"},
};
#define NCOMMANDS (sizeof k_commands / sizeof k_commands[0])

static void usage(FILE *f) {
  fprintf(f, "usage: cebridge COMMAND [ARGS]  (cebridge COMMAND --help)\n\n"
             "commands:\n");
  for (size_t i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-17s %s\n", k_commands[i].name, k_commands[i].summary);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) return ceb_cmd_version(0, NULL);
  for (size_t i = 0; i < NCOMMANDS; i++)
    if (strcmp(argv[1], k_commands[i].name) == 0)
      return k_commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "cebridge: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
