/* Helpers for Kafka plugin tests: a mock cluster child process per test
 * (ceb-kafka-mock), the plugin loaded with dlopen (the real ABI), section
 * configs, and plain librdkafka clients to produce and read back.
 * Single-threaded use from the test's main thread. */
#ifndef CEB_KAFKA_TEST_UTIL_H
#define CEB_KAFKA_TEST_UTIL_H

#include <librdkafka/rdkafka.h>
#include <sys/types.h>

#include <ceb/ceb.h>

#include "ceb_fake_host.h"

typedef struct ktest_mock {
  pid_t pid;
  int in_fd; /* commands to the mock */
  FILE *out; /* its answers */
  char bootstrap[256];
} ktest_mock;

/* Starts ceb-kafka-mock with the given "-t name:partitions" topics
 * (NULL-terminated). 0 on success. */
int ktest_mock_start(ktest_mock *m, const char *const *topics);
/* Sends one command line and waits for "ok". 0 on ok. */
int ktest_mock_cmd(ktest_mock *m, const char *cmd);
/* Closes stdin, waits for exit (kills after 10 s). */
void ktest_mock_stop(ktest_mock *m);

/* A copy of the fake host's table (*out) whose submit first validates
 * every event with the CloudEvents rules, as the bridge's runtime does, and
 * refuses the whole batch with CEB_EVALIDATION, the first invalid event's
 * violations and its failed_index; valid batches go to the fake host. */
void ktest_validating_host(const ceb_fake_host *f, ceb_host *out);

/* dlopen()s the built kafka.so and queries its descriptor. *dl is the
 * handle for dlclose. NULL on failure (printed). */
const ceb_plugin *ktest_plugin(void **dl);

/* dlclose()s the plugin, unless KTEST_NO_DLCLOSE is set (so that leak
 * reports can still symbolize the plugin's frames). NULL is ignored. */
void ktest_plugin_close(void *dl);

/* A config for role built from key, value pairs (NULL-terminated) with the
 * plugin's spec for that role plus the host's common spec. Free with
 * cebi_config_free. */
ceb_config *ktest_config(const ceb_plugin *p, uint32_t role,
                         const char *const *kv);

/* A plain producer (acks=all) on bootstrap. */
rd_kafka_t *ktest_producer(const char *bootstrap);
/* The same with linger.ms = linger (NULL: librdkafka's default, 5 ms):
 * records produced before a flush then go out as one message set, which a
 * consumer receives whole (a test of the source's batching must not depend
 * on how a loaded machine spread the records over produce requests). */
rd_kafka_t *ktest_producer_linger(const char *bootstrap, const char *linger);
/* Produces one record with headers (may be NULL) and flushes: 0 when the
 * broker acknowledged it. */
int ktest_produce(rd_kafka_t *p, const char *topic, int32_t partition,
                  const char *key, const void *value, size_t len,
                  const ceb_headers *headers);

/* A consumer assigned all `partitions` of topic from the beginning (no
 * group membership needed). */
rd_kafka_t *ktest_reader(const char *bootstrap, const char *topic,
                         int partitions);
/* Reads up to n records within timeout_ms into out[] (destroy each with
 * rd_kafka_message_destroy). Returns how many were read. */
size_t ktest_read(rd_kafka_t *c, rd_kafka_message_t **out, size_t n,
                  int64_t timeout_ms);
void ktest_reader_close(rd_kafka_t *c);

/* Committed offset of group on topic[partition] (RD_KAFKA_OFFSET_INVALID
 * when none), or -2000 on a query failure. */
int64_t ktest_committed(const char *bootstrap, const char *group,
                        const char *topic, int32_t partition);

/* Value of header name in a message as a malloc'd string, or NULL. */
char *ktest_header(const rd_kafka_message_t *m, const char *name);

#endif
