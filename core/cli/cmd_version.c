/* cebridge version: the version and the plugin ABI this binary loads. */
#include <stdio.h>

#include <ceb/ceb.h>

#include "cli/cli.h"

int ceb_cmd_version(int argc, char **argv) {
  (void)argc;
  (void)argv;
  printf("cebridge %s (plugin ABI %d.%d)\n", CEB_VERSION, CEB_ABI_MAJOR,
         CEB_ABI_MINOR);
  return 0;
}
