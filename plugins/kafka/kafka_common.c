#include "kafka_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t kafka_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int kafka_topic_name_valid(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0 || n > 249 || !strcmp(name, ".") || !strcmp(name, "..")) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return 0;
  }
  return 1;
}

typedef struct conf_ctx {
  const ceb_config *cfg;
  rd_kafka_conf_t *conf;
  const kafka_conf_rules *rules;
  char *errstr;
  size_t errsz;
} conf_ctx;

static int is_reserved(const kafka_conf_rules *rules, const char *name) {
  for (const char *const *r = rules ? rules->reserved : NULL; r && *r; r++)
    if (!strcmp(*r, name)) return 1;
  return 0;
}

/* The directory of the config file in origin "file:line" (relative secret
 * paths are taken from there, as the host takes them from bridge.d/). */
static const char *origin_dir(const char *origin, char *buf, size_t n) {
  const char *colon = origin ? strrchr(origin, ':') : NULL;
  const char *slash = NULL;
  for (const char *p = origin; p && p < colon; p++)
    if (*p == '/') slash = p;
  if (!slash) return ".";
  snprintf(buf, n, "%.*s", (int)(slash - origin), origin);
  return buf;
}

static int put_passthrough(const char *key, const char *value, void *arg) {
  conf_ctx *c = arg;
  const char *name = key + strlen(KAFKA_PASSTHROUGH_PREFIX);
  char err[512];
  if (is_reserved(c->rules, name) || !strcmp(name, "bootstrap.servers")) {
    snprintf(c->errstr, c->errsz,
             "%s (%s): fixed by the kafka plugin (its delivery guarantees or "
             "its own keys brokers / group.id depend on it)",
             key, ceb_config_origin(c->cfg, key));
    return -1;
  }
  char *secret = NULL, dir[4096];
  ceb_secret_kind kind = ceb_secret_resolve(
      value, origin_dir(ceb_config_origin(c->cfg, key), dir, sizeof dir),
      &secret, err, sizeof err);
  if (kind == CEB_SECRET_ERROR) {
    snprintf(c->errstr, c->errsz, "%s (%s): %s", key,
             ceb_config_origin(c->cfg, key), err);
    return -1;
  }
  int rc = rd_kafka_conf_set(c->conf, name, secret ? secret : value, err,
                             sizeof err);
  ceb_secret_free(secret);
  if (rc != RD_KAFKA_CONF_OK) {
    /* librdkafka may quote the value: not when it is a secret. */
    if (kind == CEB_SECRET_RESOLVED)
      snprintf(c->errstr, c->errsz,
               "%s (%s): librdkafka refused the value read from %s (not "
               "shown)",
               key, ceb_config_origin(c->cfg, key), value);
    else
      snprintf(c->errstr, c->errsz, "%s (%s): %s", key,
               ceb_config_origin(c->cfg, key), err);
    return -1;
  }
  return 0;
}

rd_kafka_conf_t *kafka_conf_build(const ceb_config *cfg,
                                  const kafka_conf_rules *rules, char *errstr,
                                  size_t errsz) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  char err[512];
  const char *const *items = NULL;
  size_t n = ceb_config_list(cfg, "brokers", &items);
  size_t len = 1;
  for (size_t i = 0; i < n; i++)
    len += strlen(items[i]) + 1;
  char *servers = calloc(1, len);
  if (!conf || !servers) {
    snprintf(errstr, errsz, "out of memory");
    goto fail;
  }
  for (size_t i = 0; i < n; i++) {
    if (i) strcat(servers, ",");
    strcat(servers, items[i]);
  }
  if (n == 0) {
    snprintf(errstr, errsz, "brokers: at least one host:port is required");
    goto fail;
  }
  if (rd_kafka_conf_set(conf, "bootstrap.servers", servers, err, sizeof err)) {
    snprintf(errstr, errsz, "brokers: %s", err);
    goto fail;
  }
  /* The bridge's TLS policy (ceb/tls.h): no static RSA key exchange.
   * librdkafka 2.0 has no minimum-version property; OpenSSL's default
   * already refuses TLS 1.0 and 1.1. rdkafka.ssl.cipher.suites, applied
   * below, replaces it. */
  if (rd_kafka_conf_set(conf, "ssl.cipher.suites", CEB_TLS_CIPHERS_DEFAULT, err,
                        sizeof err)) {
    snprintf(errstr, errsz, "internal default ssl.cipher.suites: %s", err);
    goto fail;
  }
  for (const char *const *d = rules ? rules->defaults : NULL; d && *d; d += 2) {
    if (rd_kafka_conf_set(conf, d[0], d[1], err, sizeof err)) {
      snprintf(errstr, errsz, "internal default %s: %s", d[0], err);
      goto fail;
    }
  }
  conf_ctx c = {cfg, conf, rules, errstr, errsz};
  if (ceb_config_foreach(cfg, KAFKA_PASSTHROUGH_PREFIX, put_passthrough, &c))
    goto fail;
  free(servers);
  return conf;
fail:
  free(servers);
  if (conf) rd_kafka_conf_destroy(conf);
  return NULL;
}

int kafka_headers_from_message(const rd_kafka_message_t *m, ceb_headers *out) {
  rd_kafka_headers_t *hdrs = NULL;
  if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR)
    return CEB_OK; /* no headers */
  const char *name;
  const void *val;
  size_t size;
  for (size_t i = 0; !rd_kafka_header_get_all(hdrs, i, &name, &val, &size);
       i++) {
    /* A null header value is kept as an empty one. */
    if (ceb_headers_add(out, name, val ? (const char *)val : "",
                        val ? size : 0) != CEB_OK)
      return CEB_ENOMEM;
  }
  return CEB_OK;
}
