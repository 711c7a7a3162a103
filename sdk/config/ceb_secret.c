/* Secret references (${ENV}, file:PATH): one implementation for the host's
 * SECRET keys and for plugins' own values (ceb/config.h). */
#include <ceb/config.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SECRET_FILE_MAX (64 * 1024) /* keys and tokens are far smaller */

static int env_name_ok(const char *s, size_t n) {
  if (n == 0 || n > 127 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '_')) return 0;
  return 1;
}

/* The file's content, one trailing newline (CRLF too) removed; malloc'd,
 * or NULL with errno (EFBIG: too large, EINVAL: NUL byte or not a regular
 * file). Opened non-blocking so that a FIFO cannot hang start-up. */
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

static ceb_secret_kind fail(char *err, size_t errlen, const char *msg) {
  if (err && errlen) snprintf(err, errlen, "%s", msg);
  return CEB_SECRET_ERROR;
}

/* Appends n bytes to the growing buffer *buf (length *len). 0 when out of
 * memory (the buffer is wiped and freed). */
static int append(char **buf, size_t *len, const char *s, size_t n) {
  char *nb = malloc(*len + n + 1);
  if (!nb) {
    ceb_secret_free(*buf);
    *buf = NULL;
    return 0;
  }
  if (*buf) memcpy(nb, *buf, *len);
  memcpy(nb + *len, s, n);
  nb[*len + n] = '\0';
  ceb_secret_free(*buf); /* wiped: it may hold a secret already */
  *buf = nb;
  *len += n;
  return 1;
}

/* Every ${NAME} of value replaced by the environment variable NAME, the text
 * around kept: one reference ("${TOKEN}") or several ("${OLD} ${NEW}", the
 * documented secret rotation of list keys). "$${" stands for a literal "${"
 * (as in Compose files), so a value can still hold that text. */
static ceb_secret_kind from_env(const char *value, char **out, char *err,
                                size_t errlen) {
  char *buf = NULL;
  size_t len = 0;
  const char *p = value;
  for (;;) {
    const char *ref = strstr(p, "${");
    int escaped = ref && ref > p && ref[-1] == '$';
    /* the text before the reference, without the escaping '$' */
    size_t lit = ref ? (size_t)(ref - p) - (escaped ? 1 : 0) : strlen(p);
    if ((lit || !buf) && !append(&buf, &len, p, lit)) goto oom;
    if (!ref) break;
    if (escaped) { /* "$${": a literal "${", the rest is text */
      if (!append(&buf, &len, "${", 2)) goto oom;
      p = ref + 2;
      continue;
    }
    const char *name = ref + 2, *end = strchr(name, '}');
    size_t n = end ? (size_t)(end - name) : 0;
    if (!end || !env_name_ok(name, n)) {
      ceb_secret_free(buf);
      return fail(err, errlen,
                  "invalid environment variable reference (write ${NAME} "
                  "with letters, digits and '_'; $${ for a literal ${)");
    }
    char env[128];
    snprintf(env, sizeof env, "%.*s", (int)n, name);
    const char *v = getenv(env);
    if (!v) {
      ceb_secret_free(buf);
      if (err && errlen)
        snprintf(err, errlen,
                 "environment variable %s is not set (export it in the "
                 "service environment)",
                 env);
      return CEB_SECRET_ERROR;
    }
    if (!append(&buf, &len, v, strlen(v))) goto oom;
    p = end + 1;
  }
  *out = buf;
  return CEB_SECRET_RESOLVED;
oom:
  return fail(err, errlen, "out of memory");
}

static ceb_secret_kind from_file(const char *p, const char *base_dir,
                                 char **out, char *err, size_t errlen) {
  if (!*p)
    return fail(err, errlen, "empty secret file path (write file:/path)");
  char *path;
  if (p[0] == '/' || !base_dir) {
    path = strdup(p);
  } else {
    size_t n = strlen(base_dir) + strlen(p) + 2;
    path = malloc(n);
    if (path) snprintf(path, n, "%s/%s", base_dir, p);
  }
  if (!path) return fail(err, errlen, "out of memory");
  *out = file_read(path);
  if (!*out) {
    int e = errno;
    if (err && errlen)
      snprintf(err, errlen,
               "cannot read secret file '%.200s': %s (it must be readable "
               "by the bridge)",
               path,
               e == EFBIG    ? "larger than 64 KiB"
               : e == EINVAL ? "not a regular text file"
                             : strerror(e));
    free(path);
    return CEB_SECRET_ERROR;
  }
  free(path);
  return CEB_SECRET_RESOLVED;
}

ceb_secret_kind ceb_secret_resolve(const char *value, const char *base_dir,
                                   char **out, char *err, size_t errlen) {
  if (!out) return fail(err, errlen, "invalid argument");
  *out = NULL;
  size_t len = value ? strlen(value) : 0;
  if (len >= 5 && strncmp(value, "file:", 5) == 0)
    return from_file(value + 5, base_dir, out, err, errlen);
  if (value && strstr(value, "${")) return from_env(value, out, err, errlen);
  return CEB_SECRET_LITERAL;
}

void ceb_secret_free(char *secret) {
  if (!secret) return;
  /* volatile: the wipe must not be optimised away before free */
  for (volatile char *p = secret; *p; p++)
    *p = 0;
  free(secret);
}
