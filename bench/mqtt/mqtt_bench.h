/* What the bench_mqtt scenarios share: options, the bridge's common config,
 * the broker, CPU accounting (process and per thread), the admin metrics,
 * and the far-end verdict. Scenarios: mqtt_bench_h2m.c (http2mqtt),
 * mqtt_bench_m2x.c (mqtt2kafka, mqtt2http); bench_mqtt.c parses the command
 * line. Single bench thread unless said otherwise. */
#ifndef MQTT_BENCH_H
#define MQTT_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ceb_mosquitto.h"
#include "mqtt_bench_track.h"

#define MB_SRC "urn:nld:oin:00000001234567890000:systeem:bench"
#define MB_TYPE "nl.edu.bench.created"
/* Events sent and awaited before the measured run: the first ones pay for
 * connections, metadata and caches being made (a Kafka producer's first
 * send waits about a second), which is not the steady state. */
#define MB_WARM 200
#define MB_MAX_PUBS 16

typedef struct mb_params {
  long events;
  int conns, size, keys;
  double rate;
  int inflight;   /* the mqtt source's / sink's max_inflight; 0: default */
  int preload;    /* http2mqtt: load first, then deliver (see http2mqtt) */
  int pubs;       /* mqtt2*: publisher connections */
  int structured; /* MQTT content mode: the sink's (http2mqtt), the
                     publishers' (mqtt2*); 0: binary */
} mb_params;

/* The scenarios: 0 all delivered in order and the bridge stopped cleanly,
 * 1 otherwise (temp dir kept), 2 set-up failure. */
int mb_http2mqtt(const mb_params *p);
int mb_mqtt2x(const mb_params *p, int to_kafka);

/* "max_inflight = N\n" for the mqtt section, or "" for its default. */
const char *mb_inflight_line(const mb_params *p, char *buf, size_t n);
/* The [bridge] section: store in dir, admin port file, warn logs.
 * MB_PLUGIN_DIR overrides the plugin directory (A/B of two builds). */
void mb_conf_bridge(char *buf, size_t n, const char *dir);
/* mosquitto, quiet log, no queue limit (MB_EXTRA replaces the extra
 * lines); NULL on failure (said on stderr). */
ceb_mosq *mb_broker_start(void);
/* The broker's log tail on stderr (a failed run: CI keeps no temp dir). */
void mb_broker_log_tail(const ceb_mosq *m);

/* CPU seconds (user + system) of a process, -1 when unknown; of this one. */
double mb_proc_cpu_s(pid_t pid);
double mb_self_cpu_s(void);

/* CPU by thread name (/proc/PID/task/TID/comm): where a pipeline's serial
 * stage is. Threads that ended before the second snapshot are not counted. */
#define MB_MAX_THREADS 256
typedef struct mb_thread_cpu {
  int n;
  long tid[MB_MAX_THREADS];
  char name[MB_MAX_THREADS][20];
  double cpu_s[MB_MAX_THREADS];
} mb_thread_cpu;
void mb_thread_snapshot(pid_t pid, mb_thread_cpu *t);
/* Prints "name us/event" per thread name between the snapshots, busiest
 * first (threads of one name summed). */
void mb_thread_report(const char *label, const mb_thread_cpu *a,
                      const mb_thread_cpu *b, long events);

/* Waits until `want` first deliveries arrived, nothing arrived for
 * idle_ms, or max_ms passed. */
void mb_wait_delivered(mb_track *t, long want, int64_t idle_ms, int64_t max_ms);

/* The far end's figures and the run's costs. */
typedef struct mb_outcome {
  mb_counts c;
  int64_t lat[3]; /* e2e p50, p99, max (us) */
  double cpu_s, mosq_cpu_s, own_cpu_s, loadavg;
  double mock_cpu_s; /* the Kafka mock cluster's; < 0: none in this run */
  long rss_kb;
  int stopped;
} mb_outcome;
void mb_collect(mb_track *t, mb_outcome *o);
/* 1 when exactly `want` events arrived, none out of order or unparsable,
 * and the bridge stopped with 0; says what failed on stderr. */
int mb_judge(const mb_outcome *o, long want);
void mb_print_far_end(const char *label, const mb_outcome *o, int64_t t0);

#endif
