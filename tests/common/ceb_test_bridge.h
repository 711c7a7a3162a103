/* One real bridge for an end-to-end test, the sequence those tests shared:
 * write the config into <dir>/conf, start `cebridge run` (beside
 * ceb_test_bridge_start) with its output in <dir>/bridge.log, wait for the
 * port files it writes; then its CLI, log and /metrics. The config of most
 * such tests (an intermediary posting to one webhook receiver) is built
 * here too. Single test thread. */
#ifndef CEB_TEST_BRIDGE_H
#define CEB_TEST_BRIDGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ceb_test_bridge {
  char dir[512];  /* conf/, bridge.log, the port files, cli.out */
  pid_t pid;      /* -1 when it did not start */
  int in_port;    /* from <dir>/in.port */
  int admin_port; /* from <dir>/admin.port */
} ceb_test_bridge;

/* What ceb_test_webhook_conf varies. The *_extra texts are whole
 * "key = value\n" lines (NULL: none) added to [bridge], the source, the
 * sink and the route. */
typedef struct ceb_test_webhook_opts {
  const char *token; /* admin.token */
  int rx_port;       /* the receiver's port on 127.0.0.1 */
  const char *path;  /* the sink's URL path, "/hook" when NULL */
  const char *bridge_extra, *source_extra, *sink_extra, *route_extra;
} ceb_test_webhook_opts;

/* The config: the admin API on 127.0.0.1:0 (port file admin.port) with
 * the token, text logs, the store in dir; source "intermediary" (plugin
 * http, 127.0.0.1:0, port file in.port, auth none); sink "partner"
 * (plugin http, http://127.0.0.1:<rx_port><path>, plain HTTP allowed);
 * route "to-partner" between them. Returns 0, or -1 when size was too
 * small. */
int ceb_test_webhook_conf(char *out, size_t size, const char *dir,
                          const ceb_test_webhook_opts *o);

/* Writes conf_text as <dir>/conf/bridge.conf, starts the bridge and waits
 * up to timeout_ms until <dir>/in.port and <dir>/admin.port hold ports
 * (the files ceb_test_webhook_conf names). 0 when it runs with both. */
int ceb_test_bridge_run(ceb_test_bridge *b, const char *dir,
                        const char *conf_text, int64_t timeout_ms);

/* `cebridge <args> -c <dir>/conf` (60 s at most): its exit status (-1 when
 * it did not exit), *out its output (malloc'd, may be NULL). */
int ceb_test_bridge_cli(const ceb_test_bridge *b, const char *args, char **out);

/* 1 when `cebridge status <id> -c <conf_dir> --json` (a reader beside a
 * running bridge) shows an event id whose route is in state (e.g.
 * "callbacks", "done"): that outcome is committed, so a kill -9 cannot
 * undo it. 0 otherwise, also when the CLI fails. */
int ceb_test_route_state_is(const char *conf_dir, const char *id,
                            const char *route, const char *state);

/* 1 when the bridge's log holds needle. */
int ceb_test_bridge_log_has(const ceb_test_bridge *b, const char *needle);

/* Prints the bridge's log to stderr (for a failed test). */
void ceb_test_bridge_log_dump(const ceb_test_bridge *b);

/* The value after the first /metrics line part equal to series (as
 * "name{labels} "), -1 when the series or the admin API is absent. */
double ceb_test_bridge_metric(const ceb_test_bridge *b, const char *series);

#endif
