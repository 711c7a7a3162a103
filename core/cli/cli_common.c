#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int ceb_cli_parse_common(int argc, char **argv, ceb_cli_common *out,
                         const char *usage) {
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf("%s", usage);
      return -2;
    }
    if ((strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) && i + 1 < argc) {
      out->config_dir = argv[++i];
    } else if (strcmp(a, "--plugin-dir") == 0 && i + 1 < argc) {
      out->plugin_dir = argv[++i];
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "cebridge %s: unknown or incomplete option '%s'\n%s",
              argv[0], a, usage);
      return -1;
    } else {
      break;
    }
  }
  return i;
}
