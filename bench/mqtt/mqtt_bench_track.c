#include "mqtt_bench_track.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct mb_track {
  pthread_mutex_t lock;
  int keys, streams;
  long *last; /* [key * streams + stream]: latest seq, -1 none */
  int64_t *lat;
  long nlat, caplat;
  mb_counts c;
};

int64_t mb_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

mb_track *mb_track_new(int keys, int streams, long expect) {
  if (keys < 1 || streams < 1 || (long)keys * streams > 16L * 1024 * 1024 ||
      expect < 1)
    return NULL;
  mb_track *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->keys = keys;
  t->streams = streams;
  t->caplat = expect;
  t->last = malloc(sizeof *t->last * (size_t)keys * (size_t)streams);
  t->lat = malloc(sizeof *t->lat * (size_t)expect);
  if (!t->last || !t->lat) {
    mb_track_free(t);
    return NULL;
  }
  for (long i = 0; i < (long)keys * streams; i++)
    t->last[i] = -1;
  pthread_mutex_init(&t->lock, NULL);
  return t;
}

void mb_track_free(mb_track *t) {
  if (!t) return;
  if (t->last && t->lat) pthread_mutex_destroy(&t->lock);
  free(t->last);
  free(t->lat);
  free(t);
}

/* Parses the decimal number at s[0..len); -1 when it is not one. */
static long parse_num(const char *s, int len) {
  if (len <= 0 || len > 18) return -1;
  long v = 0;
  for (int i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

void mb_track_record(mb_track *t, const char *id, int id_len, const char *key,
                     int key_len, const char *sent, int sent_len) {
  int64_t now = mb_now_us();
  long stream = -1, seq = -1, k = -1, st = -1;
  if (id && id_len < 0) id_len = (int)strlen(id);
  if (key && key_len < 0) key_len = (int)strlen(key);
  if (sent && sent_len < 0) sent_len = (int)strlen(sent);
  if (id && id_len > 0) { /* PREFIX-STREAM-SEQ: the last two numbers */
    int d2 = id_len - 1, d1;
    while (d2 >= 0 && id[d2] != '-')
      d2--;
    d1 = d2 - 1;
    while (d1 >= 0 && id[d1] != '-')
      d1--;
    if (d1 >= 0) {
      stream = parse_num(id + d1 + 1, d2 - d1 - 1);
      seq = parse_num(id + d2 + 1, id_len - d2 - 1);
    }
  }
  if (key && key_len > 4 && !memcmp(key, "key-", 4))
    k = parse_num(key + 4, key_len - 4);
  if (sent) st = parse_num(sent, sent_len);
  pthread_mutex_lock(&t->lock);
  if (!t->c.first_us) t->c.first_us = now;
  t->c.last_us = now;
  if (stream < 0 || stream >= t->streams || seq < 0 || k < 0 || k >= t->keys ||
      st < 0) {
    t->c.unparsable++;
  } else {
    long *last = &t->last[k * t->streams + stream];
    if (seq > *last) {
      *last = seq;
      t->c.delivered++;
      if (t->nlat < t->caplat) t->lat[t->nlat++] = now - st;
    } else if (seq == *last) {
      t->c.duplicates++;
    } else {
      if (!t->c.disorder) {
        t->c.bad_key = k;
        t->c.bad_stream = stream;
        t->c.bad_seq = seq;
        t->c.bad_last = *last;
      }
      t->c.disorder++;
    }
  }
  pthread_mutex_unlock(&t->lock);
}

void mb_track_snapshot(mb_track *t, mb_counts *out) {
  pthread_mutex_lock(&t->lock);
  *out = t->c;
  pthread_mutex_unlock(&t->lock);
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

int mb_track_latency(mb_track *t, const double *p, int64_t *out, int n) {
  pthread_mutex_lock(&t->lock);
  long m = t->nlat;
  int64_t *copy = m ? malloc(sizeof *copy * (size_t)m) : NULL;
  if (copy) memcpy(copy, t->lat, sizeof *copy * (size_t)m);
  pthread_mutex_unlock(&t->lock);
  if (!copy) return -1;
  qsort(copy, (size_t)m, sizeof *copy, cmp_i64);
  for (int i = 0; i < n; i++) {
    long idx = (long)(p[i] / 100.0 * (double)m);
    if (idx >= m) idx = m - 1;
    if (idx < 0) idx = 0;
    out[i] = copy[idx];
  }
  free(copy);
  return 0;
}
