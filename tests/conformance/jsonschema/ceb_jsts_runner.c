/* Runs the official JSON Schema Test Suite (draft-07 and 2020-12) against
 * the validator. Gating: at least 98% of the required tests pass in each
 * draft, and the failures are exactly the ones listed in known-failures.txt
 * (an unexpected failure fails, and so does a listed case that now passes).
 * The optional tests (formats asserted) are run and reported only; set
 * CEB_JSTS_VERBOSE=1 to list their failures. */
#include "ceb_test.h"
#include "schema/ceb_schema.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SUITE CEB_CONFORMANCE_DIR "/json-schema-test-suite"
#define META CEB_SOURCE_DIR "/tests/conformance/jsonschema/meta"
#define KNOWN CEB_SOURCE_DIR "/tests/conformance/jsonschema/known-failures.txt"

static json_t *load_json(const char *path) {
  json_error_t e;
  json_t *j = json_load_file(path, JSON_ALLOW_NUL, &e);
  if (!j) /* integers beyond 64 bits (bignum tests): load them as reals */
    j = json_load_file(path, JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &e);
  return j;
}

/* Maps the suite's remote URIs and the metaschema URIs to local files. */
static json_t *resolve(void *arg, const char *uri) {
  (void)arg;
  static const struct {
    const char *prefix, *dir, *suffix;
  } maps[] = {
      {"http://localhost:1234/", SUITE "/remotes/", ""},
      {"http://json-schema.org/draft-07/schema", META "/draft-07.json", NULL},
      {"https://json-schema.org/draft/2020-12/schema",
       META "/draft2020-12/schema.json", NULL},
      {"https://json-schema.org/draft/2020-12/meta/",
       META "/draft2020-12/meta/", ".json"},
  };
  for (size_t i = 0; i < sizeof maps / sizeof *maps; i++) {
    size_t n = strlen(maps[i].prefix);
    if (!maps[i].suffix) {
      if (strcmp(uri, maps[i].prefix) == 0) return load_json(maps[i].dir);
      continue;
    }
    if (strncmp(uri, maps[i].prefix, n) != 0 || strstr(uri + n, "..")) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s%s%s", maps[i].dir, uri + n, maps[i].suffix);
    return load_json(path);
  }
  return NULL;
}

typedef struct known {
  char **keys;
  bool *seen;
  size_t n;
} known;

static void known_load(known *k) {
  size_t len;
  char *text = ceb_test_read_file(KNOWN, &len);
  memset(k, 0, sizeof *k);
  if (!text) return;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (line[0] == '#' || line[0] == '\0') continue;
    char *dash = strstr(line, " \xe2\x80\x94 "); /* " — reason" */
    if (dash) *dash = '\0';
    k->keys = realloc(k->keys, (k->n + 1) * sizeof *k->keys);
    k->seen = realloc(k->seen, (k->n + 1) * sizeof *k->seen);
    k->keys[k->n] = strdup(line);
    k->seen[k->n++] = false;
  }
  free(text);
}

static bool known_has(known *k, const char *key) {
  for (size_t i = 0; i < k->n; i++) {
    if (strcmp(k->keys[i], key) == 0) {
      k->seen[i] = true;
      return true;
    }
  }
  return false;
}

typedef struct tally {
  size_t total, passed, unexpected;
} tally;

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists *.json under dir/rel recursively (sorted), relative names. */
static void list_files(const char *dir, const char *rel, char ***out,
                       size_t *n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  DIR *d = opendir(path);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char sub[1024], full[2048];
    snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
    snprintf(full, sizeof full, "%s/%s", dir, sub);
    struct stat st;
    if (stat(full, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      list_files(dir, sub, out, n);
    } else if (strlen(sub) > 5 && strcmp(sub + strlen(sub) - 5, ".json") == 0) {
      *out = realloc(*out, (*n + 1) * sizeof **out);
      (*out)[(*n)++] = strdup(sub);
    }
  }
  closedir(d);
  qsort(*out, *n, sizeof **out, cmp_str);
}

static void run_file(const char *dname, int draft, const char *dir,
                     const char *rel, bool optional, known *k, tally *t) {
  char path[2048];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  json_t *cases = load_json(path);
  CHECK_MSG(json_is_array(cases), "cannot load %s", path);
  size_t ci;
  json_t *tc;
  json_array_foreach(cases, ci, tc) {
    const char *gdesc = json_string_value(json_object_get(tc, "description"));
    ceb_schema_opts o = {.draft = draft,
                         .assert_formats = optional && strstr(rel, "format"),
                         .resolve = resolve};
    ceb_schema *s = NULL;
    char err[512];
    int rc = ceb_schema_compile(json_object_get(tc, "schema"), NULL, &o, &s,
                                err, sizeof err);
    size_t ti;
    json_t *test;
    json_array_foreach(json_object_get(tc, "tests"), ti, test) {
      const char *tdesc =
          json_string_value(json_object_get(test, "description"));
      bool want = json_is_true(json_object_get(test, "valid"));
      int got =
          rc == 0 ? ceb_schema_validate(s, json_object_get(test, "data"), NULL)
                  : -1;
      char key[1024];
      snprintf(key, sizeof key, "%s %s :: %s :: %s", dname, rel, gdesc, tdesc);
      t->total++;
      if (got == (want ? 1 : 0)) {
        t->passed++;
        if (!optional && known_has(k, key)) {
          fprintf(stderr, "NOW PASSING (remove from known-failures): %s\n",
                  key);
          t->unexpected++;
        }
        continue;
      }
      if (optional) {
        if (getenv("CEB_JSTS_VERBOSE"))
          fprintf(stderr, "optional failure: %s\n", key);
        continue;
      }
      if (!known_has(k, key)) {
        t->unexpected++;
        fprintf(stderr, "UNEXPECTED FAILURE: %s (want %s, got %s%s%s)\n", key,
                want ? "valid" : "invalid",
                got < 0 ? "compile error: "
                : got   ? "valid"
                        : "invalid",
                got < 0 ? err : "", "");
      }
    }
    ceb_schema_free(s);
  }
  json_decref(cases);
}

static void run_draft(const char *dname, int draft, known *k) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/%s", SUITE, dname);
  char **files = NULL;
  size_t n = 0;
  list_files(dir, "", &files, &n);
  tally req = {0}, opt = {0};
  for (size_t i = 0; i < n; i++) {
    bool optional = strncmp(files[i], "optional/", 9) == 0;
    run_file(dname, draft, dir, files[i], optional, k, optional ? &opt : &req);
    free(files[i]);
  }
  free(files);
  double pct = req.total ? 100.0 * (double)req.passed / (double)req.total : 0;
  printf("%s required: %zu/%zu passed (%.2f%%), %zu unexpected\n", dname,
         req.passed, req.total, pct, req.unexpected);
  printf("%s optional (not gating, formats asserted): %zu/%zu passed\n", dname,
         opt.passed, opt.total);
  CHECK_MSG(req.total > 900, "%s: only %zu tests found", dname, req.total);
  CHECK_MSG(pct >= 98.0, "%s: %.2f%% < 98%%", dname, pct);
  CHECK_INT(req.unexpected, 0);
}

int main(void) {
  ceb_test_need_data(SUITE);
  known k;
  known_load(&k);
  run_draft("draft7", CEB_SCHEMA_DRAFT7, &k);
  run_draft("draft2020-12", CEB_SCHEMA_DRAFT2020, &k);
  for (size_t i = 0; i < k.n; i++) {
    CHECK_MSG(k.seen[i], "known failure not found in the suite: %s", k.keys[i]);
    free(k.keys[i]);
  }
  free(k.keys);
  free(k.seen);
  return ceb_test_done("jsonschema_suite");
}
