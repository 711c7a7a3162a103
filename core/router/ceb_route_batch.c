#include "router/ceb_route_batch.h"

#include <string.h>

ceb_route_batch ceb_route_batch_fit(const ceb_route_cfg *route,
                                    uint32_t max_inflight,
                                    const ceb_config *sink_cfg) {
  ceb_route_batch b = {.max_inflight = max_inflight ? max_inflight : 1};
  const char *origin = route->max_inflight_origin;
  b.explicit_inflight = origin && strcmp(origin, "default") != 0;
  /* mode and batch.max are the sink plugin's keys (http, kafka), not the
   * host's: read from its section as a plugin would. */
  const char *mode = sink_cfg ? ceb_config_str(sink_cfg, "mode") : NULL;
  if (!mode || strcmp(mode, "batch") != 0) return b;
  int64_t n = ceb_config_int(sink_cfg, "batch.max", 0);
  if (n <= 0) return b;
  b.batch_max = n > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)n;
  if (b.explicit_inflight)
    b.cannot_fill = b.max_inflight < b.batch_max;
  else if (b.max_inflight < 2 * b.batch_max)
    b.max_inflight = 2 * b.batch_max;
  return b;
}
