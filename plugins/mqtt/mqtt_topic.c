#include <stdlib.h>
#include <string.h>

#include "mqtt_plugin.h"

/* Topic names are UTF-8 without NUL; a valid-UTF-8 check keeps the broker
 * from dropping the connection over a bad PUBLISH. */
static int utf8_valid(const unsigned char *s) {
  while (*s) {
    size_t n = *s < 0x80         ? 1
               : (*s >> 5) == 6  ? 2
               : (*s >> 4) == 14 ? 3
               : (*s >> 3) == 30 ? 4
                                 : 0;
    if (!n) return 0;
    for (size_t i = 1; i < n; i++)
      if ((s[i] & 0xc0) != 0x80) return 0;
    s += n;
  }
  return 1;
}

int mqtt_topic_valid(const char *name) {
  size_t len = name ? strlen(name) : 0;
  return len > 0 && len <= 65535 && !strpbrk(name, "+#") &&
         utf8_valid((const unsigned char *)name);
}

int mqtt_filter_valid(const char *f) {
  size_t len = f ? strlen(f) : 0;
  if (!len || len > 65535 || !utf8_valid((const unsigned char *)f)) return 0;
  /* Wildcards occupy whole levels; # only as the last level. */
  for (size_t i = 0; i < len; i++) {
    int starts = i == 0 || f[i - 1] == '/';
    int ends = i + 1 == len || f[i + 1] == '/';
    if (f[i] == '+' && (!starts || !ends)) return 0;
    if (f[i] == '#' && (!starts || i + 1 != len)) return 0;
  }
  return 1;
}

char *mqtt_topic_expand(const char *tmpl, const ceb_event *ev,
                        const char **err) {
  size_t cap = strlen(tmpl) + 64, len = 0;
  char *out = malloc(cap);
  if (!out) {
    *err = "out of memory";
    return NULL;
  }
  for (const char *p = tmpl; *p;) {
    const char *piece = p;
    size_t n = 1;
    char name[72];
    if (p[0] == '$' && p[1] == '{') {
      const char *end = strchr(p + 2, '}');
      size_t nl = end ? (size_t)(end - p - 2) : 0;
      if (!end || nl == 0 || nl >= sizeof name) {
        free(out);
        *err = "malformed ${...} in the topic template";
        return NULL;
      }
      memcpy(name, p + 2, nl);
      name[nl] = 0;
      piece = ceb_event_get(ev, name);
      if (!piece || !*piece) {
        free(out);
        *err = "the topic template names an attribute the event lacks";
        return NULL;
      }
      n = strlen(piece);
      p = end + 1;
    } else {
      p++;
    }
    if (len + n + 1 > cap) {
      cap = (len + n + 1) * 2;
      char *g = realloc(out, cap);
      if (!g) {
        free(out);
        *err = "out of memory";
        return NULL;
      }
      out = g;
    }
    memcpy(out + len, piece, n);
    len += n;
  }
  out[len] = 0;
  if (!mqtt_topic_valid(out)) {
    free(out);
    *err = "the expanded topic is not a valid MQTT topic name";
    return NULL;
  }
  return out;
}
