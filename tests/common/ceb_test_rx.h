/* The scripted HTTP receiver every test with an HTTP endpoint uses (webhook
 * sinks' destinations, partners, JWKS servers): libmicrohttpd on 127.0.0.1,
 * an ephemeral port, one thread per connection. Every request is recorded
 * with its method, path, headers and body; the test's handler decides each
 * response (status, headers, body, an optional delay that rx_stop cuts
 * short); counts and waits with a deadline. Thread-safe. Link ceb_testrx. */
#ifndef CEB_TEST_RX_H
#define CEB_TEST_RX_H

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
  char *event_id;   /* the CloudEvent id: ce-id (binary mode) or a
                       structured body's "id"; NULL for anything else */
} rx_request;

typedef struct rx_response {
  int status;          /* default 200 */
  ceb_headers headers; /* extra response headers */
  char body[16384];
  size_t len;
  int delay_ms; /* hold the response this long (timeouts) */
} rx_response;

/* Runs on an MHD connection thread, concurrently for concurrent requests
 * (guard the test's own state); index counts requests from 0. resp comes
 * in as an empty 200. */
typedef void (*rx_handler)(void *arg, const rx_request *req, size_t index,
                           rx_response *resp);

typedef struct rx_server rx_server;

/* For handlers: status, a Content-Type (when not NULL) and body (when not
 * NULL; cut at sizeof resp->body, which a test's bodies stay under). */
void rx_reply(rx_response *resp, int status, const char *content_type,
              const char *body);

/* handler may be NULL: every request is answered an empty 200. */
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
/* Requests whose path is exactly path; the i-th of them (0-based; borrowed
 * like rx_get) or NULL; waiting until n of them were recorded (1 when they
 * were, 0 past the deadline). */
size_t rx_count_exact(rx_server *rx, const char *path);
const rx_request *rx_nth_exact(rx_server *rx, const char *path, size_t i);
int rx_wait_exact(rx_server *rx, const char *path, size_t n, long timeout_ms);
/* Waits until n requests were recorded (1 when they were, 0 past the
 * deadline). May be called from a handler: it then holds that answer
 * until other requests arrived. */
int rx_wait(rx_server *rx, size_t n, long timeout_ms);
/* Requests that carried the CloudEvent id (event_id), and waiting for the
 * first of them. */
size_t rx_count_event(rx_server *rx, const char *id);
int rx_wait_event(rx_server *rx, const char *id, long timeout_ms);

#endif
