/* Event model: attributes, types, ordering, data, clone, refcount, size. */
#include <ceb/event.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ceb_test.h"

static void test_set_get(void) {
  ceb_event *ev = ceb_event_new();
  CHECK(ev != NULL);
  CHECK_INT(ceb_event_set(ev, "id", "1"), CEB_OK);
  CHECK_STR(ceb_event_get(ev, "id"), "1");
  CHECK_INT(ceb_event_set(ev, "id", "2"), CEB_OK);
  CHECK_STR(ceb_event_get(ev, "id"), "2");
  CHECK_INT(ceb_event_attr_count(ev), 1);
  CHECK_INT(ceb_event_set(ev, "id", NULL), CEB_OK);
  CHECK(ceb_event_get(ev, "id") == NULL);
  CHECK_INT(ceb_event_attr_count(ev), 0);
  CHECK_INT(ceb_event_set(ev, "nothere", NULL), CEB_OK);
  /* bad names and values */
  CHECK_INT(ceb_event_set(ev, "", "x"), CEB_EINVAL);
  char longname[CEB_ATTR_NAME_MAX + 2];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  CHECK_INT(ceb_event_set(ev, longname, "x"), CEB_EINVAL);
  longname[CEB_ATTR_NAME_MAX] = '\0';
  CHECK_INT(ceb_event_set(ev, longname, "x"), CEB_OK);
  char *big = malloc(CEB_ATTR_VALUE_MAX + 2);
  memset(big, 'v', CEB_ATTR_VALUE_MAX + 1);
  big[CEB_ATTR_VALUE_MAX + 1] = '\0';
  CHECK_INT(ceb_event_set(ev, "subject", big), CEB_EINVAL);
  big[CEB_ATTR_VALUE_MAX] = '\0';
  CHECK_INT(ceb_event_set(ev, "subject", big), CEB_OK);
  free(big);
  CHECK_INT(ceb_event_set(NULL, "id", "x"), CEB_EINVAL);
  CHECK_INT(ceb_event_set_typed(ev, "x", (ceb_attr_type)42, "1"), CEB_EINVAL);
  ceb_event_unref(ev);
}

static void test_types_and_order(void) {
  ceb_event *ev = ceb_event_new();
  CHECK_INT(ceb_event_set_typed(ev, "zext", CEB_ATTR_INTEGER, "5"), CEB_OK);
  CHECK_INT(ceb_event_set_typed(ev, "aext", CEB_ATTR_BOOLEAN, "true"), CEB_OK);
  CHECK_INT(ceb_event_set(ev, "time", "2020-01-01T00:00:00Z"), CEB_OK);
  CHECK_INT(ceb_event_set(ev, "type", "t"), CEB_OK);
  CHECK_INT(ceb_event_set(ev, "source", "/s"), CEB_OK);
  CHECK_INT(ceb_event_set(ev, "id", "1"), CEB_OK);
  CHECK_INT(ceb_event_set(ev, "specversion", "1.0"), CEB_OK);
  CHECK_INT(ceb_event_set(ev, "datacontenttype", "text/plain"), CEB_OK);
  /* a context attribute keeps its fixed type whatever the caller says */
  CHECK_INT(ceb_event_set_typed(ev, "dataschema", CEB_ATTR_INTEGER, "http://x"),
            CEB_OK);
  CHECK_INT(ceb_event_get_type(ev, "dataschema"), CEB_ATTR_URI);
  CHECK_INT(ceb_event_get_type(ev, "source"), CEB_ATTR_URI_REF);
  CHECK_INT(ceb_event_get_type(ev, "time"), CEB_ATTR_TIMESTAMP);
  CHECK_INT(ceb_event_get_type(ev, "zext"), CEB_ATTR_INTEGER);
  CHECK_INT(ceb_event_get_type(ev, "unset"), CEB_ATTR_STRING);
  static const char *const want[] = {
      "specversion", "id",   "source", "type", "datacontenttype",
      "dataschema",  "time", "aext",   "zext"};
  CHECK_INT(ceb_event_attr_count(ev), 9);
  for (size_t i = 0; i < 9; i++) {
    const char *name = NULL, *value = NULL;
    ceb_attr_type t;
    CHECK_INT(ceb_event_attr_at(ev, i, &name, &value, &t), CEB_OK);
    CHECK_STR(name, want[i]);
  }
  CHECK_INT(ceb_event_attr_at(ev, 9, NULL, NULL, NULL), CEB_EINVAL);
  CHECK(ceb_attr_is_context("subject"));
  CHECK(!ceb_attr_is_context("partitionkey"));
  CHECK(!ceb_attr_is_context(NULL));
  ceb_event_unref(ev);
}

static void test_data_clone_ref(void) {
  ceb_event *ev = ceb_event_new();
  size_t len = 99;
  CHECK(ceb_event_data(ev, &len) == NULL);
  CHECK_INT(len, 0);
  CHECK_INT(ceb_event_data_kind(ev), CEB_DATA_NONE);
  const unsigned char bytes[] = {0, 1, 2, 255};
  CHECK_INT(ceb_event_set_data(ev, bytes, 4, CEB_DATA_BINARY), CEB_OK);
  const unsigned char *d = ceb_event_data(ev, &len);
  CHECK_INT(len, 4);
  CHECK(d && memcmp(d, bytes, 4) == 0 && d[4] == 0);
  CHECK_INT(ceb_event_set_data(ev, NULL, 3, CEB_DATA_TEXT), CEB_EINVAL);
  CHECK_INT(ceb_event_set_data(ev, "x", 1, (ceb_data_kind)9), CEB_EINVAL);
  CHECK_INT(ceb_event_set(ev, "id", "abc"), CEB_OK);
  CHECK_INT(ceb_event_set_typed(ev, "n", CEB_ATTR_INTEGER, "7"), CEB_OK);
  /* size = names + values + data */
  CHECK_INT(ceb_event_size(ev), 2 + 3 + 1 + 1 + 4);

  ceb_event *c = ceb_event_clone(ev);
  CHECK(c != NULL && c != ev);
  CHECK_STR(ceb_event_get(c, "id"), "abc");
  CHECK_INT(ceb_event_get_type(c, "n"), CEB_ATTR_INTEGER);
  d = ceb_event_data(c, &len);
  CHECK(len == 4 && memcmp(d, bytes, 4) == 0);
  CHECK_INT(ceb_event_data_kind(c), CEB_DATA_BINARY);
  CHECK_INT(ceb_event_set(c, "id", "other"), CEB_OK);
  CHECK_STR(ceb_event_get(ev, "id"), "abc"); /* deep copy */

  CHECK(ceb_event_ref(ev) == ev);
  ceb_event_unref(ev);
  CHECK_STR(ceb_event_get(ev, "id"), "abc"); /* still alive (ASan checks) */
  CHECK_INT(ceb_event_set_data(ev, NULL, 0, CEB_DATA_NONE), CEB_OK);
  CHECK(ceb_event_data(ev, &len) == NULL && len == 0);
  ceb_event_unref(ev);
  ceb_event_unref(c);
  ceb_event_unref(NULL);
}

/* Shared events are read and ref-counted from many threads at once. */
static void *ref_worker(void *arg) {
  ceb_event *ev = arg;
  for (int i = 0; i < 10000; i++) {
    ceb_event *r = ceb_event_ref(ev);
    if (strcmp(ceb_event_get(r, "id"), "shared") != 0) return (void *)1;
    ceb_event_unref(r);
  }
  ceb_event_unref(ev); /* the reference main() took for this thread */
  return NULL;
}

static void test_threads(void) {
  ceb_event *ev = ceb_event_new();
  ceb_event_set(ev, "id", "shared");
  pthread_t t[8];
  for (int i = 0; i < 8; i++)
    CHECK_INT(pthread_create(&t[i], NULL, ref_worker, ceb_event_ref(ev)), 0);
  for (int i = 0; i < 8; i++) {
    void *rc = (void *)1;
    pthread_join(t[i], &rc);
    CHECK(rc == NULL);
  }
  CHECK_STR(ceb_event_get(ev, "id"), "shared");
  ceb_event_unref(ev); /* last reference: ASan reports a leak or double free */
}

int main(void) {
  test_set_get();
  test_types_and_order();
  test_data_clone_ref();
  test_threads();
  return ceb_test_done("unit_event_model");
}
