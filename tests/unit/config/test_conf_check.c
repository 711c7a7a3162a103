/* ceb_conf_check: host and plugin specs, every error class with its exact
 * file:line, secrets (env and file) that never reach error output, relative
 * path resolution and route references. */
#include "config/ceb_conf.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ceb_test.h"
#include "conf_fixture.h"

static const ceb_config_spec web_source[] = {
    {"listen", CEB_CFG_ADDRESS, CEB_CFG_REQUIRED, NULL, 0, 0, NULL, "Address."},
    {"tls.cert", CEB_CFG_PATH, 0, NULL, 0, 0, NULL, "Certificate."},
    {"token", CEB_CFG_STRING, CEB_CFG_SECRET, NULL, 0, 0, NULL, "Token."},
    {"pin", CEB_CFG_INT, CEB_CFG_SECRET, NULL, 1000, 9999, NULL, "Pin."},
    {"key_file", CEB_CFG_PATH, CEB_CFG_SECRET, NULL, 0, 0, NULL, "Key."},
    {"jwks_url", CEB_CFG_URL, 0, NULL, 0, 0, NULL, "JWKS."},
    {"max_body", CEB_CFG_SIZE, 0, "1MiB", 1024, 16 << 20, NULL, "Body."},
    {"tags", CEB_CFG_LIST, CEB_CFG_MULTI, NULL, 0, 0, NULL, "Tags."},
    {"verbose", CEB_CFG_BOOL, 0, "false", 0, 0, NULL, "Verbose."},
    {"header.", CEB_CFG_STRING, CEB_CFG_PREFIX, NULL, 0, 0, NULL, "Headers."},
    {"level", CEB_CFG_ENUM, 0, "low", 0, 0, "low|high", "Level."},
    {"mode", CEB_CFG_ENUM, CEB_CFG_SECRET, NULL, 0, 0, "alpha|beta", "Mode."},
    {"limit", CEB_CFG_RATE, 0, NULL, 1, 1000, NULL, "Limit."},
    CEB_CONFIG_SPEC_END};
static const ceb_config_spec web_sink[] = {
    {"url", CEB_CFG_URL, CEB_CFG_REQUIRED, NULL, 0, 0, NULL, "Target."},
    CEB_CONFIG_SPEC_END};
static const ceb_config_spec no_keys[] = {CEB_CONFIG_SPEC_END};

static int spec_calls;

static const ceb_config_spec *plugin_spec(void *arg, const ceb_conf_section *s,
                                          ceb_conf_errors *errs) {
  (void)arg;
  spec_calls++;
  const char *p = ceb_config_str(s->cfg, "plugin");
  if (strcmp(p, "web") == 0) {
    if (strcmp(s->kind, "source") == 0) return web_source;
    if (strcmp(s->kind, "sink") == 0) return web_sink;
    return no_keys;
  }
  ceb_conf_error_add(errs, s->file, s->line, NULL, "plugin '%s' not found", p);
  return NULL;
}

static void check_ok(void) {
  char *dir = ceb_test_tmpdir("conf-check-ok");
  char *real = realpath(dir, NULL);
  setenv("CEB_TEST_TOKEN", "tok-from-env", 1);
  fx_write(dir, "secret.txt", "s3cr3t\n\n"); /* only one newline stripped */
  fx_write(dir, "10-bridge.conf",
           "[bridge]\n"
           "store = state/store.db\n"
           "workers = 8\n"
           "log.level = debug\n"
           "max_event_size = 1MiB\n");
  fx_write(dir, "20-io.conf",
           "[source in]\n"
           "plugin = web\n"
           "listen = [::1]:0\n"
           "tls.cert = certs/tls.crt\n"
           "token = ${CEB_TEST_TOKEN}\n"
           "pin = file:secret.txt\n" /* replaced below: must be an int */
           "jwks_url = https://idp.example.nl/oidc/certs?x=1\n"
           "tags = a, b\n"
           "tags = c\n"
           "header.x-trace = on\n"
           "level = high\n"
           "limit = 200/s\n"
           "profile = enforce\n"
           "[sink out]\n"
           "plugin = web\n"
           "url = http://127.0.0.1:9/hook\n"
           "rate_limit = 50/s\n"
           "[sink bus]\n"
           "plugin = web\n"
           "url = https://bus.example.nl/\n"
           "[contracts reg]\n"
           "plugin = web\n");
  fx_write(dir, "30-routes.conf",
           "[route r1]\n"
           "from = in\n"
           "to = out\n"
           "match.type = nl.edu.*|nl.duo.*\n"
           "match.source = urn:nld:oin:*\n"
           "order_by = partitionkey\n"
           "dlq = bus:edu.dlq\n"
           "receipts = bus\n"
           "retry.schedule = 0s, 5s 1h30m\n"
           "contract = duo-inschrijving@^1\n"
           "[route r2]\n"
           "from = in\n"
           "to = bus\n"
           "dlq = store\n"
           "receipts = bus:edu.receipts\n"
           "contract = x@1.2.0-rc.1\n");
  /* the pin must be an int: use a file holding one */
  fx_write(dir, "pin.txt", "4242\r\n");
  char cfgtext[2048];
  char *src = ceb_test_read_file(
      (snprintf(cfgtext, sizeof cfgtext, "%s/20-io.conf", dir), cfgtext), NULL);
  char *at = strstr(src, "file:secret.txt");
  memcpy(at, "file:pin.txt   ", 15);
  fx_write(dir, "20-io.conf", src);
  free(src);
  fx_write(dir, "25-key.conf",
           "[source in2]\n"
           "plugin = web\n"
           "listen = localhost:8080\n"
           "token = file:secret.txt\n");
  fx_write(dir, "31-r3.conf", "[route r3]\nfrom = in2 in\nto = out\n");

  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_OK);
  if (!conf) {
    fx_dump(&errs);
    return;
  }
  spec_calls = 0;
  int rc = ceb_conf_check(conf, plugin_spec, NULL, &errs);
  CHECK_INT(rc, CEB_OK);
  if (rc != CEB_OK) fx_dump(&errs);
  CHECK_INT(spec_calls, 5);

  char want[PATH_MAX + 64];
  const ceb_config *b = ceb_conf_bridge(conf);
  snprintf(want, sizeof want, "%s/state/store.db", real);
  CHECK_STR(ceb_config_str(b, "store"), want);
  CHECK_INT(ceb_config_int(b, "workers", 0), 8);
  CHECK_INT(ceb_config_size(b, "max_event_size", 0), 1 << 20);
  CHECK_INT(ceb_config_duration_ms(b, "drain_timeout", 0), 30000); /* dflt */
  CHECK_STR(ceb_config_str(b, "admin.listen"), "127.0.0.1:8081");

  const ceb_config *in = ceb_conf_find(conf, "source", "in")->cfg;
  CHECK_STR(ceb_config_str(in, "token"), "tok-from-env");
  CHECK_INT(ceb_config_int(in, "pin", 0), 4242);
  snprintf(want, sizeof want, "%s/certs/tls.crt", real);
  CHECK_STR(ceb_config_str(in, "tls.cert"), want);
  CHECK_INT(ceb_config_size(in, "max_body", 0), 1 << 20); /* plugin default */
  CHECK_INT(ceb_config_bool(in, "header.x-trace", 0), 1);
  const char *const *items;
  CHECK_INT(ceb_config_list(in, "tags", &items), 3);
  CHECK_STR(items[2], "c");
  const ceb_config *in2 = ceb_conf_find(conf, "source", "in2")->cfg;
  CHECK_STR(ceb_config_str(in2, "token"), "s3cr3t\n");
  const ceb_config *r1 = ceb_conf_find(conf, "route", "r1")->cfg;
  CHECK_INT(ceb_config_list(r1, "retry.schedule", &items), 3);
  CHECK_STR(items[2], "1h30m");
  CHECK_INT(ceb_config_duration_ms(r1, "deadline", 0), 72 * 3600 * 1000);
  const ceb_config *r2 = ceb_conf_find(conf, "route", "r2")->cfg;
  CHECK_INT(ceb_config_list(r2, "retry.schedule", &items), 8); /* default */
  ceb_conf_free(conf);

  /* No [bridge] section: defaults through the empty bridge config. */
  char *dir2 = ceb_test_tmpdir("conf-check-nobridge");
  fx_write(dir2, "a.conf", "[sink out]\nplugin = web\nurl = http://h/\n");
  CHECK_INT(ceb_conf_load(dir2, &conf, &errs), CEB_OK);
  CHECK_INT(ceb_conf_check(conf, plugin_spec, NULL, &errs), CEB_OK);
  CHECK_INT(ceb_config_int(ceb_conf_bridge(conf), "workers", 0), 2);
  CHECK_STR(ceb_config_str(ceb_conf_bridge(conf), "log.format"), "json");
  ceb_conf_free(conf);
  fx_rmdir(dir2);
  free(dir2);
  fx_rmdir(dir);
  free(dir);
  free(real);
}

/* Expects an error at file:line whose message contains text (and whose hint
 * contains hint, when given). */
static void expect(const ceb_conf_errors *errs, const char *file, int line,
                   const char *text, const char *hint) {
  int i = fx_find(errs, file, line, text);
  CHECK_MSG(i >= 0, "no error %s:%d containing \"%s\"", file, line, text);
  if (i >= 0 && hint)
    CHECK_MSG(strstr(errs->items[i].hint, hint) != NULL,
              "%s:%d hint \"%s\" lacks \"%s\"", file, line, errs->items[i].hint,
              hint);
}

static void check_errors(void) {
  char *dir = ceb_test_tmpdir("conf-check-err");
  char *real = realpath(dir, NULL);
  unsetenv("CEB_TEST_UNSET_VAR");
  setenv("CEB_TEST_PIN", "SECRETPIN77777", 1);
  fx_write(dir, "pin.txt", "SECRETFILEVALUE\n");
  fx_write(dir, "10-a.conf",
           "[bridge]\n"
           "workers = 100\n"                       /* 2: out of range */
           "drain_timeout = soon\n"                /* 3: invalid duration */
           "log.level = debg\n"                    /* 4: enum, did you mean */
           "store.synchronous = fulll\n"           /* 5: did you mean full */
           "max_event_size = 1GiB\n"               /* 6: size out of range */
           "profile =\n"                           /* 7: empty enum */
           "admin.token = ${CEB_TEST_UNSET_VAR}\n" /* 8: unset env */
           "instance = node 1\n");                 /* 9: not a name */
  fx_write(dir, "20-b.conf",
           "[bridge]\n"
           "workers = 4\n" /* 2: duplicate of 10-a.conf:2 */
           "[source a]\n"  /* 3: missing listen */
           "plugin = web\n"
           "listn = 0.0.0.0:80\n"    /* 5: unknown, did you mean listen */
           "pin = ${CEB_TEST_PIN}\n" /* 6: secret invalid int */
           "token = file:nonexistent.txt\n" /* 7: unreadable secret file */
           "tags = x\n"
           "tags = y\n"               /* 9: MULTI: fine */
           "header. = v\n"            /* 10: prefix without name */
           "verbose = maybe\n"        /* 11: invalid bool */
           "jwks_url = ftp://idp/x\n" /* 12: not http(s) */
           "level = high\n"
           "level = low\n"       /* 14: duplicate */
           "mode = SECRETMODE\n" /* 15: secret enum */
           "limit = 5000/s\n"    /* 16: rate out of range */
           "[source b]\n"        /* 17 */
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "pin = file:pin.txt\n"  /* 20: secret from file, bad int */
           "token = ${bad-name}\n" /* 21: bad env reference */
           "[source g]\n"          /* 22: plugin unknown */
           "plugin = ghost\n"
           "whatever = 1\n"        /* not judged: plugin unknown */
           "profile = loud\n"      /* 25: common key still checked */
           "[sink s]\n"            /* 26: missing plugin */
           "rate_limit = fast\n"); /* 27 */
  fx_write(dir, "30-r.conf",
           "[route r]\n"              /* 1 */
           "from = a, sourceb\n"      /* 2: sourceb unknown */
           "to = ss\n"                /* 3: unknown sink, did you mean s */
           "dlq = elsewhere\n"        /* 4: bad form */
           "receipts = nosink:x\n"    /* 5: unknown sink */
           "match.part_key = x\n"     /* 6: invalid attribute */
           "match.type = a||b\n"      /* 7: empty alternative */
           "retry.schedule = 0s 5x\n" /* 8: bad item */
           "contract = duo@1.2\n"     /* 9: bad pin */
           "order_by = Part-Key\n"    /* 10: bad attribute */
           "timeout = 2h\n"           /* 11: out of range */
           "[route empty]\n"          /* 12: from, to missing */
           "[route r3]\n"             /* 13 */
           "from = a\n"
           "to = s\n"
           "dlq = s:\n"               /* 16: empty topic */
           "contract = @^1\n"         /* 17: no name */
           "metrics.keys_top = 5\n"); /* 18: no order_by, no keys */
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_OK);
  if (!conf) {
    fx_dump(&errs);
    return;
  }
  CHECK_INT(ceb_conf_check(conf, plugin_spec, NULL, &errs), CEB_ECONFIG);

  expect(&errs, "10-a.conf", 2,
         "int '100' is out of range for 'workers' in "
         "[bridge]",
         "allowed: 1 .. 64");
  expect(&errs, "10-a.conf", 3, "invalid duration 'soon' for 'drain_timeout'",
         "1h30m");
  expect(&errs, "10-a.conf", 4, "invalid value 'debg' for 'log.level'",
         "did you mean 'debug'?");
  expect(&errs, "10-a.conf", 5, "invalid value 'fulll' for 'store.synchronous'",
         "did you mean 'full'?");
  expect(&errs, "10-a.conf", 6, "size '1GiB' is out of range",
         "allowed: 1KiB .. 16MiB");
  expect(&errs, "10-a.conf", 7, "empty value for 'profile' in [bridge]", NULL);
  expect(&errs, "10-a.conf", 8,
         "environment variable CEB_TEST_UNSET_VAR is not set (export it in "
         "the service environment), for 'admin.token' in [bridge]",
         NULL);
  expect(&errs, "10-a.conf", 9,
         "'instance' in [bridge] must be 1 to 127 letters, digits or",
         "e.g. instance = bridge-1");
  char first[PATH_MAX + 32];
  snprintf(first, sizeof first, "first set at %s/10-a.conf:2", dir);
  expect(&errs, "20-b.conf", 2, "duplicate key 'workers' in [bridge]", NULL);
  expect(&errs, "20-b.conf", 2, first, NULL);
  expect(&errs, "20-b.conf", 3, "missing required key 'listen' in [source a]",
         "Address.");
  expect(&errs, "20-b.conf", 5, "unknown key 'listn' in [source a]",
         "did you mean 'listen'?");
  expect(&errs, "20-b.conf", 6, "invalid int for secret 'pin' in [source a]",
         NULL);
  snprintf(first, sizeof first,
           "cannot read secret file '%s/nonexistent.txt': No such file or "
           "directory (it must be readable by the bridge), for 'token'",
           real);
  expect(&errs, "20-b.conf", 7, first, NULL);
  CHECK(fx_find(&errs, "20-b.conf", 8, "") < 0);
  CHECK(fx_find(&errs, "20-b.conf", 9, "") < 0);
  expect(&errs, "20-b.conf", 10, "key 'header.' needs a name", NULL);
  expect(&errs, "20-b.conf", 11, "invalid bool 'maybe'", "yes/no");
  expect(&errs, "20-b.conf", 12, "invalid url 'ftp://idp/x'", "https://");
  expect(&errs, "20-b.conf", 14, "duplicate key 'level' in [source a]", NULL);
  expect(&errs, "20-b.conf", 15, "invalid value for secret 'mode'", NULL);
  expect(&errs, "20-b.conf", 16, "rate '5000/s' is out of range",
         "allowed: 1/s .. 1000/s");
  expect(&errs, "20-b.conf", 20, "invalid int for secret 'pin' in [source b]",
         NULL);
  expect(&errs, "20-b.conf", 21, "invalid environment variable reference",
         NULL);
  expect(&errs, "20-b.conf", 22, "plugin 'ghost' not found", NULL);
  CHECK(fx_find(&errs, "20-b.conf", 24, "") < 0);
  expect(&errs, "20-b.conf", 25,
         "invalid value 'loud' for 'profile' in "
         "[source g]",
         "one of off|warn|enforce");
  expect(&errs, "20-b.conf", 26, "missing required key 'plugin' in [sink s]",
         NULL);
  expect(&errs, "20-b.conf", 27, "invalid rate 'fast' for 'rate_limit'",
         "200/s");
  expect(&errs, "30-r.conf", 2,
         "from 'sourceb' of [route r] is not a "
         "[source] section",
         NULL);
  CHECK(fx_find(&errs, "30-r.conf", 2, "from 'a'") < 0);
  expect(&errs, "30-r.conf", 3, "to 'ss' of [route r] is not a [sink]",
         "did you mean 's'?");
  expect(&errs, "30-r.conf", 4, "invalid dlq 'elsewhere'",
         "store or SINK:topic");
  expect(&errs, "30-r.conf", 5,
         "receipts 'nosink' of [route r] is not a "
         "[sink] section",
         NULL);
  expect(&errs, "30-r.conf", 6,
         "invalid attribute 'part_key' in match.part_key", NULL);
  expect(&errs, "30-r.conf", 7, "empty pattern in match.type", NULL);
  expect(&errs, "30-r.conf", 8, "invalid duration '5x' in retry.schedule",
         NULL);
  expect(&errs, "30-r.conf", 9, "invalid contract pin 'duo@1.2'", "NAME@^1");
  expect(&errs, "30-r.conf", 10, "invalid order_by 'Part-Key'", NULL);
  expect(&errs, "30-r.conf", 11,
         "duration '2h' is out of range for "
         "'timeout'",
         "allowed: 1ms .. 1h");
  expect(&errs, "30-r.conf", 12,
         "missing required key 'from' in "
         "[route empty]",
         NULL);
  expect(&errs, "30-r.conf", 12,
         "missing required key 'to' in "
         "[route empty]",
         NULL);
  expect(&errs, "30-r.conf", 16, "invalid dlq 's:'", NULL);
  expect(&errs, "30-r.conf", 17, "invalid contract pin '@^1'", NULL);
  expect(&errs, "30-r.conf", 18,
         "metrics.keys_top in [route r3] needs order_by",
         "order_by = ATTRIBUTE");
  CHECK_INT(errs.count, 40);

  /* Secret values never reach the printed errors. */
  char *out = fx_print(&errs);
  CHECK(out != NULL);
  if (out) {
    CHECK(strstr(out, "SECRETPIN") == NULL);
    CHECK(strstr(out, "SECRETFILEVALUE") == NULL);
    CHECK(strstr(out, "SECRETMODE") == NULL);
    if (errs.count != 38) fputs(out, stderr);
  }
  free(out);
  ceb_conf_free(conf);
  fx_rmdir(dir);
  free(dir);
  free(real);
}

/* Without a plugin-spec callback, plugin keys cannot be judged: only the
 * host's common keys are checked. */
static void check_no_callback(void) {
  char *dir = ceb_test_tmpdir("conf-check-nocb");
  fx_write(dir, "a.conf",
           "[sink s]\nplugin = web\nanything = 1\nrate_limit = 5/s\n"
           "circuit.failures = 0\n");
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_OK);
  CHECK_INT(ceb_conf_check(conf, NULL, NULL, &errs), CEB_ECONFIG);
  CHECK_INT(errs.count, 1);
  expect(&errs, "a.conf", 5, "int '0' is out of range for 'circuit.failures'",
         NULL);
  ceb_conf_free(conf);
  fx_rmdir(dir);
  free(dir);
}

/* [bridge] store = sqlite:PATH is the SQLite engine's spec: the host reads
 * the file after the prefix as any path (relative to the file that sets
 * it); "sqlite:" alone names no file. */
static void check_sqlite_spec(void) {
  char *dir = ceb_test_tmpdir("conf-check-sqlite");
  char *real = realpath(dir, NULL);
  fx_write(dir, "a.conf", "[bridge]\nstore = sqlite:state/s.db\n");
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_OK);
  CHECK_INT(ceb_conf_check(conf, NULL, NULL, &errs), CEB_OK);
  char want[PATH_MAX + 32];
  snprintf(want, sizeof want, "%s/state/s.db", real);
  CHECK_STR(ceb_conf_bridge_cfg(conf)->store.path, want);
  ceb_conf_free(conf);
  fx_write(dir, "a.conf", "[bridge]\nstore = sqlite:\n");
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_OK);
  CHECK_INT(ceb_conf_check(conf, NULL, NULL, &errs), CEB_ECONFIG);
  expect(&errs, "a.conf", 2, "'store' in [bridge] names no file after sqlite:",
         "e.g. store = sqlite:store.db");
  ceb_conf_free(conf);
  fx_rmdir(dir);
  free(real);
  free(dir);
}

/* Secret files that are not small regular text files are refused without
 * blocking (a FIFO would hang a blocking open) and without printing. */
static void check_secret_files(void) {
  char *dir = ceb_test_tmpdir("conf-check-secretfiles");
  char path[1024];
  snprintf(path, sizeof path, "%s/fifo", dir);
  CHECK_INT(mkfifo(path, 0600), 0);
  char *big = malloc(70 * 1024);
  memset(big, 'A', 70 * 1024 - 1);
  big[70 * 1024 - 1] = '\0';
  fx_write(dir, "big.txt", big);
  free(big);
  snprintf(path, sizeof path, "%s/nul.txt", dir);
  FILE *f = fopen(path, "wb");
  fwrite("ab\0cd", 1, 5, f);
  fclose(f);
  fx_write(dir, "a.conf",
           "[source a]\n"
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "token = file:fifo\n" /* 4 */
           "[source b]\n"
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "token = file:big.txt\n" /* 8 */
           "[source c]\n"
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "token = file:nul.txt\n" /* 12 */
           "[source d]\n"
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "token = file:\n" /* 16 */
           "[source e]\n"
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "token = file:.\n"); /* 20: a directory */
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_OK);
  CHECK_INT(ceb_conf_check(conf, plugin_spec, NULL, &errs), CEB_ECONFIG);
  expect(&errs, "a.conf", 4, "not a regular text file", NULL);
  expect(&errs, "a.conf", 8, "larger than 64 KiB", NULL);
  expect(&errs, "a.conf", 12, "not a regular text file", NULL);
  expect(&errs, "a.conf", 16, "empty secret file path", NULL);
  expect(&errs, "a.conf", 20, "not a regular text file", NULL);
  CHECK_INT(errs.count, 5);
  char *out = fx_print(&errs);
  CHECK(out && strstr(out, "AAAA") == NULL);
  free(out);
  ceb_conf_free(conf);
  fx_rmdir(dir);
  free(dir);
}

/* A value may hold several ${NAME} references, text around kept (the
 * documented rotation "webhook.secrets = ${OLD} ${NEW}"); a malformed or
 * unset one among them is still refused. */
static void check_several_refs(void) {
  char *dir = ceb_test_tmpdir("conf-check-refs");
  setenv("CEB_TEST_OLD", "whsec_old", 1);
  setenv("CEB_TEST_NEW", "whsec_new", 1);
  unsetenv("CEB_TEST_UNSET_VAR");
  fx_write(dir, "a.conf",
           "[source a]\n"
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "token = ${CEB_TEST_OLD} ${CEB_TEST_NEW}\n" /* 4 */
           "[source b]\n"
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "token = pre-${CEB_TEST_NEW}-post$x\n" /* 8 */
           "[source c]\n"
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "token = ${CEB_TEST_OLD} ${CEB_TEST_UNSET_VAR}\n" /* 12 */
           "[source d]\n"
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "token = ${CEB_TEST_OLD} ${CEB_TEST_NEW\n" /* 16 */
           "[source e]\n"
           "plugin = web\n"
           "listen = 127.0.0.1:1\n"
           "token = a$${not-a-ref}b$$${CEB_TEST_NEW}\n"); /* 20 */
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_OK);
  CHECK_INT(ceb_conf_check(conf, plugin_spec, NULL, &errs), CEB_ECONFIG);
  CHECK_STR(ceb_config_str(ceb_conf_find(conf, "source", "a")->cfg, "token"),
            "whsec_old whsec_new");
  CHECK_STR(ceb_config_str(ceb_conf_find(conf, "source", "b")->cfg, "token"),
            "pre-whsec_new-post$x");
  /* "$${" is a literal "${"; "$$${X}" a '$' and then the escape */
  CHECK_STR(ceb_config_str(ceb_conf_find(conf, "source", "e")->cfg, "token"),
            "a${not-a-ref}b$${CEB_TEST_NEW}");
  expect(&errs, "a.conf", 12,
         "environment variable CEB_TEST_UNSET_VAR is not set", NULL);
  expect(&errs, "a.conf", 16, "invalid environment variable reference", NULL);
  CHECK_INT(errs.count, 2);
  char *out = fx_print(&errs);
  CHECK(out && strstr(out, "whsec_old") == NULL);
  free(out);
  ceb_conf_free(conf);
  fx_rmdir(dir);
  free(dir);
}

/* A callbacks route: nothing selects or shapes what it sends, and its sink
 * must send to each client's URL (callback_urls); errors at the callbacks
 * line. */
static void check_callbacks_route(void) {
  char *dir = ceb_test_tmpdir("conf-check-callbacks");
  fx_write(dir, "a.conf",
           "[source s]\nplugin = web\n"
           "[sink plain]\nplugin = web\n"
           "[sink cb]\nplugin = web\ncallback_urls = true\n"       /* 5-7 */
           "[route bad]\nfrom = s\nto = plain\ncallbacks = true\n" /* 11 */
           "order_by = institution\nmatch.type = x\n"
           "[route good]\nfrom = s\nto = cb\ncallbacks = true\n"
           "[route events]\nfrom = s\nto = plain\norder_by = institution\n");
  ceb_conf *conf = NULL;
  ceb_conf_errors errs;
  CHECK_INT(ceb_conf_load(dir, &conf, &errs), CEB_OK);
  CHECK_INT(ceb_conf_check(conf, NULL, NULL, &errs), CEB_ECONFIG);
  expect(&errs, "a.conf", 11, "[route bad]: callbacks = true takes no order_by",
         NULL);
  expect(&errs, "a.conf", 11,
         "[route bad]: callbacks = true takes no match.type", NULL);
  expect(&errs, "a.conf", 11,
         "[route bad]: callbacks = true needs a sink that sends to each "
         "client's URL; [sink plain] has no callback_urls",
         "set callback_urls = true on an http sink");
  CHECK_INT(errs.count, 3);
  ceb_conf_free(conf);
  fx_rmdir(dir);
  free(dir);
}

int main(void) {
  check_callbacks_route();
  check_several_refs();
  check_secret_files();
  check_ok();
  check_errors();
  check_no_callback();
  check_sqlite_spec();
  return ceb_test_done("unit_conf_check");
}
