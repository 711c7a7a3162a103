/* Admin token: configured, or read from / created in the data directory
 * (see ceb_admin_token.h). Why a file: a loopback admin API without a token
 * can be driven by any web page or local user; a generated token that only
 * the bridge's user can read closes that without a setup step. */
#include "admin/ceb_admin_token.h"

#include <ceb/status.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int ceb_admin_token_path(const ceb_bridge_cfg *bridge, char *buf, size_t size) {
  char dir[4096];
  ceb_bridge_state_dir(bridge, dir, sizeof dir);
  int n = strcmp(dir, "/") == 0 ? snprintf(buf, size, "/admin.token")
                                : snprintf(buf, size, "%s/admin.token", dir);
  return n < 0 || (size_t)n >= size ? CEB_EINVAL : CEB_OK;
}

/* One printable word (no spaces or control characters). */
static int word_ok(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if ((unsigned char)*s <= 0x20 || (unsigned char)*s == 0x7f) return 0;
  return 1;
}

static int read_token(const char *path, char **out, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return CEB_ENOTFOUND;
    snprintf(err, errlen, "cannot open admin token file %s: %s", path,
             strerror(errno));
    return CEB_EIO;
  }
  struct stat st;
  char buf[CEB_ADMIN_TOKEN_MAX + 2];
  ssize_t n = -1;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    snprintf(err, errlen, "admin token file %s is not a regular file", path);
  else if (st.st_mode & 077)
    snprintf(err, errlen,
             "admin token file %s may be read by group or others (mode "
             "%04o): chmod 600 it",
             path, (unsigned)(st.st_mode & 07777));
  else if ((n = read(fd, buf, sizeof buf - 1)) < 0)
    snprintf(err, errlen, "cannot read admin token file %s: %s", path,
             strerror(errno));
  close(fd);
  if (n < 0) return CEB_EIO;
  buf[n] = '\0';
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
    buf[--n] = '\0';
  if (n > CEB_ADMIN_TOKEN_MAX || !word_ok(buf)) {
    snprintf(err, errlen,
             "admin token file %s must hold one word of 1 to %d printable "
             "characters",
             path, CEB_ADMIN_TOKEN_MAX);
    return CEB_EIO;
  }
  *out = strdup(buf);
  return *out ? CEB_OK : CEB_ENOMEM;
}

/* Writes a new token to a private temporary file, then links it into place:
 * a reader never sees a partial file, and of two concurrent creators the
 * first link wins (the other reads the winner's token). */
static int create_token(const char *path, char *err, size_t errlen) {
  unsigned char raw[32];
  char hex[2 * sizeof raw + 2];
  if (RAND_bytes(raw, sizeof raw) != 1) {
    snprintf(err, errlen, "no random bytes for the admin token");
    return CEB_EIO;
  }
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf(hex + 2 * i, 3, "%02x", raw[i]);
  strcat(hex, "\n");
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  unlink(tmp);
  int fd =
      open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  int ok = fd >= 0 && fchmod(fd, 0600) == 0 &&
           write(fd, hex, strlen(hex)) == (ssize_t)strlen(hex) &&
           fsync(fd) == 0;
  int saved = errno;
  if (fd >= 0) close(fd);
  if (ok && link(tmp, path) != 0 && errno != EEXIST) {
    saved = errno;
    ok = 0;
  }
  unlink(tmp);
  if (!ok) {
    snprintf(err, errlen, "cannot create admin token file %s: %s", path,
             strerror(saved));
    return CEB_EIO;
  }
  /* the directory entry must survive a crash as the file does */
  char dir[4200];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
  int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return CEB_OK;
}

int ceb_admin_token_get(const ceb_bridge_cfg *bridge, int create, char **out,
                        const char **source, char *err, size_t errlen) {
  *out = NULL;
  const char *src = "config";
  const char *conf = bridge->admin.token;
  if (conf && *conf) {
    if (strlen(conf) > CEB_ADMIN_TOKEN_MAX || !word_ok(conf)) {
      snprintf(err, errlen,
               "admin.token must be one word of 1 to %d printable characters",
               CEB_ADMIN_TOKEN_MAX);
      return CEB_ECONFIG;
    }
    *out = strdup(conf);
    if (source) *source = src;
    return *out ? CEB_OK : CEB_ENOMEM;
  }
  char path[4096];
  if (ceb_admin_token_path(bridge, path, sizeof path) != CEB_OK) {
    snprintf(err, errlen, "the admin token file's path is too long");
    return CEB_EINVAL;
  }
  src = "file";
  int rc = read_token(path, out, err, errlen);
  if (rc == CEB_ENOTFOUND && create) {
    src = "generated";
    rc = create_token(path, err, errlen);
    if (rc == CEB_OK) rc = read_token(path, out, err, errlen);
  } else if (rc == CEB_ENOTFOUND) {
    snprintf(err, errlen,
             "no admin.token configured and no token file %s (the bridge "
             "creates it at its first start)",
             path);
  }
  if (rc == CEB_OK && source) *source = src;
  return rc;
}
