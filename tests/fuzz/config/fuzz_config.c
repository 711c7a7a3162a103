/* Fuzz target: the input becomes the only .conf file of a directory, which
 * is loaded and checked against the host specs plus a dummy plugin spec
 * covering every value type. Invariants are asserted with a trap so that
 * both libFuzzer and the replay main report them. */
#include "config/ceb_conf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ceb_config_spec dummy_spec[] = {
    {"listen", CEB_CFG_ADDRESS, 0, "127.0.0.1:0", 0, 0, NULL, "a"},
    {"url", CEB_CFG_URL, 0, NULL, 0, 0, NULL, "u"},
    {"count", CEB_CFG_INT, 0, "1", -5, 5000, NULL, "c"},
    {"flag", CEB_CFG_BOOL, 0, "no", 0, 0, NULL, "f"},
    {"wait", CEB_CFG_DURATION, 0, "1s", 0, 86400000, NULL, "w"},
    {"max", CEB_CFG_SIZE, 0, "1KiB", 1, 1 << 30, NULL, "m"},
    {"rate", CEB_CFG_RATE, 0, NULL, 0, 1000, NULL, "r"},
    {"items", CEB_CFG_LIST, CEB_CFG_MULTI, NULL, 0, 0, NULL, "i"},
    {"mode", CEB_CFG_ENUM, 0, "a", 0, 0, "a|b|c", "e"},
    {"file", CEB_CFG_PATH, 0, NULL, 0, 0, NULL, "p"},
    {"token", CEB_CFG_STRING, CEB_CFG_SECRET, NULL, 0, 0, NULL, "t"},
    {"pin", CEB_CFG_INT, CEB_CFG_SECRET, NULL, 0, 99, NULL, "n"},
    {"x.", CEB_CFG_STRING, CEB_CFG_PREFIX, NULL, 0, 0, NULL, "x"},
    CEB_CONFIG_SPEC_END};

static const ceb_config_spec *dummy_plugin(void *arg, const ceb_conf_section *s,
                                           ceb_conf_errors *errs) {
  (void)arg;
  if (strcmp(ceb_config_str(s->cfg, "plugin"), "dummy") == 0) return dummy_spec;
  ceb_conf_error_add(errs, s->file, s->line, NULL, "no such plugin");
  return NULL;
}

static char fuzz_dir[256];

static void fuzz_cleanup(void) {
  char path[300];
  snprintf(path, sizeof path, "%s/fuzz.conf", fuzz_dir);
  unlink(path);
  rmdir(fuzz_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!fuzz_dir[0]) {
    const char *base = getenv("TMPDIR");
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/ceb-fuzz-config-XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(fuzz_dir)) abort();
    atexit(fuzz_cleanup);
    setenv("CEB_FUZZ_TOKEN", "12", 1);
  }
  if (size > 256 * 1024) return 0;
  char path[300];
  snprintf(path, sizeof path, "%s/fuzz.conf", fuzz_dir);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);

  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  int rc = ceb_conf_load(fuzz_dir, &conf, &errs);
  if ((rc == CEB_OK) != (conf != NULL) || (rc == CEB_OK) != (errs.count == 0))
    __builtin_trap();
  FILE *null = fopen("/dev/null", "w");
  if (rc == CEB_OK) {
    rc = ceb_conf_check(conf, dummy_plugin, NULL, &errs);
    if ((rc == CEB_OK) != (errs.count == 0)) __builtin_trap();
    /* Every checked section answers typed reads without crashing. */
    for (size_t i = 0; i < conf->count; i++) {
      const ceb_config *cfg = conf->sections[i].cfg;
      const char *const *items;
      size_t n = ceb_config_list(cfg, "items", &items);
      if (items[n] != NULL) __builtin_trap();
      (void)ceb_config_int(cfg, "count", 0);
      (void)ceb_config_duration_ms(cfg, "wait", 0);
      (void)ceb_config_origin(cfg, "listen");
    }
    (void)ceb_config_str(ceb_conf_bridge(conf), "store");
  }
  if (null) {
    ceb_conf_errors_print(&errs, null);
    fclose(null);
  }
  ceb_conf_free(conf);
  return 0;
}
