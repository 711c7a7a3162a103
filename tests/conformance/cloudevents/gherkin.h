/* A small reader for the Gherkin subset used by the CloudEvents conformance
 * feature files: scenarios (and outlines with an Examples table), steps,
 * doc strings (""" ... """, dedented) and tables (| a | b |). */
#ifndef CEB_GHERKIN_H
#define CEB_GHERKIN_H

#include <stddef.h>

#define GK_MAX_CELLS 8
#define GK_MAX_ROWS 32
#define GK_MAX_STEPS 16
#define GK_MAX_SCENARIOS 16

typedef struct gk_table {
  size_t rows, cols;
  char *cell[GK_MAX_ROWS][GK_MAX_CELLS]; /* row 0 is the header */
} gk_table;

typedef struct gk_step {
  char *text;     /* without the Given/When/Then/And keyword */
  char *doc;      /* doc string or NULL */
  gk_table table; /* rows == 0 when none */
} gk_step;

typedef struct gk_scenario {
  char *title;
  size_t steps;
  gk_step step[GK_MAX_STEPS];
  gk_table examples; /* rows == 0 for a plain scenario */
} gk_scenario;

typedef struct gk_feature {
  size_t count;
  gk_scenario scenario[GK_MAX_SCENARIOS];
} gk_feature;

/* Parses a feature file; 0 on success, -1 on I/O or syntax error (message on
 * stderr). Free with gk_free. */
int gk_parse_file(const char *path, gk_feature *out);
void gk_free(gk_feature *f);

/* Copy of `text` with every <name> replaced by the value in column `name` of
 * examples row `row` (row >= 1). malloc'd. */
char *gk_expand(const char *text, const gk_table *examples, size_t row);

/* The step whose text starts with `prefix`, or NULL. */
const gk_step *gk_find_step(const gk_scenario *s, const char *prefix);

#endif
