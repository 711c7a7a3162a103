/* One small sink plugin compiled several times with a different defect each
 * (see CMakeLists.txt), so that the ABI test can prove every rejection. */
#include <ceb/ceb.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct abi_state {
  const ceb_host *host;
  ceb_instance *inst;
} abi_state;

#ifdef ABI_BINDS
/* ABI 1.1: the plugin's own config struct, filled by ceb_config_bind. */
typedef struct abi_conf {
  const char *path;
  const char *path_origin;
} abi_conf;
static const ceb_config_binding abi_bind[] = {
    CEB_BIND("path", abi_conf, path),
    CEB_BIND_ORIGIN_OF("path", abi_conf, path_origin), CEB_CONFIG_BINDING_END};
#endif

__attribute__((unused)) static int
abi_init(const ceb_host *host, ceb_instance *inst,
         const ceb_instance_info *info, const ceb_config *cfg, void **state) {
  (void)cfg;
#ifndef ABI_V10
  /* ABI 1.2: an instance told it is mapped refuses, so that the test sees
   * what the plugin read of info (ceb_instance_mapped checks its size). */
  if (ceb_instance_mapped(info)) return CEB_EUNSUPPORTED;
#else
  (void)info;
#endif
#ifdef ABI_BINDS
  /* Refuses unless the bound fields hold what the host parsed. */
  abi_conf c;
  char why[128];
  if (ceb_config_bind(cfg, abi_bind, &c, why, sizeof why) != CEB_OK ||
      !c.path || strcmp(c.path, ceb_config_str(cfg, "path")) != 0 ||
      strcmp(c.path_origin, ceb_config_origin(cfg, "path")) != 0)
    return CEB_ECONFIG;
#endif
  abi_state *s = calloc(1, sizeof *s);
  if (!s) return CEB_ENOMEM;
  s->host = host;
  s->inst = inst;
  *state = s;
  return CEB_OK;
}
static int abi_start(void *state) {
  (void)state;
  return CEB_OK;
}
static int abi_drain(void *state, int64_t deadline_ms) {
  (void)state;
  (void)deadline_ms;
  return CEB_OK;
}
static void abi_destroy(void *state) {
  free(state);
}
/* Settles ACK; the detail says what the plugin saw of the ABI 1.1 member
 * ceb_delivery.encoded: "encoded <len> <first byte>", "no encoded", or
 * "1.0" for the variant built as a 1.0 plugin (ABI_V10: it does not know
 * the member, as a plugin built against the 1.0 headers); then, ABI 1.2,
 * of ceb_delivery.mapped: " mapped <len> <content type> <headers>" or
 * " unmapped". */
__attribute__((unused)) static int abi_deliver(void *state, ceb_delivery *d) {
  abi_state *s = state;
  char detail[128] = "1.0";
#ifndef ABI_V10
  size_t n;
  const char *j = ceb_delivery_encoded(d, &n);
  if (j)
    snprintf(detail, sizeof detail, "encoded %zu %c", n, j[0]);
  else
    snprintf(detail, sizeof detail, "no encoded");
  const ceb_mapped_out *m = ceb_delivery_mapped(d);
  size_t used = strlen(detail);
  if (m)
    snprintf(detail + used, sizeof detail - used, " mapped %zu %s %zu",
             m->body_len, m->content_type, m->nheaders);
  else
    snprintf(detail + used, sizeof detail - used, " unmapped");
#endif
  ceb_settle_info info = {sizeof info, CEB_ACK, -1, 0, "ok", detail, 0};
  s->host->settle(s->inst, d, &info);
  return CEB_OK;
}

#ifdef ABI_UNDEFINED_SYMBOL
/* Declared, never defined: RTLD_NOW must refuse the library. */
extern int abi_symbol_nobody_defines(void);
int abi_use_undefined(void);
CEB_EXPORT int abi_use_undefined(void) {
  return abi_symbol_nobody_defines();
}
#endif

static const ceb_config_spec abi_spec[] = {
    {"path", CEB_CFG_PATH, 0, NULL, 0, 0, NULL, "Unused."},
    CEB_CONFIG_SPEC_END};

#ifndef ABI_NAME
#define ABI_NAME "abigood"
#endif
#ifndef ABI_MAJOR
#define ABI_MAJOR CEB_ABI_MAJOR
#endif
#ifndef ABI_MINOR
#define ABI_MINOR CEB_ABI_MINOR
#endif
#ifndef ABI_SIZE
#define ABI_SIZE sizeof(ceb_plugin)
#endif

__attribute__((unused)) static const ceb_plugin abi_desc = {
    .struct_size = ABI_SIZE,
    .abi_major = ABI_MAJOR,
    .abi_minor = ABI_MINOR,
    .name = ABI_NAME,
    .version = "1.0.0",
    .description = "ABI test plugin",
    .roles = CEB_ROLE_SINK,
    .config_sink = abi_spec,
#ifndef ABI_NO_INIT
    .init = abi_init,
#endif
    .start = abi_start,
    .drain = abi_drain,
    .destroy = abi_destroy,
#ifndef ABI_NO_DELIVER
    .deliver = abi_deliver,
#endif
};

#if defined(ABI_NO_SYMBOL)
/* Exports something, but not ceb_plugin_query. */
CEB_EXPORT const ceb_plugin *ceb_plugin_query_v0(void);
CEB_EXPORT const ceb_plugin *ceb_plugin_query_v0(void) {
  return &abi_desc;
}
#elif defined(ABI_DECLINE)
CEB_EXPORT const ceb_plugin *ceb_plugin_query(uint32_t maj, uint32_t min);
CEB_EXPORT const ceb_plugin *ceb_plugin_query(uint32_t maj, uint32_t min) {
  (void)maj;
  (void)min;
  return NULL;
}
#else
/* Returns the descriptor whatever the host asks, so that the host's own
 * checks are what the test exercises. */
CEB_EXPORT const ceb_plugin *ceb_plugin_query(uint32_t maj, uint32_t min);
CEB_EXPORT const ceb_plugin *ceb_plugin_query(uint32_t maj, uint32_t min) {
  (void)maj;
  (void)min;
  return &abi_desc;
}
#endif
