/* TLS to the broker with OpenSSL for the source's ack gate, which holds the
 * broker's connection (the plugin's libmosquitto client does its own TLS
 * from the same tls.* keys, mqtt_pub_link.c, when it talks to the broker
 * directly, as the sink's does): the client context from the tls.* keys,
 * and the handshake on a connected socket with the broker's name or
 * address checked.
 *
 * Threading: a context is made on the control thread and used read-only
 * from then on; a connection belongs to the thread that made it. */
#ifndef CEB_MQTT_TLS_H
#define CEB_MQTT_TLS_H

#include <openssl/ssl.h>

#include "mqtt_conf.h"

/* Client context under the TLS policy: tls.min_version (1.2 or 1.3),
 * tls.ciphers (default without static RSA), tls.ca_file (or the system
 * store), optional client certificate and key, peer verification unless
 * tls.verify is off.
 * NULL with the reason logged. Free with SSL_CTX_free. */
SSL_CTX *mqtt_tls_ctx_new(const ceb_host *host, ceb_instance *inst,
                          const mqtt_conf *conf);
/* Handshakes on fd (connected, blocking; connect_timeout applies to each
 * read and write of the handshake), with SNI for a host name and the
 * certificate checked against conf->host (DNS or IP SAN). Returns the
 * connection with fd left non-blocking, or NULL with the reason logged
 * (fd is then the caller's to close). */
SSL *mqtt_tls_connect(const ceb_host *host, ceb_instance *inst,
                      const mqtt_conf *conf, SSL_CTX *ctx, int fd);

#endif
