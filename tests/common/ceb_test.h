/* Minimal test helpers: checks that report file:line and keep going, a
 * summary, and waiting for a condition with a deadline (never sleep-and-hope).
 * Single-threaded use of the counters, except ceb_test_wait which only reads.
 */
#ifndef CEB_TEST_H
#define CEB_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

extern int ceb_test_failures;
extern int ceb_test_checks;

#define CHECK(cond)                                                            \
  do {                                                                         \
    ceb_test_checks++;                                                         \
    if (!(cond)) {                                                             \
      ceb_test_failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

#define CHECK_MSG(cond, ...)                                                   \
  do {                                                                         \
    ceb_test_checks++;                                                         \
    if (!(cond)) {                                                             \
      ceb_test_failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

#define CHECK_INT(a, b)                                                        \
  do {                                                                         \
    long long ceb_a_ = (long long)(a), ceb_b_ = (long long)(b);                \
    ceb_test_checks++;                                                         \
    if (ceb_a_ != ceb_b_) {                                                    \
      ceb_test_failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK_INT failed: %s == %lld, want %lld\n",      \
              __FILE__, __LINE__, #a, ceb_a_, ceb_b_);                         \
    }                                                                          \
  } while (0)

#define CHECK_STR(a, b)                                                        \
  do {                                                                         \
    const char *ceb_a_ = (a), *ceb_b_ = (b);                                   \
    ceb_test_checks++;                                                         \
    if (!ceb_a_ || !ceb_b_ || strcmp(ceb_a_, ceb_b_) != 0) {                   \
      ceb_test_failures++;                                                     \
      fprintf(stderr, "%s:%d: CHECK_STR failed: %s == \"%s\", want \"%s\"\n",  \
              __FILE__, __LINE__, #a, ceb_a_ ? ceb_a_ : "(null)",              \
              ceb_b_ ? ceb_b_ : "(null)");                                     \
    }                                                                          \
  } while (0)

/* Prints "name: N checks, M failed" and returns the process exit code. A
 * test that ran no check fails: a test that cannot fail is a defect. */
int ceb_test_done(const char *name);

/* Exits the test with one line naming the missing path when a third-party
 * data file or folder (tests/data/...) is not there, instead of letting the
 * test crash or report a confusing count later. */
void ceb_test_need_data(const char *path);

/* Monotonic milliseconds. */
int64_t ceb_test_now_ms(void);

/* The most of the n times (ms, any order) that lie in one window
 * [t, t + window_ms): a rate limit seen from the receiving side. Sorts a
 * copy (n at most 4096; more are not counted). */
size_t ceb_test_max_in_window(const int64_t *t, size_t n, int64_t window_ms);

/* Polls cond(arg) every few ms until it returns non-zero (returns 1) or
 * timeout_ms passes (returns 0). */
int ceb_test_wait(int (*cond)(void *arg), void *arg, int64_t timeout_ms);

/* Reads a whole file into a NUL-terminated malloc'd buffer; NULL on error. */
char *ceb_test_read_file(const char *path, size_t *len);

/* Prints the last max_bytes of the file at path on stderr between marker
 * lines (a failed test's log: CI keeps no temp directory). Nothing when the
 * file cannot be read. */
void ceb_test_print_tail(const char *path, size_t max_bytes);

/* A fresh empty directory under $TMPDIR (or /tmp), malloc'd path.
 * ceb_test_done removes it (and what is in it) when the test passed, and
 * names it on stderr when it failed (CEB_TEST_KEEP=1 keeps it always):
 * stop the processes writing into it before. */
char *ceb_test_tmpdir(const char *tag);

/* Removes a directory tree (ignores errors). */
void ceb_test_rmtree(const char *path);

#endif
