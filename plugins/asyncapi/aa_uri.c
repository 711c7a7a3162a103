/* Reference resolution for bundling: URLs per RFC 3986 §5.2, file paths
 * relative to the referring file's directory. */
#include "aa_doc.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int has_scheme(const char *s) {
  if (!isalpha((unsigned char)*s)) return 0;
  for (const char *p = s + 1; *p; p++) {
    if (*p == ':') return 1;
    if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
      return 0;
  }
  return 0;
}

/* Removes "." and ".." segments of path in place (RFC 3986 §5.2.4). */
static void remove_dots(char *path) {
  char *segs[512];
  size_t n = 0;
  int absolute = path[0] == '/';
  int trailing = 0;
  char *save = NULL;
  char copy[4096];
  if (strlen(path) >= sizeof copy)
    return; /* left as written; the fetch of such a path fails anyway */
  snprintf(copy, sizeof copy, "%s", path);
  for (char *s = strtok_r(copy, "/", &save); s;
       s = strtok_r(NULL, "/", &save)) {
    trailing = 0;
    if (strcmp(s, ".") == 0) {
      trailing = 1;
    } else if (strcmp(s, "..") == 0) {
      if (n) n--;
      trailing = 1;
    } else if (n < 512) {
      segs[n++] = s;
    }
  }
  size_t len = strlen(path);
  int ends_slash = len && path[len - 1] == '/';
  char out[4096];
  size_t o = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n; i++)
    o += (size_t)snprintf(out + o, sizeof out - o, "%s%s",
                          (i || absolute) ? "/" : "", segs[i]);
  if (n && (ends_slash || trailing) && o + 1 < sizeof out) {
    out[o++] = '/';
    out[o] = '\0';
  }
  if (!n && absolute) snprintf(out, sizeof out, "/");
  /* Never longer than the input: segments are only dropped. */
  memcpy(path, out, strlen(out) + 1);
}

int aa_uri_resolve(const char *base, const char *ref, char *out, size_t size) {
  char r[4096];
  size_t rl = strcspn(ref, "#");
  if (rl >= sizeof r) return -1;
  memcpy(r, ref, rl);
  r[rl] = '\0';
  if (!r[0]) /* same document */
    return snprintf(out, size, "%s", base) < (int)size ? 0 : -1;
  if (strncmp(r, "file://", 7) == 0) {
    memmove(r, r + 7, strlen(r + 7) + 1);
  } else if (has_scheme(r)) {
    if (snprintf(out, size, "%s", r) >= (int)size) return -1;
    char *p = strstr(out, "://");
    if (p && (p = strchr(p + 3, '/'))) remove_dots(p);
    return 0;
  }
  const char *sep = strstr(base, "://");
  char buf[8192];
  if (sep) {
    const char *auth_end = strchr(sep + 3, '/');
    size_t auth_len = auth_end ? (size_t)(auth_end - base) : strlen(base);
    if (r[0] == '/' && r[1] == '/') {
      snprintf(buf, sizeof buf, "%.*s%s", (int)(sep - base + 1), base, r);
    } else if (r[0] == '/') {
      snprintf(buf, sizeof buf, "%.*s%s", (int)auth_len, base, r);
    } else {
      size_t path_len = strcspn(base, "?");
      const char *slash = NULL;
      for (const char *p = base + auth_len; p < base + path_len; p++)
        if (*p == '/') slash = p;
      if (slash)
        snprintf(buf, sizeof buf, "%.*s%s", (int)(slash - base + 1), base, r);
      else
        snprintf(buf, sizeof buf, "%.*s/%s", (int)auth_len, base, r);
    }
    char *path = strchr(strstr(buf, "://") + 3, '/');
    if (path) {
      char *q = strchr(path, '?');
      char query[2048] = "";
      if (q) {
        snprintf(query, sizeof query, "%s", q);
        *q = '\0';
      }
      remove_dots(path);
      strncat(path, query,
              sizeof buf - (size_t)(path - buf) - strlen(path) - 1);
    }
  } else if (r[0] == '/') {
    snprintf(buf, sizeof buf, "%s", r);
    remove_dots(buf);
  } else {
    const char *slash = strrchr(base, '/');
    if (slash)
      snprintf(buf, sizeof buf, "%.*s%s", (int)(slash - base + 1), base, r);
    else
      snprintf(buf, sizeof buf, "%s", r);
    remove_dots(buf);
  }
  return snprintf(out, size, "%s", buf) < (int)size ? 0 : -1;
}
