/* Tests `cebridge schema validate` through ceb_cmd_schema() on temp files:
 * exit codes 0 / 1 / 2, errors with paths on stderr, --draft, --formats,
 * relative $refs to sibling files, usage errors. */
#include "ceb_test.h"
#include "cli/cli.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dir;

static char *write_file(const char *name, const char *text) {
  char *path;
  if (asprintf(&path, "%s/%s", dir, name) < 0) return NULL;
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return path;
}

/* Runs the command with stderr captured into *errout (malloc'd). */
static int run(char **errout, int argc, char **argv) {
  char *cap;
  if (asprintf(&cap, "%s/stderr.txt", dir) < 0) return -1;
  fflush(stderr);
  int saved = dup(2);
  int fd = open(cap, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(fd, 2);
  close(fd);
  int rc = ceb_cmd_schema(argc, argv);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  size_t len;
  *errout = ceb_test_read_file(cap, &len);
  free(cap);
  return rc;
}

int main(void) {
  dir = ceb_test_tmpdir("cmd_schema");
  CHECK(dir != NULL);
  if (!dir) return ceb_test_done("cmd_schema");
  char *defs = write_file("defs.json", "{\"$defs\": {\"name\": {\"type\": "
                                       "\"string\", \"minLength\": 1}}}");
  char *schema = write_file(
      "order.json",
      "{\"type\": \"object\", \"required\": [\"items\"], \"properties\": "
      "{\"items\": {\"type\": \"array\", \"items\": {\"properties\": "
      "{\"name\": {\"$ref\": \"defs.json#/$defs/name\"}, \"at\": "
      "{\"format\": \"date\"}}}}}}");
  char *good = write_file("good.json",
                          "{\"items\": [{\"name\": \"a\", \"at\": \"x\"}]}");
  char *bad = write_file("bad.json",
                         "{\"items\": [{\"name\": \"a\"}, {\"name\": \"\"}, "
                         "{\"name\": \"b\"}, {\"name\": 4}]}");
  char *notjson = write_file("broken.json", "{\"items\": [");
  char *badschema = write_file("badschema.json", "{\"pattern\": \"(\"}");
  char *d7 = write_file("d7.json", "{\"items\": [{\"type\": \"integer\"}], "
                                   "\"additionalItems\": false}");
  char *arr = write_file("arr.json", "[1, 2]");
  char *err = NULL;

  char *a1[] = {"schema", "validate", schema, good};
  CHECK_INT(run(&err, 4, a1), 0);
  free(err);

  char *a2[] = {"schema", "validate", schema, bad};
  CHECK_INT(run(&err, 4, a2), 1);
  CHECK(err && strstr(err, "invalid (2 errors)"));
  CHECK(err && strstr(err, "at /items/1/name:"));
  CHECK(err && strstr(err, "at /items/3/name:"));
  CHECK(err && strstr(err, "defs.json#/$defs/name/type"));
  free(err);

  /* formats are annotations unless --formats */
  char *a3[] = {"schema", "validate", "--formats", schema, good};
  CHECK_INT(run(&err, 5, a3), 1);
  CHECK(err && strstr(err, "at /items/0/at:") && strstr(err, "[format"));
  free(err);

  /* the draft decides what an items array means */
  char *a4[] = {"schema", "validate", "--draft", "7", d7, arr};
  CHECK_INT(run(&err, 6, a4), 1);
  CHECK(err && strstr(err, "at /1:"));
  free(err);
  char *a5[] = {"schema", "validate", "--draft", "2020", d7, arr};
  CHECK_INT(run(&err, 6, a5), 2); /* items must be a schema in 2020-12 */
  CHECK(err && strstr(err, "#/items"));
  free(err);

  /* usage, I/O and compile errors exit 2 */
  char *a6[] = {"schema", "validate", schema};
  CHECK_INT(run(&err, 3, a6), 2);
  CHECK(err && strstr(err, "usage:"));
  free(err);
  char *a7[] = {"schema", "validate", schema, notjson};
  CHECK_INT(run(&err, 4, a7), 2);
  CHECK(err && strstr(err, "broken.json:1:"));
  free(err);
  char *a8[] = {"schema", "validate", badschema, good};
  CHECK_INT(run(&err, 4, a8), 2);
  CHECK(err && strstr(err, "invalid regular expression"));
  free(err);
  char *a9[] = {"schema", "validate", "--draft", "4", schema, good};
  CHECK_INT(run(&err, 6, a9), 2);
  free(err);
  char *a10[] = {"schema", "validate", "/nonexistent/s.json", good};
  CHECK_INT(run(&err, 4, a10), 2);
  CHECK(err && strstr(err, "/nonexistent/s.json"));
  free(err);
  char *a11[] = {"schema", "frobnicate"};
  CHECK_INT(run(&err, 2, a11), 2);
  free(err);
  char *a12[] = {"schema", "--help"};
  CHECK_INT(run(&err, 2, a12), 0);
  free(err);
  char *a13[] = {"schema"};
  CHECK_INT(run(&err, 1, a13), 2);
  free(err);

  char *files[] = {defs, schema, good, bad, notjson, badschema, d7, arr};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    unlink(files[i]);
    free(files[i]);
  }
  char cap[1024];
  snprintf(cap, sizeof cap, "%s/stderr.txt", dir);
  unlink(cap);
  rmdir(dir);
  free(dir);
  return ceb_test_done("cmd_schema");
}
