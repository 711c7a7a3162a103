/* Deadline-bound socket I/O for the mapping pool: see mapper_io.h. */
#include "mapping/mapper_io.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <ceb/status.h>

int64_t cebm_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to be ready for events until deadline. */
static int wait_fd(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - cebm_now_ms();
    if (left <= 0) return CEB_ETIMEOUT;
    struct pollfd p = {.fd = fd, .events = events};
    int rc = poll(&p, 1, left > 60000 ? 60000 : (int)left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return CEB_EIO;
    if (rc == 0) continue;
    return CEB_OK; /* ready, or an error/hangup the next call reports */
  }
}

int cebm_send(int fd, struct iovec *iov, size_t n, int64_t deadline) {
  size_t i = 0;
  while (i < n) {
    if (iov[i].iov_len == 0) {
      i++;
      continue;
    }
    struct msghdr mh = {.msg_iov = iov + i,
                        .msg_iovlen = n - i > 512 ? 512 : n - i};
    ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return CEB_EIO;
      int rc = wait_fd(fd, POLLOUT, deadline);
      if (rc != CEB_OK) return rc;
      continue;
    }
    size_t left = (size_t)w;
    while (left && i < n) {
      size_t take = left < iov[i].iov_len ? left : iov[i].iov_len;
      iov[i].iov_base = (char *)iov[i].iov_base + take;
      iov[i].iov_len -= take;
      left -= take;
      if (iov[i].iov_len == 0) i++;
    }
  }
  return CEB_OK;
}

int cebm_recv(int fd, void *buf, size_t len, int64_t deadline) {
  char *p = buf;
  while (len) {
    ssize_t r = recv(fd, p, len, MSG_DONTWAIT);
    if (r == 0) return CEB_EIO;
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return CEB_EIO;
      int rc = wait_fd(fd, POLLIN, deadline);
      if (rc != CEB_OK) return rc;
      continue;
    }
    p += r;
    len -= (size_t)r;
  }
  return CEB_OK;
}

int cebm_recv_buffered(int fd, cebm_rbuf *b, void *buf, size_t len,
                       int64_t deadline) {
  char *p = buf;
  while (len) {
    if (b->off < b->len) {
      size_t take = b->len - b->off < len ? b->len - b->off : len;
      memcpy(p, b->p + b->off, take);
      b->off += take;
      p += take;
      len -= take;
      continue;
    }
    b->off = b->len = 0;
    if (len >= b->cap) return cebm_recv(fd, p, len, deadline);
    ssize_t r = recv(fd, b->p, b->cap, MSG_DONTWAIT);
    if (r == 0) return CEB_EIO;
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) return CEB_EIO;
      int rc = wait_fd(fd, POLLIN, deadline);
      if (rc != CEB_OK) return rc;
      continue;
    }
    b->len = (size_t)r;
  }
  return CEB_OK;
}
