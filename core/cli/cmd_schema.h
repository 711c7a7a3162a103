/* `cebridge schema ...`: validate a JSON instance against a JSON Schema
 * (draft-07 or 2020-12) from the command line. Wired into the CLI's command
 * table by core/cli (not owned here). */
#ifndef CEB_CMD_SCHEMA_H
#define CEB_CMD_SCHEMA_H

/* Runs the "schema" command. argv[0] is "schema", argv[1] the subcommand:
 *
 *   schema validate [--draft 7|2020] [--formats] SCHEMA INSTANCE
 *   schema --help
 *
 * SCHEMA and INSTANCE are JSON files ("-" reads INSTANCE from stdin).
 * Relative "$ref"s in the schema are resolved against its file location and
 * loaded from disk (file: URIs only; nothing is fetched from the network).
 * Returns the process exit code: 0 valid, 1 invalid (each error on stderr
 * with its instance path and schema path), 2 usage, I/O or schema compile
 * error. Reentrant: keeps no global state (no getopt). */
int ceb_cmd_schema(int argc, char **argv);

#endif
