/* The host's own config, typed: [bridge], [route NAME] and the keys every
 * [source], [sink] and [contracts] section carries besides its plugin's.
 * ceb_conf_check binds each section once (ceb_config_bind, tables beside the
 * specs in ceb_core_spec.c); the rest of the host reads these fields and
 * never looks host keys up by name (tests/unit/config/check_host_lookups.py
 * fails the build's tests if one comes back).
 *
 * Strings and items are borrowed from the section's ceb_config and live as
 * long as the ceb_conf. Read-only after ceb_conf_check, any thread. */
#ifndef CEB_HOST_CFG_H
#define CEB_HOST_CFG_H

#include <stddef.h>
#include <stdint.h>

#include <ceb/config.h>

typedef struct ceb_admin_cfg {
  const char *listen; /* "host:port" or "off" */
  const char *listen_origin;
  const char *token; /* resolved secret, or NULL */
  ceb_config_items allowed_hosts;
  const char *tls_cert, *tls_cert_origin;
  const char *tls_key, *tls_key_origin;
  const char *tls_priority_origin; /* the policy itself: ceb_tls_priority */
  const char *port_file;
  int64_t request_head_timeout_ms, request_body_timeout_ms;
} ceb_admin_cfg;

typedef struct ceb_log_cfg {
  const char *format; /* json|text */
  const char *level;  /* error|warn|info|debug */
} ceb_log_cfg;

typedef struct ceb_store_cfg {
  const char *path; /* absolute after checking */
  const char *path_origin;
  int64_t group_max;
  int64_t group_wait_ms;
  const char *synchronous; /* full|normal */
  const char *check;       /* quick|full|off */
  const char *password;    /* PostgreSQL: resolved secret, or NULL */
  int64_t pool;            /* PostgreSQL: most connections */
  const char *migrate;     /* PostgreSQL: on|off */
  int64_t poll_interval_ms;
  int64_t lease_ms; /* shortest lease of a claim */
} ceb_store_cfg;

typedef struct ceb_mapping_cfg {
  int64_t workers;
  int64_t timeout_ms;
  uint64_t memory_max;
} ceb_mapping_cfg;

typedef struct ceb_bridge_cfg {
  /* The [bridge] section itself, for SDK helpers that read a key family by
   * prefix (ceb_tls_priority(cfg, "admin.")). */
  const ceb_config *cfg;
  const char *plugin_dir, *plugin_dir_origin; /* NULL: the default search */
  ceb_admin_cfg admin;
  ceb_log_cfg log;
  ceb_store_cfg store;
  const char *state_dir; /* NULL: ceb_bridge_state_dir's default */
  const char *instance;  /* NULL: generated (ceb_store_default_instance) */
  const char *profile;   /* off|warn|enforce */
  uint64_t max_event_size;
  int64_t drain_timeout_ms;
  int64_t workers;
  int64_t idempotency_ttl_ms;
  int64_t retention_ms;
  int64_t backpressure_max_queued;
  ceb_mapping_cfg mapping;
} ceb_bridge_cfg;

/* The directory of this bridge's local files (admin.token, the plugins'
 * data/): state_dir, else the SQLite store file's directory, else (a
 * database server's store) /var/lib/cebridge. Writes it into buf. Pure. */
void ceb_bridge_state_dir(const ceb_bridge_cfg *b, char *buf, size_t size);
/* 1 when a store spec names a file (the SQLite engine): not a URI
 * (postgresql://...) nor a libpq key=value conninfo. Pure. */
int ceb_store_spec_is_file(const char *spec);

typedef struct ceb_route_cfg {
  /* The [route] section itself, for its match.<attr> family (a PREFIX
   * entry: ceb_config_foreach(cfg, "match.", ...)). */
  const ceb_config *cfg;
  ceb_config_items from;
  const char *to;
  const char *order_by;
  const char *dlq, *dlq_origin;
  const char *retry_mode; /* schedule|exponential */
  ceb_config_items retry_schedule;
  int64_t retry_base_ms;
  int64_t retry_max_delay_ms;
  int64_t retry_max_attempts;
  int64_t deadline_ms;
  int64_t max_open_per_key;      /* 0: unlimited */
  ceb_config_items metrics_keys; /* keys with their own metrics label */
  int64_t metrics_keys_top;      /* and this many of the busiest others */
  int64_t timeout_ms;
  int64_t max_inflight;
  const char *max_inflight_origin; /* "default" when unset */
  const char *contract;
  const char *contract_mode; /* enforce|warn */
  const char *receipts, *receipts_origin;
  const char *receipts_type_prefix;
  const char *filter, *filter_origin; /* jq program text or file:path */
  const char *map, *map_origin;
  int dry_run;
  int callbacks; /* callbacks = true */
} ceb_route_cfg;

/* [source NAME] */
typedef struct ceb_source_cfg {
  const char *profile;          /* NULL: the [bridge] profile */
  const char *map, *map_origin; /* jq program text or file:path; NULL */
} ceb_source_cfg;

/* [sink NAME] */
typedef struct ceb_sink_cfg {
  double rate_limit; /* per second; 0: none */
  int64_t rate_limit_burst;
  int64_t circuit_failures;
  int64_t circuit_open_for_ms;
  int64_t disable_after_ms; /* 0: never */
  int disable_on_gone;
  const char *map, *map_origin; /* jq program text or file:path; NULL */
} ceb_sink_cfg;

/* The typed host keys of one section, by kind ([contracts] has none but
 * plugin, which every plugin section keeps in ceb_conf_section). */
typedef union ceb_host_cfg {
  ceb_bridge_cfg bridge;
  ceb_route_cfg route;
  ceb_source_cfg source;
  ceb_sink_cfg sink;
} ceb_host_cfg;

#endif
