/* The CloudEvents 1.0.2 "String" type rule (spec, "Type System"): a
 * sequence of allowable Unicode characters, without the control characters
 * U+0000-U+001F and U+007F-U+009F, the surrogates U+D800-U+DFFF and the
 * noncharacters U+FDD0-U+FDEF and U+xFFFE, U+xFFFF of every plane. Every
 * context attribute is carried as a string, so the validator applies it to
 * each value, whatever the attribute's type.
 *
 * One pass over the bytes, which both checks the UTF-8 and decodes the code
 * points it has to judge: printable ASCII (the common case of ids, sources,
 * types and timestamps) costs one compare per byte. Surrogates encoded as
 * UTF-8 (CESU-8, ED A0 80 for U+D800) decode to their code point here and
 * are reported as surrogates, not as bad UTF-8: that names what the client
 * sent. */
#include "ceb_event_internal.h"

#include <stdint.h>

static int cont(unsigned char b) {
  return (b & 0xC0) == 0x80;
}

static cebi_str_fault judge(uint32_t cp) {
  if (cp <= 0x1F || (cp >= 0x7F && cp <= 0x9F)) return CEBI_STR_CONTROL;
  if (cp >= 0xD800 && cp <= 0xDFFF) return CEBI_STR_SURROGATE;
  if ((cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE)
    return CEBI_STR_NONCHAR;
  return CEBI_STR_OK;
}

cebi_str_fault cebi_ce_string_check(const char *value, uint32_t *cp_out,
                                    size_t *at_out) {
  const unsigned char *s = (const unsigned char *)value;
  size_t i = 0;
  for (;;) {
    unsigned char b = s[i];
    if (b >= 0x20 && b < 0x7F) { /* printable ASCII: the fast path */
      i++;
      continue;
    }
    if (b == 0) return CEBI_STR_OK;
    uint32_t cp;
    size_t n;
    /* Continuation bytes are tested in order, so the NUL at the end stops
     * a truncated sequence before anything past it is read. */
    if (b < 0x80) {
      cp = b;
      n = 1;
    } else if (b >= 0xC2 && b <= 0xDF && cont(s[i + 1])) {
      cp = (uint32_t)(b & 0x1F) << 6 | (s[i + 1] & 0x3F);
      n = 2;
    } else if (b >= 0xE0 && b <= 0xEF && cont(s[i + 1]) &&
               (b != 0xE0 || s[i + 1] >= 0xA0) && cont(s[i + 2])) {
      cp = (uint32_t)(b & 0x0F) << 12 | (uint32_t)(s[i + 1] & 0x3F) << 6 |
           (s[i + 2] & 0x3F);
      n = 3;
    } else if (b >= 0xF0 && b <= 0xF4 && cont(s[i + 1]) &&
               (b != 0xF0 || s[i + 1] >= 0x90) &&
               (b != 0xF4 || s[i + 1] <= 0x8F) && cont(s[i + 2]) &&
               cont(s[i + 3])) {
      cp = (uint32_t)(b & 0x07) << 18 | (uint32_t)(s[i + 1] & 0x3F) << 12 |
           (uint32_t)(s[i + 2] & 0x3F) << 6 | (s[i + 3] & 0x3F);
      n = 4;
    } else { /* a stray continuation, an overlong lead, past U+10FFFF, or a
                sequence cut short */
      if (at_out) *at_out = i;
      if (cp_out) *cp_out = 0;
      return CEBI_STR_UTF8;
    }
    cebi_str_fault f = judge(cp);
    if (f != CEBI_STR_OK) {
      if (at_out) *at_out = i;
      if (cp_out) *cp_out = cp;
      return f;
    }
    i += n;
  }
}
