/* Test helper: a real mosquitto broker (/usr/sbin/mosquitto) as a child
 * process on 127.0.0.1 with an ephemeral port, plus a small blocking MQTT
 * client (libmosquitto underneath, the library the plugin uses).
 *
 * Threading: a broker handle is used from one test thread. A client may be
 * used from one test thread; its received messages are collected by
 * libmosquitto's network thread under a lock. */
#ifndef CEB_MOSQUITTO_H
#define CEB_MOSQUITTO_H

#include <stddef.h>
#include <sys/types.h>

typedef struct ceb_mosq_opts {
  int persistence;      /* keep sessions and queued messages across restarts */
  const char *username; /* non-NULL: require this user (password file) */
  const char *password;
  const char *acl;   /* non-NULL: acl_file contents */
  const char *extra; /* non-NULL: appended to mosquitto.conf verbatim */
  /* Log errors, warnings and notices only. The default (log_type all) writes
   * a line per PUBLISH and PUBACK, which costs the broker more CPU than the
   * messages themselves under load (benchmarks). */
  int quiet_log;
} ceb_mosq_opts;

typedef struct ceb_mosq {
  pid_t pid; /* 0 while stopped */
  int port;
  char *dir;     /* temp dir: config, persistence, log (owned) */
  char url[64];  /* "tcp://127.0.0.1:PORT" */
  char addr[64]; /* "127.0.0.1:PORT" */
} ceb_mosq;

/* Starts a broker on a free port (retrying on a port collision) and waits
 * until it accepts connections. NULL on failure (reason on stderr). */
ceb_mosq *ceb_mosq_start(const ceb_mosq_opts *opts);
/* SIGTERM (mosquitto saves its persistence db) and wait. */
int ceb_mosq_stop(ceb_mosq *m);
/* SIGKILL and wait: nothing saved. */
int ceb_mosq_kill(ceb_mosq *m);
/* Starts the stopped broker again on the same port and directory. */
int ceb_mosq_restart(ceb_mosq *m);
/* Stops the broker if running, removes the directory, frees m. */
void ceb_mosq_free(ceb_mosq *m);

/* ---- a blocking test client ---- */

typedef struct ceb_mqtt_prop {
  char *name, *value;
} ceb_mqtt_prop;

typedef struct ceb_mqtt_msg {
  char *topic;
  char *payload; /* NUL-terminated copy */
  size_t len;
  int qos;
  char *content_type;   /* MQTT 5 Content Type, or NULL */
  ceb_mqtt_prop *props; /* MQTT 5 user properties */
  size_t nprops;
} ceb_mqtt_msg;

typedef struct ceb_mqtt_client ceb_mqtt_client;

/* Connects (version 5 or 4 = 3.1.1) with a clean session; NULL on failure. */
ceb_mqtt_client *ceb_mqtt_client_new(const char *url, const char *client_id,
                                     int version);
void ceb_mqtt_client_free(ceb_mqtt_client *c);
/* Subscribes and waits for the SUBACK. 0 on success. */
int ceb_mqtt_subscribe(ceb_mqtt_client *c, const char *filter, int qos);
/* Publishes and waits for completion (PUBACK for QoS 1). props: NULL or
 * name,value pairs ending with NULL. 0 on success. */
int ceb_mqtt_publish(ceb_mqtt_client *c, const char *topic, const void *payload,
                     size_t len, int qos, const char *content_type,
                     const char *const *props);
/* Waits until at least n messages arrived; returns how many arrived. */
size_t ceb_mqtt_wait(ceb_mqtt_client *c, size_t n, int timeout_ms);
/* Number received so far, and a borrowed pointer to the i-th (valid until
 * the client is freed). */
size_t ceb_mqtt_count(ceb_mqtt_client *c);
const ceb_mqtt_msg *ceb_mqtt_get(ceb_mqtt_client *c, size_t i);
/* Value of a user property of msg, or NULL. */
const char *ceb_mqtt_msg_prop(const ceb_mqtt_msg *msg, const char *name);

#endif
