#include "kafka_secret.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET_FILE_MAX (64 * 1024) /* as the host's secret files */

static int env_name_ok(const char *s, size_t n) {
  if (n == 0 || n > 127 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
  return 1;
}

/* Reads a regular file of at most SECRET_FILE_MAX bytes without NUL bytes,
 * one trailing newline (CRLF too) removed. Non-blocking open: a FIFO cannot
 * hang start-up. malloc'd, or NULL with errno (EFBIG, EINVAL, ...). */
static char *file_read(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    errno = EINVAL;
    return NULL;
  }
  char *buf = malloc(SECRET_FILE_MAX + 2);
  if (!buf) {
    close(fd);
    errno = ENOMEM;
    return NULL;
  }
  size_t n = 0;
  int err = 0;
  while (n <= SECRET_FILE_MAX) {
    ssize_t r = read(fd, buf + n, SECRET_FILE_MAX + 1 - n);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) err = EIO;
    if (r <= 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (err || n > SECRET_FILE_MAX || memchr(buf, '\0', n)) {
    memset(buf, 0, n);
    free(buf);
    errno = err ? err : n > SECRET_FILE_MAX ? EFBIG : EINVAL;
    return NULL;
  }
  if (n > 0 && buf[n - 1] == '\n') {
    n--;
    if (n > 0 && buf[n - 1] == '\r') n--;
  }
  buf[n] = '\0';
  return buf;
}

/* dirname(file) + "/" + rel, where origin is "file:line". */
static char *path_from_origin(const char *origin, const char *rel) {
  const char *colon = origin ? strrchr(origin, ':') : NULL;
  size_t flen = colon ? (size_t)(colon - origin) : 0;
  const char *slash = NULL;
  for (size_t i = 0; i < flen; i++)
    if (origin[i] == '/') slash = origin + i;
  size_t dlen = slash ? (size_t)(slash - origin) : 1;
  const char *dir = slash ? origin : ".";
  size_t n = dlen + strlen(rel) + 2;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%.*s/%s", (int)dlen, dir, rel);
  return p;
}

kafka_secret_kind kafka_secret_resolve(const char *value, const char *origin,
                                       char **out, char *errstr, size_t errsz) {
  *out = NULL;
  size_t len = value ? strlen(value) : 0;
  if (len >= 3 && value[0] == '$' && value[1] == '{' && value[len - 1] == '}') {
    const char *name = value + 2;
    size_t n = len - 3;
    if (!env_name_ok(name, n)) {
      snprintf(errstr, errsz,
               "invalid environment variable reference (write ${NAME} with "
               "letters, digits and '_')");
      return KAFKA_SECRET_ERROR;
    }
    char env[128];
    snprintf(env, sizeof env, "%.*s", (int)n, name);
    const char *v = getenv(env);
    if (!v) {
      snprintf(errstr, errsz,
               "environment variable %s is not set (export it in the "
               "service environment)",
               env);
      return KAFKA_SECRET_ERROR;
    }
    if (!(*out = strdup(v))) {
      snprintf(errstr, errsz, "out of memory");
      return KAFKA_SECRET_ERROR;
    }
    return KAFKA_SECRET_RESOLVED;
  }
  if (len >= 5 && !strncmp(value, "file:", 5)) {
    const char *p = value + 5;
    if (!*p) {
      snprintf(errstr, errsz, "empty secret file path (write file:/path)");
      return KAFKA_SECRET_ERROR;
    }
    char *path = p[0] == '/' ? strdup(p) : path_from_origin(origin, p);
    if (!path) {
      snprintf(errstr, errsz, "out of memory");
      return KAFKA_SECRET_ERROR;
    }
    *out = file_read(path);
    if (!*out) {
      int e = errno;
      snprintf(errstr, errsz, "cannot read secret file '%.200s': %s", path,
               e == EFBIG    ? "larger than 64 KiB"
               : e == EINVAL ? "not a regular text file"
                             : strerror(e));
      free(path);
      return KAFKA_SECRET_ERROR;
    }
    free(path);
    return KAFKA_SECRET_RESOLVED;
  }
  return KAFKA_SECRET_NONE;
}

void kafka_secret_free(char *secret) {
  if (!secret) return;
  /* volatile: the wipe must not be optimised away before free. */
  for (volatile char *p = secret; *p; p++)
    *p = 0;
  free(secret);
}
