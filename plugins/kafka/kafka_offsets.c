/* The Kafka source's offset book (kafka_offsets.h): FIFOs of records in
 * offset order and the durable-prefix watermark. Callers hold the source's
 * lock. */
#include "kafka_offsets.h"

#include <stdlib.h>
#include <string.h>

ko_part *ko_part_find(ko_book *b, const char *topic, int32_t partition) {
  for (ko_part *sp = b->parts; sp; sp = sp->next)
    if (sp->partition == partition && !strcmp(sp->topic, topic)) return sp;
  return NULL;
}

ko_part *ko_part_get(ko_book *b, const char *topic, int32_t partition) {
  ko_part *sp = ko_part_find(b, topic, partition);
  if (sp) return sp;
  sp = calloc(1, sizeof *sp);
  if (!sp || !(sp->topic = strdup(topic))) {
    free(sp);
    return NULL;
  }
  sp->partition = partition;
  sp->commit_to = sp->committed = -1;
  sp->next = b->parts;
  b->parts = sp;
  return sp;
}

ko_rec *ko_rec_new(ko_book *b, int64_t offset) {
  ko_rec *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->book = b;
  r->offset = offset;
  return r;
}

void ko_append(ko_part *sp, ko_rec *r) {
  r->next = NULL;
  if (sp->tail)
    sp->tail->next = r;
  else
    sp->head = r;
  sp->tail = r;
  sp->npending++;
  r->book->inflight += r->state == KO_INFLIGHT;
}

/* Unlinks the records at or after `from` (all when from < 0) from the
 * FIFO and returns them, in order. */
static ko_rec *cut_from(ko_part *sp, int64_t from) {
  ko_rec **pp = &sp->head;
  while (*pp && from >= 0 && (*pp)->offset < from)
    pp = &(*pp)->next;
  ko_rec *r = *pp;
  *pp = NULL;
  sp->tail = NULL;
  for (ko_rec *x = sp->head; x; x = x->next)
    sp->tail = x;
  return r;
}

void ko_drop_from(ko_part *sp, int64_t from) {
  ko_rec *r = cut_from(sp, from);
  while (r) {
    ko_rec *next = r->next;
    sp->npending--;
    r->book->inflight -= r->state == KO_INFLIGHT;
    free(r);
    r = next;
  }
}

void ko_detach_from(ko_part *sp, int64_t from) {
  ko_rec *r = cut_from(sp, from);
  while (r) {
    ko_rec *next = r->next;
    sp->npending--;
    if (r->state == KO_INFLIGHT) {
      r->detached = 1; /* its settle frees it */
    } else {
      if (r->state == KO_FAILED) r->book->nfailed--;
      free(r);
    }
    r = next;
  }
}

void ko_settle(ko_rec *r, int durable) {
  r->book->inflight--;
  if (r->detached) {
    free(r);
    return;
  }
  r->state = durable ? KO_DURABLE : KO_FAILED;
  r->book->nfailed += !durable;
}

int ko_pop_durable(ko_part *sp) {
  int moved = 0;
  while (sp->head && sp->head->state == KO_DURABLE) {
    ko_rec *r = sp->head;
    sp->head = r->next;
    if (!sp->head) sp->tail = NULL;
    sp->commit_to = r->offset + 1;
    sp->npending--;
    free(r);
    moved = 1;
  }
  return moved;
}

int ko_commit_point(ko_part *sp, int64_t *to) {
  ko_pop_durable(sp);
  if (sp->commit_to < 0 || sp->commit_to == sp->committed) return 0;
  *to = sp->committed = sp->commit_to;
  return 1;
}

void ko_commit_failed(ko_part *sp, int64_t offset) {
  if (offset < 0 || sp->committed == offset) sp->committed = -1;
}

int ko_has_inflight(const ko_part *sp) {
  for (const ko_rec *r = sp->head; r; r = r->next)
    if (r->state == KO_INFLIGHT) return 1;
  return 0;
}

int64_t ko_first_failed(const ko_part *sp) {
  for (const ko_rec *r = sp->head; r; r = r->next)
    if (r->state == KO_FAILED) return r->offset;
  return -1;
}

void ko_reset(ko_book *b, ko_part *sp, int assigned) {
  ko_detach_from(sp, -1);
  sp->assigned = assigned;
  b->npaused -= sp->paused != KO_PAUSE_NONE;
  sp->paused = KO_PAUSE_NONE;
  sp->commit_to = sp->committed = -1;
}

size_t ko_book_free(ko_book *b) {
  for (ko_part *sp = b->parts; sp; sp = sp->next)
    ko_detach_from(sp, -1);
  if (b->inflight) return b->inflight;
  while (b->parts) {
    ko_part *sp = b->parts;
    b->parts = sp->next;
    free(sp->topic);
    free(sp);
  }
  return 0;
}
