/* Operator commands that work on the store directly, whether the bridge
 * runs or not (SQLite WAL lets them read and write beside it; the running
 * engine picks up replayed deliveries from the store):
 *   cebridge status EVENT-ID [--source S]
 *   cebridge dlq list|show|replay|purge ...
 *   cebridge contracts list|show ...
 * Each takes -c DIR (the store named by [bridge] store) or --store FILE,
 * and --json for machine-readable output. Exit 0 ok, 1 not found / nothing
 * matched, 2 usage or I/O error. */
#ifndef CEB_CMD_OPS_H
#define CEB_CMD_OPS_H

int ceb_cmd_status(int argc, char **argv);
int ceb_cmd_dlq(int argc, char **argv);
int ceb_cmd_contracts(int argc, char **argv);

#endif
