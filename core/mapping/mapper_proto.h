/* The wire format between the host (mapper_pool.c) and a mapping worker
 * process (mapper_worker.c, the executable cebridge-mapper), over one
 * AF_UNIX stream socket the host hands the worker as fd 3. Both ends are
 * the same build on the same machine: integers are host-order uint32_t.
 *
 * 1. host -> worker, once: INIT
 *      u32 MAGIC, u32 VERSION, u32 flags (CEBM_INIT_*), u32 memory_max_mib,
 *      u32 timeout_ms, u32 nprograms, then per program: u32 len, len bytes
 *      (the jq text).
 *    With CEBM_INIT_CHECK the worker compiles every program, answers per
 *    program, in order: u32 status (0 compiled, 1 refused), u32 len, len
 *    bytes (the reason; empty when compiled), and exits. Otherwise it
 *    answers nothing and serves batches, compiling each program the first
 *    time an item uses it (jq 1.6 compiles its builtins with every program,
 *    ~25 ms each: a worker replaced after a timeout is ready at once and
 *    pays only for the programs it runs).
 * 2. host -> worker, any number of times: BATCH
 *      u32 count, then per item: u32 program, u32 flags, u32 len, len bytes
 *      (the input document, a JSON text).
 *    The worker reads the whole batch before running anything (so the
 *    host's writes never wait on the worker's), then answers item by item,
 *    in order, each within about 1 ms of its finishing (answers are sent
 *    in bursts: at the batch's end, at 64 KiB, or 1 ms after the first one
 *    held, whichever comes first):
 *      u32 status (ST_*), u32 noutputs, u32 len, len bytes:
 *      ST_OK: noutputs JSON texts, each followed by a NUL;
 *      ST_ERROR: the reason (one line, no NUL), noutputs 0.
 *    ST_MEMORY comes alone from the worker's out-of-memory handler, which
 *    then exits: the item in progress hit mapping.memory_max. ST_COMPILED
 *    (no payload) may precede an item's answer: the program was compiled
 *    for it.
 * The host enforces the time limit: it kills a worker whose answer to an
 * item is late and sends the rest of the batch to a new one. */
#ifndef CEB_MAPPER_PROTO_H
#define CEB_MAPPER_PROTO_H

#include <stdint.h>

#define CEBM_MAGIC 0x4d424543u /* "CEBM" */
#define CEBM_VERSION 1u
#define CEBM_FD 3 /* the worker's end of the socket */

#define CEBM_INIT_CHECK 1u

/* Request flags (per item). */
#define CEBM_EXPAND 1u /* an output that is an array counts as its elements */
#define CEBM_TRUTH                                                             \
  2u /* answer one output: "true" when the first output is                     \
        neither false nor null, else "false" (none) */

/* Answer status. */
#define CEBM_ST_OK 0u
#define CEBM_ST_ERROR 1u
#define CEBM_ST_MEMORY 2u
/* Sent before an item's answer when the worker compiled the item's
 * program for it (its first use in this worker): the host's deadline for
 * the item starts again, so that the time limit covers the run only. */
#define CEBM_ST_COMPILED 3u

/* Bounds the worker applies to one item's answer. */
#define CEBM_MAX_OUTPUTS 10000u
#define CEBM_MAX_REASON 480u
/* Largest item text either way (a document in, the outputs out). */
#define CEBM_MAX_TEXT (64u * 1024u * 1024u)

#endif
