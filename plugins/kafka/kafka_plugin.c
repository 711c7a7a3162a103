/* The kafka plugin descriptor: one shared object offering a SOURCE (consumer
 * group) and a SINK (idempotent producer that honours topic overrides). */
#include "kafka_plugin.h"

#include <stdlib.h>

static void log_cb(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf) {
  kafka_inst *ki = rd_kafka_opaque(rk);
  if (!ki) return;
  /* syslog levels: 0-3 error, 4 warning, 5-6 info, 7 debug */
  ceb_log_level lv = level <= 3   ? CEB_LOG_ERROR
                     : level == 4 ? CEB_LOG_WARN
                     : level <= 6 ? CEB_LOG_INFO
                                  : CEB_LOG_DEBUG;
  ki->host->log(ki->inst, lv, "librdkafka %s: %s", fac, buf);
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason,
                     void *opaque) {
  kafka_inst *ki = opaque;
  rd_kafka_resp_err_t e = (rd_kafka_resp_err_t)err;
  /* Transport errors recover on their own: warn. Fatal ones do not. */
  ceb_log_level lv =
      e == RD_KAFKA_RESP_ERR__FATAL ? CEB_LOG_ERROR : CEB_LOG_WARN;
  if (e == RD_KAFKA_RESP_ERR__FATAL) {
    char fatal[512];
    rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, fatal, sizeof fatal);
    ki->host->log(ki->inst, lv, "fatal librdkafka error %s: %s",
                  rd_kafka_err2name(orig), fatal);
    return;
  }
  ki->host->log(ki->inst, lv, "librdkafka %s: %s", rd_kafka_err2name(e),
                reason);
}

void kafka_install_log(rd_kafka_conf_t *conf, kafka_inst *ki) {
  (void)ki; /* reached through the rd_kafka_t opaque */
  rd_kafka_conf_set_log_cb(conf, log_cb);
  rd_kafka_conf_set_error_cb(conf, error_cb);
}

static int kafka_init(const ceb_host *host, ceb_instance *inst,
                      const ceb_instance_info *info, const ceb_config *cfg,
                      void **state) {
  if (info->role == CEB_ROLE_SOURCE)
    return kafka_source_init(host, inst, cfg, ceb_instance_mapped(info), state);
  if (info->role == CEB_ROLE_SINK)
    return kafka_sink_init(host, inst, cfg, state);
  CEB_LOG(host, inst, CEB_LOG_ERROR, "kafka has no role %u", info->role);
  return CEB_EUNSUPPORTED;
}

static int kafka_start(void *state) {
  kafka_inst *ki = state;
  return ki->role == CEB_ROLE_SOURCE ? kafka_source_start(state)
                                     : kafka_sink_start(state);
}

static int kafka_drain(void *state, int64_t deadline_ms) {
  kafka_inst *ki = state;
  return ki->role == CEB_ROLE_SOURCE ? kafka_source_drain(state, deadline_ms)
                                     : kafka_sink_drain(state, deadline_ms);
}

static void kafka_destroy(void *state) {
  kafka_inst *ki = state;
  if (!ki) return;
  if (ki->role == CEB_ROLE_SOURCE)
    kafka_source_destroy(state);
  else
    kafka_sink_destroy(state);
}

static int kafka_deliver(void *state, ceb_delivery *d) {
  return kafka_sink_deliver(state, d);
}

static const ceb_plugin kafka_descriptor = {
    .struct_size = sizeof(ceb_plugin),
    .abi_major = CEB_ABI_MAJOR,
    .abi_minor = CEB_ABI_MINOR,
    .name = "kafka",
    .version = "1.0.0",
    .description = "Kafka consumer-group source and idempotent producer sink "
                   "(CloudEvents Kafka binding, binary and structured)",
    .roles =
        CEB_ROLE_SOURCE | CEB_ROLE_SINK | CEB_ROLE_TOPICS | CEB_ROLE_MAPPINGS,
    .config_source = kafka_source_spec,
    .config_sink = kafka_sink_spec,
    .config_contracts = NULL,
    .init = kafka_init,
    .start = kafka_start,
    .drain = kafka_drain,
    .destroy = kafka_destroy,
    .deliver = kafka_deliver,
    .sync = NULL,
};

CEB_PLUGIN_DEFINE(kafka_descriptor)
