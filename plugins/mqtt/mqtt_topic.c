#include <stdio.h>
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

int mqtt_share_name_valid(const char *name) {
  /* MQTT 5 4.8.2: at least one character, none of '/', '+' or '#'. */
  return name && *name && strlen(name) <= 1024 && !strpbrk(name, "/+#") &&
         utf8_valid((const unsigned char *)name);
}

int mqtt_filter_valid(const char *f) {
  size_t len = f ? strlen(f) : 0;
  if (!len || len > 65535 || !utf8_valid((const unsigned char *)f)) return 0;
  if (strncmp(f, "$share/", 7) == 0) {
    /* $share/<ShareName>/<filter>: a bad share name would only come back as
     * a refused SUBACK at run time; say so at check time instead. */
    const char *slash = strchr(f + 7, '/');
    if (!slash || slash == f + 7 || !slash[1] ||
        strncmp(slash + 1, "$share/", 7) == 0)
      return 0;
    char name[1025];
    size_t nl = (size_t)(slash - (f + 7));
    if (nl >= sizeof name) return 0;
    memcpy(name, f + 7, nl);
    name[nl] = 0;
    if (!mqtt_share_name_valid(name)) return 0;
    f = slash + 1;
    len = strlen(f);
  }
  /* Wildcards occupy whole levels; # only as the last level. */
  for (size_t i = 0; i < len; i++) {
    int starts = i == 0 || f[i - 1] == '/';
    int ends = i + 1 == len || f[i + 1] == '/';
    if (f[i] == '+' && (!starts || !ends)) return 0;
    if (f[i] == '#' && (!starts || i + 1 != len)) return 0;
  }
  return 1;
}

char **mqtt_share_filters(const char *group, const char *const *filters,
                          size_t n) {
  char **out = calloc(n ? n : 1, sizeof *out);
  for (size_t i = 0; out && i < n; i++) {
    size_t len = 7 + strlen(group) + 1 + strlen(filters[i]) + 1;
    out[i] = malloc(len);
    if (!out[i]) {
      mqtt_share_filters_free(out, i);
      return NULL;
    }
    snprintf(out[i], len, "$share/%s/%s", group, filters[i]);
  }
  return out;
}

void mqtt_share_filters_free(char **filters, size_t n) {
  for (size_t i = 0; filters && i < n; i++)
    free(filters[i]);
  free(filters);
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
