/* `cebridge schema validate`: compiles a schema file, validates an instance
 * file and reports each error with its JSON Pointer paths. */
#include "cli/cli.h"
#include "schema/ceb_schema.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: cebridge schema validate [--draft 7|2020] [--formats] SCHEMA "
    "INSTANCE\n"
    "\n"
    "Validates the JSON document INSTANCE (\"-\" for stdin) against the JSON\n"
    "Schema in SCHEMA (draft-07 or 2020-12; default: from \"$schema\", else\n"
    "2020-12). Relative $refs are loaded from files next to SCHEMA.\n"
    "\n"
    "  --draft 7|2020  force the draft\n"
    "  --formats       assert \"format\" (date-time, uri, email, ...); by\n"
    "                  default formats are annotations only\n"
    "\n"
    "Exit status: 0 valid, 1 invalid (errors on stderr), 2 usage, I/O or\n"
    "schema error.\n";

static char *slurp(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (n < cap) break;
    char *nb = realloc(buf, cap *= 2);
    if (!nb) free(buf);
    buf = nb;
  }
  bool bad = ferror(f);
  if (f != stdin) fclose(f);
  if (bad) {
    free(buf);
    return NULL;
  }
  *len = n;
  return buf;
}

/* Integers beyond 64 bits are read as reals rather than refused. */
static json_t *load(const char *path, char *err, size_t errlen) {
  size_t len = 0;
  char *buf = slurp(path, &len);
  if (!buf) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  json_error_t e;
  size_t flags = JSON_DECODE_ANY | JSON_ALLOW_NUL;
  json_t *j = json_loadb(buf, len, flags, &e);
  if (!j && strstr(e.text, "too big"))
    j = json_loadb(buf, len, flags | JSON_DECODE_INT_AS_REAL, &e);
  if (!j) snprintf(err, errlen, "%s:%d:%d: %s", path, e.line, e.column, e.text);
  free(buf);
  return j;
}

/* Loads file: URIs (other schemes are unknown: no network access). */
static json_t *resolve_file(void *arg, const char *uri) {
  (void)arg;
  if (strncmp(uri, "file://", 7) != 0) return NULL;
  const char *path = uri + 7;
  if (strncmp(path, "localhost/", 10) == 0) path += 9;
  if (path[0] != '/') return NULL;
  json_error_t e;
  return json_load_file(path, 0, &e);
}

static char *file_uri(const char *path) {
  char abs[PATH_MAX];
  char *uri;
  if (!realpath(path, abs) || asprintf(&uri, "file://%s", abs) < 0) return NULL;
  return uri;
}

static void print_errors(const char *inst_path, const ceb_schema_result *r) {
  fprintf(stderr, "%s: invalid (%zu error%s)\n", inst_path, r->total,
          r->total == 1 ? "" : "s");
  for (size_t i = 0; i < r->count; i++) {
    const ceb_schema_error *e = &r->errors[i];
    fprintf(stderr, "  at %s: %s [%s, schema %s]\n",
            e->instance_path[0] ? e->instance_path : "(root)", e->message,
            e->keyword, e->schema_path);
  }
  if (r->total > r->count)
    fprintf(stderr, "  ... %zu more\n", r->total - r->count);
}

static int cmd_validate(int argc, char **argv) {
  ceb_schema_opts o = {.resolve = resolve_file};
  const char *files[2];
  int nfiles = 0;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--formats") == 0) {
      o.assert_formats = 1;
    } else if (strcmp(argv[i], "--draft") == 0 && i + 1 < argc) {
      const char *d = argv[++i];
      if (strcmp(d, "7") == 0 || strcmp(d, "07") == 0)
        o.draft = CEB_SCHEMA_DRAFT7;
      else if (strcmp(d, "2020") == 0 || strcmp(d, "2020-12") == 0)
        o.draft = CEB_SCHEMA_DRAFT2020;
      else {
        fprintf(stderr, "schema validate: unknown draft \"%s\" (7 or 2020)\n",
                d);
        return 2;
      }
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      fprintf(stderr, "schema validate: unknown option \"%s\"\n%s", argv[i],
              usage);
      return 2;
    } else if (nfiles < 2) {
      files[nfiles++] = argv[i];
    } else {
      fprintf(stderr, "schema validate: too many arguments\n%s", usage);
      return 2;
    }
  }
  if (nfiles != 2) {
    fprintf(stderr, "schema validate: need SCHEMA and INSTANCE\n%s", usage);
    return 2;
  }
  char err[512];
  json_t *schema = NULL, *inst = NULL;
  ceb_schema *s = NULL;
  char *base = NULL;
  int rc = 2;
  if (strcmp(files[0], "-") == 0) {
    fprintf(stderr, "schema validate: SCHEMA cannot be stdin\n");
    goto out;
  }
  if (!(schema = load(files[0], err, sizeof err)) ||
      !(inst = load(files[1], err, sizeof err))) {
    fprintf(stderr, "schema validate: %s\n", err);
    goto out;
  }
  base = file_uri(files[0]);
  if (ceb_schema_compile(schema, base, &o, &s, err, sizeof err) != 0) {
    fprintf(stderr, "schema validate: %s: %s\n", files[0], err);
    goto out;
  }
  ceb_schema_result *res = malloc(sizeof *res);
  if (!res) {
    fprintf(stderr, "schema validate: out of memory\n");
    goto out;
  }
  int v = ceb_schema_validate(s, inst, res);
  if (v == 1) {
    printf("%s: valid\n", files[1]);
    rc = 0;
  } else if (v == 0) {
    print_errors(files[1], res);
    rc = 1;
  } else if (v == CEB_ETOOLARGE && res->count) {
    fprintf(stderr, "schema validate: could not complete: %s\n",
            res->errors[0].message);
  } else {
    fprintf(stderr, "schema validate: %s\n", ceb_strerror(v));
  }
  free(res);
out:
  ceb_schema_free(s);
  free(base);
  json_decref(schema);
  json_decref(inst);
  return rc;
}

int ceb_cmd_schema(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
      strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "validate") == 0) return cmd_validate(argc - 2, argv + 2);
  fprintf(stderr, "schema: unknown subcommand \"%s\"\n%s", argv[1], usage);
  return 2;
}
