/* Replays a fuzz corpus directory (argv[1]) through the fuzz target when the
 * build has no libFuzzer, so that the corpus runs as an ordinary test. */
#include "ceb_test.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  CHECK_MSG(argc == 2, "usage: %s CORPUS_DIR", argv[0]);
  if (argc != 2) return ceb_test_done("fuzz_schema_replay");
  DIR *d = opendir(argv[1]);
  CHECK_MSG(d != NULL, "cannot open %s", argv[1]);
  size_t n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
    size_t len;
    char *buf = ceb_test_read_file(path, &len);
    CHECK_MSG(buf != NULL, "cannot read %s", path);
    if (buf) CHECK_INT(LLVMFuzzerTestOneInput((const uint8_t *)buf, len), 0);
    free(buf);
    n++;
  }
  if (d) closedir(d);
  printf("replayed %zu inputs\n", n);
  CHECK_MSG(n >= 10, "corpus too small: %zu inputs", n);
  return ceb_test_done("fuzz_schema_replay");
}
