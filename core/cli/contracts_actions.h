/* The contract commands behind `cebridge contracts sync|show --messages|
 * diff|check` (core/cli/cmd_contracts.c parses the arguments).
 * Each prints to stdout/stderr and returns the exit code: 0 ok, 1 failed /
 * invalid / not found, 2 usage or I/O error. Control thread. */
#ifndef CEB_CONTRACTS_CMD_H
#define CEB_CONTRACTS_CMD_H

#include "store/ceb_store.h"

/* Runs the sync of every [contracts] section (or the one named) of the
 * config in config_dir once, against the store it names. */
int ceb_contracts_cmd_sync(const char *config_dir, const char *name);

/* config_dir may be NULL (no types.* mappings then). NAME@VERSION texts. */
int ceb_contracts_cmd_messages(ceb_store *st, const char *config_dir,
                               const char *pin, int json);
int ceb_contracts_cmd_diff(ceb_store *st, const char *config_dir, const char *a,
                           const char *b);
int ceb_contracts_cmd_check(ceb_store *st, const char *config_dir,
                            const char *pin, const char *event_file);
/* Extra lines for `contracts list`: per pinned route, the version its pin
 * resolves to and newer held versions it does not take. */
void ceb_contracts_cmd_pins(ceb_store *st, const char *config_dir);

#endif
