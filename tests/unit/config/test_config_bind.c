/* ceb_config_bind: every spec type lands in its typed field, set values win
 * over defaults, values that do not parse read as the default (as the
 * getters do), origins bind as "file:line", and a binding that names no key
 * of the spec (or a PREFIX entry) is refused with the key named. */
#include "config/ceb_config_build.h"

#include <string.h>

#include "ceb_test.h"

static const ceb_config_spec spec[] = {
    {"name", CEB_CFG_STRING, 0, "edu", 0, 0, NULL, "n"},
    {"workers", CEB_CFG_INT, 0, "2", 1, 64, NULL, "w"},
    {"enabled", CEB_CFG_BOOL, 0, "yes", 0, 0, NULL, "e"},
    {"timeout", CEB_CFG_DURATION, 0, "15s", 0, 0, NULL, "t"},
    {"max", CEB_CFG_SIZE, 0, "64KiB", 0, 0, NULL, "m"},
    {"rate", CEB_CFG_RATE, 0, "10/s", 0, 0, NULL, "r"},
    {"schedule", CEB_CFG_LIST, 0, "0s 5s,5m", 0, 0, NULL, "s"},
    {"mode", CEB_CFG_ENUM, 0, "full", 0, 0, "full|normal", "m"},
    {"nodefault", CEB_CFG_INT, 0, NULL, 0, 0, NULL, "n"},
    {"path", CEB_CFG_PATH, 0, NULL, 0, 0, NULL, "p"},
    {"rdkafka.", CEB_CFG_STRING, CEB_CFG_PREFIX, NULL, 0, 0, NULL, "p"},
    CEB_CONFIG_SPEC_END};

typedef struct conf {
  const char *name;
  int64_t workers;
  int enabled;
  int64_t timeout_ms;
  uint64_t max;
  double rate;
  ceb_config_items schedule;
  const char *mode;
  int64_t nodefault;
  const char *path;
  const char *workers_origin;
} conf;

static const ceb_config_binding bind[] = {
    CEB_BIND("name", conf, name),
    CEB_BIND("workers", conf, workers),
    CEB_BIND("enabled", conf, enabled),
    CEB_BIND("timeout", conf, timeout_ms),
    CEB_BIND("max", conf, max),
    CEB_BIND("rate", conf, rate),
    CEB_BIND("schedule", conf, schedule),
    CEB_BIND("mode", conf, mode),
    CEB_BIND("nodefault", conf, nodefault),
    CEB_BIND("path", conf, path),
    CEB_BIND_ORIGIN_OF("workers", conf, workers_origin),
    CEB_CONFIG_BINDING_END};

int main(void) {
  ceb_config *cfg = cebi_config_new("s");
  CHECK(cfg != NULL);
  cebi_config_set_spec(cfg, spec, NULL);
  char err[256];
  conf c;
  memset(&c, 0xa5, sizeof c); /* every field must be written */

  /* Unset: the spec defaults, typed; no default: 0 / NULL. */
  CHECK_INT(ceb_config_bind(cfg, bind, &c, err, sizeof err), CEB_OK);
  CHECK_STR(c.name, "edu");
  CHECK_INT(c.workers, 2);
  CHECK_INT(c.enabled, 1);
  CHECK_INT(c.timeout_ms, 15000);
  CHECK_INT(c.max, 65536);
  CHECK(c.rate > 9.99 && c.rate < 10.01);
  CHECK_INT(c.schedule.count, 3);
  CHECK_STR(c.schedule.items[2], "5m");
  CHECK(c.schedule.items[3] == NULL);
  CHECK_STR(c.mode, "full");
  CHECK_INT(c.nodefault, 0);
  CHECK(c.path == NULL);
  CHECK_STR(c.workers_origin, "default");

  /* Set values win; a value that does not parse reads as the default. */
  CHECK_INT(cebi_config_put(cfg, "workers", "8", "d/10-a.conf", 3), CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "enabled", "off", "d/10-a.conf", 4), CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "timeout", "1h30m", "d/10-a.conf", 5), CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "max", "1MiB", "d/10-a.conf", 6), CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "rate", "120/min", "d/10-a.conf", 7), CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "schedule", "1s", "d/10-a.conf", 8), CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "mode", "normal", "d/10-a.conf", 9), CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "nodefault", "lots", "d/10-a.conf", 10),
            CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "path", "/srv/x", "d/10-a.conf", 11), CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "name", "other", "d/10-a.conf", 12), CEB_OK);
  CHECK_INT(ceb_config_bind(cfg, bind, &c, err, sizeof err), CEB_OK);
  CHECK_STR(c.name, "other");
  CHECK_INT(c.workers, 8);
  CHECK_INT(c.enabled, 0);
  CHECK_INT(c.timeout_ms, 5400000);
  CHECK_INT(c.max, 1048576);
  CHECK(c.rate > 1.99 && c.rate < 2.01);
  CHECK_INT(c.schedule.count, 1);
  CHECK_STR(c.schedule.items[0], "1s");
  CHECK_STR(c.mode, "normal");
  CHECK_INT(c.nodefault, 0);
  CHECK_STR(c.path, "/srv/x");
  CHECK_STR(c.workers_origin, "d/10-a.conf:3");
  /* The same values the getters return. */
  CHECK_INT(c.workers, ceb_config_int(cfg, "workers", -1));
  CHECK_INT(c.timeout_ms, ceb_config_duration_ms(cfg, "timeout", -1));

  /* Errors in the binding table name the binding. */
  static const ceb_config_binding typo[] = {CEB_BIND("worker", conf, workers),
                                            CEB_CONFIG_BINDING_END};
  CHECK_INT(ceb_config_bind(cfg, typo, &c, err, sizeof err), CEB_EINVAL);
  CHECK(strstr(err, "'worker'") != NULL);
  static const ceb_config_binding prefix[] = {CEB_BIND("rdkafka.", conf, name),
                                              CEB_CONFIG_BINDING_END};
  CHECK_INT(ceb_config_bind(cfg, prefix, &c, err, sizeof err), CEB_EINVAL);
  CHECK(strstr(err, "prefix") != NULL);
  /* An origin bound to a prefix entry is refused for the prefix, not as an
   * unknown kind of binding (CEB_BIND_ORIGIN is a kind it knows). */
  static const ceb_config_binding prefix_origin[] = {
      CEB_BIND_ORIGIN_OF("rdkafka.", conf, name), CEB_CONFIG_BINDING_END};
  CHECK_INT(ceb_config_bind(cfg, prefix_origin, &c, err, sizeof err),
            CEB_EINVAL);
  CHECK(strstr(err, "prefix") != NULL);
  static const ceb_config_binding bad_kind[] = {{"workers", 0, 7},
                                                CEB_CONFIG_BINDING_END};
  CHECK_INT(ceb_config_bind(cfg, bad_kind, &c, err, sizeof err), CEB_EINVAL);
  CHECK(strstr(err, "unknown kind") != NULL);
  CHECK_INT(ceb_config_bind(NULL, bind, &c, err, sizeof err), CEB_EINVAL);

  cebi_config_free(cfg);
  return ceb_test_done("unit_config_bind");
}
