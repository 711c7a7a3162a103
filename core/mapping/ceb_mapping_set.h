/* The mapping programs of one configuration: every `map` of a [source],
 * [sink] or [route] and every route `filter`, read once (inline, or
 * file:path.jq relative to the file that sets the key) and compiled once
 * at load by ceb_mapping_set_check, which reports a refused program as a
 * config error with file:line: the key's line for an inline program (plus
 * jq's line - 1), the .jq file and jq's line for a file: program.
 *
 * The set numbers the programs (the index ceb_mapper_run takes); it is
 * built on the control thread and read-only after, any thread. */
#ifndef CEB_MAPPING_SET_H
#define CEB_MAPPING_SET_H

#include <stddef.h>

#include "config/ceb_conf.h"
#include "mapping/ceb_mapping.h"

typedef struct ceb_mapping_prog {
  char *kind;     /* "source", "sink", "route" */
  char *section;  /* section name */
  char *key;      /* "map" or "filter" */
  char *text;     /* the program */
  char *path;     /* file: programs: the absolute path read; else NULL */
  char file[256]; /* where the key is set */
  int line;
} ceb_mapping_prog;

typedef struct ceb_mapping_set {
  ceb_mapping_prog *progs;
  size_t count;
  const char **texts; /* progs[i].text, for ceb_mapper_new */
} ceb_mapping_set;

/* Reads every program of a checked conf. CEB_OK with *out (possibly
 * empty; ceb_mapping_set_free), or CEB_ECONFIG with errs appended (a file:
 * program that cannot be read, an empty program) and *out holding the
 * others (still to be freed); CEB_ENOMEM with *out NULL. */
int ceb_mapping_set_build(const ceb_conf *conf, ceb_mapping_set **out,
                          ceb_conf_errors *errs);

/* Compiles every program once (a throwaway worker). CEB_OK; CEB_ECONFIG
 * with one error per refused program appended to errs; CEB_EIO with an
 * error when the worker cannot run (the path it tried). */
int ceb_mapping_set_check(const ceb_mapping_set *set,
                          const ceb_mapper_opts *opts, ceb_conf_errors *errs);

/* The index of kind/section/key's program, or -1 when it has none. */
int ceb_mapping_set_find(const ceb_mapping_set *set, const char *kind,
                         const char *section, const char *key);

/* The pool options of a [bridge] section's mapping.* keys. */
ceb_mapper_opts ceb_mapping_opts(const ceb_bridge_cfg *b);

void ceb_mapping_set_free(ceb_mapping_set *set);

#endif
