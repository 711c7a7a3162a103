/* The SDK's ceb_config: entries in file order, typed getters with spec
 * defaults, lists (MULTI append), foreach over a prefix, origin, replace. */
#include "config/ceb_config_build.h"

#include <pthread.h>
#include <string.h>

#include "ceb_test.h"

static const ceb_config_spec spec[] = {
    {"workers", CEB_CFG_INT, 0, "2", 1, 64, NULL, "w"},
    {"enabled", CEB_CFG_BOOL, 0, "yes", 0, 0, NULL, "e"},
    {"timeout", CEB_CFG_DURATION, 0, "15s", 0, 0, NULL, "t"},
    {"max", CEB_CFG_SIZE, 0, "64KiB", 0, 0, NULL, "m"},
    {"rate", CEB_CFG_RATE, 0, "10/min", 0, 0, NULL, "r"},
    {"schedule", CEB_CFG_LIST, 0, "0s 5s,5m", 0, 0, NULL, "s"},
    {"brokers", CEB_CFG_LIST, CEB_CFG_MULTI, NULL, 0, 0, NULL, "b"},
    {"nodefault", CEB_CFG_STRING, 0, NULL, 0, 0, NULL, "n"},
    CEB_CONFIG_SPEC_END};
static const ceb_config_spec plugin_spec[] = {
    {"rdkafka.", CEB_CFG_STRING, CEB_CFG_PREFIX, NULL, 0, 0, NULL, "p"},
    {"topic", CEB_CFG_STRING, 0, "edu.inbound", 0, 0, NULL, "t"},
    CEB_CONFIG_SPEC_END};

static int collect(const char *key, const char *value, void *arg) {
  char *out = arg;
  strcat(out, key);
  strcat(out, "=");
  strcat(out, value);
  strcat(out, ";");
  return 0;
}

static int stop_at_second(const char *key, const char *value, void *arg) {
  (void)key;
  (void)value;
  int *n = arg;
  return ++*n == 2 ? 77 : 0;
}

static void *list_reader(void *arg) {
  const ceb_config *cfg = arg;
  for (int i = 0; i < 1000; i++) {
    const char *const *items;
    if (ceb_config_list(cfg, "brokers", &items) != 3 ||
        strcmp(items[2], "k3:9092") != 0)
      return (void *)1;
  }
  return NULL;
}

int main(void) {
  ceb_config *cfg = cebi_config_new("internal");
  CHECK(cfg != NULL);
  CHECK_STR(ceb_config_name(cfg), "internal");
  cebi_config_set_spec(cfg, spec, plugin_spec);

  /* Defaults apply while unset. */
  CHECK_INT(ceb_config_int(cfg, "workers", -1), 2);
  CHECK_INT(ceb_config_bool(cfg, "enabled", 0), 1);
  CHECK_INT(ceb_config_duration_ms(cfg, "timeout", -1), 15000);
  CHECK_INT(ceb_config_size(cfg, "max", 0), 65536);
  CHECK(ceb_config_rate(cfg, "rate", 0) > 0.1666 &&
        ceb_config_rate(cfg, "rate", 0) < 0.1667);
  CHECK_STR(ceb_config_str(cfg, "topic"), "edu.inbound"); /* second spec */
  CHECK(ceb_config_str(cfg, "nodefault") == NULL);
  CHECK(ceb_config_str(cfg, "unknown") == NULL);
  CHECK_INT(ceb_config_int(cfg, "unknown", 99), 99);
  CHECK_STR(ceb_config_origin(cfg, "workers"), "default");
  const char *const *items = NULL;
  CHECK_INT(ceb_config_list(cfg, "schedule", &items), 3);
  CHECK_STR(items[0], "0s");
  CHECK_STR(items[1], "5s");
  CHECK_STR(items[2], "5m");
  CHECK(items[3] == NULL);
  CHECK_INT(ceb_config_list(cfg, "brokers", &items), 0);
  CHECK(items != NULL && items[0] == NULL);

  /* Set values win over defaults; origin names file:line. */
  CHECK_INT(cebi_config_put(cfg, "workers", "8", "d/10-a.conf", 3), CEB_OK);
  CHECK_INT(
      cebi_config_put(cfg, "brokers", "k1:9092, k2:9092", "d/10-a.conf", 4),
      CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "rdkafka.linger.ms", "5", "d/10-a.conf", 5),
            CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "brokers", "k3:9092", "d/20-b.conf", 1),
            CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "rdkafka.compression.type", "zstd",
                            "d/20-b.conf", 2),
            CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "timeout", "1h30m", NULL, 9), CEB_OK);
  CHECK_INT(cebi_config_put(cfg, "enabled", "off", "d/20-b.conf", 4), CEB_OK);
  CHECK_INT(cebi_config_put(cfg, NULL, "x", "f", 1), CEB_EINVAL);
  CHECK_INT(ceb_config_int(cfg, "workers", -1), 8);
  CHECK_INT(ceb_config_bool(cfg, "enabled", 1), 0);
  CHECK_INT(ceb_config_duration_ms(cfg, "timeout", -1), 5400000);
  CHECK_STR(ceb_config_origin(cfg, "workers"), "d/10-a.conf:3");
  CHECK_STR(ceb_config_origin(cfg, "brokers"), "d/10-a.conf:4");
  CHECK_STR(ceb_config_origin(cfg, "timeout"), "?:9");
  CHECK_INT(cebi_config_count(cfg), 7);

  /* MULTI values append in file order. */
  CHECK_INT(ceb_config_list(cfg, "brokers", &items), 3);
  CHECK_STR(items[0], "k1:9092");
  CHECK_STR(items[1], "k2:9092");
  CHECK_STR(items[2], "k3:9092");
  CHECK(items[3] == NULL);

  /* Concurrent readers of a built config. */
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, list_reader, cfg);
  for (int i = 0; i < 4; i++) {
    void *rv = (void *)1;
    pthread_join(t[i], &rv);
    CHECK(rv == NULL);
  }

  /* foreach: prefix, file order, stop value. */
  char out[256] = "";
  CHECK_INT(ceb_config_foreach(cfg, "rdkafka.", collect, out), 0);
  CHECK_STR(out, "rdkafka.linger.ms=5;rdkafka.compression.type=zstd;");
  out[0] = '\0';
  CHECK_INT(ceb_config_foreach(cfg, "nomatch.", collect, out), 0);
  CHECK_STR(out, "");
  int n = 0;
  CHECK_INT(ceb_config_foreach(cfg, NULL, stop_at_second, &n), 77);
  CHECK_INT(n, 2);

  /* Entries and replace. */
  const char *key, *value, *file;
  int line;
  CHECK_INT(cebi_config_entry(cfg, 3, &key, &value, &file, &line), CEB_OK);
  CHECK_STR(key, "brokers");
  CHECK_STR(value, "k3:9092");
  CHECK_STR(file, "d/20-b.conf");
  CHECK_INT(line, 1);
  CHECK_INT(cebi_config_entry(cfg, 7, &key, NULL, NULL, NULL), CEB_ENOTFOUND);
  CHECK_INT(cebi_config_replace_at(cfg, 3, "k9:1"), CEB_OK);
  CHECK_INT(ceb_config_list(cfg, "brokers", &items), 3);
  CHECK_STR(items[2], "k9:1");
  CHECK_INT(cebi_config_replace(cfg, "workers", "12"), CEB_OK);
  CHECK_INT(ceb_config_int(cfg, "workers", -1), 12);
  CHECK_STR(ceb_config_origin(cfg, "workers"), "d/10-a.conf:3");
  CHECK_INT(cebi_config_replace(cfg, "nodefault", "x"), CEB_ENOTFOUND);
  CHECK_INT(cebi_config_replace_at(cfg, 99, "x"), CEB_EINVAL);

  /* spec_of: exact, prefix, none. */
  CHECK(cebi_config_spec_of(cfg, "workers") == &spec[0]);
  CHECK(cebi_config_spec_of(cfg, "rdkafka.acks") == &plugin_spec[0]);
  CHECK(cebi_config_spec_of(cfg, "rdkafka") == NULL);

  /* A value that does not parse falls back to the caller's default. */
  CHECK_INT(cebi_config_put(cfg, "max", "lots", "f", 1), CEB_OK);
  CHECK_INT(ceb_config_size(cfg, "max", 5), 5);

  cebi_config_free(cfg);

  /* NULL configs read as empty. */
  CHECK(ceb_config_str(NULL, "x") == NULL);
  CHECK_INT(ceb_config_int(NULL, "x", 4), 4);
  CHECK_INT(ceb_config_list(NULL, "x", &items), 0);
  CHECK_STR(ceb_config_origin(NULL, "x"), "default");
  cebi_config_free(NULL);
  return ceb_test_done("unit_config_object");
}
