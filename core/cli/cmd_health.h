/* cebridge health [-c DIR] [--live] [--timeout SECONDS]
 * Asks the bridge running on config DIR, through its admin API ([bridge]
 * admin.listen, admin.port_file when the port is 0), whether it is ready to
 * accept events (GET /readyz) or, with --live, whether the process serves
 * requests at all (GET /healthz). Both endpoints are open: no admin token
 * is needed. Exit 0 healthy, 1 not healthy or not reachable (the reason on
 * stderr), 2 usage or config error. Single-threaded (a CLI command). */
#ifndef CEB_CMD_HEALTH_H
#define CEB_CMD_HEALTH_H

int ceb_cmd_health(int argc, char **argv);

#endif
