/* Throw-away PKI for TLS tests: a self-signed CA, a server certificate for
 * 127.0.0.1 / localhost and a client certificate, all EC P-256, as PEM. */
#ifndef TLS_CERT_H
#define TLS_CERT_H

typedef struct tls_pki {
  char *ca_cert;
  char *server_cert, *server_key;
  char *client_cert, *client_key;
} tls_pki;

/* 0 on success; free with tls_pki_free. */
int tls_pki_new(tls_pki *pki);
void tls_pki_free(tls_pki *pki);
/* Writes pem to dir/name; returns the malloc'd path or NULL. */
char *tls_write(const char *dir, const char *name, const char *pem);

#endif
