#include "ha_load.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SRC "urn:nld:oin:00000001234567890000:systeem:ha"

struct ha_load {
  ha_load_opts o;
  pthread_t *threads;
  int started;
  atomic_int stop;
  atomic_long accepted;
  atomic_int finished; /* clients through their events */
  atomic_uchar *ok;    /* per event: got its 202 */
  pthread_mutex_t lock;
  ha_load_stats st;
};

typedef struct client_arg {
  ha_load *l;
  int c;
} client_arg;

static size_t discard(char *p, size_t s, size_t n, void *u) {
  (void)p;
  (void)u;
  return s * n;
}

static size_t header_cb(char *p, size_t s, size_t n, void *u) {
  int *retry_after = u;
  if (s * n > 12 && strncasecmp(p, "Retry-After:", 12) == 0) *retry_after = 1;
  return s * n;
}

static void count(ha_load *l, long status, int retry_after, CURLcode rc) {
  pthread_mutex_lock(&l->lock);
  if (rc != CURLE_OK)
    l->st.transport++;
  else if (status == 202)
    l->st.accepted++;
  else if (status == 503) {
    l->st.refused++;
    l->st.retry_after += retry_after;
  } else if (status == 409)
    l->st.conflict++;
  else if (!l->st.other++)
    snprintf(l->st.first_other, sizeof l->st.first_other, "HTTP %ld", status);
  pthread_mutex_unlock(&l->lock);
}

/* A pause between rounds over every bridge, so a client does not spin
 * while all of them are down (backoff, not a wait for a condition). */
static void backoff(void) {
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

static void *client(void *arg) {
  client_arg *a = arg;
  ha_load *l = a->l;
  int c = a->c;
  free(a);
  CURL *e = curl_easy_init();
  if (!e) return NULL;
  char body[1024], id[64], url[96], idem[96];
  int retry_after = 0;
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, header_cb);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &retry_after);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 10000L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  long step_ns = l->o.rate > 0 ? 1000000000L / l->o.rate : 0;
  for (int n = 0; n < l->o.per_client && !atomic_load(&l->stop); n++) {
    if (step_ns) { /* pacing: the load lasts, it does not race to its end */
      next.tv_nsec += step_ns;
      while (next.tv_nsec >= 1000000000L) {
        next.tv_sec++;
        next.tv_nsec -= 1000000000L;
      }
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    snprintf(id, sizeof id, "ha-%d-%d", c, n);
    int len = snprintf(body, sizeof body,
                       "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":"
                       "\"" SRC "\",\"type\":\"nl.edu.ha.posted\","
                       "\"subject\":\"k-%d-%d\",\"time\":"
                       "\"2026-11-26T12:00:00Z\",\"datacontenttype\":"
                       "\"application/json\",\"data\":{\"c\":%d,\"n\":%d}}",
                       id, c, n % l->o.keys, c, n);
    struct curl_slist *h =
        curl_slist_append(NULL, "Content-Type: application/cloudevents+json");
    if (l->o.idempotency_key) {
      /* a UUID v4 made of (client, n) */
      snprintf(idem, sizeof idem, "Idempotency-Key: %08x-0000-4000-8000-%012x",
               (unsigned)c, (unsigned)n);
      h = curl_slist_append(h, idem);
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)len);
    int t = (c + n) % l->o.nports;
    while (!atomic_load(&l->stop)) {
      int port = atomic_load(&l->o.ports[t]);
      if (port > 0) {
        snprintf(url, sizeof url, "http://127.0.0.1:%d/events", port);
        curl_easy_setopt(e, CURLOPT_URL, url);
        retry_after = 0;
        long status = 0;
        CURLcode rc = curl_easy_perform(e);
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
        count(l, status, retry_after, rc);
        if (rc == CURLE_OK && status == 202) {
          atomic_store(&l->ok[c * l->o.per_client + n], 1);
          atomic_fetch_add(&l->accepted, 1);
          break;
        }
        pthread_mutex_lock(&l->lock);
        l->st.retries++; /* another attempt follows, unless stopped */
        pthread_mutex_unlock(&l->lock);
      }
      t = (t + 1) % l->o.nports;
      if (t == (c + n) % l->o.nports) backoff();
    }
    curl_slist_free_all(h);
  }
  curl_easy_cleanup(e);
  atomic_fetch_add(&l->finished, 1);
  return NULL;
}

ha_load *ha_load_start(const ha_load_opts *o) {
  ha_load *l = calloc(1, sizeof *l);
  if (!l) return NULL;
  l->o = *o;
  l->threads = calloc((size_t)o->clients, sizeof *l->threads);
  l->ok = calloc((size_t)o->clients * o->per_client, sizeof *l->ok);
  pthread_mutex_init(&l->lock, NULL);
  if (!l->threads || !l->ok) {
    ha_load_free(l);
    return NULL;
  }
  for (int c = 0; c < o->clients; c++) {
    client_arg *a = malloc(sizeof *a);
    if (!a) break;
    a->l = l;
    a->c = c;
    if (pthread_create(&l->threads[c], NULL, client, a) != 0) {
      free(a);
      break;
    }
    l->started++;
  }
  return l;
}

int ha_load_finished(ha_load *l) {
  return atomic_load(&l->finished) >= l->o.clients;
}

long ha_load_accepted(ha_load *l) {
  return atomic_load(&l->accepted);
}

int ha_load_is_accepted(ha_load *l, int client, int n) {
  return atomic_load(&l->ok[client * l->o.per_client + n]);
}

void ha_load_stats_get(ha_load *l, ha_load_stats *out) {
  pthread_mutex_lock(&l->lock);
  *out = l->st;
  pthread_mutex_unlock(&l->lock);
}

void ha_load_stop(ha_load *l) {
  atomic_store(&l->stop, 1);
  for (int c = 0; c < l->started; c++)
    pthread_join(l->threads[c], NULL);
  l->started = 0;
}

void ha_load_free(ha_load *l) {
  if (!l) return;
  ha_load_stop(l);
  pthread_mutex_destroy(&l->lock);
  free(l->threads);
  free(l->ok);
  free(l);
}
