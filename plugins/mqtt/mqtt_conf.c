#include "mqtt_conf.h"

#include <stdio.h>
#include <string.h>

static int secs(int64_t ms) {
  return (int)((ms + 999) / 1000);
}

int mqtt_conf_load(const ceb_host *host, ceb_instance *inst,
                   const ceb_config *cfg, mqtt_conf *out) {
  memset(out, 0, sizeof *out);
  const char *broker = ceb_config_str(cfg, "broker");
  if (!broker ||
      ceb_parse_address(broker, out->host, sizeof out->host, &out->port) !=
          CEB_OK ||
      out->port <= 0 || !out->host[0]) {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "broker: \"%s\" is not host:port with a non-zero port",
            broker ? broker : "");
    return CEB_ECONFIG;
  }
  const char *ver = ceb_config_str(cfg, "mqtt_version");
  out->version = ver && strcmp(ver, "3.1.1") == 0 ? 4 : 5;
  out->client_id = ceb_config_str(cfg, "client_id");
  out->username = ceb_config_str(cfg, "username");
  out->password = ceb_config_str(cfg, "password");
  if (out->password && !out->username) {
    CEB_LOG(host, inst, CEB_LOG_ERROR, "password is set without username");
    return CEB_ECONFIG;
  }
  out->ca_file = ceb_config_str(cfg, "tls.ca_file");
  out->client_cert = ceb_config_str(cfg, "tls.client_cert");
  out->client_key = ceb_config_str(cfg, "tls.client_key");
  out->tls = ceb_config_bool(cfg, "tls", 0) || out->ca_file ||
             out->client_cert || out->client_key;
  out->tls_verify = ceb_config_bool(cfg, "tls.verify", 1);
  out->tls_min_version = ceb_tls_min_version(cfg, "");
  out->tls_ciphers = ceb_config_str(cfg, "tls.ciphers");
  if (!out->tls_ciphers) out->tls_ciphers = CEB_TLS_CIPHERS_DEFAULT;
  if (!out->client_cert != !out->client_key) {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "tls.client_cert and tls.client_key must be set together");
    return CEB_ECONFIG;
  }
  out->keepalive_s = secs(ceb_config_duration_ms(cfg, "keepalive", 30000));
  out->connect_timeout_s =
      secs(ceb_config_duration_ms(cfg, "connect_timeout", 10000));
  out->reconnect_min_s =
      secs(ceb_config_duration_ms(cfg, "reconnect.min", 1000));
  out->reconnect_max_s =
      secs(ceb_config_duration_ms(cfg, "reconnect.max", 60000));
  if (out->reconnect_max_s < out->reconnect_min_s) {
    CEB_LOG(host, inst, CEB_LOG_ERROR,
            "reconnect.max (%ds) is below reconnect.min (%ds)",
            out->reconnect_max_s, out->reconnect_min_s);
    return CEB_ECONFIG;
  }
  return CEB_OK;
}
