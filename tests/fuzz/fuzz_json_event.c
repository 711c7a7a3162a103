/* Fuzz target: the JSON event and batch parsers. A decoded event must
 * validate without crashing and survive encode -> decode -> encode with the
 * same bytes (also through the journal's trusted decoder); the decoder must
 * accept exactly the texts jansson accepts as a whole (its fast path cuts
 * the data member out, this checks the cut never lets bad JSON through),
 * and the direct attribute reader must decode as the jansson path does
 * (the same text with a member only that path takes, an escaped name with a
 * null value, must give an equal event); anything else aborts so that
 * libFuzzer reports it. */
#include <ceb/codec.h>
#include <ceb/validate.h>

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_round_trip(const ceb_event *ev) {
  ceb_violations v;
  ceb_validate_opts o = {sizeof o, CEB_PROFILE_ENFORCE, 0};
  ceb_event_validate(ev, &o, &v);
  char *a = NULL, *b = NULL;
  size_t alen, blen;
  /* encoding may refuse (invalid UTF-8 text data cannot come from JSON, so
   * it must not) */
  if (ceb_json_encode(ev, &a, &alen) != CEB_OK) abort();
  ceb_event *again = NULL;
  if (ceb_json_decode(a, alen, &again, NULL) != CEB_OK) abort();
  if (ceb_json_encode(again, &b, &blen) != CEB_OK || alen != blen ||
      memcmp(a, b, alen) != 0)
    abort();
  ceb_event_unref(again);
  again = NULL;
  if (ceb_json_decode_trusted(a, alen, &again, NULL) != CEB_OK) abort();
  ceb_free(b);
  b = NULL;
  if (ceb_json_encode(again, &b, &blen) != CEB_OK || alen != blen ||
      memcmp(a, b, alen) != 0)
    abort();
  ceb_event_unref(again);
  ceb_free(a);
  ceb_free(b);
}

/* Decodes the text again through the jansson path (see the header) and
 * compares the two events as JSON. */
static void check_attrs_path(const char *text, size_t len,
                             const ceb_event *ev) {
  const char *brace = memchr(text, '{', len);
  if (!brace) abort(); /* it decoded: an object */
  static const char member[] = "\"\\u0078ceb\":null,";
  size_t at = (size_t)(brace - text) + 1, add = sizeof member - 1;
  size_t j = at;
  while (j < len && strchr(" \t\r\n", text[j]) && text[j])
    j++;
  if (j < len && text[j] == '}') add--; /* {} takes it without the comma */
  char *ref = malloc(len + add);
  if (!ref) return;
  memcpy(ref, text, at);
  memcpy(ref + at, member, add);
  memcpy(ref + at + add, text + at, len - at);
  ceb_event *other = NULL;
  /* refused only if the text already has a member "xceb" */
  if (ceb_json_decode(ref, len + add, &other, NULL) == CEB_OK) {
    char *a = NULL, *b = NULL;
    size_t alen, blen;
    if (ceb_json_encode(ev, &a, &alen) != CEB_OK ||
        ceb_json_encode(other, &b, &blen) != CEB_OK)
      abort();
    json_t *ja = json_loadb(a, alen, 0, NULL),
           *jb = json_loadb(b, blen, 0, NULL);
    if (!ja || !jb || !json_equal(ja, jb)) abort();
    json_decref(ja);
    json_decref(jb);
    ceb_free(a);
    ceb_free(b);
    ceb_event_unref(other);
  }
  free(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ceb_event *ev = NULL;
  ceb_error err;
  if (ceb_json_decode((const char *)data, size, &ev, &err) == CEB_OK) {
    json_t *whole =
        json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    if (!whole) abort();
    json_decref(whole);
    check_round_trip(ev);
    check_attrs_path((const char *)data, size, ev);
    ceb_event_unref(ev);
  } else if (err.code[0] == '\0' || err.message[0] == '\0') {
    abort(); /* every failure explains itself */
  }
  ceb_event **evs = NULL;
  size_t n = 0;
  if (ceb_batch_decode((const char *)data, size, &evs, &n, &err) == CEB_OK) {
    for (size_t i = 0; i < n; i++)
      check_round_trip(evs[i]);
    ceb_events_free(evs, n);
  }
  return 0;
}
