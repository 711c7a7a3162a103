/* Connection settings shared by the MQTT source and sink, read from the
 * instance's checked config. The config outlives the instance, so borrowed
 * strings stay valid until destroy. */
#ifndef CEB_MQTT_CONF_H
#define CEB_MQTT_CONF_H

#include <ceb/plugin.h>
#include <ceb/tls.h>

typedef struct mqtt_conf {
  char host[256];
  int port;
  int version;             /* 5, or 4 for 3.1.1 */
  const char *client_id;   /* borrowed; NULL: derived from the section name */
  const char *username;    /* borrowed, may be NULL */
  const char *password;    /* borrowed secret, may be NULL; never logged */
  int tls;                 /* TLS to the broker */
  int tls_verify;          /* verify the broker's certificate and name */
  const char *ca_file;     /* borrowed, may be NULL (system store) */
  const char *client_cert; /* borrowed, may be NULL */
  const char *client_key;  /* borrowed, may be NULL */
  int tls_min_version;     /* 12 or 13 (ceb/tls.h) */
  const char *tls_ciphers; /* borrowed OpenSSL list (TLS 1.2) */
  int keepalive_s;
  int connect_timeout_s;
  int reconnect_min_s;
  int reconnect_max_s;
} mqtt_conf;

/* Reads the common keys. CEB_OK or CEB_ECONFIG with a log line naming the
 * key. Control thread. */
int mqtt_conf_load(const ceb_host *host, ceb_instance *inst,
                   const ceb_config *cfg, mqtt_conf *out);

/* The config keys both roles accept, for the spec arrays. */
#define MQTT_SPEC_COMMON                                                       \
  {"broker", CEB_CFG_ADDRESS,         CEB_CFG_REQUIRED, NULL, 0, 0,            \
   NULL,     "MQTT broker host:port."},                                        \
      {"mqtt_version",                                                         \
       CEB_CFG_ENUM,                                                           \
       0,                                                                      \
       "5",                                                                    \
       0,                                                                      \
       0,                                                                      \
       "5|3.1.1",                                                              \
       "MQTT protocol version; 3.1.1 carries structured-mode events only."},   \
      {"username", CEB_CFG_STRING,                                             \
       0,          NULL,                                                       \
       0,          0,                                                          \
       NULL,       "User name for broker authentication."},                    \
      {"password",                                                             \
       CEB_CFG_STRING,                                                         \
       CEB_CFG_SECRET,                                                         \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "Password for broker authentication; ${ENV} or file:/path."},           \
      {"tls", CEB_CFG_BOOL,                                                    \
       0,     "false",                                                         \
       0,     0,                                                               \
       NULL,  "Connect with TLS (implied by any tls.* file)."},                \
      {"tls.ca_file",                                                          \
       CEB_CFG_PATH,                                                           \
       0,                                                                      \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "CA bundle that signs the broker certificate (default: system "         \
       "store)."},                                                             \
      {"tls.client_cert",                                                      \
       CEB_CFG_PATH,                                                           \
       0,                                                                      \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "Client certificate (PEM) for mutual TLS."},                            \
      {"tls.client_key",                                                       \
       CEB_CFG_PATH,                                                           \
       0,                                                                      \
       NULL,                                                                   \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "Private key (PEM) of tls.client_cert."},                               \
      {"tls.min_version",                                                      \
       CEB_CFG_ENUM,                                                           \
       0,                                                                      \
       "1.2",                                                                  \
       0,                                                                      \
       0,                                                                      \
       "1.2|1.3",                                                              \
       "Lowest TLS version accepted from the broker (TLS 1.0 and 1.1 are "     \
       "never accepted)."},                                                    \
      {"tls.ciphers",                                                          \
       CEB_CFG_STRING,                                                         \
       0,                                                                      \
       CEB_TLS_CIPHERS_DEFAULT,                                                \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "OpenSSL cipher list for TLS 1.2 (the default leaves out static RSA "   \
       "key exchange, which has no forward secrecy)."},                        \
      {"tls.verify",                                                           \
       CEB_CFG_BOOL,                                                           \
       0,                                                                      \
       "true",                                                                 \
       0,                                                                      \
       0,                                                                      \
       NULL,                                                                   \
       "Verify the broker certificate chain and host name."},                  \
      {"keepalive", CEB_CFG_DURATION, 0,    "30s",                             \
       1000,        65535000,         NULL, "MQTT keep-alive interval."},      \
      {"connect_timeout",                                                      \
       CEB_CFG_DURATION,                                                       \
       0,                                                                      \
       "10s",                                                                  \
       1000,                                                                   \
       600000,                                                                 \
       NULL,                                                                   \
       "How long one connection attempt may take."},                           \
      {"reconnect.min",                                                        \
       CEB_CFG_DURATION,                                                       \
       0,                                                                      \
       "1s",                                                                   \
       1000,                                                                   \
       3600000,                                                                \
       NULL,                                                                   \
       "First delay before reconnecting after a lost connection."},            \
  {                                                                            \
    "reconnect.max", CEB_CFG_DURATION, 0, "60s", 1000, 86400000, NULL,         \
        "Largest delay between reconnection attempts (doubling backoff)."      \
  }

#endif
