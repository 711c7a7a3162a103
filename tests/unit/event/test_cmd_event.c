/* `cebridge event validate|convert`: exit codes and output, driven through
 * ceb_cmd_event() with input files in a temporary directory. */
#include "cli/cli.h"
#include "cli/http_dump.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ceb_test.h"

static char *g_dir;

static char *write_tmp(const char *name, const char *content) {
  size_t n = strlen(g_dir) + strlen(name) + 2;
  char *path = malloc(n);
  snprintf(path, n, "%s/%s", g_dir, name);
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (f) {
    fputs(content, f);
    fclose(f);
  }
  return path;
}

/* Runs the command with stdout and stderr captured into files; returns the
 * exit code and the captured text (malloc'd) in *out / *err. */
static int run(char **out, char **err, int argc, char **argv) {
  char *po = write_tmp("stdout.txt", ""), *pe = write_tmp("stderr.txt", "");
  fflush(stdout);
  fflush(stderr);
  int so = dup(1), se = dup(2);
  int fo = open(po, O_WRONLY | O_TRUNC), fe = open(pe, O_WRONLY | O_TRUNC);
  dup2(fo, 1);
  dup2(fe, 2);
  int rc = ceb_cmd_event(argc, argv);
  fflush(stdout);
  fflush(stderr);
  dup2(so, 1);
  dup2(se, 2);
  close(so);
  close(se);
  close(fo);
  close(fe);
  size_t n;
  *out = ceb_test_read_file(po, &n);
  *err = ceb_test_read_file(pe, &n);
  free(po);
  free(pe);
  return rc;
}

#define RUN(out, err, ...)                                                     \
  run(out, err, (int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)),       \
      (char *[]){__VA_ARGS__})

static const char k_valid[] =
    "{\"specversion\":\"1.0\",\"id\":\"1\",\"source\":\"/s\","
    "\"type\":\"com.example.x\",\"datacontenttype\":\"application/json\","
    "\"partitionkey\":\"pk\",\"data\":{\"a\":1}}";
static const char k_nlgov[] =
    "{\"specversion\":\"1.0\",\"id\":\"1\","
    "\"source\":\"urn:nld:oin:00000001823288444000:systeem:x\","
    "\"type\":\"nl.overheid.x\",\"time\":\"2021-12-10T17:31:00Z\"}";

static void test_validate(void) {
  char *valid = write_tmp("valid.json", k_valid);
  char *nlgov = write_tmp("nlgov.json", k_nlgov);
  char *noid =
      write_tmp("noid.json", "{\"specversion\":\"1.0\",\"source\":\"/\","
                             "\"type\":\"t\"}");
  char *bad = write_tmp("bad.json", "{\"id\":25}");
  char *batch =
      write_tmp("batch.json", "[{\"specversion\":\"1.0\",\"id\":\"1\","
                              "\"source\":\"/\",\"type\":\"t\"},"
                              "{\"specversion\":\"1.0\"}]");
  char *http = write_tmp("req.http",
                         "POST /hook HTTP/1.1\r\nHost: x\r\nce-specversion: 1.0"
                         "\r\nce-id: 7\r\nce-source: %2Fs\r\nce-type: a.b\r\n"
                         "Content-Type: text/plain\r\n\r\nhello");
  char *o, *e;
  CHECK_INT(RUN(&o, &e, "event", "validate", valid), 0);
  CHECK(strstr(o, "valid: 1 event") != NULL);
  free(o), free(e);
  /* CloudEvents-valid; its source is no urn:nld: URN, which is advice */
  CHECK_INT(RUN(&o, &e, "event", "validate", "--profile", "nlgov", valid), 0);
  CHECK(strstr(e, "warning nlgov.source.nld_urn") != NULL);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "validate", "--profile", "nlgov", nlgov), 0);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "validate", noid), 1);
  CHECK(strstr(e, "ce.id.missing") != NULL);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "validate", bad), 1);
  CHECK(strstr(e, "ce.attr.type") != NULL);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "validate", http), 0);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "validate", "--max-size", "10", http), 1);
  CHECK(strstr(e, "event.too_large") != NULL);
  free(o), free(e);

  /* --json: machine output on stdout */
  CHECK_INT(RUN(&o, &e, "event", "validate", "--json", batch), 1);
  json_t *j = json_loads(o, 0, NULL);
  CHECK(j != NULL);
  CHECK(json_is_false(json_object_get(j, "valid")));
  CHECK(json_is_true(json_object_get(j, "batch")));
  json_t *evs = json_object_get(j, "events");
  CHECK_INT(json_array_size(evs), 2);
  CHECK(json_is_true(json_object_get(json_array_get(evs, 0), "valid")));
  json_t *second = json_array_get(evs, 1);
  CHECK_INT(json_integer_value(json_object_get(second, "errors")), 3);
  json_t *first_v = json_array_get(json_object_get(second, "violations"), 0);
  CHECK_STR(json_string_value(json_object_get(first_v, "code")),
            "ce.id.missing");
  CHECK_STR(json_string_value(json_object_get(first_v, "severity")), "error");
  json_decref(j);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "validate", "--json", bad), 1);
  j = json_loads(o, 0, NULL);
  CHECK_STR(
      json_string_value(json_object_get(json_object_get(j, "error"), "code")),
      "ce.attr.type");
  json_decref(j);
  free(o), free(e);

  /* usage and I/O errors */
  CHECK_INT(RUN(&o, &e, "event", "validate"), 2);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "validate", "--profile", "x", valid), 2);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "validate", "/nonexistent/file.json"), 2);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "validate", "--help"), 0);
  CHECK(strstr(o, "--profile") != NULL);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "frobnicate"), 2);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event"), 2);
  free(o), free(e);
  free(valid), free(nlgov), free(noid), free(bad), free(batch), free(http);
}

static void test_convert(void) {
  char *valid = write_tmp("valid.json", k_valid);
  char *o, *e;
  CHECK_INT(RUN(&o, &e, "event", "convert", "--to", "http-binary", valid), 0);
  CHECK(strstr(o, "ce-source: /s\n") != NULL);
  CHECK(strstr(o, "Content-Type: application/json\n\n{\"a\":1}") != NULL);
  /* the output is itself a valid HTTP dump that converts back */
  char *dump = write_tmp("out.http", o);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "convert", "--to", "json", dump), 0);
  CHECK(strncmp(o, k_valid, strlen(k_valid)) == 0);
  free(o), free(e);
  free(dump);

  CHECK_INT(RUN(&o, &e, "event", "convert", "--to", "http-structured", valid),
            0);
  static const char structured[] =
      "Content-Type: application/cloudevents+json\n\n{";
  CHECK(strncmp(o, structured, strlen(structured)) == 0);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "convert", "--to", "kafka-binary", valid), 0);
  CHECK(strncmp(o, "@key: pk\n", 9) == 0);
  CHECK(strstr(o, "ce_partitionkey: pk\n") != NULL);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "convert", "--to", "mqtt5-binary", valid), 0);
  CHECK(strncmp(o, "@content-type: application/json\n", 32) == 0);
  CHECK(strstr(o, "\nspecversion: 1.0\n") != NULL);
  free(o), free(e);

  char *batch = write_tmp("b.json", "[ ]");
  CHECK_INT(RUN(&o, &e, "event", "convert", "--to", "json", batch), 0);
  CHECK_STR(o, "[]\n");
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "convert", "--to", "http-binary", batch), 1);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "convert", "--to", "xml", valid), 2);
  free(o), free(e);
  CHECK_INT(RUN(&o, &e, "event", "convert", valid), 2);
  free(o), free(e);
  char *bad = write_tmp("bad.http", "ce-id 1\n\n");
  CHECK_INT(RUN(&o, &e, "event", "convert", "--to", "json", bad), 1);
  CHECK(strstr(e, "http.dump.header") != NULL);
  free(o), free(e);
  free(bad), free(batch), free(valid);
}

/* "-" reads stdin. */
static void test_stdin(void) {
  char *in = write_tmp("stdin.json", k_nlgov);
  int saved = dup(0), fd = open(in, O_RDONLY);
  dup2(fd, 0);
  close(fd);
  char *o, *e;
  CHECK_INT(RUN(&o, &e, "event", "validate", "--profile", "nlgov", "-"), 0);
  CHECK(strstr(o, "valid: 1 event (nlgov)") != NULL);
  free(o), free(e);
  dup2(saved, 0);
  close(saved);
  clearerr(stdin);
  CHECK_INT(RUN(&o, &e, "event", "convert", "--help"), 0);
  CHECK(strstr(o, "mqtt5-binary") != NULL);
  free(o), free(e);
  free(in);
}

static void test_dump_parser(void) {
  ceb_headers h = {0};
  size_t off;
  ceb_error err;
  const char *d = "GET / HTTP/1.1\nA:  x \nB:\n\nbody\n";
  CHECK_INT(ceb_http_dump_parse(d, strlen(d), &h, &off, &err), CEB_OK);
  CHECK_INT(h.count, 2);
  CHECK_STR(ceb_headers_get(&h, "a"), "x");
  CHECK_STR(ceb_headers_get(&h, "b"), "");
  CHECK_STR(d + off, "body\n");
  ceb_headers_clear(&h);
  d = "A: 1\r\n";
  CHECK_INT(ceb_http_dump_parse(d, strlen(d), &h, &off, &err), CEB_OK);
  CHECK_INT(off, strlen(d));
  ceb_headers_clear(&h);
  const char *bad[] = {"A 1\n\n", ": x\n\n", "A: 1\n folded\n\n",
                       "Bad Name: x\n\n"};
  for (size_t i = 0; i < 4; i++) {
    CHECK_INT(ceb_http_dump_parse(bad[i], strlen(bad[i]), &h, &off, &err),
              CEB_EINVAL);
    CHECK(h.count == 0);
    CHECK(strncmp(err.code, "http.dump.", 10) == 0);
  }
}

int main(void) {
  g_dir = ceb_test_tmpdir("cmd_event");
  test_validate();
  test_convert();
  test_stdin();
  test_dump_parser();
  free(g_dir);
  return ceb_test_done("unit_event_cmd");
}
