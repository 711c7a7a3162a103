/* The host's side of a worker socket: non-blocking sends and receives
 * with a deadline (CLOCK_MONOTONIC ms), so that a stuck worker never holds
 * a host thread past the mapping timeout, and no SIGPIPE when a worker
 * died (MSG_NOSIGNAL). One thread per socket at a time. */
#ifndef CEB_MAPPER_IO_H
#define CEB_MAPPER_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

int64_t cebm_now_ms(void);

/* Sends every byte of iov[0..n) (advanced in place). CEB_OK, CEB_ETIMEOUT
 * or CEB_EIO (the worker is gone). */
int cebm_send(int fd, struct iovec *iov, size_t n, int64_t deadline);

/* Receives exactly len bytes. CEB_OK, CEB_ETIMEOUT or CEB_EIO (end of
 * stream or error). */
int cebm_recv(int fd, void *buf, size_t len, int64_t deadline);

/* A read buffer for one worker socket: the answers of a batch arrive many
 * per read (the worker sends them in bursts), so one recv serves several
 * frames instead of two recv calls per item. Reset it whenever the socket
 * changes (a new worker). */
typedef struct cebm_rbuf {
  char *p;
  size_t cap, off, len;
} cebm_rbuf;

/* cebm_recv through b: what b holds first, then reads of up to b->cap
 * (a read that large goes straight into buf). Same results. */
int cebm_recv_buffered(int fd, cebm_rbuf *b, void *buf, size_t len,
                       int64_t deadline);

#endif
