/* Raw-socket client for the intermediary tests that need bytes libcurl will
 * not send (NUL, obs-fold, duplicate fields, slow heads) or many connections
 * from chosen loopback source addresses. Blocking sockets with poll
 * deadlines; every call is bounded by its timeout. Single-threaded use per
 * socket. */
#ifndef HIN_RAW_H
#define HIN_RAW_H

#include <stddef.h>
#include <stdint.h>

/* Connects to 127.0.0.1:port from src_ip (a 127.0.0.x address; NULL: the
 * kernel's choice). Returns the socket or -1. nonblock: O_NONBLOCK, for the
 * tests that open many connections and must not wait on one. */
int hin_raw_connect(int port, const char *src_ip, int nonblock);

/* Sends all n bytes (NULs included) within timeout_ms; 1 when sent. */
int hin_raw_send(int fd, const void *data, size_t n, int64_t timeout_ms);

typedef struct hin_raw_resp {
  int status;      /* 0: closed or timed out before a status line */
  char ctype[128]; /* Content-Type, "" when absent */
  char body[2048]; /* the first bytes of the body, NUL-terminated */
  int closed;      /* the server closed the connection after it */
} hin_raw_resp;

/* Reads one response (head and Content-Length body) within timeout_ms. */
void hin_raw_read(int fd, int64_t timeout_ms, hin_raw_resp *out);

/* Waits for the server to close fd (EOF or reset) within timeout_ms,
 * dropping what it sends; 1 when closed. */
int hin_raw_wait_closed(int fd, int64_t timeout_ms);

#endif
