#include "kafka_topic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_common.h"

/* A template is a list of parts, each literal text or an attribute name. */
typedef struct tmpl_part {
  int is_attr;
  char *text;
} tmpl_part;

struct kafka_topic_tmpl {
  tmpl_part *parts;
  size_t count;
  int fixed;
};

void kafka_topic_tmpl_free(kafka_topic_tmpl *t) {
  if (!t) return;
  for (size_t i = 0; i < t->count; i++)
    free(t->parts[i].text);
  free(t->parts);
  free(t);
}

static int add_part(kafka_topic_tmpl *t, int is_attr, const char *s, size_t n) {
  tmpl_part *p = realloc(t->parts, (t->count + 1) * sizeof *p);
  if (!p) return -1;
  t->parts = p;
  p[t->count].is_attr = is_attr;
  p[t->count].text = strndup(s, n);
  if (!p[t->count].text) return -1;
  t->count++;
  return 0;
}

kafka_topic_tmpl *kafka_topic_tmpl_parse(const char *text, char *errstr,
                                         size_t errsz) {
  kafka_topic_tmpl *t = calloc(1, sizeof *t);
  if (!t || !text || !*text) {
    snprintf(errstr, errsz, t ? "empty topic" : "out of memory");
    free(t);
    return NULL;
  }
  t->fixed = 1;
  const char *p = text;
  while (*p) {
    const char *open = strstr(p, "${");
    if (!open) {
      if (add_part(t, 0, p, strlen(p))) goto oom;
      break;
    }
    if (open > p && add_part(t, 0, p, (size_t)(open - p))) goto oom;
    const char *close = strchr(open + 2, '}');
    if (!close) {
      snprintf(errstr, errsz, "topic template '%s': '${' is not closed", text);
      goto fail;
    }
    char name[CEB_ATTR_NAME_MAX + 1];
    size_t n = (size_t)(close - open - 2);
    if (n == 0 || n > CEB_ATTR_NAME_MAX) {
      snprintf(errstr, errsz, "topic template '%s': bad attribute name", text);
      goto fail;
    }
    memcpy(name, open + 2, n);
    name[n] = '\0';
    if (!ceb_valid_attr_name(name)) {
      snprintf(errstr, errsz,
               "topic template '%s': '%s' is not an attribute name", text,
               name);
      goto fail;
    }
    if (add_part(t, 1, name, n)) goto oom;
    t->fixed = 0;
    p = close + 1;
  }
  if (t->fixed && !kafka_topic_name_valid(text)) {
    snprintf(errstr, errsz, "topic '%s' is not a legal Kafka topic name", text);
    goto fail;
  }
  return t;
oom:
  snprintf(errstr, errsz, "out of memory");
fail:
  kafka_topic_tmpl_free(t);
  return NULL;
}

int kafka_topic_tmpl_is_fixed(const kafka_topic_tmpl *t) {
  return t->fixed;
}

int kafka_topic_tmpl_expand(const kafka_topic_tmpl *t, const ceb_event *ev,
                            char *buf, size_t bufsz, char *errstr,
                            size_t errsz) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < t->count; i++) {
    const char *v = t->parts[i].text;
    if (t->parts[i].is_attr) {
      v = ceb_event_get(ev, t->parts[i].text);
      if (!v) {
        snprintf(errstr, errsz, "topic template: attribute '%s' is unset",
                 t->parts[i].text);
        return CEB_EINVAL;
      }
    }
    size_t n = strlen(v);
    if (used + n >= bufsz) {
      snprintf(errstr, errsz, "topic template: expanded name too long");
      return CEB_EINVAL;
    }
    memcpy(buf + used, v, n + 1);
    used += n;
  }
  if (!kafka_topic_name_valid(buf)) {
    snprintf(errstr, errsz,
             "topic template: '%.100s' is not a legal Kafka topic name", buf);
    return CEB_EINVAL;
  }
  return CEB_OK;
}
