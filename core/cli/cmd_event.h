/* `cebridge event ...`: validate and convert CloudEvents from the command
 * line. Wired into the CLI's command table by core/cli (not owned here). */
#ifndef CEB_CMD_EVENT_H
#define CEB_CMD_EVENT_H

/* Runs the "event" command. argv[0] is "event", argv[1] the subcommand
 * ("validate" or "convert"). Reads the input file (or stdin for "-"), writes
 * results to stdout and diagnostics to stderr. Returns the process exit
 * code: 0 success / valid, 1 invalid input or event, 2 usage or I/O error.
 * Reentrant: keeps no global state (no getopt). */
int ceb_cmd_event(int argc, char **argv);

#endif
