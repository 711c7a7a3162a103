#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_common.h"

static const char k_usage[] =
    "usage: cebridge store migrate [-c DIR | --store SPEC]\n"
    "Brings the store's schema to this build's (the [bridge] store of DIR,\n"
    "or SPEC: a SQLite file, or a PostgreSQL URI or conninfo), whatever\n"
    "store.migrate says; a PostgreSQL database is migrated under an\n"
    "advisory lock, so running it beside starting bridges is safe. A store\n"
    "newer than this build is refused. Exit 0 done, 2 usage or store error.\n";

int ceb_cmd_store(int argc, char **argv) {
  ceb_ops_args a;
  int rc = ceb_ops_parse(argc, argv, k_usage, &a);
  if (rc) return rc > 0 ? 0 : 2;
  if (a.npositional != 1 || strcmp(a.positional[0], "migrate") != 0) {
    fprintf(stderr, "%s", k_usage);
    return 2;
  }
  a.migrate = 1;
  ceb_store *st = ceb_ops_open_store(&a);
  if (!st) return 2;
  printf("store schema is this build's (%s engine)\n",
         ceb_store_engine_name(st));
  ceb_store_close(st);
  return 0;
}
