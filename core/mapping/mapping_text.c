/* Text helpers of mappings: see mapping_text.h. Hand-written: jq 1.6 has
 * no API to parse a program without linking its imports (which is what
 * must not happen), and its messages are plain text. */
#include "mapping/mapping_text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cebm_text_has_module_directive(const char *text, char *why, size_t cap) {
  const char *p = text;
  for (;;) {
    while (*p && isspace((unsigned char)*p))
      p++;
    if (*p != '#') break;
    while (*p && *p != '\n')
      p++;
  }
  static const char *const words[] = {"import", "include", "module"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    size_t n = strlen(words[i]);
    if (strncmp(p, words[i], n) == 0 &&
        !(isalnum((unsigned char)p[n]) || p[n] == '_')) {
      if (why)
        snprintf(why, cap,
                 "'%s' is not allowed in a mapping (a mapping reads no "
                 "file: put the definitions in the program)",
                 words[i]);
      return 1;
    }
  }
  return 0;
}

int cebm_error_line(const char *msg) {
  const char *nl = strchr(msg, '\n');
  size_t end = nl ? (size_t)(nl - msg) : strlen(msg);
  /* the last ", line N" on the first line */
  int line = 0;
  for (const char *p = msg;
       (p = strstr(p, ", line ")) && (size_t)(p - msg) < end; p++) {
    char *stop;
    long v = strtol(p + 7, &stop, 10);
    if (stop != p + 7 && v > 0 && v < 1000000) line = (int)v;
  }
  return line;
}

void cebm_error_tidy(const char *msg, char *out, size_t cap) {
  if (!cap) return;
  if (strncmp(msg, "jq: error: ", 11) == 0) msg += 11;
  size_t n = strcspn(msg, "\n");
  const char *at = NULL;
  for (const char *p = msg; (p = strstr(p, " at <")) && (size_t)(p - msg) < n;
       p++)
    at = p;
  if (at) n = (size_t)(at - msg);
  /* jq's command-line hint, meaningless for a program in a config file */
  static const char shell[] = " (Unix shell quoting issues?)";
  if (n >= sizeof shell - 1 &&
      memcmp(msg + n - (sizeof shell - 1), shell, sizeof shell - 1) == 0)
    n -= sizeof shell - 1;
  while (n && (msg[n - 1] == ':' || msg[n - 1] == ' '))
    n--;
  if (n >= cap) n = cap - 1;
  memcpy(out, msg, n);
  out[n] = '\0';
}
