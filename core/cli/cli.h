/* The cebridge command line: one binary, one function per command. Each
 * takes (argc, argv) with argv[0] the command name, prints its own --help,
 * and returns the process exit code (0 ok, 1 a negative answer such as
 * "invalid", 2 usage or I/O errors). */
#ifndef CEB_CLI_H
#define CEB_CLI_H

int ceb_cmd_run(int argc, char **argv);
int ceb_cmd_check(int argc, char **argv);
int ceb_cmd_plugins(int argc, char **argv);
int ceb_cmd_config_reference(int argc, char **argv);
/* cebridge admin get|post PATH: the admin API with the admin token. */
int ceb_cmd_admin(int argc, char **argv);

/* Shared option parsing: -c DIR / --config DIR and --plugin-dir DIR.
 * Returns the index of the first unparsed argument or -1 after printing a
 * usage error. */
typedef struct ceb_cli_common {
  const char *config_dir;
  const char *plugin_dir;
} ceb_cli_common;
int ceb_cli_parse_common(int argc, char **argv, ceb_cli_common *out,
                         const char *usage);

/* systemd notification (sd_notify protocol) without libsystemd: no-op when
 * NOTIFY_SOCKET is unset. state e.g. "READY=1". */
void ceb_sd_notify(const char *state);
/* Microseconds of the systemd watchdog interval, 0 when not enabled. */
long long ceb_sd_watchdog_usec(void);

#endif
