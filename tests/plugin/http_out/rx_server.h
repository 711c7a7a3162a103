/* A scripted HTTP receiver for the webhook sink tests: libmicrohttpd on
 * 127.0.0.1, an ephemeral port, one thread per connection. Every request is
 * recorded; the test's handler decides each response (status, headers,
 * body, an optional delay that rx_stop cuts short). Thread-safe. */
#ifndef RX_SERVER_H
#define RX_SERVER_H

#include <stddef.h>

#include <ceb/codec.h>

typedef struct rx_request {
  char method[16];
  char path[512];
  ceb_headers headers;
  char *body; /* NUL-terminated */
  size_t len;
  int client_certs; /* TLS: certificates the client presented */
  int client_port;  /* the peer's port: equal ports = a reused connection */
} rx_request;

typedef struct rx_response {
  int status;          /* default 200 */
  ceb_headers headers; /* extra response headers */
  char body[2048];
  size_t len;
  int delay_ms; /* hold the response this long (timeouts) */
} rx_response;

/* Runs on an MHD connection thread; index counts requests from 0. */
typedef void (*rx_handler)(void *arg, const rx_request *req, size_t index,
                           rx_response *resp);

typedef struct rx_server rx_server;

rx_server *rx_start(rx_handler handler, void *arg);
/* Same over TLS with the given PEM key and certificate (borrowed until
 * rx_stop). trust_pem, when set, makes the server request a client
 * certificate (recorded in client_certs; the handshake does not require
 * one). */
rx_server *rx_start_tls(rx_handler handler, void *arg, const char *key_pem,
                        const char *cert_pem, const char *trust_pem);
/* Ends pending delays, stops the daemon and frees the records. */
void rx_stop(rx_server *rx);
int rx_port(const rx_server *rx);
size_t rx_count(rx_server *rx);
/* Borrowed until rx_stop (records are never moved or freed before). */
const rx_request *rx_get(rx_server *rx, size_t i);
/* Requests whose path starts with prefix. */
size_t rx_count_path(rx_server *rx, const char *prefix);
/* Waits until n requests were recorded. */
int rx_wait(rx_server *rx, size_t n, long timeout_ms);

#endif
