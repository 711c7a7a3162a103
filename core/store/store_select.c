/* Which engine serves a store spec, and the instance id a process claims
 * under when the config names none. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <unistd.h>

#include <ceb/status.h>

#include "store/ceb_store_engine.h"

static int has_prefix(const char *s, const char *p) {
  return strncasecmp(s, p, strlen(p)) == 0;
}

/* libpq's key=value form: starts with a keyword and '=' ("host=…",
 * "dbname = …"). A file path holding '=' past a '/' is a path. */
static int is_conninfo(const char *s) {
  static const char *const keys[] = {"host",
                                     "hostaddr",
                                     "port",
                                     "dbname",
                                     "user",
                                     "password",
                                     "service",
                                     "sslmode",
                                     "passfile",
                                     "options",
                                     "application_name",
                                     "connect_timeout",
                                     NULL};
  while (*s == ' ' || *s == '\t')
    s++;
  for (int i = 0; keys[i]; i++) {
    size_t n = strlen(keys[i]);
    if (strncmp(s, keys[i], n) != 0) continue;
    const char *p = s + n;
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p == '=') return 1;
  }
  return 0;
}

static int is_postgres(const char *spec) {
  return has_prefix(spec, "postgresql://") || has_prefix(spec, "postgres://") ||
         is_conninfo(spec);
}

/* Length of a URI scheme followed by "://" at the start of s, else 0. */
static size_t scheme_len(const char *s) {
  size_t n = 0;
  while ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
         (n > 0 && ((s[n] >= '0' && s[n] <= '9') || s[n] == '+' ||
                    s[n] == '-' || s[n] == '.')))
    n++;
  return n > 0 && strncmp(s + n, "://", 3) == 0 ? n : 0;
}

const char *ceb_store_sqlite_path(const char *spec) {
  if (!spec || is_postgres(spec)) return NULL;
  if (has_prefix(spec, "sqlite:")) return spec + strlen("sqlite:");
  return scheme_len(spec) ? NULL : spec; /* another scheme's URI */
}

int ceb_store_select(const char *spec, const ceb_store_engine **eng,
                     const char **location, char *err, size_t errlen) {
  if (!spec || !*spec) {
    snprintf(err, errlen, "store: no store given ([bridge] store)");
    return CEB_EINVAL;
  }
  if (is_postgres(spec)) {
#ifdef CEB_HAVE_POSTGRES
    *eng = &ceb_store_postgres_engine;
    *location = spec;
    return CEB_OK;
#else
    snprintf(err, errlen,
             "store: [bridge] store names a PostgreSQL database, and this "
             "build has no PostgreSQL engine (build with libpq)");
    return CEB_EUNSUPPORTED;
#endif
  }
  const char *path = ceb_store_sqlite_path(spec);
  if (!path) {
    size_t n = scheme_len(spec);
    snprintf(err, errlen,
             "store: unknown store kind '%.*s://': use a file path, "
             "sqlite:PATH or postgresql://…",
             (int)(n > 32 ? 32 : n), spec);
    return CEB_EUNSUPPORTED;
  }
  if (!*path) {
    snprintf(err, errlen, "store: no path given");
    return CEB_EINVAL;
  }
  *eng = &ceb_store_sqlite_engine;
  *location = path;
  return CEB_OK;
}

void ceb_store_default_instance(char *buf, size_t size) {
  char host[64] = "host";
  if (gethostname(host, sizeof host - 1) != 0) strcpy(host, "host");
  host[sizeof host - 1] = '\0';
  /* only what is safe in a log line and a label: cut at a dot too */
  for (char *p = host; *p; p++)
    if (*p == '.' || (unsigned char)*p < 0x21 || *p == '"' || *p == '\\') {
      *p = '\0';
      break;
    }
  uint32_t r = 0;
  if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
    r = (uint32_t)(uintptr_t)&r ^ (uint32_t)getpid();
  snprintf(buf, size, "%s-%ld-%08x", host, (long)getpid(), r);
}
