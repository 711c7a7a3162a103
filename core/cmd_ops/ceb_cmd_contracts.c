#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_ops/ceb_cmd_ops.h"
#include "cmd_ops/ceb_ops_common.h"

static const char k_usage[] =
    "usage: cebridge contracts COMMAND [-c DIR | --store FILE] [--json]\n"
    "  list [--name NAME]     the immutable register: versions, sha256,\n"
    "                         provenance, conflicts\n"
    "  show NAME@VERSION      the stored document\n"
    "Exit 0 ok, 1 not found, 2 usage or store error.\n";

int ceb_cmd_contracts(int argc, char **argv) {
  ceb_ops_args a;
  int rc = ceb_ops_parse(argc, argv, k_usage, &a);
  if (rc)
    return rc > 0 ? 0 : 2;
  if (a.npositional < 1) {
    fprintf(stderr, "%s", k_usage);
    return 2;
  }
  const char *sub = a.positional[0];
  if (strcmp(sub, "list") != 0 && strcmp(sub, "show") != 0) {
    fprintf(stderr, "unknown contracts command '%s'\n%s", sub, k_usage);
    return 2;
  }
  char name[256] = "", version[128] = "";
  if (strcmp(sub, "show") == 0) {
    const char *at = a.npositional == 2 ? strchr(a.positional[1], '@') : NULL;
    if (!at || at == a.positional[1] || !at[1]) {
      fprintf(stderr, "usage: cebridge contracts show NAME@VERSION\n");
      return 2;
    }
    snprintf(name, sizeof name, "%.*s", (int)(at - a.positional[1]),
             a.positional[1]);
    snprintf(version, sizeof version, "%s", at + 1);
  }
  ceb_store *st = ceb_ops_open_store(&a);
  if (!st)
    return 2;
  int out = 0;
  if (strcmp(sub, "list") == 0) {
    json_t *rows = ceb_store_contract_list(st, a.name);
    out = rows ? (json_array_size(rows) ? 0 : 1) : 2;
    if (rows && a.json) {
      ceb_ops_print_json(rows);
    } else if (rows) {
      printf("%-24s %-12s %-16s %-24s %s\n", "NAME", "VERSION", "SHA256",
             "FETCHED", "PROVENANCE");
      size_t i;
      json_t *r;
      json_array_foreach(rows, i, r) {
        char t[32];
        printf("%-24s %-12s %.16s %-24s %s%s\n",
               json_string_value(json_object_get(r, "name")),
               json_string_value(json_object_get(r, "version")),
               json_string_value(json_object_get(r, "sha256")),
               ceb_ops_time(json_integer_value(json_object_get(r, "fetched_at")), t),
               json_string_value(json_object_get(r, "provenance")),
               json_is_true(json_object_get(r, "conflict"))
                   ? "  CONFLICT: upstream changed this version"
                   : "");
      }
      json_decref(rows);
    }
  } else {
    size_t len = 0;
    char *doc = ceb_store_contract_get(st, name, version, &len);
    if (!doc) {
      fprintf(stderr, "no contract %s@%s in the register\n", name, version);
      out = 1;
    } else {
      fwrite(doc, 1, len, stdout);
      if (len && doc[len - 1] != '\n')
        putchar('\n');
      free(doc);
    }
  }
  ceb_store_close(st);
  return out;
}
