/* rdkafka.* pass-through values that are secret references: a config
 * directory read by the host's loader sets rdkafka.sasl.password =
 * ${ENV} and rdkafka.sasl.username = file:relative; the configuration
 * the plugin hands to librdkafka holds the resolved values, literals stay
 * as written, and the section still starts through the real plugin ABI.
 * An unset variable or unreadable file fails init with CEB_ECONFIG and a
 * message naming the key, and a resolved value librdkafka refuses is never
 * quoted in the error. The same build sets the TLS policy's cipher list
 * (ssl.cipher.suites = DEFAULT:!kRSA, no static RSA key exchange) unless
 * rdkafka.ssl.cipher.suites says otherwise. */
#include <stdlib.h>
#include <string.h>

#include "ceb_fake_host.h"
#include "ceb_test.h"
#include "ceb_test_proc.h"
#include "config/ceb_conf.h"
#include "kafka_common.h"
#include "kafka_test_util.h"

#define PASSWORD "pw-from-env-7f3a"
#define USERNAME "bridge-user"

static const ceb_plugin *plugin;

static const ceb_config_spec *spec_of(void *arg, const ceb_conf_section *s,
                                      ceb_conf_errors *errs) {
  (void)arg;
  (void)errs;
  return !strcmp(s->kind, "source") ? plugin->config_source
                                    : plugin->config_sink;
}

/* Loads and checks dir; the [source in] section's config, or NULL. */
static ceb_conf *load(const char *dir) {
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  if (ceb_conf_load(dir, &conf, &errs) != CEB_OK ||
      ceb_conf_check(conf, spec_of, NULL, &errs) != CEB_OK) {
    ceb_conf_errors_print(&errs, stderr);
    ceb_conf_free(conf);
    return NULL;
  }
  return conf;
}

static char *conf_get(rd_kafka_conf_t *c, const char *name) {
  char buf[512];
  size_t sz = sizeof buf;
  if (rd_kafka_conf_get(c, name, buf, &sz) != RD_KAFKA_CONF_OK) return NULL;
  return strdup(buf);
}

static int init_rc(const ceb_config *cfg) {
  ceb_fake_host *f = ceb_fake_host_new("in", CEB_ROLE_SOURCE);
  ceb_instance_info info = {sizeof info, "in", CEB_ROLE_SOURCE, "/tmp"};
  void *state = NULL;
  int rc = plugin->init(&f->host, &f->inst, &info, cfg, &state);
  if (rc == CEB_OK) plugin->destroy(state);
  ceb_fake_host_free(f);
  return rc;
}

/* ssl.cipher.suites of the conf built from a section with extra lines. */
static char *cipher_suites(const char *dir, const char *extra) {
  char text[512];
  snprintf(text, sizeof text,
           "[source in]\nplugin = kafka\nbrokers = 127.0.0.1:1\n"
           "group.id = g\ntopics = t\n%s",
           extra);
  CHECK_INT(ceb_test_write_file(dir, "10.conf", text), 0);
  ceb_conf *conf = load(dir);
  const ceb_conf_section *s = conf ? ceb_conf_find(conf, "source", "in") : 0;
  CHECK(s != NULL);
  char err[512] = "";
  rd_kafka_conf_t *c = s ? kafka_conf_build(s->cfg, NULL, err, sizeof err) : 0;
  CHECK_MSG(c != NULL, "%s", err);
  char *v = c ? conf_get(c, "ssl.cipher.suites") : NULL;
  if (c) rd_kafka_conf_destroy(c);
  ceb_conf_free(conf);
  return v;
}

/* The TLS policy's cipher list by default; rdkafka.ssl.cipher.suites
 * replaces it. */
static void test_cipher_policy(const char *dir) {
  char *v = cipher_suites(dir, "");
  CHECK_STR(v, "DEFAULT:!kRSA");
  free(v);
  v = cipher_suites(dir, "rdkafka.ssl.cipher.suites = HIGH\n");
  CHECK_STR(v, "HIGH");
  free(v);
}

static void test_resolved(const char *dir) {
  char text[1024];
  snprintf(text, sizeof text,
           "[source in]\nplugin = kafka\nbrokers = 127.0.0.1:1\n"
           "group.id = g\ntopics = t\n"
           "rdkafka.security.protocol = SASL_PLAINTEXT\n"
           "rdkafka.sasl.mechanisms = PLAIN\n"
           "rdkafka.sasl.username = file:user.txt\n"
           "rdkafka.sasl.password = ${KTEST_KAFKA_PASSWORD}\n"
           "rdkafka.client.id = literal-$${not-a-ref}\n");
  CHECK_INT(ceb_test_write_file(dir, "10.conf", text), 0);
  CHECK_INT(ceb_test_write_file(dir, "user.txt", USERNAME "\n"), 0);
  setenv("KTEST_KAFKA_PASSWORD", PASSWORD, 1);
  ceb_conf *conf = load(dir);
  CHECK(conf != NULL);
  const ceb_conf_section *s = conf ? ceb_conf_find(conf, "source", "in") : 0;
  CHECK(s != NULL);
  if (!s) {
    ceb_conf_free(conf);
    return;
  }
  char err[512] = "";
  rd_kafka_conf_t *c = kafka_conf_build(s->cfg, NULL, err, sizeof err);
  CHECK(c != NULL);
  if (c) {
    char *v = conf_get(c, "sasl.password");
    CHECK_STR(v, PASSWORD);
    free(v);
    v = conf_get(c, "sasl.username");
    CHECK_STR(v, USERNAME); /* relative to the config directory */
    free(v);
    v = conf_get(c, "client.id");
    CHECK_STR(v, "literal-${not-a-ref}");
    free(v);
    rd_kafka_conf_destroy(c);
  }
  /* The plugin starts from it (librdkafka accepts the SASL settings). */
  CHECK_INT(init_rc(s->cfg), CEB_OK);
  ceb_conf_free(conf);
}

/* One rdkafka.* line that must fail; err gets kafka_conf_build's text. */
static int build_fails(const char *dir, const char *line, char *err,
                       size_t errsz) {
  char text[1024];
  snprintf(text, sizeof text,
           "[source in]\nplugin = kafka\nbrokers = 127.0.0.1:1\n"
           "group.id = g\ntopics = t\n%s\n",
           line);
  if (ceb_test_write_file(dir, "10.conf", text)) return 0;
  ceb_conf *conf = load(dir);
  const ceb_conf_section *s = conf ? ceb_conf_find(conf, "source", "in") : 0;
  if (!s) {
    ceb_conf_free(conf);
    return 0;
  }
  err[0] = '\0';
  rd_kafka_conf_t *c = kafka_conf_build(s->cfg, NULL, err, errsz);
  int failed = c == NULL && init_rc(s->cfg) == CEB_ECONFIG;
  if (c) rd_kafka_conf_destroy(c);
  ceb_conf_free(conf);
  return failed;
}

static void test_errors(const char *dir) {
  char err[512];
  unsetenv("KTEST_KAFKA_UNSET");
  CHECK(build_fails(dir, "rdkafka.sasl.password = ${KTEST_KAFKA_UNSET}", err,
                    sizeof err));
  CHECK(strstr(err, "rdkafka.sasl.password") != NULL);
  CHECK(strstr(err, "KTEST_KAFKA_UNSET") != NULL);
  CHECK(strstr(err, "10.conf:6") != NULL);

  CHECK(
      build_fails(dir, "rdkafka.sasl.password = ${BAD-NAME}", err, sizeof err));
  CHECK(strstr(err, "${NAME}") != NULL);

  CHECK(build_fails(dir, "rdkafka.sasl.password = file:missing.txt", err,
                    sizeof err));
  CHECK(strstr(err, "missing.txt") != NULL);

  /* A resolved value librdkafka refuses: the error names where it came
   * from, never the value. */
  setenv("KTEST_KAFKA_TIMEOUT", "not-a-number-s3cr3t", 1);
  CHECK(build_fails(dir, "rdkafka.session.timeout.ms = ${KTEST_KAFKA_TIMEOUT}",
                    err, sizeof err));
  CHECK(strstr(err, "session.timeout.ms") != NULL);
  CHECK(strstr(err, "${KTEST_KAFKA_TIMEOUT}") != NULL);
  CHECK(strstr(err, "s3cr3t") == NULL);
}

int main(void) {
  void *dl = NULL;
  plugin = ktest_plugin(&dl);
  CHECK(plugin != NULL);
  char *dir = ceb_test_tmpdir("kafka-secret");
  CHECK(dir != NULL);
  if (plugin && dir) {
    test_resolved(dir);
    test_errors(dir);
    test_cipher_policy(dir);
  }
  if (dir) ceb_test_rmtree(dir);
  free(dir);
  ktest_plugin_close(dl);
  return ceb_test_done("kafka_secret");
}
