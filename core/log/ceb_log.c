#include "log/ceb_log.h"

#include "log/ceb_log_escape.h"

#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static struct {
  pthread_mutex_t lock;
  ceb_log_level min;
  ceb_log_format format;
  FILE *out;
} g_log = {PTHREAD_MUTEX_INITIALIZER, CEB_LOG_INFO, CEB_LOGFMT_JSON, NULL};

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void ceb_log_configure(ceb_log_level min_level, ceb_log_format format,
                       FILE *out) {
  pthread_mutex_lock(&g_log.lock);
  g_log.min = min_level;
  g_log.format = format;
  g_log.out = out;
  pthread_mutex_unlock(&g_log.lock);
}

int ceb_log_level_parse(const char *s) {
  for (int i = 0; s && i < 4; i++)
    if (strcmp(s, level_names[i]) == 0) return i;
  return -1;
}

int ceb_log_format_parse(const char *s) {
  if (s && strcmp(s, "json") == 0) return CEB_LOGFMT_JSON;
  if (s && strcmp(s, "text") == 0) return CEB_LOGFMT_TEXT;
  return -1;
}

int ceb_log_enabled(ceb_log_level level) {
  return level <= g_log.min;
}

static void now_rfc3339(char *buf, size_t size) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, size - n, ".%03ldZ", (long)(tv.tv_usec / 1000));
}

/* The record's fields, escaped (ceb_log_escape.h): whatever a field or the
 * message holds, the record is one line, and valid JSON in that format. */
typedef struct log_fields {
  const char *name[5], *text_name[5];
  char *value[5];
  size_t n;
} log_fields;

static void field_add(log_fields *f, const char *name, const char *text_name,
                      const char *value, int quote) {
  if (!value) return;
  char *v = ceb_log_escape_dup(value, quote);
  if (!v) return;
  f->name[f->n] = name;
  f->text_name[f->n] = text_name;
  f->value[f->n++] = v;
}

static char *json_line(const char *ts, const char *lv, const char *component,
                       const log_fields *f, const char *msg) {
  json_t *o = json_object();
  json_object_set_new(o, "time", json_string(ts));
  json_object_set_new(o, "level", json_string(lv));
  if (component) json_object_set_new(o, "component", json_string(component));
  for (size_t i = 0; i < f->n; i++)
    json_object_set_new(o, f->name[i], json_string(f->value[i]));
  json_object_set_new(o, "msg", json_string(msg));
  char *line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  return line;
}

void ceb_log_vwrite(ceb_log_level level, const char *component,
                    const ceb_log_ctx *ctx, const char *fmt, va_list ap) {
  if (!ceb_log_enabled(level)) return;
  char raw[2048];
  vsnprintf(raw, sizeof raw, fmt, ap);
  char msg[CEB_LOG_ESCAPED_MAX(sizeof raw)];
  ceb_log_escape(raw, strlen(raw), 0, msg);
  char ts[40];
  now_rfc3339(ts, sizeof ts);
  const char *lv = level_names[level < 0 || level > 3 ? 0 : level];
  int json = g_log.format == CEB_LOGFMT_JSON;
  char *comp = component ? ceb_log_escape_dup(component, 0) : NULL;
  log_fields f = {{0}, {0}, {0}, 0};
  if (ctx) {
    field_add(&f, "event_id", "event", ctx->event_id, !json);
    field_add(&f, "route", "route", ctx->route, !json);
    field_add(&f, "client", "client", ctx->client, !json);
    field_add(&f, "trace_id", "trace", ctx->trace_id, !json);
  }
  char *line = json ? json_line(ts, lv, comp, &f, msg) : NULL;
  pthread_mutex_lock(&g_log.lock);
  FILE *out = g_log.out ? g_log.out : stderr;
  if (line) {
    fprintf(out, "%s\n", line);
  } else {
    fprintf(out, "%s %-5s %s%s%s", ts, lv, comp ? "[" : "", comp ? comp : "",
            comp ? "] " : "");
    for (size_t i = 0; i < f.n; i++)
      fprintf(out, "%s=%s ", f.text_name[i], f.value[i]);
    fprintf(out, "%s\n", msg);
  }
  fflush(out);
  pthread_mutex_unlock(&g_log.lock);
  free(line);
  free(comp);
  for (size_t i = 0; i < f.n; i++)
    free(f.value[i]);
}

void ceb_log_write(ceb_log_level level, const char *component,
                   const ceb_log_ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ceb_log_vwrite(level, component, ctx, fmt, ap);
  va_end(ap);
}

const char *ceb_log_trace_id(const char *tp, char *buf) {
  /* version(2)-traceid(32)-parentid(16)-flags(2) */
  if (!tp || strlen(tp) < 55 || tp[2] != '-' || tp[35] != '-') return NULL;
  for (int i = 0; i < 32; i++) {
    char c = tp[3 + i];
    if (!isxdigit((unsigned char)c) || isupper((unsigned char)c)) return NULL;
    buf[i] = c;
  }
  buf[32] = '\0';
  if (strspn(buf, "0") == 32) return NULL;
  return buf;
}

void ceb_log_ctx_event(ceb_log_ctx *ctx, const ceb_event *ev,
                       char trace_buf[33]) {
  if (!ev) return;
  ctx->event_id = ceb_event_get(ev, "id");
  ctx->trace_id = ceb_log_trace_id(ceb_event_get(ev, "traceparent"), trace_buf);
}
