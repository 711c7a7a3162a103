/* The JSON text of a libjq value, byte for byte what jv_dump_string(v, 0)
 * of libjq 1.6 writes (compact, keys in the object's own order, UTF-8 kept,
 * '"' '\\' and control characters escaped as jq escapes them), appended
 * to a growing buffer.
 *
 * Why by hand: libjq's printer is most of a mapping worker's time (15 us
 * of the 29 us that one 1 KiB event costs libjq: parse 11, run 3, print 15,
 * bench/README.md), because it builds a jv string a character at a time;
 * no packaged library writes libjq's values. Numbers that are not small
 * integers go through libjq's own printer, so its shortest-round-trip
 * format is kept exactly. tests/unit/mapping/test_mapper_json_out.c and
 * the fuzz target fuzz_mapping_json_out compare the two on every input.
 *
 * Worker-side only (links libjq). Reentrant. */
#ifndef CEB_MAPPER_JSON_OUT_H
#define CEB_MAPPER_JSON_OUT_H

#include <stddef.h>

#include <jv.h>

/* A growing buffer; p may be NULL with cap 0. */
typedef struct cebm_text {
  char *p;
  size_t len, cap;
} cebm_text;

/* Appends v's JSON text (consumes v; v must be valid). Returns 0, or -1
 * when the buffer could not grow (out of memory: the text is cut; the
 * caller fails the item). The text is not NUL-terminated. */
int cebm_json_write(cebm_text *t, jv v);

/* Appends one NUL byte (an output's end). 0, or -1 out of memory. */
int cebm_json_write_nul(cebm_text *t);

#endif
