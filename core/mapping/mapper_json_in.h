/* A JSON text read into a libjq value, equal (jv_equal) to what libjq
 * 1.6's jv_parse_sized gives for it, faster.
 *
 * Why by hand: libjq's parser is a character-at-a-time state machine that
 * builds every string and number through a token buffer: 11 us of the
 * 29 us libjq spends on one 1 KiB input document (bench/README.md); no
 * packaged library builds libjq's values, and going through another
 * parser's tree (jansson) costs more than libjq's own parser (measured:
 * 24 us). The documents a mapping worker reads are made by the bridge's own
 * transports and are strict JSON (RFC 8259): this reader takes exactly
 * that, and hands anything else (a lone surrogate escape, raw control
 * characters, bytes that are not UTF-8, nesting past libjq's limit of
 * 256, trailing data, a number form outside the grammar) to
 * jv_parse_sized, so that libjq decides and words the error as before.
 * tests/unit/mapping/test_mapper_json_in.c and fuzz_mapping_json_in
 * compare the two.
 *
 * Worker-side only (links libjq). Reentrant. */
#ifndef CEB_MAPPER_JSON_IN_H
#define CEB_MAPPER_JSON_IN_H

#include <stddef.h>

#include <jv.h>

/* text[0..len): its value, or an invalid jv with libjq's message. */
jv cebm_json_read(const char *text, size_t len);

/* The strict reader alone: 1 with *out set, 0 when it handed the text on
 * (*out untouched). For tests. */
int cebm_json_read_strict(const char *text, size_t len, jv *out);

#endif
