/* ceb_conf_write_reference: the Markdown config reference, generated from
 * the host specs and the plugins' specs. Deterministic: host sections in a
 * fixed order, plugins sorted by name, keys in spec order. */
#include "config/ceb_conf_internal.h"
#include "config/ceb_core_spec.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Writes text with '|' escaped and line breaks flattened (table cell). */
static void cell(FILE *f, const char *text) {
  for (const char *p = text ? text : ""; *p; p++) {
    if (*p == '|')
      fputs("\\|", f);
    else if (*p == '\n' || *p == '\r')
      fputc(' ', f);
    else
      fputc(*p, f);
  }
}

static void range_cell(FILE *f, const ceb_config_spec *sp) {
  if (sp->type == CEB_CFG_ENUM) {
    const char *p = sp->choices ? sp->choices : "";
    while (*p) {
      size_t n = strcspn(p, "|");
      fprintf(f, "`%.*s`", (int)n, p);
      p += n;
      if (*p) {
        fputs(", ", f);
        p++;
      }
    }
    return;
  }
  if (sp->min == 0 && sp->max == 0) return;
  if (sp->type != CEB_CFG_INT && sp->type != CEB_CFG_DURATION &&
      sp->type != CEB_CFG_SIZE && sp->type != CEB_CFG_RATE)
    return;
  char lo[48], hi[48];
  switch (sp->type) {
  case CEB_CFG_DURATION:
    ceb_conf_format_duration(sp->min, lo, sizeof lo);
    ceb_conf_format_duration(sp->max, hi, sizeof hi);
    break;
  case CEB_CFG_SIZE:
    ceb_conf_format_size(sp->min < 0 ? 0 : (uint64_t)sp->min, lo, sizeof lo);
    ceb_conf_format_size(sp->max < 0 ? 0 : (uint64_t)sp->max, hi, sizeof hi);
    break;
  case CEB_CFG_RATE:
    snprintf(lo, sizeof lo, "%" PRId64 "/s", sp->min);
    snprintf(hi, sizeof hi, "%" PRId64 "/s", sp->max);
    break;
  default:
    snprintf(lo, sizeof lo, "%" PRId64, sp->min);
    snprintf(hi, sizeof hi, "%" PRId64, sp->max);
  }
  if (sp->max >= sp->min)
    fprintf(f, "%s .. %s", lo, hi);
  else
    fprintf(f, "at least %s", lo);
}

static void spec_table(FILE *f, const ceb_config_spec *spec) {
  if (!spec || !spec->key) {
    fputs("No keys.\n\n", f);
    return;
  }
  fputs("| key | type | default | range / choices | description |\n"
        "| --- | --- | --- | --- | --- |\n",
        f);
  for (const ceb_config_spec *sp = spec; sp->key; sp++) {
    fputs("| `", f);
    cell(f, sp->key);
    fputs((sp->flags & CEB_CFG_PREFIX) ? "*` | " : "` | ", f);
    fputs(ceb_conf_type_name((int)sp->type), f);
    if (sp->flags & CEB_CFG_SECRET) fputs(", secret", f);
    if (sp->flags & CEB_CFG_MULTI) fputs(", repeatable", f);
    fputs(" | ", f);
    if (sp->flags & CEB_CFG_REQUIRED) {
      fputs("required", f);
    } else if (sp->default_value) {
      fputc('`', f);
      cell(f, sp->default_value);
      fputc('`', f);
    }
    fputs(" | ", f);
    range_cell(f, sp);
    fputs(" | ", f);
    cell(f, sp->description);
    if ((sp->flags & CEB_CFG_SECRET) &&
        !(sp->description && strstr(sp->description, "${ENV}")))
      fputs(" Accepts `${ENV}` or `file:/path`; never logged.", f);
    fputs(" |\n", f);
  }
  fputc('\n', f);
}

static int plugin_cmp(const void *a, const void *b) {
  const ceb_conf_plugin_ref *const *pa = a, *const *pb = b;
  return strcmp((*pa)->plugin ? (*pa)->plugin : "",
                (*pb)->plugin ? (*pb)->plugin : "");
}

int ceb_conf_write_reference(FILE *f, const ceb_conf_plugin_ref *plugins,
                             size_t count) {
  if (!f || (count && !plugins)) return CEB_EINVAL;
  const ceb_conf_plugin_ref **sorted = NULL;
  if (count) {
    sorted = malloc(count * sizeof *sorted);
    if (!sorted) return CEB_ENOMEM;
    for (size_t i = 0; i < count; i++)
      sorted[i] = &plugins[i];
    qsort(sorted, count, sizeof *sorted, plugin_cmp);
  }
  fputs("# cebridge configuration reference\n\n"
        "Generated from the config specs by `cebridge config-reference`; "
        "do not edit by hand.\n\n"
        "Files `bridge.d/*.conf` are read in name order. Durations: `250ms`, "
        "`5s`, `5m`, `2h`, `7d`, `1h30m`. Sizes: `512`, `64KiB`, `1MiB`, "
        "`10kB` (1000 bytes). Rates: `200/s`, `1000/min`, `10/h`. Booleans: "
        "`true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`. Lists: items "
        "separated by commas and/or spaces. Relative paths are relative to "
        "the directory of the file that sets them. Lines starting with `;` or "
        "`#` "
        "are comments, and ` ;` starts a comment after a value; values are "
        "taken as written (no quote removal). Secrets: `file:/path` (one "
        "trailing newline removed), or a value whose `${ENV}` references "
        "are replaced by the environment variables (several in one value "
        "too: `${OLD} ${NEW}`; `$${` writes a literal `${`).\n\n",
        f);
  static const struct {
    const char *title;
    const ceb_config_spec *spec;
  } host[] = {
      {"[bridge]", ceb_spec_bridge},
      {"[route NAME]", ceb_spec_route},
      {"[source NAME] (every source)", ceb_spec_source_common},
      {"[sink NAME] (every sink)", ceb_spec_sink_common},
      {"[contracts NAME] (every contracts section)", ceb_spec_contracts_common},
  };
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++) {
    fprintf(f, "## %s\n\n", host[i].title);
    spec_table(f, host[i].spec);
  }
  for (size_t i = 0; i < count; i++) {
    const ceb_conf_plugin_ref *p = sorted[i];
    fprintf(f, "## Plugin `%s`\n\n", p->plugin ? p->plugin : "?");
    if (p->description && *p->description) {
      cell(f, p->description);
      fputs("\n\n", f);
    }
    const struct {
      const char *role;
      const ceb_config_spec *spec;
    } roles[] = {
        {"source", p->source}, {"sink", p->sink}, {"contracts", p->contracts}};
    for (size_t r = 0; r < 3; r++) {
      if (!roles[r].spec) continue;
      fprintf(f, "### [%s NAME] with plugin = %s\n\n", roles[r].role,
              p->plugin ? p->plugin : "?");
      spec_table(f, roles[r].spec);
    }
  }
  free(sorted);
  return ferror(f) ? CEB_EIO : CEB_OK;
}
