#include "map_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

char *map_read_source(const char *rel, size_t *len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", CEB_SOURCE_DIR, rel);
  char *text = ceb_test_read_file(path, len);
  if (!text) fprintf(stderr, "cannot read %s\n", path);
  return text;
}

int map_copy_ready(const char *dir, const char *name, const char *const *defs) {
  char rel[256];
  snprintf(rel, sizeof rel, "contrib/mappings/%s", name);
  char *text = map_read_source(rel, NULL);
  if (!text) return -1;
  char out_path[1024];
  snprintf(out_path, sizeof out_path, "%s/%s", dir, name);
  FILE *out = fopen(out_path, "w");
  int found = 0, want = 0, rc = out ? 0 : -1;
  for (size_t i = 0; defs && defs[i] && defs[i + 1]; i += 2)
    want++;
  for (char *line = text, *next; out && line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    int replaced = 0;
    for (size_t i = 0; defs && defs[i] && defs[i + 1] && !replaced; i += 2) {
      char head[128];
      snprintf(head, sizeof head, "def %s:", defs[i]);
      if (strncmp(line, head, strlen(head)) == 0) {
        fprintf(out, "def %s: %s;\n", defs[i], defs[i + 1]);
        replaced = 1;
        found++;
      }
    }
    if (!replaced) fprintf(out, "%s\n", line);
  }
  if (out && fclose(out) != 0) rc = -1;
  free(text);
  if (found != want) {
    fprintf(stderr, "%s: %d of %d definitions found\n", name, found, want);
    rc = -1;
  }
  return rc;
}
