/* `cebridge event map`: runs one mapping of a configuration on a sample,
 * so that a mapping can be developed without running the bridge. The
 * program is the one the bridge would run (read and compiled the same way,
 * in a mapping worker with the config's limits).
 *   --source NAME  the source's map on a sample input document; prints
 *                  each CloudEvent it makes (JSON format, one a line) and
 *                  checks each as the bridge would (CloudEvents, the
 *                  source's profile level)
 *   --sink NAME    the sink's map on a sample CloudEvent (JSON format);
 *   --route NAME   the route's filter, then its map (or its sink's); prints
 *                  what the sink would send: 'content-type: ', the headers,
 *                  '@key: ' and '@topic: ' lines, a blank line, the body */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ceb/codec.h>
#include <ceb/validate.h>

#include "cli/cli.h"
#include "cli/cli_common.h"
#include "mapping/ceb_mapping.h"
#include "mapping/ceb_mapping_egress.h"
#include "mapping/ceb_mapping_set.h"

#define MAX_INPUT (16u * 1024 * 1024)

static const char k_usage[] =
    "usage: cebridge event map [-c DIR] [--plugin-dir DIR]\n"
    "                          (--source NAME | --sink NAME | --route NAME)\n"
    "                          FILE|-\n"
    "  --source NAME  run the source's map on a sample input document (the\n"
    "                 JSON its transport builds per message); print the\n"
    "                 CloudEvent(s), one a line, each checked as the bridge\n"
    "                 would (CloudEvents, the source's profile level)\n"
    "  --sink NAME    run the sink's map on a sample CloudEvent (JSON format)\n"
    "  --route NAME   run the route's filter, then its map (or its sink's)\n"
    "                 on a sample CloudEvent\n"
    "  An egress result prints as 'content-type: ...', one 'Name: value'\n"
    "  line per header, '@key: ' and '@topic: ' lines when set, a blank\n"
    "  line, then the body byte for byte.\n"
    "  Exit status: 0 mapped, 1 refused (the program failed, an event is\n"
    "  invalid, the filter skips the event), 2 usage, config or I/O.\n";

static char *read_all(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "event map: cannot open %s\n", path);
    return NULL;
  }
  char *buf = malloc(MAX_INPUT + 1);
  size_t n = buf ? fread(buf, 1, MAX_INPUT + 1, f) : 0;
  if (f != stdin) fclose(f);
  if (!buf || n > MAX_INPUT) {
    fprintf(stderr, "event map: %s is larger than %u bytes\n", path, MAX_INPUT);
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

/* Runs program index prog of set on input in a one-worker pool. */
static int run_one(const ceb_conf *conf, const ceb_mapping_set *set, int prog,
                   uint32_t flags, const char *input, size_t len,
                   ceb_map_req *r) {
  ceb_mapper_opts o = ceb_mapping_opts(ceb_conf_bridge_cfg(conf));
  o.workers = 1;
  char err[512];
  const char *text = set->texts[prog];
  ceb_mapper *m = ceb_mapper_new(&o, &text, 1, err, sizeof err);
  if (!m) {
    fprintf(stderr, "event map: %s\n", err);
    return 2;
  }
  *r = (ceb_map_req){
      .program = 0, .flags = flags, .input = input, .input_len = len};
  ceb_mapper_run(m, r, 1);
  ceb_mapper_free(m);
  if (r->status != CEB_OK) {
    fprintf(stderr, "event map: %s %s: %s\n", set->progs[prog].key,
            r->status == CEB_EIO ? "could not run" : "failed", r->reason);
    return r->status == CEB_EIO ? 2 : 1;
  }
  return 0;
}

static ceb_profile_level profile_of(const ceb_conf *conf, const char *source) {
  const ceb_conf_section *s = ceb_conf_find(conf, "source", source);
  const char *p = s && s->host.source.profile
                      ? s->host.source.profile
                      : ceb_conf_bridge_cfg(conf)->profile;
  if (p && strcmp(p, "off") == 0) return CEB_PROFILE_OFF;
  if (p && strcmp(p, "enforce") == 0) return CEB_PROFILE_ENFORCE;
  return CEB_PROFILE_WARN;
}

static int map_source(const ceb_conf *conf, const ceb_mapping_set *set,
                      const char *name, const char *doc, size_t len) {
  int prog = ceb_mapping_set_find(set, "source", name, "map");
  if (prog < 0) {
    fprintf(stderr, "event map: [source %s] %s\n", name,
            ceb_conf_find(conf, "source", name) ? "has no map"
                                                : "is not in the config");
    return 2;
  }
  ceb_map_req r;
  int rc = run_one(conf, set, prog, CEB_MAP_EXPAND, doc, len, &r);
  if (rc) return rc;
  if (!r.nout) {
    fprintf(stderr, "event map: the program output no event\n");
    rc = 1;
  }
  ceb_validate_opts vo = {.struct_size = sizeof vo,
                          .nlgov = profile_of(conf, name),
                          .max_size =
                              ceb_conf_bridge_cfg(conf)->max_event_size};
  size_t i = 0;
  for (const char *o = ceb_map_output(&r, NULL); o; o = ceb_map_output(&r, o)) {
    i++;
    printf("%s\n", o);
    ceb_event *ev = NULL;
    ceb_error e;
    ceb_error_clear(&e);
    if (*o != '{' || ceb_json_decode(o, strlen(o), &ev, &e) != CEB_OK) {
      fprintf(stderr, "event %zu: not a CloudEvent: %s\n", i,
              *o != '{' ? "not a JSON object" : e.message);
      rc = 1;
      continue;
    }
    ceb_violations v;
    if (ceb_event_validate(ev, &vo, &v) > 0) rc = 1;
    for (size_t k = 0; k < v.count && k < CEB_MAX_VIOLATIONS; k++)
      fprintf(stderr, "event %zu: %s: %s: %s\n", i,
              v.items[k].severity == CEB_SEV_ERROR ? "error" : "warning",
              v.items[k].code, v.items[k].message);
    ceb_event_unref(ev);
  }
  ceb_map_req_clear(&r);
  return rc;
}

static void print_egress(const ceb_mapped_out *m) {
  printf("content-type: %s\n", m->content_type);
  for (size_t i = 0; i < m->nheaders; i++)
    printf("%s: %s\n", m->headers[i].name, m->headers[i].value);
  if (m->key) printf("@key: %s\n", m->key);
  if (m->topic) printf("@topic: %s\n", m->topic);
  printf("\n");
  fwrite(m->body, 1, m->body_len, stdout);
}

static int map_egress(const ceb_conf *conf, const ceb_mapping_set *set,
                      const char *kind, const char *name, const char *doc,
                      size_t len) {
  const ceb_conf_section *sec = ceb_conf_find(conf, kind, name);
  if (!sec) {
    fprintf(stderr, "event map: no [%s %s] in the config\n", kind, name);
    return 2;
  }
  /* the event as the journal holds it: decoded, then encoded once */
  ceb_event *ev = NULL;
  ceb_error e;
  ceb_error_clear(&e);
  char *json = NULL;
  size_t jlen = 0;
  if (ceb_json_decode(doc, len, &ev, &e) != CEB_OK ||
      ceb_json_encode(ev, &json, &jlen) != CEB_OK) {
    fprintf(stderr,
            "event map: the input is not a CloudEvent in the JSON "
            "format: %s\n",
            e.message);
    ceb_event_unref(ev);
    return 2;
  }
  ceb_event_unref(ev);
  int rc = 0;
  ceb_map_req r;
  int filter = strcmp(kind, "route") == 0
                   ? ceb_mapping_set_find(set, "route", name, "filter")
                   : -1;
  if (filter >= 0) {
    rc = run_one(conf, set, filter, CEB_MAP_TRUTH, json, jlen, &r);
    if (!rc && strcmp(ceb_map_output(&r, NULL), "true") != 0) {
      fprintf(stderr, "event map: the filter of route %s skips this event\n",
              name);
      rc = 1;
    }
    ceb_map_req_clear(&r);
  }
  int prog = ceb_mapping_set_find(set, kind, name, "map");
  if (prog < 0 && strcmp(kind, "route") == 0)
    prog = ceb_mapping_set_find(set, "sink", sec->host.route.to, "map");
  if (!rc && prog < 0) {
    fprintf(stderr,
            "event map: [%s %s] has no egress map (the sink sends "
            "the CloudEvent itself)\n",
            kind, name);
    rc = 2;
  }
  if (!rc) rc = run_one(conf, set, prog, 0, json, jlen, &r);
  if (!rc) {
    char why[512];
    ceb_egress_out *out =
        r.nout == 1 ? ceb_egress_read(ceb_map_output(&r, NULL), why, sizeof why)
                    : NULL;
    if (r.nout != 1)
      snprintf(why, sizeof why, "the program output %zu values, not one",
               r.nout);
    if (out)
      print_egress(ceb_egress_mapped(out));
    else {
      fprintf(stderr, "event map: %s\n", why);
      rc = 1;
    }
    ceb_egress_free(out);
    ceb_map_req_clear(&r);
  }
  ceb_free(json);
  return rc;
}

int ceb_cmd_event_map(int argc, char **argv) {
  ceb_cli_common c = {"bridge.d", NULL};
  const char *kind = NULL, *name = NULL, *file = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(k_usage, stdout);
      return 0;
    }
    if ((!strcmp(a, "--source") || !strcmp(a, "--sink") ||
         !strcmp(a, "--route")) &&
        i + 1 < argc && !kind) {
      kind = a + 2;
      name = argv[++i];
    } else if ((!strcmp(a, "-c") || !strcmp(a, "--config")) && i + 1 < argc) {
      c.config_dir = argv[++i];
    } else if (!strcmp(a, "--plugin-dir") && i + 1 < argc) {
      c.plugin_dir = argv[++i];
    } else if ((a[0] != '-' || !strcmp(a, "-")) && !file) {
      file = a;
    } else {
      fprintf(stderr, "event map: unexpected argument '%s'\n%s", a, k_usage);
      return 2;
    }
  }
  if (!kind || !file) {
    fputs(k_usage, stderr);
    return 2;
  }
  ceb_bridge *b = NULL;
  if (ceb_cli_load_or_report(&c, &b) != CEB_OK) return 2;
  const ceb_conf *conf = ceb_bridge_conf(b);
  ceb_conf_errors *errs = calloc(1, sizeof *errs);
  ceb_mapping_set *set = NULL;
  size_t len = 0;
  char *doc = errs ? read_all(file, &len) : NULL;
  int rc = 2;
  if (doc && ceb_mapping_set_build(conf, &set, errs) == CEB_OK)
    rc = !strcmp(kind, "source") ? map_source(conf, set, name, doc, len)
                                 : map_egress(conf, set, kind, name, doc, len);
  fflush(stdout);
  ceb_mapping_set_free(set);
  free(errs);
  free(doc);
  ceb_bridge_free(b);
  return rc;
}
