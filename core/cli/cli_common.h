/* Helpers the commands share: option parsing, loading a configuration with
 * its errors reported, and the store opening and printing of the operator
 * commands (status, dlq, contracts). Control thread only. */
#ifndef CEB_CLI_COMMON_H
#define CEB_CLI_COMMON_H

#include <jansson.h>
#include <stdint.h>

#include "bridge/ceb_bridge.h"
#include "store/ceb_store.h"

/* Shared option parsing: -c DIR / --config DIR and --plugin-dir DIR.
 * Returns the index of the first unparsed argument, -2 after printing usage
 * for --help, or -1 after printing a usage error. */
typedef struct ceb_cli_common {
  const char *config_dir;
  const char *plugin_dir;
} ceb_cli_common;
int ceb_cli_parse_common(int argc, char **argv, ceb_cli_common *out,
                         const char *usage);

/* Loads and checks c's configuration (ceb_bridge_load). On failure prints
 * every error (file:line) and their count to stderr and returns < 0; the
 * caller frees *b on CEB_OK. */
int ceb_cli_load_or_report(const ceb_cli_common *c, ceb_bridge **b);

typedef struct ceb_ops_args {
  const char *config_dir; /* -c DIR (default bridge.d) */
  const char *store_path; /* --store FILE */
  int json;               /* --json */
  int dry_run;            /* --dry-run */
  int yes;                /* --yes */
  int migrate;            /* open to migrate (cebridge store migrate): a
                             missing SQLite file is created, and the
                             schema brought up to date whatever
                             store.migrate says */
  const char *route, *type, *source, *reason, *since, *until, *name;
  const char *positional[16];
  int npositional;
} ceb_ops_args;

/* Parses argv[1..]; prints usage on --help (returns 1) or error (returns
 * -1). 0 when parsed. */
int ceb_ops_parse(int argc, char **argv, const char *usage, ceb_ops_args *a);

/* Opens the store named by --store or by [bridge] store of -c DIR. Prints
 * the reason and returns NULL on failure. */
ceb_store *ceb_ops_open_store(const ceb_ops_args *a);

/* Wall clock ms. */
int64_t ceb_ops_now_ms(void);

/* Prints json pretty (--json) to stdout. Steals the reference. */
void ceb_ops_print_json(json_t *j);

/* "2026-11-22T18:00:00.000Z" or "-" for 0 into buf (>= 32 bytes). */
const char *ceb_ops_time(int64_t ms, char *buf);
/* s as the log escapes it (ceb_log_escape.h: no control character, C1 and
 * bidi overrides included), for a table line on the operator's terminal:
 * event ids, sources, types and reasons come from outside and could move
 * the cursor or fake lines. NULL reads "-". The copy lives until the 16th
 * call after this one (a row's printf takes a few); main thread only. */
const char *ceb_ops_safe(const char *s);

#endif
