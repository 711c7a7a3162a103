/* Worker processes: see mapper_spawn.h. posix_spawn (not fork) because
 * the host is multi-threaded and a forked copy of it could inherit held
 * locks and its whole address space, which the worker's RLIMIT_AS would
 * count; a fresh image has neither. */
#include "mapping/mapper_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ceb/status.h>

#include "mapping/mapper_io.h"
#include "mapping/mapper_proto.h"

void cebm_proc_kill(cebm_proc *p, int *wstatus) {
  int st = -1;
  if (p->pid > 0) {
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
      ;
  }
  if (p->fd >= 0) close(p->fd);
  p->pid = 0;
  p->fd = -1;
  if (wstatus) *wstatus = st;
}

static int start(const char *path, cebm_proc *p, char *err, size_t errlen) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(err, errlen, "socketpair: %s", strerror(errno));
    return CEB_EIO;
  }
  /* dup2 onto fd 3 clears close-on-exec only when the fds differ */
  if (sv[1] == CEBM_FD) {
    int moved = fcntl(sv[1], F_DUPFD_CLOEXEC, CEBM_FD + 1);
    close(sv[1]);
    sv[1] = moved;
  }
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, sv[1], CEBM_FD);
  posix_spawnattr_init(&at);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  char *argv[] = {"cebridge-mapper", NULL};
  char *envp[] = {NULL}; /* no environment: $ENV is {}, no ~/.jq */
  pid_t pid;
  int rc = sv[1] >= 0 ? posix_spawn(&pid, path, &fa, &at, argv, envp) : EBADF;
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (sv[1] >= 0) close(sv[1]);
  if (rc != 0) {
    close(sv[0]);
    snprintf(err, errlen, "cannot start the mapping worker %s: %s", path,
             strerror(rc));
    return CEB_EIO;
  }
  fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
  p->pid = pid;
  p->fd = sv[0];
  return CEB_OK;
}

int cebm_spawn(const char *path, uint64_t memory_max, int64_t timeout_ms,
               const char *const *progs, const uint32_t *lens, size_t n,
               int64_t deadline_ms, cebm_proc *p, char **reasons, char *err,
               size_t errlen) {
  p->pid = 0;
  p->fd = -1;
  if (n > UINT32_MAX / 2) return CEB_EINVAL;
  int rc = start(path, p, err, errlen);
  if (rc != CEB_OK) return rc;
  uint64_t mib = memory_max / (1024 * 1024);
  uint32_t head[6] = {CEBM_MAGIC,
                      CEBM_VERSION,
                      reasons ? CEBM_INIT_CHECK : 0u,
                      (uint32_t)(mib > UINT32_MAX ? UINT32_MAX : mib),
                      (uint32_t)(timeout_ms > 3600000 ? 3600000 : timeout_ms),
                      (uint32_t)n};
  size_t niov = 1 + 2 * n;
  struct iovec *iov = calloc(niov, sizeof *iov);
  if (!iov) {
    cebm_proc_kill(p, NULL);
    return CEB_ENOMEM;
  }
  iov[0] = (struct iovec){head, sizeof head};
  for (size_t i = 0; i < n; i++) {
    iov[1 + 2 * i] = (struct iovec){(void *)&lens[i], sizeof lens[i]};
    iov[2 + 2 * i] = (struct iovec){(void *)progs[i], lens[i]};
  }
  rc = cebm_send(p->fd, iov, niov, deadline_ms);
  free(iov);
  int refused = 0;
  for (size_t i = 0; reasons && rc == CEB_OK && i < n; i++) {
    uint32_t a[2];
    rc = cebm_recv(p->fd, a, sizeof a, deadline_ms);
    if (rc != CEB_OK) break;
    if (a[1] > CEBM_MAX_REASON) {
      rc = CEB_EIO;
      break;
    }
    char why[CEBM_MAX_REASON + 1];
    rc = cebm_recv(p->fd, why, a[1], deadline_ms);
    why[a[1]] = '\0';
    if (a[0] != 0) refused = 1;
    reasons[i] = a[0] != 0 ? strdup(why) : NULL;
  }
  if (rc != CEB_OK) {
    int st;
    cebm_proc_kill(p, &st);
    snprintf(err, errlen,
             "the mapping worker %s %s while compiling (exit status %d)", path,
             rc == CEB_ETIMEOUT ? "timed out" : "failed", st);
    return CEB_EIO;
  }
  if (reasons) cebm_proc_kill(p, NULL);
  if (refused) {
    snprintf(err, errlen, "a mapping program does not compile");
    return CEB_ECONFIG;
  }
  return CEB_OK;
}
