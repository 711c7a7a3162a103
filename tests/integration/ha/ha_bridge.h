/* Several real `cebridge run` processes side by side for the scale-out
 * tests: each in its own directory (conf/, log, admin port file), started,
 * killed and restarted by the test, its /metrics read through the admin
 * port. Single test thread. */
#ifndef CEB_HA_BRIDGE_H
#define CEB_HA_BRIDGE_H

#include <stdint.h>
#include <sys/types.h>

typedef struct ha_bridge {
  char dir[512]; /* conf/ and logs live here */
  pid_t pid;     /* 0 while stopped */
  int admin_port;
  int starts; /* bridge-<starts>.log per start, so a restart keeps the log */
} ha_bridge;

/* Creates dir/<name>/conf and writes conf text to conf/00-bridge.conf; the
 * text should set admin.port_file = <dir>/admin.port (ha_bridge_port_file
 * gives the path). 0 on success. */
int ha_bridge_init(ha_bridge *b, const char *parent, const char *name,
                   const char *conf);
/* Rewrites conf/00-bridge.conf (before a restart). 0 on success. */
int ha_bridge_write_conf(ha_bridge *b, const char *conf);
/* The path the admin port file should be written to. */
const char *ha_bridge_port_file(const ha_bridge *b, char *buf, size_t len);
/* Starts the bridge and waits for its admin port (30 s). 0 on success. */
int ha_bridge_start(ha_bridge *b);
/* sig, then waits up to 30 s; the exit status (-1 when killed). */
int ha_bridge_stop(ha_bridge *b, int sig);
/* The value of the first /metrics sample whose line starts with prefix
 * (name and labels), or -1 when the bridge does not answer or has none. */
double ha_bridge_metric(const ha_bridge *b, const char *prefix);
/* Prints every log of the bridge to stderr (after a failure). */
void ha_bridge_dump_logs(const ha_bridge *b);
/* Concatenated logs of every start (malloc'd), or NULL. */
char *ha_bridge_logs(const ha_bridge *b);

#endif
