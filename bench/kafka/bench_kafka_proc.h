/* What a benchmark process reads from /proc and getrusage about the CPU it
 * and the processes it started used, shared by bench_kafka and
 * bench_kafka_sink. Any thread. */
#ifndef BENCH_KAFKA_PROC_H
#define BENCH_KAFKA_PROC_H

#include <sys/types.h>

/* CPU seconds (user + system, all threads) process pid (0: this one) has
 * used so far; -1 when /proc cannot tell. */
double bk_proc_cpu_s(pid_t pid);
/* The same for pid's (0: this process's) threads whose name starts with
 * prefix (the kafka plugin names its poll threads "kafka-source" and
 * "kafka-sink", librdkafka its own "rdk:..."). */
double bk_threads_cpu_s(pid_t pid, const char *prefix);
/* CPU seconds the live child processes of pid have used so far (the
 * bridge's mapping workers, cebridge-mapper: separate processes whose CPU
 * the bridge's own /proc/PID/stat does not count); 0 when none. */
double bk_children_cpu_s(pid_t pid);
/* This process's CPU seconds from getrusage. */
double bk_self_cpu_s(void);
/* The 1-minute load average (-1 if unknown): other work on the cores skews
 * every rate. */
double bk_loadavg1(void);

#endif
