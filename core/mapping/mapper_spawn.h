/* Starting and stopping one worker process (the executable
 * cebridge-mapper): posix_spawn with an empty environment and the socket
 * as fd 3, then the INIT frame (mapper_proto.h) and the compile answers.
 * Callers own the cebm_proc; one thread at a time per proc. */
#ifndef CEB_MAPPER_SPAWN_H
#define CEB_MAPPER_SPAWN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct cebm_proc {
  pid_t pid; /* 0: none */
  int fd;    /* the host's end, non-blocking; -1: none */
} cebm_proc;

/* Spawns a worker and sends it programs[0..n) (lens[i] bytes each).
 * Without reasons: CEB_OK, *p serves (compiling each program at its first
 * use). With reasons (CEBM_INIT_CHECK): the worker compiles every program
 * and reasons[i] gets each refusal (malloc'd) or NULL; CEB_OK when all
 * compiled, CEB_ECONFIG when one was refused; the worker is gone after.
 * CEB_EIO: err says why the worker could not run. */
int cebm_spawn(const char *path, uint64_t memory_max, int64_t timeout_ms,
               const char *const *progs, const uint32_t *lens, size_t n,
               int64_t deadline_ms, cebm_proc *p, char **reasons, char *err,
               size_t errlen);

/* Kills the worker (SIGKILL), reaps it and closes the socket; *p is none
 * after. wstatus (may be NULL) gets waitpid's status, or -1. */
void cebm_proc_kill(cebm_proc *p, int *wstatus);

#endif
