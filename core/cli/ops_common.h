/* Option parsing and store opening shared by the operator commands. */
#ifndef CEB_OPS_COMMON_H
#define CEB_OPS_COMMON_H

#include <jansson.h>
#include <stdint.h>

#include "store/ceb_store.h"

typedef struct ceb_ops_args {
  const char *config_dir; /* -c DIR (default bridge.d) */
  const char *store_path; /* --store FILE */
  int json;               /* --json */
  int dry_run;            /* --dry-run */
  int yes;                /* --yes */
  const char *route, *type, *source, *reason, *since, *name;
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

#endif
