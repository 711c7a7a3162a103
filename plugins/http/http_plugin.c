/* The http plugin descriptor: one plugin, two roles. The source role is the
 * intermediary endpoint (http_in.c); the sink role is webhook delivery
 * (http_out.c, built when present). start/drain/destroy only receive the
 * state, so the state records which role it belongs to. */
#include <ceb/ceb.h>

#include <stdlib.h>

#include "http_in.h"
#include "http_out.h"

typedef struct http_instance {
  uint32_t role;
  void *impl;
} http_instance;

static int plugin_init(const ceb_host *host, ceb_instance *inst,
                       const ceb_instance_info *info, const ceb_config *cfg,
                       void **state) {
  if (!info) return CEB_EINVAL;
  http_instance *hi = calloc(1, sizeof *hi);
  if (!hi) return CEB_ENOMEM;
  hi->role = info->role;
  int st = CEB_EUNSUPPORTED;
  if (info->role == CEB_ROLE_SOURCE)
    st = http_source_init(host, inst, info, cfg, &hi->impl);
  else if (info->role == CEB_ROLE_SINK)
    st = http_sink_init(host, inst, info, cfg, &hi->impl);
  else
    CEB_LOG(host, inst, CEB_LOG_ERROR, "the http plugin has no role %u",
            (unsigned)info->role);
  if (st != CEB_OK) {
    free(hi);
    return st;
  }
  *state = hi;
  return CEB_OK;
}

static int plugin_start(void *state) {
  http_instance *hi = state;
  if (hi->role == CEB_ROLE_SINK) return http_sink_start(hi->impl);
  return http_source_start(hi->impl);
}

static int plugin_drain(void *state, int64_t deadline_ms) {
  http_instance *hi = state;
  if (hi->role == CEB_ROLE_SINK) return http_sink_drain(hi->impl, deadline_ms);
  return http_source_drain(hi->impl, deadline_ms);
}

static void plugin_destroy(void *state) {
  http_instance *hi = state;
  if (!hi) return;
  if (hi->role == CEB_ROLE_SINK)
    http_sink_destroy(hi->impl);
  else
    http_source_destroy(hi->impl);
  free(hi);
}

static int plugin_deliver(void *state, ceb_delivery *d) {
  http_instance *hi = state;
  if (hi->role != CEB_ROLE_SINK) return CEB_EINVAL;
  return http_sink_deliver(hi->impl, d);
}

static const ceb_plugin http_plugin = {
    .struct_size = sizeof(ceb_plugin),
    .abi_major = CEB_ABI_MAJOR,
    .abi_minor = CEB_ABI_MINOR,
    .name = "http",
    .version = CEB_VERSION,
    .description = "HTTP intermediary endpoint (source) and webhook "
                   "delivery (sink)",
    .roles = CEB_ROLE_SOURCE | CEB_ROLE_SINK | CEB_ROLE_MAPPINGS,
    .config_sink = http_sink_spec,
    .deliver = plugin_deliver,
    .config_source = http_source_spec,
    .init = plugin_init,
    .start = plugin_start,
    .drain = plugin_drain,
    .destroy = plugin_destroy,
};

CEB_PLUGIN_DEFINE(http_plugin)
