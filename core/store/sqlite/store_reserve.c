/* The reserve: a file "<store>.reserve" of a few MiB, allocated beside the
 * store while the disk has room.
 *
 * Why: a cleanly stopped store has no WAL and no shared-memory file, and
 * SQLite must create both (and allocate the 32 KiB index) to open it. On a
 * full disk that fails, so the bridge could not start at all: no ingress
 * to answer 503, only the admin API of a bridge waiting for its store.
 * With the reserve, a start on a full disk gives it up, opens the store in
 * the room it made, and runs not writable (sources refused with 503,
 * /readyz 503). The store is writable again only once the reserve could be
 * taken back and the probe write succeeded: the room the reserve made is
 * for starting, not for accepting events that the next write could not
 * keep. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ceb/status.h>

#include "store/sqlite/store_internal.h"

static void reserve_path(const char *path, char *buf, size_t size) {
  snprintf(buf, size, "%s.reserve", path);
}

int cebs_reserve_take(const char *path, size_t bytes) {
  char rp[4200];
  reserve_path(path, rp, sizeof rp);
  struct stat sb;
  if (stat(rp, &sb) == 0 && (size_t)sb.st_blocks * 512 >= bytes)
    return 0; /* held */
  int fd = open(rp, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return -errno;
  /* really allocated (not a sparse file): the space is ours to give back */
  int rc = posix_fallocate(fd, 0, (off_t)bytes);
  if (rc == 0 && fsync(fd) != 0) rc = errno;
  close(fd);
  if (rc != 0) {
    unlink(rp); /* a partial reserve would only confuse the next start */
    return -rc;
  }
  return 0;
}

int cebs_reserve_release(const char *path) {
  char rp[4200];
  reserve_path(path, rp, sizeof rp);
  return unlink(rp) == 0 ? 0 : -errno;
}
