/* TLS policy tests: a throw-away RSA certificate, a small HTTPS server
 * with OpenSSL whose versions and ciphers the test chooses (old ones
 * included: it runs at security level 0 so that the refusal a test sees is
 * the bridge's, not OpenSSL's), and a probe that runs `openssl s_client`
 * against a listener. The server runs on its own thread; the rest on the
 * test thread. */
#ifndef CEB_TEST_TLS_H
#define CEB_TEST_TLS_H

#include <stddef.h>

/* Writes an RSA-2048 self-signed certificate for 127.0.0.1 (SAN IP and
 * DNS localhost) to dir/rsa.crt and its key to dir/rsa.key. RSA, because
 * static-RSA key exchange needs an RSA certificate: with an EC one a
 * refused AES128-SHA would prove nothing. 0 on success. */
int ceb_tls_rsa_cert(const char *dir);

typedef struct ceb_tls_srv ceb_tls_srv;

/* Serves HTTPS on 127.0.0.1, an ephemeral port, with cert/key (PEM files),
 * protocol versions min_version..max_version (TLS1_VERSION ...
 * TLS1_3_VERSION) and the OpenSSL cipher list ciphers (TLS 1.2 and below;
 * NULL: "DEFAULT"). Every request gets 200 with body (application/json)
 * and the connection is closed. NULL on failure. */
ceb_tls_srv *ceb_tls_srv_start(const char *cert, const char *key,
                               int min_version, int max_version,
                               const char *ciphers, const char *body);
/* From now on a client must present a certificate that the PEM CA bundle
 * ca_file verifies (mTLS), else the handshake fails. Call it before the
 * first connection. 0 on success. */
int ceb_tls_srv_require_client(ceb_tls_srv *s, const char *ca_file);
int ceb_tls_srv_port(const ceb_tls_srv *s);
/* Completed handshakes and answered requests so far. */
int ceb_tls_srv_handshakes(ceb_tls_srv *s);
/* Connections the server is done with (handshake refused, or served):
 * wait for it to see a client's attempt end before counting handshakes. */
int ceb_tls_srv_connections(ceb_tls_srv *s);
int ceb_tls_srv_requests(ceb_tls_srv *s);
void ceb_tls_srv_stop(ceb_tls_srv *s);

/* Runs `openssl s_client -connect 127.0.0.1:port ARGS` (args is inserted
 * into the command line as is). 1 when the handshake completed, 0 when it
 * was refused, -1 when openssl could not be run. The output goes to
 * stderr when the result is not want (want < 0: never). */
int ceb_tls_probe(int port, const char *args, int want);

#endif
