#include "config/ceb_core_spec.h"

#include "config/ceb_conf.h"

#include <ceb/tls.h>

#define MS(x) ((int64_t)(x)*1000)
#define DAYS(x) ((int64_t)(x)*86400 * 1000)

const ceb_config_spec ceb_spec_bridge[] = {
    {"store", CEB_CFG_PATH, 0, "/var/lib/cebridge/store.db", 0, 0, NULL,
     "The store (journal, delivery state, DLQ, idempotency, contracts): a "
     "SQLite file (a path or sqlite:PATH; relative paths are relative to "
     "the file that sets them), "
     "or a PostgreSQL database several bridges may share: a libpq URI "
     "(postgresql://user@host:5432/dbname?sslmode=verify-full) or key=value "
     "conninfo (host=... dbname=...); give its password with store.password, "
     "PGPASSWORD or a passfile, not in this value."},
    {"store.password", CEB_CFG_STRING, CEB_CFG_SECRET, NULL, 0, 0, NULL,
     "PostgreSQL store: the database user's password; ${ENV} or file:/path. "
     "Never logged. Unset: the store value's own, PGPASSWORD or the libpq "
     "passfile (~/.pgpass)."},
    {"store.pool", CEB_CFG_INT, 0, "8", 2, 1000, NULL,
     "PostgreSQL store: most connections this bridge opens (two are the "
     "group committers', one with store.pool = 2; the rest serve claims' "
     "reads, status, DLQ and idempotency). Keep bridges x store.pool "
     "below the server's max_connections."},
    {"store.migrate", CEB_CFG_ENUM, 0, "on", 0, 0, "on|off",
     "PostgreSQL store: on brings the database's schema to this build's at "
     "start (under an advisory lock: bridges starting at once migrate "
     "once); off refuses to start on an older schema (run `cebridge store "
     "migrate -c DIR` first). A schema newer than the build is always "
     "refused."},
    {"state_dir", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "Directory for this bridge's local files (admin.token, the plugins' "
     "data/ folders). Unset: the SQLite store file's directory, or "
     "/var/lib/cebridge with a PostgreSQL store."},
    {"plugin_dir", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "Directory (or dir1:dir2 search path) plugins are loaded from; default: "
     "<bindir>/../lib/cebridge/"
     "plugins, then the install location."},
    {"admin.listen", CEB_CFG_STRING, 0, "127.0.0.1:8081", 0, 0, NULL,
     "Admin API address host:port (health, metrics, status, DLQ; port 0 "
     "picks one), or off."},
    {"admin.token", CEB_CFG_STRING, CEB_CFG_SECRET, NULL, 0, 0, NULL,
     "Bearer token the admin API requires for /v1/ (/healthz, /readyz and "
     "/metrics stay open); ${ENV} or file:/path. Unset: the token in "
     "admin.token beside the store, created (mode 0600) at the first start. "
     "Required when admin.listen is not a loopback address."},
    {"admin.allowed_hosts", CEB_CFG_LIST, 0, NULL, 0, 0, NULL,
     "Further Host header values the admin API answers /v1/ for (name, or "
     "name:port), e.g. the name a reverse proxy or a wildcard listen address "
     "is reached by. Always accepted: the listen address, localhost, "
     "127.0.0.1 and [::1] with the port."},
    {"admin.tls.cert", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "PEM certificate (chain) of the admin API; set with admin.tls.key to "
     "serve HTTPS (cebridge admin and health then trust exactly this "
     "certificate's key)."},
    {"admin.tls.key", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "PEM private key of admin.tls.cert (unencrypted; keep the file "
     "private)."},
    CEB_TLS_LISTENER_POLICY_SPEC("admin."),
    {"admin.port_file", CEB_CFG_PATH, 0, NULL, 0, 0, NULL,
     "File the admin API writes its bound port to (useful with port 0)."},
    {"admin.request_head_timeout", CEB_CFG_DURATION, 0, "10s", 100, MS(3600),
     NULL,
     "A connection to the admin API whose request head (request line and "
     "headers) is not complete this long after it opened is closed, however "
     "slowly it keeps sending (the next request of a kept-alive connection "
     "gets 30 s). When all 64 connections are taken, the one waiting longest "
     "for its head is closed for a new one, so probes and operators get in."},
    {"admin.request_body_timeout", CEB_CFG_DURATION, 0, "10s", 100, MS(3600),
     NULL,
     "A request body (the admin API takes none, at most 64 KiB are read) "
     "not complete this long after its head closes the connection."},
    {"log.format", CEB_CFG_ENUM, 0, "json", 0, 0, "json|text",
     "Log line format."},
    {"log.level", CEB_CFG_ENUM, 0, "info", 0, 0, "error|warn|info|debug",
     "Lowest level logged."},
    {"profile", CEB_CFG_ENUM, 0, "warn", 0, 0, "off|warn|enforce",
     "NL GOV CloudEvents profile checks on ingress: off, log warnings, or "
     "reject."},
    {"max_event_size", CEB_CFG_SIZE, 0, "64KiB", 1024, 16 * 1024 * 1024, NULL,
     "Largest accepted event (attributes plus data)."},
    {"drain_timeout", CEB_CFG_DURATION, 0, "30s", 0, MS(3600), NULL,
     "On SIGTERM: how long in-flight deliveries may take before exit."},
    {"workers", CEB_CFG_INT, 0, "2", 1, 64, NULL,
     "Delivery engine worker threads."},
    {"instance", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "This bridge's name among the bridges sharing one store: recorded as "
     "the holder of the deliveries it claims (status, cluster views, "
     "logs): 1 to 127 letters, digits or . _ - :. Unset: "
     "<host>-<pid>-<8 hex random>, new at each start."},
    {"store.lease", CEB_CFG_DURATION, 0, "60s", MS(1), MS(86400), NULL,
     "Shortest lease of a claimed delivery. A route's claims last its "
     "timeout plus 30 s when that is longer, so an attempt never outlives "
     "its lease; a delivery whose lease ended (its bridge stopped or "
     "stalled) is claimed again, and the late outcome of the old attempt "
     "is refused."},
    {"store.group_max", CEB_CFG_INT, 0, "512", 1, 100000, NULL,
     "Most events written per group commit (one fsync per group)."},
    {"store.group_wait", CEB_CFG_DURATION, 0, "0s", 0, 1000, NULL,
     "How long the committer may wait to fill a group (0: commit as soon as "
     "the previous commit ends)."},
    {"store.synchronous", CEB_CFG_ENUM, 0, "full", 0, 0, "full|normal",
     "full: nothing is acknowledged before the WAL holding it was fsynced "
     "(no acknowledged event lost on power failure); normal: acknowledged "
     "after the commit (safe against a crash of the bridge, not of the "
     "machine)."},
    {"store.check", CEB_CFG_ENUM, 0, "quick", 0, 0, "quick|full|off",
     "Integrity check of the store at start, before anything is accepted: "
     "quick (PRAGMA quick_check: reads every page), full (PRAGMA "
     "integrity_check: also cross-checks indexes, slower) or off (huge "
     "stores whose start time matters; damage then shows only when a page "
     "is read). A damaged store refuses to start."},
    {"store.poll_interval", CEB_CFG_DURATION, 0, "2s", 100, MS(3600), NULL,
     "How often each route recounts its open deliveries in the store and "
     "claims what is due, besides being woken: catches work another writer "
     "added without a wake-up reaching this bridge (a lost PostgreSQL "
     "notification, `cebridge dlq replay` beside a SQLite store) and "
     "deliveries whose claim lease expired on a stopped bridge. Bridges "
     "sharing a PostgreSQL store wake each other at once (LISTEN/NOTIFY); "
     "this bounds the delay when a wake-up is lost."},
    {"idempotency.ttl", CEB_CFG_DURATION, 0, "7d", MS(60), DAYS(365), NULL,
     "How long Idempotency-Key records are kept."},
    {"retention", CEB_CFG_DURATION, 0, "7d", MS(60), DAYS(365), NULL,
     "How long settled events and their status stay queryable: the "
     "archive `cebridge replay` (and POST /v1/routes/{route}/replay) offers "
     "again by time range."},
    {"backpressure.max_queued", CEB_CFG_INT, 0, "1000000", 1, 1000000000, NULL,
     "Undelivered (route, event) pairs above which sources get 503 / pause."},
    {"mapping.workers", CEB_CFG_INT, 0, "2", 1, 64, NULL,
     "Worker processes (cebridge-mapper) that run the jq mappings and route "
     "filters; started only when a section has map or filter."},
    {"mapping.timeout", CEB_CFG_DURATION, 0, "200ms", 1, MS(60), NULL,
     "Longest one mapping or filter may run on one message; past it the "
     "worker is killed and replaced and the message fails ('mapping timed "
     "out after 200 ms')."},
    {"mapping.memory_max", CEB_CFG_SIZE, 0, "256MiB", 32 * 1024 * 1024,
     (int64_t)64 * 1024 * 1024 * 1024, NULL,
     "Address space of each mapping worker (RLIMIT_AS, including libjq "
     "itself, about 20 MiB); a program that needs more fails the message "
     "('mapping exceeded its memory limit')."},
    CEB_CONFIG_SPEC_END};

const ceb_config_spec ceb_spec_route[] = {
    {"from", CEB_CFG_LIST, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Source section names this route takes events from."},
    {"to", CEB_CFG_STRING, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Sink section name events are delivered to."},
    {"match.", CEB_CFG_STRING, CEB_CFG_PREFIX, NULL, 0, 0, NULL,
     "Filter on an attribute or extension, e.g. match.type = nl.edu.*: "
     "exact, prefix (x*), suffix (*x); several values separated by '|' are "
     "alternatives; several match keys must all hold."},
    {"order_by", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "Attribute or extension whose value is the ordering key: FIFO per key, "
     "keys in parallel. Unset: no ordering."},
    {"dlq", CEB_CFG_STRING, 0, "store", 0, 0, NULL,
     "Where dead letters go: store, or SINK:topic on a sink with topics."},
    {"retry.mode", CEB_CFG_ENUM, 0, "schedule", 0, 0, "schedule|exponential",
     "Retry policy: an explicit schedule, or exponential with full jitter."},
    {"retry.schedule", CEB_CFG_LIST, 0, CEB_DEFAULT_RETRY_SCHEDULE, 0, 0, NULL,
     "Delay before each attempt (the first is usually 0s)."},
    {"retry.base", CEB_CFG_DURATION, 0, "1s", 1, DAYS(1), NULL,
     "Exponential: first delay."},
    {"retry.max_delay", CEB_CFG_DURATION, 0, "1h", 1, DAYS(7), NULL,
     "Exponential: largest delay."},
    {"retry.max_attempts", CEB_CFG_INT, 0, "0", 0, 1000000, NULL,
     "Most attempts (0: as many as the schedule or deadline allows)."},
    {"deadline", CEB_CFG_DURATION, 0, "72h", MS(1), DAYS(365), NULL,
     "After this time since acceptance an event is dead-lettered."},
    {"max_open_per_key", CEB_CFG_INT, 0, "0", 0, 1000000000, NULL,
     "Most open (not yet delivered or dead-lettered) events per ordering "
     "key on this route, e.g. per institution; an event over it is refused "
     "at ingest: HTTP 429 with Retry-After, Kafka and MQTT sources pause "
     "(backpressure, nothing is lost). Counts per order_by key: without "
     "order_by (or for an event without the attribute) there is no key and "
     "no limit. 0: unlimited."},
    {"metrics.keys", CEB_CFG_LIST, 0, NULL, 0, 0, NULL,
     "Ordering keys (of order_by) that get series of their own in the "
     "per-key metrics (cebridge_key_*), e.g. metrics.keys = inst-a, inst-b; "
     "at most 100, each at most 200 bytes. Other keys count under "
     "key=\"other\" unless metrics.keys_top labels them."},
    {"metrics.keys_top", CEB_CFG_INT, 0, "0", 0, 100, NULL,
     "This many of the busiest other ordering keys (by events accepted, "
     "ranked again at every scrape) get series of their own in the "
     "per-key metrics; a key that drops out loses its series and counts "
     "under key=\"other\" again. The ranking holds 8 keys per place, "
     "however many distinct keys arrive. 0 (and no metrics.keys): no "
     "per-key metrics."},
    {"timeout", CEB_CFG_DURATION, 0, "15s", 1, MS(3600), NULL,
     "Per-attempt timeout; a sink that has not settled by then counts as a "
     "retryable failure."},
    {"max_inflight", CEB_CFG_INT, 0, "64", 1, 100000, NULL,
     "Most attempts of this route in progress at once. Unset, with a sink "
     "in batch mode (mode = batch): at least 2 x the sink's batch.max, so "
     "that batches fill."},
    {"contract", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "Contract pin NAME@1.2.0 or NAME@^1: events must match a message of it."},
    {"contract.mode", CEB_CFG_ENUM, 0, "enforce", 0, 0, "enforce|warn",
     "enforce rejects (ingress 422, outbound DLQ); warn only logs."},
    {"receipts", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "Sink (or SINK:topic) that gets a delivery.done / delivery.failed "
     "CloudEvent when an event settles on this route."},
    {"receipts.type_prefix", CEB_CFG_STRING, 0, "nl.cebridge.delivery", 0, 0,
     NULL, "Type prefix of receipt events (.done / .failed are appended)."},
    {"filter", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "jq program run on each event (its JSON format) beside from and "
     "match.*: the route takes the event when the first output is neither "
     "false nor null. A filter that fails refuses the event like a failed "
     "validation (HTTP 422, the DLQ topic at Kafka/MQTT): nothing is "
     "half-accepted. Inline, or "
     "file:path.jq (relative to this file)."},
    {"map", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "Egress jq program for this route (overrides the sink's map): the "
     "event in, {\"body\": ..., \"headers\", \"key\", \"topic\", "
     "\"content_type\"} out (docs/integration-guide.md, Mappings). Inline, "
     "or file:path.jq (relative to this file)."},
    {"dry_run", CEB_CFG_BOOL, 0, "false", 0, 0, NULL,
     "Evaluate everything (filter, contract, mapping) but send nothing: each "
     "delivery settles done with reason dry-run and what would have been "
     "sent in its status and the log."},
    {"callbacks", CEB_CFG_BOOL, 0, "false", 0, 0, NULL,
     "This route sends the callbacks its from sources' clients ask for "
     "(X-Callback, or clients.CLIENT.callback of the http source) instead of "
     "events: it takes no event by matching; once an event that asked for "
     "one reaches its final status (done, error, time-out), its status "
     "document is posted to the client's URL through this route's sink (an "
     "http sink with callback_urls = true), retried on this route's "
     "schedule."},
    CEB_CONFIG_SPEC_END};

const ceb_config_spec ceb_spec_source_common[] = {
    {"plugin", CEB_CFG_STRING, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Plugin that implements this section."},
    {"profile", CEB_CFG_ENUM, 0, NULL, 0, 0, "off|warn|enforce",
     "NL GOV profile level for this source (default: [bridge] profile)."},
    {"map", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "Ingress jq program: the transport's input document of each message "
     "in, one CloudEvent (JSON format) or an array of them out; the source "
     "then accepts messages that are not CloudEvents. Inline, or "
     "file:path.jq (relative to this file)."},
    CEB_CONFIG_SPEC_END};

const ceb_config_spec ceb_spec_sink_common[] = {
    {"plugin", CEB_CFG_STRING, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Plugin that implements this section."},
    {"rate_limit", CEB_CFG_RATE, 0, NULL, 0, 1000000000, NULL,
     "Most deliveries per second to this sink (token bucket); unset: none."},
    {"rate_limit.burst", CEB_CFG_INT, 0, "0", 0, 1000000, NULL,
     "Token bucket size (0: one second's worth)."},
    {"circuit.failures", CEB_CFG_INT, 0, "5", 1, 1000000, NULL,
     "Consecutive failed attempts that open the sink's circuit."},
    {"circuit.open_for", CEB_CFG_DURATION, 0, "30s", 1, DAYS(1), NULL,
     "How long an open circuit waits before a half-open probe."},
    {"disable_after", CEB_CFG_DURATION, 0, "72h", 0, DAYS(365), NULL,
     "Disable the sink after it failed this long without a single success "
     "(the meemoo guide's 72 h); its events wait until `cebridge sink "
     "enable`. 0: never."},
    {"disable_on_gone", CEB_CFG_BOOL, 0, "true", 0, 0, NULL,
     "Disable the sink at once when it reports its peer gone (HTTP 410); "
     "false: open the circuit and dead-letter the event instead."},
    {"map", CEB_CFG_STRING, 0, NULL, 0, 0, NULL,
     "Egress jq program for every route to this sink without its own map: "
     "the event in, {\"body\": ..., \"headers\", \"key\", \"topic\", "
     "\"content_type\"} out (docs/integration-guide.md, Mappings). Inline, "
     "or file:path.jq (relative to this file)."},
    CEB_CONFIG_SPEC_END};

const ceb_config_spec ceb_spec_contracts_common[] = {
    {"plugin", CEB_CFG_STRING, CEB_CFG_REQUIRED, NULL, 0, 0, NULL,
     "Plugin that implements this section."},
    CEB_CONFIG_SPEC_END};

/* Where each host key lands in core/config/ceb_host_cfg.h. */
#define B(key, field) CEB_BIND(key, ceb_bridge_cfg, field)
#define B_ORIGIN(key, field) CEB_BIND_ORIGIN_OF(key, ceb_bridge_cfg, field)
const ceb_config_binding ceb_bind_bridge[] = {
    B("store", store.path),
    B_ORIGIN("store", store.path_origin),
    B("plugin_dir", plugin_dir),
    B_ORIGIN("plugin_dir", plugin_dir_origin),
    B("admin.listen", admin.listen),
    B_ORIGIN("admin.listen", admin.listen_origin),
    B("admin.token", admin.token),
    B("admin.allowed_hosts", admin.allowed_hosts),
    B("admin.tls.cert", admin.tls_cert),
    B_ORIGIN("admin.tls.cert", admin.tls_cert_origin),
    B("admin.tls.key", admin.tls_key),
    B_ORIGIN("admin.tls.key", admin.tls_key_origin),
    B_ORIGIN("admin.tls.priority", admin.tls_priority_origin),
    B("admin.port_file", admin.port_file),
    B("admin.request_head_timeout", admin.request_head_timeout_ms),
    B("admin.request_body_timeout", admin.request_body_timeout_ms),
    B("log.format", log.format),
    B("log.level", log.level),
    B("profile", profile),
    B("max_event_size", max_event_size),
    B("drain_timeout", drain_timeout_ms),
    B("workers", workers),
    B("instance", instance),
    B("store.lease", store.lease_ms),
    B("store.group_max", store.group_max),
    B("store.group_wait", store.group_wait_ms),
    B("store.synchronous", store.synchronous),
    B("store.check", store.check),
    B("store.password", store.password),
    B("store.pool", store.pool),
    B("store.migrate", store.migrate),
    B("state_dir", state_dir),
    B("store.poll_interval", store.poll_interval_ms),
    B("idempotency.ttl", idempotency_ttl_ms),
    B("retention", retention_ms),
    B("backpressure.max_queued", backpressure_max_queued),
    B("mapping.workers", mapping.workers),
    B("mapping.timeout", mapping.timeout_ms),
    B("mapping.memory_max", mapping.memory_max),
    CEB_CONFIG_BINDING_END};
#undef B
#undef B_ORIGIN

#define R(key, field) CEB_BIND(key, ceb_route_cfg, field)
#define R_ORIGIN(key, field) CEB_BIND_ORIGIN_OF(key, ceb_route_cfg, field)
const ceb_config_binding ceb_bind_route[] = {
    R("from", from),
    R("to", to),
    R("order_by", order_by),
    R("dlq", dlq),
    R_ORIGIN("dlq", dlq_origin),
    R("retry.mode", retry_mode),
    R("retry.schedule", retry_schedule),
    R("retry.base", retry_base_ms),
    R("retry.max_delay", retry_max_delay_ms),
    R("retry.max_attempts", retry_max_attempts),
    R("deadline", deadline_ms),
    R("max_open_per_key", max_open_per_key),
    R("metrics.keys", metrics_keys),
    R("metrics.keys_top", metrics_keys_top),
    R("timeout", timeout_ms),
    R("max_inflight", max_inflight),
    R_ORIGIN("max_inflight", max_inflight_origin),
    R("contract", contract),
    R("contract.mode", contract_mode),
    R("receipts", receipts),
    R_ORIGIN("receipts", receipts_origin),
    R("receipts.type_prefix", receipts_type_prefix),
    R("filter", filter),
    R_ORIGIN("filter", filter_origin),
    R("map", map),
    R_ORIGIN("map", map_origin),
    R("dry_run", dry_run),
    R("callbacks", callbacks),
    CEB_CONFIG_BINDING_END};
#undef R
#undef R_ORIGIN

const ceb_config_binding ceb_bind_source[] = {
    CEB_BIND("profile", ceb_source_cfg, profile),
    CEB_BIND("map", ceb_source_cfg, map),
    CEB_BIND_ORIGIN_OF("map", ceb_source_cfg, map_origin),
    CEB_CONFIG_BINDING_END};

const ceb_config_binding ceb_bind_sink[] = {
    CEB_BIND("rate_limit", ceb_sink_cfg, rate_limit),
    CEB_BIND("rate_limit.burst", ceb_sink_cfg, rate_limit_burst),
    CEB_BIND("circuit.failures", ceb_sink_cfg, circuit_failures),
    CEB_BIND("circuit.open_for", ceb_sink_cfg, circuit_open_for_ms),
    CEB_BIND("disable_after", ceb_sink_cfg, disable_after_ms),
    CEB_BIND("disable_on_gone", ceb_sink_cfg, disable_on_gone),
    CEB_BIND("map", ceb_sink_cfg, map),
    CEB_BIND_ORIGIN_OF("map", ceb_sink_cfg, map_origin),
    CEB_CONFIG_BINDING_END};

/* plugin of [source], [sink] and [contracts], into ceb_conf_section. */
const ceb_config_binding ceb_bind_plugin_section[] = {
    CEB_BIND("plugin", ceb_conf_section, plugin),
    CEB_BIND_ORIGIN_OF("plugin", ceb_conf_section, plugin_origin),
    CEB_CONFIG_BINDING_END};
