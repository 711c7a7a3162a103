/* ceb_conf_write_reference on a tiny plugin spec: exact table rows, plugins
 * sorted by name, deterministic output; and the host specs' own defaults
 * pass their own checks (the reference must not document invalid ones). */
#include "config/ceb_conf_internal.h"
#include "config/ceb_core_spec.h"

#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

static const ceb_config_spec tiny_sink[] = {
    {"url", CEB_CFG_URL, CEB_CFG_REQUIRED, NULL, 0, 0, NULL, "Where to POST."},
    {"secret", CEB_CFG_STRING, CEB_CFG_SECRET, NULL, 0, 0, NULL,
     "Signing secret."},
    {"timeout", CEB_CFG_DURATION, 0, "15s", 1, 3600000, NULL,
     "Per request | pipes escaped."},
    {"max", CEB_CFG_SIZE, 0, "64KiB", 1024, 16777216, NULL, "Body limit."},
    {"mode", CEB_CFG_ENUM, 0, "a", 0, 0, "a|b", "Mode."},
    {"hdr.", CEB_CFG_STRING, CEB_CFG_PREFIX | CEB_CFG_MULTI, NULL, 0, 0, NULL,
     "Extra headers."},
    CEB_CONFIG_SPEC_END};
static const ceb_config_spec tiny_source[] = {
    {"port", CEB_CFG_INT, 0, "80", 1, 65535, NULL, "Port."},
    CEB_CONFIG_SPEC_END};

static char *render(const ceb_conf_plugin_ref *refs, size_t n) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  CHECK_INT(ceb_conf_write_reference(f, refs, n), CEB_OK);
  fclose(f);
  return buf;
}

static void reference(void) {
  ceb_conf_plugin_ref refs[2] = {
      {"zeta", "Zeta plugin.", NULL, tiny_sink, NULL},
      {"alpha", "Alpha plugin.", tiny_source, NULL, NULL},
  };
  char *out = render(refs, 2);
  CHECK(out != NULL);
  if (!out) return;
  static const char *const want[] = {
      "## Plugin `zeta`\n\nZeta plugin.\n\n"
      "### [sink NAME] with plugin = zeta\n\n"
      "| key | type | default | range / choices | description |\n"
      "| --- | --- | --- | --- | --- |\n"
      "| `url` | url | required |  | Where to POST. |\n"
      "| `secret` | string, secret |  |  | Signing secret. Accepts `${ENV}` "
      "or `file:/path`; never logged. |\n"
      "| `timeout` | duration | `15s` | 1ms .. 1h | Per request \\| pipes "
      "escaped. |\n"
      "| `max` | size | `64KiB` | 1KiB .. 16MiB | Body limit. |\n"
      "| `mode` | enum | `a` | `a`, `b` | Mode. |\n"
      "| `hdr.*` | string, repeatable |  |  | Extra headers. |\n\n",
      "## Plugin `alpha`\n\nAlpha plugin.\n\n"
      "### [source NAME] with plugin = alpha\n\n"
      "| key | type | default | range / choices | description |\n"
      "| --- | --- | --- | --- | --- |\n"
      "| `port` | int | `80` | 1 .. 65535 | Port. |\n\n",
      "## [bridge]\n",
      "| `workers` | int | `2` | 1 .. 64 | Delivery engine worker threads. |\n",
      "## [route NAME]\n",
      "| `from` | list | required |  |",
      "## [source NAME] (every source)\n",
      "## [sink NAME] (every sink)\n",
      "## [contracts NAME] (every contracts section)\n",
      "| `admin.token` | string, secret |",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    CHECK_MSG(strstr(out, want[i]) != NULL, "missing:\n%s", want[i]);
  /* Host sections first, then plugins by name. */
  char *bridge = strstr(out, "## [bridge]"), *alpha = strstr(out, "`alpha`");
  char *zeta = strstr(out, "## Plugin `zeta`");
  CHECK(bridge && alpha && zeta && bridge < alpha && alpha < zeta);
  /* Same input in another order: identical bytes. */
  ceb_conf_plugin_ref swapped[2] = {refs[1], refs[0]};
  char *again = render(swapped, 2);
  CHECK(again && strcmp(out, again) == 0);
  free(again);
  free(out);
  CHECK_INT(ceb_conf_write_reference(NULL, refs, 2), CEB_EINVAL);
}

/* Every default of the host specs passes its own type and range check. */
static void defaults_valid(void) {
  const ceb_config_spec *specs[] = {
      ceb_spec_bridge, ceb_spec_route, ceb_spec_source_common,
      ceb_spec_sink_common, ceb_spec_contracts_common};
  for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
    for (const ceb_config_spec *sp = specs[k]; sp->key; sp++) {
      CHECK_MSG(sp->description && *sp->description, "%s", sp->key);
      if (!sp->default_value) continue;
      char msg[256], hint[256];
      int rc = ceb_conf_value_check(sp, sp->default_value, sp->key, msg,
                                    sizeof msg, hint, sizeof hint);
      CHECK_MSG(rc == CEB_OK, "%s: %s", sp->key, msg);
    }
  }
}

static void formatting(void) {
  char buf[64];
  ceb_conf_format_duration(5400000, buf, sizeof buf);
  CHECK_STR(buf, "1h30m");
  ceb_conf_format_duration(0, buf, sizeof buf);
  CHECK_STR(buf, "0s");
  ceb_conf_format_duration(604800000 + 250, buf, sizeof buf);
  CHECK_STR(buf, "7d250ms");
  ceb_conf_format_size(65536, buf, sizeof buf);
  CHECK_STR(buf, "64KiB");
  ceb_conf_format_size(10000, buf, sizeof buf);
  CHECK_STR(buf, "10kB");
  ceb_conf_format_size(513, buf, sizeof buf);
  CHECK_STR(buf, "513B");
  ceb_conf_format_size(0, buf, sizeof buf);
  CHECK_STR(buf, "0B");
}

int main(void) {
  reference();
  defaults_valid();
  formatting();
  return ceb_test_done("unit_conf_reference");
}
