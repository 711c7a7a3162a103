#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/contracts_actions.h"

static const char k_usage[] =
    "usage: cebridge contracts COMMAND [-c DIR | --store FILE] [--json]\n"
    "  list [--name NAME]     the immutable register: versions, sha256,\n"
    "                         provenance, conflicts\n"
    "                         and, with -c, what each route's pin resolves\n"
    "                         to and newer versions it does not take\n"
    "  show NAME@VERSION [--messages]\n"
    "                         the stored document, or its messages (name,\n"
    "                         CloudEvents type, content type, channel)\n"
    "  sync [NAME]            fetch every [contracts] source (or NAME) of\n"
    "                         -c DIR once into the register\n"
    "  diff NAME@A NAME@B     messages added, removed, changed; BREAKING\n"
    "                         payload changes called out\n"
    "  check NAME@VERSION EVENT-FILE\n"
    "                         check a CloudEvent (JSON format) against it\n"
    "VERSION may be a pin range (^1, ~1.2). Exit 0 ok, 1 not found / sync\n"
    "failed / invalid, 2 usage or store error.\n";

static int contracts_main(ceb_ops_args *ap, int rc, int messages);

/* The store counts conflicts per version (an integer). */
static int conflicted(json_t *row) {
  json_t *c = json_object_get(row, "conflict");
  return json_is_true(c) || (json_is_integer(c) && json_integer_value(c) > 0);
}

int ceb_cmd_contracts(int argc, char **argv) {
  /* --messages is ours alone: take it out before the shared parser. */
  int messages = 0, n = 0;
  char **args = calloc((size_t)argc + 1, sizeof *args);
  if (!args)
    return 2;
  for (int i = 0; i < argc; i++) {
    if (i > 0 && strcmp(argv[i], "--messages") == 0)
      messages = 1;
    else
      args[n++] = argv[i];
  }
  ceb_ops_args a;
  int rc = ceb_ops_parse(n, args, k_usage, &a);
  int out = contracts_main(&a, rc, messages);
  free(args);
  return out;
}

static int contracts_main(ceb_ops_args *ap, int rc, int messages) {
  ceb_ops_args a = *ap;
  if (rc)
    return rc > 0 ? 0 : 2;
  if (a.npositional < 1) {
    fprintf(stderr, "%s", k_usage);
    return 2;
  }
  const char *sub = a.positional[0];
  int np = a.npositional;
  if (strcmp(sub, "sync") == 0) {
    if (np > 2) {
      fprintf(stderr, "usage: cebridge contracts sync [NAME] [-c DIR]\n");
      return 2;
    }
    return ceb_contracts_cmd_sync(a.config_dir,
                                  np == 2 ? a.positional[1] : NULL);
  }
  if ((strcmp(sub, "diff") == 0 || strcmp(sub, "check") == 0) && np != 3) {
    fprintf(stderr, "usage: cebridge contracts %s\n",
            sub[0] == 'd' ? "diff NAME@A NAME@B"
                          : "check NAME@VERSION EVENT-FILE");
    return 2;
  }
  if (strcmp(sub, "diff") == 0 || strcmp(sub, "check") == 0) {
    ceb_store *st = ceb_ops_open_store(&a);
    if (!st)
      return 2;
    const char *dir = a.store_path ? NULL : a.config_dir;
    int r = sub[0] == 'd'
                ? ceb_contracts_cmd_diff(st, dir, a.positional[1],
                                         a.positional[2])
                : ceb_contracts_cmd_check(st, dir, a.positional[1],
                                          a.positional[2]);
    ceb_store_close(st);
    return r;
  }
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
               conflicted(r) ? "  CONFLICT: upstream changed this version; "
                               "the held document stays"
                             : "");
      }
      json_decref(rows);
    }
    if (out == 0 && !a.json && !a.store_path)
      ceb_contracts_cmd_pins(st, a.config_dir);
  } else if (messages) {
    out = ceb_contracts_cmd_messages(st, a.store_path ? NULL : a.config_dir,
                                     a.positional[1], a.json);
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
