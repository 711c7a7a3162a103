/* Replay driver for the fuzz targets when libFuzzer is not used: runs every
 * file named on the command line, and every regular file of every directory
 * named, through LLVMFuzzerTestOneInput. A file holding a conformance test
 * list ({"tests": [{"event"|"batch": ...}]}) also contributes each test's
 * event or batch as a separate input. Fails when no input ran. */
#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ceb_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t g_inputs;

static void run_buf(const char *buf, size_t len) {
  LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
  g_inputs++;
}

static void run_file(const char *path) {
  size_t len;
  char *buf = ceb_test_read_file(path, &len);
  if (!buf) {
    fprintf(stderr, "replay: cannot read %s\n", path);
    return;
  }
  run_buf(buf, len);
  json_t *root = json_loadb(buf, len, 0, NULL);
  json_t *tests = json_object_get(root, "tests");
  size_t i;
  json_t *t;
  json_array_foreach(tests, i, t) {
    json_t *v = json_object_get(t, "event");
    if (!v) v = json_object_get(t, "batch");
    char *text = v ? json_dumps(v, JSON_ENCODE_ANY) : NULL;
    if (text) run_buf(text, strlen(text));
    free(text);
  }
  json_decref(root);
  free(buf);
}

static void run_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "replay: no such path %s\n", path);
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    run_file(path);
    return;
  }
  DIR *d = opendir(path);
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    size_t n = strlen(path) + strlen(e->d_name) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", path, e->d_name);
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) run_file(p);
    free(p);
  }
  if (d) closedir(d);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    run_path(argv[i]);
  printf("replayed %zu inputs\n", g_inputs);
  CHECK(g_inputs > 0);
  return ceb_test_done(argc > 0 ? argv[0] : "fuzz_replay");
}
