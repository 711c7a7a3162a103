/* Descriptions of the families recorded through the plugin host call and by
 * core parts that record without declaring (see ceb_metrics_help.h). Keep
 * in step with docs/operator-guide.md "Metrics". */
#include "metrics/ceb_metrics_help.h"

#include <stddef.h>
#include <string.h>

static const struct {
  const char *name, *help;
} k_help[] = {
    /* core parts that record without declaring */
    {"cebridge_deliveries_inflight",
     "Delivery attempts in progress per route."},
    {"cebridge_delivery_attempts_started_total",
     "Delivery attempts started per route."},
    {"cebridge_deliveries_deferred_total",
     "Deliveries a busy sink refused (backpressure), put back without "
     "counting an attempt."},
    {"cebridge_delivery_settles_fenced_total",
     "Attempt outcomes the store refused: the claim's lease had ended and "
     "another claim took the delivery (or it was settled already)."},
    {"cebridge_callbacks_total",
     "Clients' callbacks (X-Callback) of a callbacks route by result: sent "
     "(the client's endpoint took it) or failed (dead-lettered after the "
     "route's retries)."},
    {"cebridge_route_queue_depth",
     "Undelivered events per route, counted in the store at scrape time."},
    {"cebridge_route_oldest_age_seconds",
     "Age of the oldest undelivered event per route, from the store at "
     "scrape time."},
    /* core/mapping: the jq mapping workers */
    {"cebridge_mapping_runs_total",
     "jq mapping and filter runs (one per message, event or delivery)."},
    {"cebridge_mapping_failures_total",
     "jq mapping and filter runs that failed, by reason: error (the "
     "program's), timeout, memory, crash, no_worker."},
    {"cebridge_mapping_worker_starts_total",
     "Mapping worker processes started (at start, and to replace one "
     "killed after a timeout, the memory limit or a crash)."},
    {"cebridge_admin_connections_closed_total",
     "Connections the admin API closed itself, by reason (request head or "
     "body not complete within its deadline, evicted for a new client when "
     "every connection was taken)."},
    /* http plugin: intermediary (source) */
    {"cebridge_http_requests_total", "Intermediary requests by status code."},
    {"cebridge_http_request_duration_seconds",
     "Intermediary request time, from the request's start to its answer."},
    {"cebridge_http_auth_failures_total",
     "Refused bearer tokens and webhook signatures by reason."},
    {"cebridge_http_connections_open",
     "Open connections of an HTTP listener (intermediary, pull queue)."},
    {"cebridge_http_connections_closed_total",
     "Connections an HTTP listener closed itself, by reason (slow or idle "
     "request head or body, reserve for new clients)."},
    /* http plugin: webhook sink */
    {"cebridge_http_sink_deliveries_total",
     "Webhook deliveries by outcome and status code."},
    {"cebridge_http_sink_delivery_seconds", "Webhook delivery request time."},
    {"cebridge_http_sink_token_fetches_total",
     "OAuth2 client-credentials token fetches by result."},
    {"cebridge_http_sink_allowed_rate",
     "Requests per second the webhook sink sends at most, from the "
     "receiver's WebHook-Allowed-Rate in the handshake (0: not paced)."},
    /* pull plugin */
    {"cebridge_pull_queue_depth", "Events waiting in a pull queue."},
    {"cebridge_pull_events_fetched_total",
     "Events handed out by a pull queue."},
    {"cebridge_pull_auth_failures_total",
     "Refused pull queue consumers by reason."},
    /* kafka plugin */
    {"cebridge_kafka_source_records_total", "Kafka records read by result."},
    {"cebridge_kafka_source_pauses_total",
     "Times the Kafka source paused its partitions for backpressure."},
    {"cebridge_kafka_sink_settled_total",
     "Kafka deliveries settled by result."},
    {"cebridge_kafka_sink_producer_restarts_total",
     "Kafka producers restarted after a fatal error."},
    /* mqtt plugin */
    {"cebridge_mqtt_connected", "1 while connected to the MQTT broker."},
    {"cebridge_mqtt_subscribed", "1 while the MQTT subscriptions are active."},
    {"cebridge_mqtt_received_total", "MQTT messages received."},
    {"cebridge_mqtt_dead_lettered_total",
     "MQTT messages that could not be submitted and were dead-lettered."},
    {"cebridge_mqtt_published_total", "MQTT publishes by result."},
    /* asyncapi plugin (contract registry) */
    {"cebridge_contracts_syncs_total", "Contract registry syncs completed."},
    {"cebridge_contracts_sync_failures_total",
     "Contract registry syncs failed."},
    {"cebridge_contracts_new_versions_total",
     "New contract versions found by syncs."},
    {"cebridge_contracts_conflicts_total",
     "Contract versions whose upstream document changed (the held one stays)."},
};

const char *ceb_metrics_known_help(const char *name) {
  for (size_t i = 0; name && i < sizeof k_help / sizeof k_help[0]; i++)
    if (strcmp(k_help[i].name, name) == 0) return k_help[i].help;
  return NULL;
}
