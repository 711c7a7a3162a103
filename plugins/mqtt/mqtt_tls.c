#include "mqtt_tls.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/time.h>

static void ssl_log(const ceb_host *host, ceb_instance *inst,
                    const mqtt_conf *conf, const char *what) {
  char buf[256] = "";
  unsigned long e = ERR_get_error();
  if (e) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  CEB_LOG(host, inst, CEB_LOG_WARN, "TLS to %s:%d: %s%s%s", conf->host,
          conf->port, what, buf[0] ? ": " : "", buf);
}

SSL_CTX *mqtt_tls_ctx_new(const ceb_host *host, ceb_instance *inst,
                          const mqtt_conf *f) {
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    ssl_log(host, inst, f, "cannot create a TLS context");
    return NULL;
  }
  /* The minimum is set here, not left to OpenSSL's security level: a
   * cipher list with @SECLEVEL=0 must not bring TLS 1.0 back. */
  SSL_CTX_set_min_proto_version(ctx, f->tls_min_version >= 13 ? TLS1_3_VERSION
                                                              : TLS1_2_VERSION);
  if (SSL_CTX_set_cipher_list(ctx, f->tls_ciphers) != 1) {
    ssl_log(host, inst, f, "OpenSSL accepts no cipher of tls.ciphers");
    SSL_CTX_free(ctx);
    return NULL;
  }
  SSL_CTX_set_verify(ctx, f->tls_verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE,
                     NULL);
  if (f->ca_file ? SSL_CTX_load_verify_locations(ctx, f->ca_file, NULL) != 1
                 : SSL_CTX_set_default_verify_paths(ctx) != 1) {
    ssl_log(host, inst, f, "cannot load the CA certificates");
    SSL_CTX_free(ctx);
    return NULL;
  }
  if (f->client_cert &&
      (SSL_CTX_use_certificate_chain_file(ctx, f->client_cert) != 1 ||
       SSL_CTX_use_PrivateKey_file(ctx, f->client_key, SSL_FILETYPE_PEM) != 1 ||
       SSL_CTX_check_private_key(ctx) != 1)) {
    ssl_log(host, inst, f, "cannot load tls.client_cert / tls.client_key");
    SSL_CTX_free(ctx);
    return NULL;
  }
  return ctx;
}

SSL *mqtt_tls_connect(const ceb_host *host, ceb_instance *inst,
                      const mqtt_conf *conf, SSL_CTX *ctx, int fd) {
  struct timeval tv = {conf->connect_timeout_s, 0}, zero = {0, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  /* An IP literal is checked against IP SANs and sent without SNI (RFC
   * 6066); a name against DNS SANs, with SNI. */
  unsigned char ip[16];
  int is_ip = inet_pton(AF_INET, conf->host, ip) == 1 ||
              inet_pton(AF_INET6, conf->host, ip) == 1;
  SSL *ssl = SSL_new(ctx);
  if (!ssl || SSL_set_fd(ssl, fd) != 1 ||
      (!is_ip && SSL_set_tlsext_host_name(ssl, conf->host) != 1) ||
      (conf->tls_verify && (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(
                                        SSL_get0_param(ssl), conf->host) != 1
                                  : SSL_set1_host(ssl, conf->host) != 1))) {
    ssl_log(host, inst, conf, "setup failed");
    SSL_free(ssl);
    return NULL;
  }
  if (SSL_connect(ssl) != 1) {
    long vr = SSL_get_verify_result(ssl);
    if (vr != X509_V_OK)
      CEB_LOG(host, inst, CEB_LOG_WARN,
              "TLS to %s:%d: certificate verification failed: %s", conf->host,
              conf->port, X509_verify_cert_error_string(vr));
    else
      ssl_log(host, inst, conf, "handshake failed");
    SSL_free(ssl);
    return NULL;
  }
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof zero);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &zero, sizeof zero);
  /* Readable is not "application data ready" with TLS (a TLS 1.3 session
   * ticket is a record too): a blocking SSL_read could hang its reader. */
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  /* Writers loop over partial writes, and retry from a buffer that may
   * have moved (compacted or grown) since a WANT_WRITE. */
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
                        SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  return ssl;
}
