/* Child processes and HTTP calls for end-to-end tests: start the real
 * cebridge binary (or a helper such as the Kafka mock) on a temporary
 * config, wait for it with deadlines, stop it with SIGTERM or kill -9.
 * Single test thread. */
#ifndef CEB_TEST_PROC_H
#define CEB_TEST_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ceb_proc {
  pid_t pid;
  char log_path[512]; /* stdout+stderr of the child */
} ceb_proc;

/* Starts argv[0] with argv (NULL-terminated), output to log_path. */
int ceb_proc_start(ceb_proc *p, char *const argv[], const char *log_path);
/* Sends sig; waits up to timeout_ms for exit. Returns the exit status
 * (WEXITSTATUS, or 128+signal), -1 on timeout (the child is then killed). */
int ceb_proc_stop(ceb_proc *p, int sig, int64_t timeout_ms);
/* 1 while the child runs. */
int ceb_proc_alive(ceb_proc *p);

/* Starts `cebridge run -c confdir` (the built binary) with stdout and stderr
 * written to log_path (truncated). Returns the child's pid, or -1. */
pid_t ceb_test_bridge_start(const char *confdir, const char *log_path);
/* Sends sig (0: none) to pid and waits up to timeout_ms for it to exit;
 * kills it with SIGKILL past that. Returns the exit status, or -1 when it
 * was killed by a signal or had to be killed. */
int ceb_test_pid_stop(pid_t pid, int sig, int64_t timeout_ms);

/* Writes text to dir/name (creating it). 0 on success. */
int ceb_test_write_file(const char *dir, const char *name, const char *text);
/* Waits until path exists with a positive integer in it; returns it or -1. */
int ceb_test_wait_port_file(const char *path, int64_t timeout_ms);
/* Removes a directory tree (test temp dirs). */
void ceb_test_rmtree(const char *path);

/* A TCP connection to 127.0.0.1:port whose reads and writes give up after
 * timeout_s seconds (raw requests: slow or malformed clients), or -1. */
int ceb_test_tcp_connect(int port, int timeout_s);
/* Writes all n bytes (no SIGPIPE): 0, or -1 when the peer went away. */
int ceb_test_send_all(int fd, const char *p, size_t n);

/* One HTTP request with libcurl. headers: NULL-terminated "Name: value"
 * strings (may be NULL). *body_out is malloc'd (NUL-terminated), may be NULL
 * to discard. Returns the HTTP status, or -1 on a transport error. */
int ceb_test_http(const char *method, const char *url,
                  const char *const *headers, const char *body, size_t body_len,
                  char **body_out);

#endif
