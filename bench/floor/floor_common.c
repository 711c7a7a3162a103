/* The floor programs' shared parts (floor_common.h). */
#include "floor_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int floor_opts_parse(floor_opts *o, int argc, char **argv) {
  *o = (floor_opts){"thread", 0, NULL, "floor.dat", 64};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) return -1;
    if (strcmp(a, "--sync") == 0)
      o->sync = v;
    else if (strcmp(a, "--port") == 0)
      o->port = atoi(v);
    else if (strcmp(a, "--port-file") == 0)
      o->port_file = v;
    else if (strcmp(a, "--file") == 0)
      o->file = v;
    else if (strcmp(a, "--prealloc") == 0)
      o->prealloc_mib = (unsigned)atoi(v);
    else
      return -1;
    i++;
  }
  return o->port < 0 || o->port > 65535 ? -1 : 0;
}

void floor_block_signals(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, set, NULL);
  signal(SIGPIPE, SIG_IGN);
}

int floor_file_open(floor_file *f, const char *path, unsigned prealloc_mib) {
  *f = (floor_file){-1, (uint64_t)prealloc_mib << 20, 0};
  f->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (f->fd < 0) {
    fprintf(stderr, "floor: %s: %s\n", path, strerror(errno));
    return -1;
  }
  static char zeros[1 << 20];
  for (unsigned i = 0; i < prealloc_mib; i++)
    if (write(f->fd, zeros, sizeof zeros) != (ssize_t)sizeof zeros) {
      fprintf(stderr, "floor: pre-allocating %s: %s\n", path, strerror(errno));
      return -1;
    }
  if (fdatasync(f->fd) != 0) {
    fprintf(stderr, "floor: fdatasync %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

/* The offset of the next n bytes: the ring wraps before a group that does
 * not fit (an oversized group is written at 0 and grows the file). */
static uint64_t next_off(floor_file *f, size_t n) {
  if (f->size && f->off + n > f->size) f->off = 0;
  uint64_t at = f->off;
  f->off += n;
  return at;
}

static void wrote(ssize_t w, size_t n, floor_counters *c) {
  if (w < 0 || (size_t)w != n) {
    fprintf(stderr, "floor: write to the data file failed (%zd of %zu): %s\n",
            w, n, w < 0 ? strerror(errno) : "short write");
    exit(1);
  }
  atomic_fetch_add_explicit(&c->writes, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&c->bytes, n, memory_order_relaxed);
}

void floor_file_write(floor_file *f, const void *p, size_t n,
                      floor_counters *c) {
  wrote(pwrite(f->fd, p, n, (off_t)next_off(f, n)), n, c);
}

void floor_file_writev(floor_file *f, const struct iovec *iov, int cnt,
                       size_t n, floor_counters *c) {
  wrote(pwritev(f->fd, iov, cnt, (off_t)next_off(f, n)), n, c);
}

void floor_file_sync(floor_file *f, floor_counters *c) {
  if (fdatasync(f->fd) != 0) {
    fprintf(stderr, "floor: fdatasync failed: %s\n", strerror(errno));
    exit(1);
  }
  atomic_fetch_add_explicit(&c->syncs, 1, memory_order_relaxed);
}

void floor_file_close(floor_file *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
}

int floor_listen(int port, int *bound) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sa;
  if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      listen(fd, 4096) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
    close(fd);
    return -1;
  }
  *bound = ntohs(sa.sin_port);
  return fd;
}

int floor_announce(int port, const char *path) {
  printf("port %d\n", port);
  fflush(stdout);
  if (!path) return 0;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *fp = fopen(tmp, "w");
  if (!fp) return -1;
  fprintf(fp, "%d\n", port);
  if (fclose(fp) != 0 || rename(tmp, path) != 0) return -1;
  return 0;
}

void floor_counters_print(const char *name, floor_counters *c) {
  fprintf(stderr,
          "%s: answers %llu events %llu writes %llu syncs %llu "
          "bytes %llu\n",
          name, (unsigned long long)atomic_load(&c->answers),
          (unsigned long long)atomic_load(&c->events),
          (unsigned long long)atomic_load(&c->writes),
          (unsigned long long)atomic_load(&c->syncs),
          (unsigned long long)atomic_load(&c->bytes));
}
