/* The mqtt plugin: a CloudEvents source and sink over MQTT 5 and 3.1.1
 * (CloudEvents MQTT protocol binding), on libmosquitto. */
#include "mqtt_plugin.h"
#include "mqtt_conf.h"

#define DAY_MS (86400LL * 1000)

const ceb_config_spec mqtt_spec_source[] = {
    MQTT_SPEC_COMMON,
    {"client_id", CEB_CFG_STRING, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Stable MQTT client id: the broker keeps the persistent session "
     "(subscriptions and unacknowledged messages) under it."},
    {"topics", CEB_CFG_LIST, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Topic filters to subscribe to (wildcards + and # allowed; "
     "$share/<group>/<filter> for an MQTT 5 shared subscription)."},
    {"share_group", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "MQTT 5 shared subscription group: every filter of topics is "
     "subscribed as $share/<share_group>/<filter>, so the bridges of one "
     "group split the messages (each needs its own client_id)."},
    {"qos", CEB_CFG_INT, 0, "1", 1, 2, NULL,
     "Subscription QoS: 1, or 2 (PUBREC is sent once the event is durable, "
     "PUBREL is answered with PUBCOMP; redeliveries are deduped)."},
    {"session_expiry", CEB_CFG_DURATION, 0, "1d", 1000, 4294967294000LL, NULL,
     "MQTT 5 session expiry: how long the broker keeps the session and "
     "queues messages while the bridge is away."},
    {"dlq_topic", CEB_CFG_STRING, 0, "cebridge/dlq", 0, 0, NULL,
     "Topic malformed messages are republished to, raw, with user "
     "properties ceb_dlq_reason and ceb_dlq_topic (MQTT 5)."},
    {"max_inflight", CEB_CFG_INT, 0, "64", 1, 65535, NULL,
     "Messages received but not yet durable (MQTT 5 Receive Maximum)."},
    CEB_CONFIG_SPEC_END};

const ceb_config_spec mqtt_spec_sink[] = {
    MQTT_SPEC_COMMON,
    {"client_id", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "MQTT client id (default: cebridge-<section>-<pid>)."},
    {"topic", CEB_CFG_STRING, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Topic to publish to; ${attr} is replaced by the event's attribute, "
     "e.g. edu/${type}."},
    {"qos", CEB_CFG_INT, 0, "1", 0, 2, NULL,
     "Publish QoS; deliveries settle on PUBACK (QoS 1) or PUBCOMP (QoS 2)."},
    {"mode", CEB_CFG_ENUM, 0, "binary", 0, 0, "binary|structured",
     "CloudEvents content mode (3.1.1: structured only)."},
    {"max_inflight", CEB_CFG_INT, 0, "64", 1, 65535, NULL,
     "Publishes awaiting their acknowledgement at once."},
    CEB_CONFIG_SPEC_END};

static int plugin_init(const ceb_host *host, ceb_instance *inst,
                       const ceb_instance_info *info, const ceb_config *cfg,
                       void **state) {
  if (!host || !info || !cfg || !state) return CEB_EINVAL;
  if (info->role == CEB_ROLE_SOURCE)
    return mqtt_source_init(host, inst, info, cfg, state);
  if (info->role == CEB_ROLE_SINK)
    return mqtt_sink_init(host, inst, info, cfg, state);
  CEB_LOG(host, inst, CEB_LOG_ERROR, "mqtt has no role %u", info->role);
  return CEB_EUNSUPPORTED;
}

/* Both state structs start with the role. */
static uint32_t role_of(void *state) {
  return *(uint32_t *)state;
}

static int plugin_start(void *state) {
  return role_of(state) == CEB_ROLE_SOURCE ? mqtt_source_start(state)
                                           : mqtt_sink_start(state);
}

static int plugin_drain(void *state, int64_t deadline_ms) {
  return role_of(state) == CEB_ROLE_SOURCE
             ? mqtt_source_drain(state, deadline_ms)
             : mqtt_sink_drain(state, deadline_ms);
}

static void plugin_destroy(void *state) {
  if (!state) return;
  if (role_of(state) == CEB_ROLE_SOURCE)
    mqtt_source_destroy(state);
  else
    mqtt_sink_destroy(state);
}

static int plugin_deliver(void *state, ceb_delivery *d) {
  if (role_of(state) != CEB_ROLE_SINK) return CEB_EUNSUPPORTED;
  return mqtt_sink_deliver(state, d);
}

static const ceb_plugin mqtt_plugin = {
    .struct_size = sizeof(ceb_plugin),
    .abi_major = CEB_ABI_MAJOR,
    .abi_minor = CEB_ABI_MINOR,
    .name = "mqtt",
    .version = "0.1.0",
    .description = "MQTT 5 / 3.1.1 source and sink (CloudEvents MQTT binding)",
    .roles =
        CEB_ROLE_SOURCE | CEB_ROLE_SINK | CEB_ROLE_TOPICS | CEB_ROLE_MAPPINGS,
    .config_source = mqtt_spec_source,
    .config_sink = mqtt_spec_sink,
    .config_contracts = NULL,
    .init = plugin_init,
    .start = plugin_start,
    .drain = plugin_drain,
    .destroy = plugin_destroy,
    .deliver = plugin_deliver,
    .sync = NULL,
};

CEB_PLUGIN_DEFINE(mqtt_plugin)
