/* Replay main for the fuzz targets whose seeds are plain corpus directories
 * (fuzz_config, fuzz_mqtt_frame) when libFuzzer is not used: runs every file
 * of the directories given as arguments through the target once, in name
 * order. An unreadable directory or file, or no input at all, fails. (The
 * event targets use fuzz_replay_main.c, which also expands conformance test
 * lists.) */
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int name_cmp(const struct dirent **a, const struct dirent **b) {
  return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv) {
  int ran = 0;
  for (int a = 1; a < argc; a++) {
    struct dirent **names;
    int n = scandir(argv[a], &names, NULL, name_cmp);
    CHECK_MSG(n >= 0, "cannot read corpus %s", argv[a]);
    for (int i = 0; i < n; i++) {
      if (names[i]->d_name[0] != '.') {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[a], names[i]->d_name);
        size_t len = 0;
        char *data = ceb_test_read_file(path, &len);
        CHECK_MSG(data != NULL, "cannot read %s", path);
        if (data) {
          LLVMFuzzerTestOneInput((const uint8_t *)data, len);
          ran++;
        }
        free(data);
      }
      free(names[i]);
    }
    if (n >= 0) free(names);
  }
  CHECK_MSG(ran > 0, "empty corpus");
  const char *name = argc > 0 ? argv[0] : "fuzz_replay";
  if (strrchr(name, '/')) name = strrchr(name, '/') + 1;
  printf("%s: replayed %d inputs\n", name, ran);
  return ceb_test_done(name);
}
