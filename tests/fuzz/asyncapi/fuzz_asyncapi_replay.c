/* Replays seed files and directories (argv[1..]) through the fuzz target
 * when the build has no libFuzzer, so the seeds run as an ordinary test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ceb_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t replay(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    CHECK_MSG(0, "cannot stat %s", path);
    return 0;
  }
  if (S_ISDIR(sb.st_mode)) {
    size_t n = 0;
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
      if (e->d_name[0] == '.') continue;
      char sub[4096];
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      n += replay(sub);
    }
    if (d) closedir(d);
    return n;
  }
  size_t len = 0;
  char *buf = ceb_test_read_file(path, &len);
  CHECK_MSG(buf != NULL, "cannot read %s", path);
  if (buf) CHECK_INT(LLVMFuzzerTestOneInput((const uint8_t *)buf, len), 0);
  free(buf);
  return 1;
}

int main(int argc, char **argv) {
  CHECK_MSG(argc >= 2, "usage: %s SEED...", argv[0]);
  size_t n = 0;
  for (int i = 1; i < argc; i++)
    n += replay(argv[i]);
  CHECK(n > 10);
  printf("replayed %zu inputs\n", n);
  return ceb_test_done("fuzz_asyncapi_load_replay");
}
