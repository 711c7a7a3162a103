/* The host's own config specs: [bridge], [route NAME], and the keys every
 * [source], [sink] and [contracts] section accepts besides its plugin's.
 * Single source of truth for the config checker, the runtime and the
 * generated docs/config-reference.md. */
#ifndef CEB_CORE_SPEC_H
#define CEB_CORE_SPEC_H

#include <ceb/config.h>

extern const ceb_config_spec ceb_spec_bridge[];
extern const ceb_config_spec ceb_spec_route[];
extern const ceb_config_spec ceb_spec_source_common[];
extern const ceb_config_spec ceb_spec_sink_common[];
extern const ceb_config_spec ceb_spec_contracts_common[];

/* Bindings of those specs into core/config/ceb_host_cfg.h (offsets of the
 * typed fields); applied by ceb_conf_check. */
extern const ceb_config_binding ceb_bind_bridge[];
extern const ceb_config_binding ceb_bind_route[];
extern const ceb_config_binding ceb_bind_source[];
extern const ceb_config_binding ceb_bind_sink[];
extern const ceb_config_binding ceb_bind_plugin_section[];

/* The profile's default retry schedule (Edukoppeling / meemoo). */
#define CEB_DEFAULT_RETRY_SCHEDULE "0s 5s 5m 30m 2h 5h 10h 10h"

#endif
