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

#endif
