#include "conf_fixture.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fx_write(const char *dir, const char *name, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(2);
  }
}

void fx_rmdir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (unlink(path) != 0) rmdir(path);
  }
  closedir(d);
  rmdir(dir);
}

int fx_find(const ceb_conf_errors *errs, const char *file_suffix, int line,
            const char *text) {
  size_t n =
      errs->count < CEB_CONF_MAX_ERRORS ? errs->count : CEB_CONF_MAX_ERRORS;
  for (size_t i = 0; i < n; i++) {
    const ceb_conf_error *e = &errs->items[i];
    size_t fl = strlen(e->file), sl = strlen(file_suffix);
    if (fl < sl || strcmp(e->file + fl - sl, file_suffix) != 0) continue;
    if (e->line == line && strstr(e->message, text)) return (int)i;
  }
  return -1;
}

char *fx_print(const ceb_conf_errors *errs) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  ceb_conf_errors_print(errs, f);
  fclose(f);
  return buf;
}

void fx_dump(const ceb_conf_errors *errs) {
  ceb_conf_errors_print(errs, stderr);
}
