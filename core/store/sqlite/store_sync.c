/* The syncer: durability off the committer's critical path.
 *
 * With synchronous=FULL, SQLite fsyncs the WAL inside every COMMIT, and the
 * single committer sat idle in that fsync for about 60 % of its time under
 * ingest (1.6 ms of a 2.8 ms group). Instead, the committer's connection
 * runs with synchronous=NORMAL (a commit writes the WAL, no fsync) and
 * hands the committed ops to this thread, which fdatasyncs the WAL file
 * and only then runs their done callbacks: the 202, the Kafka offset
 * commit, the MQTT acknowledgement. One fdatasync covers every group
 * committed before it started, and the committer writes the next group
 * meanwhile.
 *
 * Why this is as durable as FULL: an op's done runs only after an fsync
 * that began after its COMMIT returned, so its WAL frames are on disk.
 * SQLite's WAL checksums make recovery stop at the first frame that did
 * not reach the disk, which can only lose commits nobody was told about.
 * In NORMAL mode every checkpoint syncs the WAL before copying it, and the
 * WAL is only rewritten from the top after a complete checkpoint, so a
 * frame is never overwritten before it was synced. CEBS_NOSYNC ops
 * (claims, outcomes) skip the wait: losing them redelivers, at least
 * once. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ceb/status.h>

#include "log/ceb_log.h"
#include "store/sqlite/store_internal.h"

int (*cebs_fdatasync)(int fd) = fdatasync;

size_t cebs_op_finish(store_op *op) {
  size_t bounded = (op->flags & CEBS_BOUNDED) != 0;
  if (op->done) op->done(op->arg, op->status);
  free(op);
  return bounded;
}

void cebs_syncer_push(cebs_store *st, store_op *head, store_op *tail) {
  pthread_mutex_lock(&st->lock);
  if (st->sync_tail)
    st->sync_tail->next = head;
  else
    st->sync_head = head;
  st->sync_tail = tail;
  pthread_cond_signal(&st->sync_cond);
  pthread_mutex_unlock(&st->lock);
}

static void *syncer_main(void *arg) {
  cebs_store *st = arg;
  pthread_mutex_lock(&st->lock);
  for (;;) {
    while (!st->sync_head && !st->sync_stop)
      pthread_cond_wait(&st->sync_cond, &st->lock);
    if (!st->sync_head) break; /* stopping and nothing left */
    store_op *ops = st->sync_head;
    st->sync_head = st->sync_tail = NULL;
    st->syncing = 1;
    pthread_mutex_unlock(&st->lock);
    /* After a failed fdatasync the kernel may have dropped the dirty
     * pages as if written, and a later fdatasync "succeeds" without them:
     * so one failure is final. Nothing is acknowledged any more; a restart
     * lets SQLite's recovery decide what reached the disk. */
    int failed = st->sync_failed, err = 0;
    if (!failed && cebs_fdatasync(st->wal_fd) != 0) {
      err = errno;
      failed = 1;
    }
    pthread_mutex_lock(&st->lock);
    st->syncs++;
    st->syncing = 0;
    /* the committer waits for us only with ops queued (an idle one was
     * woken by the first op when no sync ran): waking it for nothing
     * cost a context switch per sync */
    if (st->head) pthread_cond_signal(&st->cond);
    int first = failed && !st->sync_failed;
    if (failed) st->sync_failed = 1;
    pthread_mutex_unlock(&st->lock);
    if (first)
      ceb_log_error("ALERT store: fdatasync of the WAL failed: %s; nothing "
                    "is acknowledged from now on (sources answer as "
                    "unavailable); restart the bridge",
                    strerror(err));
    size_t bounded = 0;
    for (store_op *op = ops, *next; op; op = next) {
      next = op->next;
      if (failed && op->status >= 0) op->status = CEB_EIO;
      bounded += cebs_op_finish(op);
    }
    pthread_mutex_lock(&st->lock);
    st->queued_bounded -= bounded; /* once per batch, not per op */
  }
  pthread_mutex_unlock(&st->lock);
  return NULL;
}

int cebs_syncer_start(cebs_store *st, const char *path, char *err,
                      size_t errlen) {
  char wal[4096];
  if ((size_t)snprintf(wal, sizeof wal, "%s-wal", path) >= sizeof wal) {
    snprintf(err, errlen, "store: path too long for the WAL name");
    return CEB_EINVAL;
  }
  /* The WAL exists once the connection wrote (the migrations did) and
   * stays, same file, while a connection is open. */
  st->wal_fd = open(wal, O_RDONLY | O_CLOEXEC);
  if (st->wal_fd < 0) {
    snprintf(err, errlen, "store: cannot open %s: %s", wal, strerror(errno));
    return CEB_EIO;
  }
  pthread_cond_init(&st->sync_cond, NULL);
  if (pthread_create(&st->syncer, NULL, syncer_main, st) != 0) {
    pthread_cond_destroy(&st->sync_cond);
    close(st->wal_fd);
    st->wal_fd = -1;
    snprintf(err, errlen, "store: cannot start the syncer thread");
    return CEB_EINTERNAL;
  }
  pthread_setname_np(st->syncer, "store-sync");
  st->syncer_started = 1;
  return CEB_OK;
}

void cebs_syncer_stop(cebs_store *st) {
  if (!st->syncer_started) return;
  pthread_mutex_lock(&st->lock);
  st->sync_stop = 1;
  pthread_cond_signal(&st->sync_cond);
  pthread_mutex_unlock(&st->lock);
  pthread_join(st->syncer, NULL);
  pthread_cond_destroy(&st->sync_cond);
  close(st->wal_fd);
  st->wal_fd = -1;
  st->syncer_started = 0;
}
