/* Host logging: one line per record, JSON (default) or text, to stderr.
 * Thread-safe: lines from different threads never interleave. Every field
 * and the message are escaped (ceb_log_escape.h), so a record is one line
 * whatever its text holds, and valid JSON in that format. Secrets must
 * never be passed in. The logger is an explicit object owned by the bridge;
 * ceb_log_default() is the process-wide one the CLI sets up at start. */
#ifndef CEB_LOG_H
#define CEB_LOG_H

#include <stdarg.h>
#include <stdio.h>

#include <ceb/plugin.h>

typedef enum ceb_log_format {
  CEB_LOGFMT_JSON = 0,
  CEB_LOGFMT_TEXT = 1
} ceb_log_format;

/* Optional structured fields of a record; any member may be NULL. */
typedef struct ceb_log_ctx {
  const char *event_id;
  const char *route;
  const char *client;
  const char *trace_id; /* from traceparent */
} ceb_log_ctx;

/* Configures the process logger: minimum level, format and stream (NULL =
 * stderr). Call before threads start; later calls are safe but racy in
 * format only. */
void ceb_log_configure(ceb_log_level min_level, ceb_log_format format,
                       FILE *out);
/* Parses "error|warn|info|debug" / "json|text"; -1 when unknown. */
int ceb_log_level_parse(const char *s);
int ceb_log_format_parse(const char *s);
/* 1 when a record at `level` would be written. */
int ceb_log_enabled(ceb_log_level level);

/* Writes one record. component is the "[sink:kafka:orders]" style prefix
 * without brackets (NULL for the core). ctx may be NULL. */
void ceb_log_write(ceb_log_level level, const char *component,
                   const ceb_log_ctx *ctx, const char *fmt, ...)
    CEB_PRINTF(4, 5);
void ceb_log_vwrite(ceb_log_level level, const char *component,
                    const ceb_log_ctx *ctx, const char *fmt, va_list ap);

#define ceb_log_error(...) ceb_log_write(CEB_LOG_ERROR, NULL, NULL, __VA_ARGS__)
#define ceb_log_warn(...) ceb_log_write(CEB_LOG_WARN, NULL, NULL, __VA_ARGS__)
#define ceb_log_info(...) ceb_log_write(CEB_LOG_INFO, NULL, NULL, __VA_ARGS__)
#define ceb_log_debug(...) ceb_log_write(CEB_LOG_DEBUG, NULL, NULL, __VA_ARGS__)

/* Extracts the 32-hex-digit trace id from a W3C traceparent into buf (33
 * bytes); returns buf, or NULL when traceparent is malformed. */
const char *ceb_log_trace_id(const char *traceparent, char *buf);

/* Sets ctx->event_id from ev and ctx->trace_id from its traceparent
 * extension (CloudEvents distributed tracing) when that is well formed;
 * trace_buf (33 bytes) holds the trace id. ev may be NULL. */
void ceb_log_ctx_event(ceb_log_ctx *ctx, const ceb_event *ev,
                       char trace_buf[33]);

#endif
