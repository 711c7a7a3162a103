/* What ceb_floor_raw and ceb_floor_mhd share: the options, the data file
 * (pre-allocated ring or append), the listening socket, the port file and
 * the counters. Bench tools (bench/floor/README.md). */
#ifndef CEB_FLOOR_COMMON_H
#define CEB_FLOOR_COMMON_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct floor_opts {
  const char *sync;      /* mode name, checked by each program */
  int port;              /* 0: ephemeral */
  const char *port_file; /* NULL: stdout only */
  const char *file;      /* the data file */
  unsigned prealloc_mib; /* 0: append */
} floor_opts;

/* Counters; the loop and the syncer add to them, the loop prints them. */
typedef struct floor_counters {
  atomic_ullong answers; /* 202s made */
  atomic_ullong events;  /* bodies taken */
  atomic_ullong writes;  /* write calls to the data file */
  atomic_ullong syncs;   /* fdatasync calls */
  atomic_ullong bytes;   /* body bytes written */
} floor_counters;

/* The data file. One writer thread at a time (the caller's). */
typedef struct floor_file {
  int fd;
  uint64_t size; /* ring size; 0: append */
  uint64_t off;
} floor_file;

/* Parses the shared options (defaults: --sync thread, port 0, file
 * ./floor.dat, 64 MiB). 0, or -1 on a bad argument. */
int floor_opts_parse(floor_opts *o, int argc, char **argv);

/* Blocks SIGTERM, SIGINT and SIGUSR1 in the calling thread (and the threads
 * it starts after) and ignores SIGPIPE; *set gets the three. Call first. */
void floor_block_signals(sigset_t *set);

/* Creates path (truncated); with prealloc_mib > 0 writes that many MiB of
 * zeros and syncs them, so that later writes overwrite allocated blocks.
 * 0, or -1 with a message on stderr. */
int floor_file_open(floor_file *f, const char *path, unsigned prealloc_mib);
/* One pwrite (pwritev) of n bytes (iovecs) at the ring's next offset; a
 * group that does not fit before the ring's end starts at offset 0. Exits
 * the process on a failed or short write (a bench tool answers nothing it
 * did not store). */
void floor_file_write(floor_file *f, const void *p, size_t n,
                      floor_counters *c);
void floor_file_writev(floor_file *f, const struct iovec *iov, int cnt,
                       size_t n, floor_counters *c);
/* fdatasync; exits the process when it fails. Any thread. */
void floor_file_sync(floor_file *f, floor_counters *c);
void floor_file_close(floor_file *f);

/* A non-blocking TCP socket listening on 127.0.0.1:port; *bound gets the
 * port. The fd, or -1. */
int floor_listen(int port, int *bound);
/* Prints "port N" on stdout and, with path, writes "N\n" to it (renamed
 * into place: readers never see a partial file). 0, or -1. */
int floor_announce(int port, const char *path);

/* One line on stderr: "<name>: answers A events E writes W syncs S bytes
 * B". */
void floor_counters_print(const char *name, floor_counters *c);

#endif
