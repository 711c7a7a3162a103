/* Error collection and printing, and "did you mean" suggestions. */
#include "config/ceb_conf_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void ceb_conf_error_add(ceb_conf_errors *errs, const char *file, int line,
                        const char *hint, const char *fmt, ...) {
  if (!errs) return;
  if (errs->count < CEB_CONF_MAX_ERRORS) {
    ceb_conf_error *e = &errs->items[errs->count];
    snprintf(e->file, sizeof e->file, "%s", file ? file : "");
    e->line = line;
    snprintf(e->hint, sizeof e->hint, "%s", hint ? hint : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
  }
  errs->count++;
}

void ceb_conf_errors_print(const ceb_conf_errors *errs, FILE *f) {
  if (!errs || !f) return;
  size_t kept =
      errs->count < CEB_CONF_MAX_ERRORS ? errs->count : CEB_CONF_MAX_ERRORS;
  for (size_t i = 0; i < kept; i++) {
    const ceb_conf_error *e = &errs->items[i];
    if (e->file[0] && e->line > 0)
      fprintf(f, "%s:%d: ", e->file, e->line);
    else if (e->file[0])
      fprintf(f, "%s: ", e->file);
    fputs(e->message, f);
    if (e->hint[0]) fprintf(f, " (%s)", e->hint);
    fputc('\n', f);
  }
  if (errs->count > kept)
    fprintf(f, "... and %zu more errors\n", errs->count - kept);
}

size_t ceb_conf_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 256 || lb > 256) /* not a typo of a key; avoid the quadratic */
    return la > lb ? la : lb;
  size_t row[257];
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

void ceb_conf_suggest_init(ceb_conf_suggest *s, const char *word) {
  s->word = word;
  s->best = NULL;
  s->best_dist = (size_t)-1;
}

void ceb_conf_suggest_add(ceb_conf_suggest *s, const char *candidate) {
  if (!candidate || !*candidate) return;
  size_t d = ceb_conf_edit_distance(s->word, candidate);
  size_t len = strlen(candidate);
  /* Close enough to be a typo: a third of the candidate, at least 1, at
   * most 3 edits. */
  size_t limit = len / 3;
  if (limit < 1) limit = 1;
  if (limit > 3) limit = 3;
  if (d <= limit && d < s->best_dist) {
    s->best = candidate;
    s->best_dist = d;
  }
}
