#include "cli/cli_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <ceb/ceb.h>

#include "config/ceb_conf.h"
#include "log/ceb_log_escape.h"

int ceb_cli_parse_common(int argc, char **argv, ceb_cli_common *out,
                         const char *usage) {
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf("%s", usage);
      return -2;
    }
    if ((strcmp(a, "-c") == 0 || strcmp(a, "--config") == 0) && i + 1 < argc) {
      out->config_dir = argv[++i];
    } else if (strcmp(a, "--plugin-dir") == 0 && i + 1 < argc) {
      out->plugin_dir = argv[++i];
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "cebridge %s: unknown or incomplete option '%s'\n%s",
              argv[0], a, usage);
      return -1;
    } else {
      break;
    }
  }
  return i;
}

int ceb_cli_load_or_report(const ceb_cli_common *c, ceb_bridge **b) {
  ceb_bridge_opts o = {.config_dir = c->config_dir,
                       .plugin_dir = c->plugin_dir};
  ceb_conf_errors errs;
  memset(&errs, 0, sizeof errs);
  int st = ceb_bridge_load(&o, b, &errs);
  if (st != CEB_OK) {
    if (errs.count)
      ceb_conf_errors_print(&errs, stderr);
    else
      fprintf(stderr, "%s: %s\n", c->config_dir, ceb_strerror(st));
    fprintf(stderr, "%zu error%s in %s\n", errs.count ? errs.count : 1,
            errs.count == 1 ? "" : "s", c->config_dir);
  }
  return st;
}

int ceb_ops_parse(int argc, char **argv, const char *usage, ceb_ops_args *a) {
  memset(a, 0, sizeof *a);
  a->config_dir = "bridge.d";
  struct {
    const char *flag;
    const char **dst;
  } valued[] = {{"-c", &a->config_dir},      {"--config", &a->config_dir},
                {"--store", &a->store_path}, {"--route", &a->route},
                {"--type", &a->type},        {"--source", &a->source},
                {"--reason", &a->reason},    {"--since", &a->since},
                {"--until", &a->until},      {"--name", &a->name}};
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
      printf("%s", usage);
      return 1;
    }
    if (strcmp(s, "--json") == 0) {
      a->json = 1;
      continue;
    }
    if (strcmp(s, "--dry-run") == 0) {
      a->dry_run = 1;
      continue;
    }
    if (strcmp(s, "--yes") == 0) {
      a->yes = 1;
      continue;
    }
    int matched = 0;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++)
      if (strcmp(s, valued[k].flag) == 0) {
        if (i + 1 >= argc) {
          fprintf(stderr, "%s needs a value\n%s", s, usage);
          return -1;
        }
        *valued[k].dst = argv[++i];
        matched = 1;
        break;
      }
    if (matched) continue;
    if (s[0] == '-' && s[1]) {
      fprintf(stderr, "unknown option '%s'\n%s", s, usage);
      return -1;
    }
    if (a->npositional == 16) {
      fprintf(stderr, "too many arguments\n%s", usage);
      return -1;
    }
    a->positional[a->npositional++] = s;
  }
  return 0;
}

ceb_store *ceb_ops_open_store(const ceb_ops_args *a) {
  const char *path = a->store_path;
  ceb_conf *conf = NULL;
  char *password = NULL; /* store.password, copied: conf goes first */
  int no_migrate = 0;
  if (!path) {
    ceb_conf_errors errs;
    memset(&errs, 0, sizeof errs);
    /* Only [bridge] matters here: a full check would need every plugin. */
    if (ceb_conf_load(a->config_dir, &conf, &errs) != CEB_OK) {
      ceb_conf_errors_print(&errs, stderr);
      return NULL;
    }
    const ceb_bridge_cfg *b = ceb_conf_bridge_cfg(conf);
    /* only a store set in the files: the default is not guessed at */
    path = strcmp(b->store.path_origin, "default") != 0 ? b->store.path : NULL;
    if (!path) {
      fprintf(stderr, "%s: no [bridge] store set\n", a->config_dir);
      ceb_conf_free(conf);
      return NULL;
    }
    password = b->store.password ? strdup(b->store.password) : NULL;
    no_migrate = b->store.migrate && strcmp(b->store.migrate, "off") == 0;
  }
  if (a->migrate) no_migrate = 0; /* cebridge store migrate */
  char resolved[4096];
  snprintf(resolved, sizeof resolved, "%s", path);
  /* a file (SQLite) is resolved and looked for here; another engine's
   * spec (a database server) goes to ceb_store_open as it is */
  const char *file = ceb_store_sqlite_path(path);
  if (file) snprintf(resolved, sizeof resolved, "%s", file);
  if (file && conf && resolved[0] != '/') {
    /* relative to the file that set it */
    const char *o = ceb_conf_bridge_cfg(conf)->store.path_origin;
    const char *colon = o ? strrchr(o, ':') : NULL;
    const char *slash = NULL;
    if (colon)
      for (const char *p = o; p < colon; p++)
        if (*p == '/') slash = p;
    if (slash)
      snprintf(resolved, sizeof resolved, "%.*s/%s", (int)(slash - o), o, file);
  }
  int is_file = file != NULL; /* file pointed into conf */
  ceb_conf_free(conf);
  if (is_file && access(resolved, R_OK | W_OK) != 0 && !a->migrate) {
    fprintf(stderr, "no store at %s (has the bridge run with this config?)\n",
            resolved);
    free(password);
    return NULL;
  }
  ceb_store_opts o = {.spec = resolved,
                      .synchronous_full = 1,
                      .group_max = 64,
                      .group_wait_ms = 0,
                      .queue_max = 1024,
                      .check = CEB_STORE_CHECK_OFF, /* the bridge's */
                      .password = password,
                      /* a tool needs few: the committer's and one */
                      .pool_size = 2,
                      .no_migrate = no_migrate};
  ceb_store *st;
  char err[512];
  int orc = ceb_store_open(&o, &st, err, sizeof err);
  if (password) memset(password, 0, strlen(password));
  free(password);
  if (orc != CEB_OK) {
    /* a server's spec may hold a password: only a file is named */
    fprintf(stderr, "cannot open store %s: %s\n",
            is_file ? resolved : "(from [bridge] store)", err);
    return NULL;
  }
  return st;
}

int64_t ceb_ops_now_ms(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

void ceb_ops_print_json(json_t *j) {
  char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  if (s) printf("%s\n", s);
  free(s);
  json_decref(j);
}

const char *ceb_ops_safe(const char *s) {
  static char *ring[16];
  static size_t next;
  char *e = ceb_log_escape_dup(s ? s : "-", 0);
  free(ring[next]);
  ring[next] = e;
  next = (next + 1) % (sizeof ring / sizeof ring[0]);
  return e ? e : "?";
}

const char *ceb_ops_time(int64_t ms, char *buf) {
  if (ms <= 0) return strcpy(buf, "-");
  ceb_timestamp_format(ms, buf, 32);
  return buf;
}
