/* The Kafka plugin's roles. The descriptor (kafka_plugin.c) dispatches each
 * lifecycle call on the instance's role; every role's state starts with a
 * kafka_inst header so the dispatcher can tell them apart. Lifecycle calls
 * follow include/ceb/plugin.h: control thread, never concurrent for one
 * instance. */
#ifndef CEB_KAFKA_PLUGIN_H
#define CEB_KAFKA_PLUGIN_H

#include <ceb/ceb.h>

#include <librdkafka/rdkafka.h>

typedef struct kafka_inst {
  uint32_t role;        /* CEB_ROLE_SOURCE or CEB_ROLE_SINK */
  const ceb_host *host; /* borrowed from init */
  ceb_instance *inst;   /* borrowed from init */
} kafka_inst;

/* Routes librdkafka's log lines and global errors to the host log; the
 * rd_kafka_t opaque must be the role state (which starts with kafka_inst).
 * Called from librdkafka threads; host->log is thread-safe. */
void kafka_install_log(rd_kafka_conf_t *conf, kafka_inst *ki);

extern const ceb_config_spec kafka_source_spec[];
extern const ceb_config_spec kafka_sink_spec[];

/* Source: consumer group -> host submit; offsets committed once durable.
 * mapped: the section has `map` (ceb_instance_mapped): records go to
 * host->submit_mapped as input documents instead of being decoded. */
int kafka_source_init(const ceb_host *host, ceb_instance *inst,
                      const ceb_config *cfg, int mapped, void **state);
int kafka_source_start(void *state);
int kafka_source_drain(void *state, int64_t deadline_ms);
void kafka_source_destroy(void *state);

/* Sink: idempotent producer; settles from the delivery report. */
int kafka_sink_init(const ceb_host *host, ceb_instance *inst,
                    const ceb_config *cfg, void **state);
int kafka_sink_start(void *state);
int kafka_sink_drain(void *state, int64_t deadline_ms);
void kafka_sink_destroy(void *state);
int kafka_sink_deliver(void *state, ceb_delivery *d);

#endif
