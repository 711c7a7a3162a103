/* The cebridge command line: one binary (main.c), one cmd_<name>.c per
 * command. Each command takes (argc, argv) with argv[0] the command name,
 * prints its own --help, keeps no global state (no getopt), and returns the
 * process exit code: 0 ok / valid, 1 a negative answer (invalid, not found,
 * not healthy), 2 usage, config or I/O error. Control thread only. */
#ifndef CEB_CLI_H
#define CEB_CLI_H

/* run [-c DIR]: runs the bridge until SIGTERM; SIGHUP reloads. */
int ceb_cmd_run(int argc, char **argv);
/* check [-c DIR] [--no-init]: every config error as file:line. */
int ceb_cmd_check(int argc, char **argv);
/* plugins [-c DIR] [FILE.so ...]: the plugins a config uses, or files. */
int ceb_cmd_plugins(int argc, char **argv);
/* config-reference: the Markdown reference of every config key. */
int ceb_cmd_config_reference(int argc, char **argv);
/* admin get|post PATH: the running bridge's admin API with its token. */
int ceb_cmd_admin(int argc, char **argv);

/* event validate|convert: CloudEvents from a file (or stdin for "-"),
 * results on stdout, diagnostics on stderr. */
int ceb_cmd_event(int argc, char **argv);
/* event map [-c DIR] (--source|--sink|--route) NAME FILE|-: one mapping of
 * the config on a sample (argv[0] is "map"). */
int ceb_cmd_event_map(int argc, char **argv);

/* schema validate [--draft 7|2020] [--formats] SCHEMA INSTANCE: SCHEMA and
 * INSTANCE are JSON files ("-" reads INSTANCE from stdin). Relative "$ref"s
 * are resolved against the schema's file and loaded from disk (file: URIs
 * only; nothing is fetched from the network). Exit 1 invalid (each error on
 * stderr with its instance path and schema path), 2 also for a schema that
 * does not compile. */
int ceb_cmd_schema(int argc, char **argv);

/* Operator commands that work on the store directly, whether the bridge
 * runs or not (SQLite WAL lets them read and write beside it; the running
 * engine picks up replayed deliveries from the store). Each takes -c DIR
 * (the store named by [bridge] store) or --store FILE, and --json for
 * machine-readable output.
 *   status EVENT-ID [--source S]
 *   dlq list|show|replay|purge ...
 *   contracts list|show|sync|diff|check ...
 *   cluster: the bridges sharing the store (cmd_cluster.c)
 *   sink list|enable NAME
 *   replay --route R --since T [--until T] [--type X] [--dry-run] */
int ceb_cmd_status(int argc, char **argv);
int ceb_cmd_cluster(int argc, char **argv);
int ceb_cmd_dlq(int argc, char **argv);
int ceb_cmd_sink(int argc, char **argv);
int ceb_cmd_replay(int argc, char **argv);
int ceb_cmd_contracts(int argc, char **argv);
/* cebridge store migrate: the store's schema brought to the build's. */
int ceb_cmd_store(int argc, char **argv);

/* health [-c DIR] [--live] [--timeout SECONDS]: asks the bridge running on
 * config DIR, through its admin API ([bridge] admin.listen, admin.port_file
 * when the port is 0), whether it is ready to accept events (GET /readyz)
 * or, with --live, whether the process serves requests at all (GET
 * /healthz). Both endpoints are open: no admin token is needed. Exit 1 not
 * healthy or not reachable (the reason on stderr). */
int ceb_cmd_health(int argc, char **argv);

/* version: "cebridge VERSION (plugin ABI MAJOR.MINOR)". */
int ceb_cmd_version(int argc, char **argv);

#endif
