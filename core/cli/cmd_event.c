/* `cebridge event validate|convert` (and `map`: cmd_event_map.c). Input
 * detection: after blanks, '{' is a JSON-format event, '[' a JSON batch,
 * anything else a raw HTTP request dump (see cmd_event/ceb_http_dump.h) decoded
 * with the HTTP binding. */
#include "cli/cli.h"
#include "cli/http_dump.h"

#include <ceb/codec.h>
#include <ceb/validate.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_VALID 0
#define EXIT_INVALID 1
#define EXIT_USAGE 2
#define MAX_INPUT (16u * 1024 * 1024)

static const char k_usage[] =
    "usage: cebridge event validate [--profile cloudevents|nlgov|nlgov-warn]\n"
    "                               [--max-size BYTES] [--json] FILE|-\n"
    "       cebridge event convert --to FORMAT FILE|-\n"
    "       cebridge event map [-c DIR] (--source|--sink|--route) NAME "
    "FILE|-\n"
    "\n"
    "Input (FILE or '-' for stdin): a JSON-format event ({...}), a JSON batch\n"
    "([...]) or an HTTP request dump: optional request line, 'Name: value'\n"
    "header lines, a blank line, then the body.\n";

static const char k_validate_help[] =
    "cebridge event validate [options] FILE|-\n"
    "  Decodes the input and validates every event against CloudEvents 1.0\n"
    "  and, with --profile nlgov, the NL GOV profile (nlgov = enforce: "
    "profile\n"
    "  violations are errors; nlgov-warn: they are warnings).\n"
    "  --profile P     cloudevents (default), nlgov, nlgov-warn\n"
    "  --max-size N    size limit in bytes (default 65536)\n"
    "  --json          machine-readable result on stdout\n"
    "  Exit status: 0 valid, 1 invalid (reasons on stderr), 2 usage/I/O.\n";

static const char k_convert_help[] =
    "cebridge event convert --to FORMAT FILE|-\n"
    "  Decodes one event (or a batch, for --to json) and prints it as FORMAT:\n"
    "    json             JSON event format (a batch stays a batch)\n"
    "    http-binary      HTTP headers (ce-*, Content-Type), blank line, body\n"
    "    http-structured  Content-Type header, blank line, JSON body\n"
    "    kafka-binary     record headers (ce_*, content-type), blank line,\n"
    "                     value; the record key as an '@key: ' line first\n"
    "    mqtt5-binary     user properties, blank line, payload; the Content\n"
    "                     Type property as an '@content-type: ' line first\n"
    "  Header lines are 'name: value'; lines starting with '@' are record or\n"
    "  packet fields, not headers. The body is written byte for byte.\n"
    "  Exit status: 0 converted, 1 undecodable input, 2 usage/I/O.\n";

/* ---- input ---- */

static char *read_input(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "event: cannot open %s\n", path);
    return NULL;
  }
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    if (n == cap) {
      if (cap >= MAX_INPUT) {
        fprintf(stderr, "event: %s is larger than %u bytes\n", path, MAX_INPUT);
        free(buf);
        buf = NULL;
        break;
      }
      char *bigger = realloc(buf, cap * 2 + 1);
      if (!bigger) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = bigger;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) {
        fprintf(stderr, "event: cannot read %s\n", path);
        free(buf);
        buf = NULL;
      }
      break;
    }
  }
  if (f != stdin) fclose(f);
  if (buf) {
    buf[n] = '\0';
    *len = n;
  }
  return buf;
}

typedef struct input {
  ceb_event **events;
  size_t count;
  int is_batch;
  ceb_error err;
} input;

static int decode_input(const char *buf, size_t len, input *in) {
  memset(in, 0, sizeof *in);
  ceb_error_clear(&in->err);
  size_t i = 0;
  if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0) i = 3;
  while (i < len && strchr(" \t\r\n", buf[i]))
    i++;
  if (i < len && buf[i] == '[') {
    in->is_batch = 1;
    return ceb_batch_decode(buf, len, &in->events, &in->count, &in->err);
  }
  ceb_event *ev = NULL;
  int rc;
  if (i < len && buf[i] == '{') {
    rc = ceb_json_decode(buf, len, &ev, &in->err);
  } else {
    ceb_headers h = {0};
    size_t off;
    rc = ceb_http_dump_parse(buf, len, &h, &off, &in->err);
    if (rc == CEB_OK && ceb_http_mode_of(ceb_headers_get(&h, "content-type")) ==
                            CEB_MODE_BATCH) {
      in->is_batch = 1;
      rc = ceb_batch_decode(buf + off, len - off, &in->events, &in->count,
                            &in->err);
      ceb_headers_clear(&h);
      return rc;
    }
    if (rc == CEB_OK)
      rc = ceb_http_decode(&h, buf + off, len - off, &ev, &in->err);
    ceb_headers_clear(&h);
  }
  if (rc != CEB_OK) return rc;
  in->events = malloc(sizeof *in->events);
  if (!in->events) {
    ceb_event_unref(ev);
    return CEB_ENOMEM;
  }
  in->events[0] = ev;
  in->count = 1;
  return CEB_OK;
}

/* ---- validate ---- */

static json_t *violations_json(const ceb_violations *v) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < v->count; i++) {
    const ceb_violation *x = &v->items[i];
    json_array_append_new(
        arr, json_pack("{s:s, s:s, s:s, s:s}", "code", x->code, "severity",
                       x->severity == CEB_SEV_ERROR ? "error" : "warning",
                       "attribute", x->attribute, "message", x->message));
  }
  return arr;
}

static void print_json(json_t *j) {
  char *s = json_dumps(j, JSON_INDENT(2));
  if (s) {
    puts(s);
    free(s);
  }
  json_decref(j);
}

static int decode_error(const input *in, int as_json, const char *profile) {
  if (as_json) {
    json_t *err =
        json_pack("{s:s, s:s, s:s}", "status", ceb_status_name(in->err.status),
                  "code", in->err.code, "message", in->err.message);
    if (err && in->err.index >= 0)
      json_object_set_new(err, "index", json_integer(in->err.index));
    print_json(json_pack("{s:b, s:s, s:o}", "valid", 0, "profile", profile,
                         "error", err));
  }
  if (in->err.index >= 0)
    fprintf(stderr, "event[%d]: %s: %s\n", in->err.index, in->err.code,
            in->err.message);
  else
    fprintf(stderr, "event: %s: %s\n", in->err.code, in->err.message);
  return EXIT_INVALID;
}

static int cmd_validate(int argc, char **argv) {
  const char *path = NULL, *profile = "cloudevents";
  int as_json = 0;
  ceb_validate_opts opts = {sizeof opts, CEB_PROFILE_OFF, 0};
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(k_validate_help, stdout);
      return EXIT_VALID;
    } else if (!strcmp(a, "--json")) {
      as_json = 1;
    } else if (!strcmp(a, "--profile") && i + 1 < argc) {
      profile = argv[++i];
      if (!strcmp(profile, "cloudevents"))
        opts.nlgov = CEB_PROFILE_OFF;
      else if (!strcmp(profile, "nlgov"))
        opts.nlgov = CEB_PROFILE_ENFORCE;
      else if (!strcmp(profile, "nlgov-warn"))
        opts.nlgov = CEB_PROFILE_WARN;
      else {
        fprintf(stderr, "event validate: unknown profile '%s'\n", profile);
        return EXIT_USAGE;
      }
    } else if (!strcmp(a, "--max-size") && i + 1 < argc) {
      char *end;
      unsigned long long n = strtoull(argv[++i], &end, 10);
      if (!*argv[i] || *end || n == 0) {
        fprintf(stderr, "event validate: bad --max-size '%s'\n", argv[i]);
        return EXIT_USAGE;
      }
      opts.max_size = (size_t)n;
    } else if ((a[0] != '-' || !strcmp(a, "-")) && !path) {
      path = a;
    } else {
      fprintf(stderr, "event validate: unexpected argument '%s'\n%s", a,
              k_validate_help);
      return EXIT_USAGE;
    }
  }
  if (!path) {
    fprintf(stderr, "event validate: no input\n%s", k_validate_help);
    return EXIT_USAGE;
  }
  size_t len;
  char *buf = read_input(path, &len);
  if (!buf) return EXIT_USAGE;
  input in;
  int rc = decode_input(buf, len, &in);
  free(buf);
  if (rc != CEB_OK) return decode_error(&in, as_json, profile);

  size_t invalid = 0;
  json_t *events = as_json ? json_array() : NULL;
  for (size_t i = 0; i < in.count; i++) {
    ceb_violations v;
    size_t errors = ceb_event_validate(in.events[i], &opts, &v);
    invalid += errors > 0;
    const char *id = ceb_event_get(in.events[i], "id");
    for (size_t k = 0; k < v.count; k++)
      fprintf(stderr, "event[%zu]%s%s%s: %s %s%s%s: %s\n", i, id ? " (id " : "",
              id ? id : "", id ? ")" : "",
              v.items[k].severity == CEB_SEV_ERROR ? "error" : "warning",
              v.items[k].code, v.items[k].attribute[0] ? " " : "",
              v.items[k].attribute, v.items[k].message);
    if (v.truncated)
      fprintf(stderr, "event[%zu]: more violations not shown\n", i);
    if (events)
      json_array_append_new(
          events, json_pack("{s:I, s:s?, s:b, s:I, s:I, s:b, s:o}", "index",
                            (json_int_t)i, "id", id, "valid", errors == 0,
                            "errors", (json_int_t)v.errors, "warnings",
                            (json_int_t)v.warnings, "truncated", v.truncated,
                            "violations", violations_json(&v)));
  }
  if (as_json)
    print_json(json_pack("{s:b, s:s, s:b, s:o}", "valid", invalid == 0,
                         "profile", profile, "batch", in.is_batch, "events",
                         events));
  else if (invalid == 0)
    printf("valid: %zu event%s (%s)\n", in.count, in.count == 1 ? "" : "s",
           profile);
  ceb_events_free(in.events, in.count);
  return invalid ? EXIT_INVALID : EXIT_VALID;
}

/* ---- convert ---- */

static void print_headers(const ceb_headers *h) {
  for (size_t i = 0; i < h->count; i++)
    printf("%s: %s\n", h->items[i].name, h->items[i].value);
}

static void print_body(const char *body, size_t len) {
  putchar('\n');
  if (body && len) fwrite(body, 1, len, stdout);
}

static int convert_one(const ceb_event *ev, const char *to) {
  ceb_headers h = {0};
  char *body = NULL, *key = NULL, *ct = NULL;
  size_t len = 0, klen = 0;
  int rc;
  if (!strcmp(to, "json")) {
    if ((rc = ceb_json_encode(ev, &body, &len)) == CEB_OK) printf("%s\n", body);
  } else if (!strcmp(to, "http-binary") || !strcmp(to, "http-structured")) {
    ceb_mode m = to[5] == 'b' ? CEB_MODE_BINARY : CEB_MODE_STRUCTURED;
    if ((rc = ceb_http_encode(ev, m, &h, &body, &len)) == CEB_OK) {
      print_headers(&h);
      print_body(body, len);
    }
  } else if (!strcmp(to, "kafka-binary")) {
    rc = ceb_kafka_encode(ev, CEB_MODE_BINARY, NULL, &h, &key, &klen, &body,
                          &len);
    if (rc == CEB_OK) {
      if (key) printf("@key: %s\n", key);
      print_headers(&h);
      print_body(body, len);
    }
  } else {
    rc = ceb_mqtt_encode(ev, 5, CEB_MODE_BINARY, &h, &ct, &body, &len);
    if (rc == CEB_OK) {
      if (ct) printf("@content-type: %s\n", ct);
      print_headers(&h);
      print_body(body, len);
    }
  }
  if (rc != CEB_OK)
    fprintf(stderr, "event convert: cannot encode as %s: %s\n", to,
            ceb_strerror(rc));
  ceb_headers_clear(&h);
  ceb_free(body);
  ceb_free(key);
  ceb_free(ct);
  return rc == CEB_OK ? EXIT_VALID : EXIT_INVALID;
}

static int cmd_convert(int argc, char **argv) {
  static const char *const formats[] = {
      "json", "http-binary", "http-structured", "kafka-binary", "mqtt5-binary"};
  const char *path = NULL, *to = NULL;
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(k_convert_help, stdout);
      return EXIT_VALID;
    } else if (!strcmp(a, "--to") && i + 1 < argc) {
      to = argv[++i];
    } else if ((a[0] != '-' || !strcmp(a, "-")) && !path) {
      path = a;
    } else {
      fprintf(stderr, "event convert: unexpected argument '%s'\n%s", a,
              k_convert_help);
      return EXIT_USAGE;
    }
  }
  int known = 0;
  for (size_t i = 0; to && i < sizeof formats / sizeof formats[0]; i++)
    known |= !strcmp(to, formats[i]);
  if (!known || !path) {
    fprintf(stderr, "event convert: %s\n%s",
            !to      ? "--to is required"
            : !known ? "unknown --to format"
                     : "no input",
            k_convert_help);
    return EXIT_USAGE;
  }
  size_t len;
  char *buf = read_input(path, &len);
  if (!buf) return EXIT_USAGE;
  input in;
  int rc = decode_input(buf, len, &in);
  free(buf);
  if (rc != CEB_OK) return decode_error(&in, 0, "");
  int status;
  if (in.is_batch && !strcmp(to, "json")) {
    char *out = NULL;
    size_t n;
    status = ceb_batch_encode(in.events, in.count, &out, &n) == CEB_OK
                 ? EXIT_VALID
                 : EXIT_INVALID;
    if (status == EXIT_VALID)
      printf("%s\n", out);
    else
      fprintf(stderr, "event convert: cannot encode the batch\n");
    ceb_free(out);
  } else if (in.is_batch) {
    fprintf(stderr, "event convert: a batch converts only to json\n");
    status = EXIT_INVALID;
  } else {
    status = convert_one(in.events[0], to);
  }
  fflush(stdout);
  ceb_events_free(in.events, in.count);
  return status;
}

int ceb_cmd_event(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fputs(k_usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? EXIT_USAGE : EXIT_VALID;
  }
  if (!strcmp(argv[1], "validate")) return cmd_validate(argc, argv);
  if (!strcmp(argv[1], "convert")) return cmd_convert(argc, argv);
  if (!strcmp(argv[1], "map")) return ceb_cmd_event_map(argc - 1, argv + 1);
  fprintf(stderr, "event: unknown subcommand '%s'\n%s", argv[1], k_usage);
  return EXIT_USAGE;
}
