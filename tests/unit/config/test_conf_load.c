/* ceb_conf_load: files in name order, [bridge] merged, sections and keys
 * with file:line, and every syntax error class with its exact line. */
#include "config/ceb_conf.h"
#include "config/ceb_config_build.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ceb_test.h"
#include "conf_fixture.h"

static void load_ok(void) {
  char *dir = ceb_test_tmpdir("conf-load");
  fx_write(dir, "20-b.conf",
           "[bridge]\n"
           "workers = 4\n"
           "\n"
           "[sink internal]\n"
           "plugin = kafka ; inline comment\n"
           "  brokers = k1:9092,k2:9092\n"
           "rdkafka.compression.type = zstd\n");
  fx_write(dir, "10-a.conf",
           "\xEF\xBB\xBF# the first file\r\n"
           "[bridge]\r\n"
           "store = data/store.db\r\n"
           "; comment\r\n"
           "[source intermediary]   ; trailing comment\r\n"
           "plugin = http\r\n"
           "listen = 0.0.0.0:8443\r\n");
  fx_write(dir, "30-c.conf",
           "[route partners-in]\n"
           "from = intermediary\n"
           "to = internal\n"
           "url = http://x/a;b?c=d#frag\n"
           "empty =\n");
  /* Not read: wrong suffix, hidden, backup. */
  fx_write(dir, "README", "not ini at all\n");
  fx_write(dir, ".hidden.conf", "garbage\n");
  fx_write(dir, "40-d.conf.bak", "garbage\n");

  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  int rc = ceb_conf_load(dir, &conf, &errs);
  CHECK_INT(rc, CEB_OK);
  if (rc != CEB_OK) {
    fx_dump(&errs);
    free(dir);
    return;
  }
  CHECK_INT(errs.count, 0);
  CHECK_STR(conf->dir, dir);
  CHECK_INT(conf->count, 4);
  /* File order: 10-a opens [bridge] and [source], 20-b adds [sink]. */
  CHECK_STR(conf->sections[0].kind, "bridge");
  CHECK(conf->sections[0].name == NULL);
  CHECK_STR(conf->sections[1].kind, "source");
  CHECK_STR(conf->sections[1].name, "intermediary");
  CHECK_INT(conf->sections[1].line, 5);
  CHECK_STR(conf->sections[2].kind, "sink");
  CHECK_STR(conf->sections[2].name, "internal");
  CHECK_INT(conf->sections[2].line, 4);
  CHECK_STR(conf->sections[3].kind, "route");
  char want[1024];
  snprintf(want, sizeof want, "%s/20-b.conf", dir);
  CHECK_STR(conf->sections[2].file, want);

  /* [bridge] merged across files, opened at 10-a.conf:2. */
  const ceb_conf_section *br = ceb_conf_find(conf, "bridge", NULL);
  CHECK(br == &conf->sections[0]);
  snprintf(want, sizeof want, "%s/10-a.conf", dir);
  CHECK_STR(br->file, want);
  CHECK_INT(br->line, 2);
  CHECK(ceb_conf_bridge(conf) == br->cfg);
  CHECK_STR(ceb_config_str(br->cfg, "store"), "data/store.db");
  CHECK_STR(ceb_config_str(br->cfg, "workers"), "4");
  snprintf(want, sizeof want, "%s/20-b.conf:2", dir);
  CHECK_STR(ceb_config_origin(br->cfg, "workers"), want);
  snprintf(want, sizeof want, "%s/10-a.conf:3", dir);
  CHECK_STR(ceb_config_origin(br->cfg, "store"), want);

  const ceb_conf_section *src = ceb_conf_find(conf, "source", "intermediary");
  CHECK(src != NULL);
  CHECK_STR(ceb_config_name(src->cfg), "intermediary");
  CHECK_STR(ceb_config_str(src->cfg, "listen"), "0.0.0.0:8443"); /* no CR */
  const ceb_conf_section *sink = ceb_conf_find(conf, "sink", "internal");
  CHECK_STR(ceb_config_str(sink->cfg, "plugin"), "kafka");
  CHECK_STR(ceb_config_str(sink->cfg, "brokers"), "k1:9092,k2:9092");
  snprintf(want, sizeof want, "%s/20-b.conf:6", dir);
  CHECK_STR(ceb_config_origin(sink->cfg, "brokers"), want);
  const ceb_conf_section *route = ceb_conf_find(conf, "route", "partners-in");
  CHECK_STR(ceb_config_str(route->cfg, "url"), "http://x/a;b?c=d#frag");
  CHECK_STR(ceb_config_str(route->cfg, "empty"), "");
  CHECK(ceb_conf_find(conf, "route", "nope") == NULL);
  CHECK(ceb_conf_find(conf, "source", NULL) == NULL);
  ceb_conf_free(conf);
  fx_rmdir(dir);
  free(dir);
}

static void no_bridge(void) {
  char *dir = ceb_test_tmpdir("conf-nobridge");
  fx_write(dir, "a.conf", "[sink s]\nplugin = x\n");
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_OK);
  const ceb_config *b = ceb_conf_bridge(conf);
  CHECK(b != NULL);
  CHECK_INT(cebi_config_count(b), 0);
  ceb_conf_free(conf);
  fx_rmdir(dir);
  free(dir);
}

static void syntax_errors(void) {
  char *dir = ceb_test_tmpdir("conf-syntax");
  char longline[5000];
  memset(longline, 'x', sizeof longline);
  memcpy(longline, "k = ", 4);
  longline[sizeof longline - 2] = '\n';
  longline[sizeof longline - 1] = '\0';
  char *a = malloc(8000);
  snprintf(a, 8000,
           "stray = 1\n"            /* 1: outside a section */
           "[sorce intermediary]\n" /* 2: unknown kind */
           "plugin = http\n"        /* 3: skipped (bad header) */
           "[sink]\n"               /* 4: needs a name */
           "[bridge main]\n"        /* 5: bridge takes no name */
           "[sink Bad]\n"           /* 6: invalid name */
           "[route r1\n"            /* 7: no ']' */
           "[route r2] x\n"         /* 8: text after header */
           "[source ok]\n"          /* 9 */
           "just words\n"           /* 10: no '=' */
           "listen: 0.0.0.0:80\n"   /* 11: ':' separator */
           "Listen = 1\n"           /* 12: upper case key */
           "= value\n"              /* 13: empty key */
           "%s"                     /* 14: too long */
           "plugin = http\n",       /* 15: fine */
           longline);
  fx_write(dir, "10-a.conf", a);
  free(a);
  fx_write(dir, "20-b.conf",
           "[source ok]\n"  /* 1: duplicate of 10-a.conf:9 */
           "[sink s1]\n"    /* 2 */
           "[ sink  s2 ]\n" /* 3: spaces inside brackets are fine */
           "[]\n");         /* 4: empty kind */
  ceb_conf *conf = (ceb_conf *)1;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_ECONFIG);
  CHECK(conf == NULL);
  CHECK_INT(fx_find(&errs, "10-a.conf", 1, "key 'stray' outside a section"), 0);
  int i = fx_find(&errs, "10-a.conf", 2, "unknown section kind 'sorce'");
  CHECK(i >= 0);
  if (i >= 0) CHECK_STR(errs.items[i].hint, "did you mean 'source'?");
  CHECK(fx_find(&errs, "10-a.conf", 3, "") < 0);
  CHECK(fx_find(&errs, "10-a.conf", 4, "[sink] needs a name") >= 0);
  CHECK(fx_find(&errs, "10-a.conf", 5, "[bridge] takes no name") >= 0);
  CHECK(fx_find(&errs, "10-a.conf", 6, "invalid section name 'Bad'") >= 0);
  CHECK(fx_find(&errs, "10-a.conf", 7, "without closing ']'") >= 0);
  CHECK(fx_find(&errs, "10-a.conf", 8, "unexpected text after section") >= 0);
  CHECK(fx_find(&errs, "10-a.conf", 10, "expected 'key = value'") >= 0);
  CHECK(fx_find(&errs, "10-a.conf", 11, "expected 'key = value'") >= 0);
  CHECK(fx_find(&errs, "10-a.conf", 12, "invalid key 'Listen'") >= 0);
  CHECK(fx_find(&errs, "10-a.conf", 13, "empty key") >= 0);
  CHECK(fx_find(&errs, "10-a.conf", 14, "line longer than 4096") >= 0);
  CHECK(fx_find(&errs, "10-a.conf", 15, "") < 0);
  i = fx_find(&errs, "20-b.conf", 1, "duplicate section [source ok]");
  CHECK(i >= 0);
  if (i >= 0) CHECK(strstr(errs.items[i].hint, "10-a.conf:9") != NULL);
  CHECK(fx_find(&errs, "20-b.conf", 3, "") < 0);
  CHECK(fx_find(&errs, "20-b.conf", 4, "unknown section kind ''") >= 0);
  CHECK_INT(errs.count, 14);
  if (errs.count != 14) fx_dump(&errs);

  /* The printed form is file:line: message (hint). */
  char *text = fx_print(&errs);
  char want[1200];
  snprintf(want, sizeof want,
           "%s/10-a.conf:2: unknown section kind 'sorce' (did you mean "
           "'source'?)\n",
           dir);
  CHECK(text && strstr(text, want) != NULL);
  free(text);
  fx_rmdir(dir);
  free(dir);
}

static void directory_errors(void) {
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load("/nonexistent/cebridge.d", &conf, &errs),
            CEB_ECONFIG);
  CHECK(fx_find(&errs, "/nonexistent/cebridge.d", 0,
                "cannot read config directory") >= 0);
  char *dir = ceb_test_tmpdir("conf-empty");
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_ECONFIG);
  CHECK(fx_find(&errs, dir, 0, "no *.conf files") >= 0);
  CHECK(conf == NULL);
  /* A directory named like a config file. */
  char sub[1024];
  snprintf(sub, sizeof sub, "%s/50-dir.conf", dir);
  mkdir(sub, 0700);
  fx_write(dir, "10-a.conf", "[bridge]\n");
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_ECONFIG);
  CHECK(fx_find(&errs, "50-dir.conf", 0, "not a regular file") >= 0);
  CHECK_INT(ceb_conf_load(NULL, &conf, &errs), CEB_ECONFIG);
  CHECK_INT(errs.count, 1);
  CHECK_INT(ceb_conf_load(dir, NULL, &errs), CEB_EINVAL);
  fx_rmdir(dir);
  free(dir);
}

static void error_overflow(void) {
  char *dir = ceb_test_tmpdir("conf-many");
  char text[4096] = "";
  for (int i = 0; i < 100; i++)
    strcat(text, "junk\n");
  fx_write(dir, "a.conf", text);
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_ECONFIG);
  CHECK_INT(errs.count, 100);
  CHECK_INT(errs.items[CEB_CONF_MAX_ERRORS - 1].line, CEB_CONF_MAX_ERRORS);
  char *out = fx_print(&errs);
  CHECK(out && strstr(out, "... and 36 more errors\n") != NULL);
  free(out);
  fx_rmdir(dir);
  free(dir);
}

/* Section and key caps: reported once, at the first line over the cap. */
static void caps(void) {
  char *dir = ceb_test_tmpdir("conf-caps");
  size_t cap = 64 * (CEB_CONF_MAX_SECTIONS + CEB_CONF_MAX_KEYS + 8);
  char *text = malloc(cap);
  size_t len = 0;
  len += (size_t)snprintf(text + len, cap - len, "[bridge]\n");
  for (int i = 0; i < CEB_CONF_MAX_KEYS + 2; i++)
    len += (size_t)snprintf(text + len, cap - len, "k%d = v\n", i);
  fx_write(dir, "a.conf", text);
  len = 0;
  for (int i = 0; i < CEB_CONF_MAX_SECTIONS + 3; i++)
    len += (size_t)snprintf(text + len, cap - len, "[sink s%d]\n", i);
  fx_write(dir, "b.conf", text);
  free(text);
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_ECONFIG);
  CHECK_INT(errs.count, 2);
  CHECK(fx_find(&errs, "a.conf", CEB_CONF_MAX_KEYS + 2,
                "more than 1024 keys in one section") >= 0);
  /* [bridge] is section 1 of the cap: b.conf fills the rest. */
  CHECK(fx_find(&errs, "b.conf", CEB_CONF_MAX_SECTIONS,
                "more than 1024 sections") >= 0);
  fx_rmdir(dir);
  free(dir);
}

/* The printed forms: file:line: message (hint), file: message, message. */
static void print_format(void) {
  ceb_conf_errors errs;
  memset(&errs, 0, sizeof errs);
  ceb_conf_error_add(&errs, "bridge.d/10-x.conf", 12, "did you mean 'listen'?",
                     "unknown key '%s' in [source %s]", "listn",
                     "intermediary");
  ceb_conf_error_add(&errs, "bridge.d", 0, NULL, "no *.conf files");
  ceb_conf_error_add(&errs, "", 0, "", "no configuration loaded");
  char *out = fx_print(&errs);
  CHECK_STR(out, "bridge.d/10-x.conf:12: unknown key 'listn' in [source "
                 "intermediary] (did you mean 'listen'?)\n"
                 "bridge.d: no *.conf files\n"
                 "no configuration loaded\n");
  free(out);
}

int main(void) {
  print_format();
  caps();
  load_ok();
  no_bridge();
  syntax_errors();
  directory_errors();
  error_overflow();
  return ceb_test_done("unit_conf_load");
}
