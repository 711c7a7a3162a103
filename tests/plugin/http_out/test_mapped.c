/* Webhook sink with an egress mapping's result (ABI 1.2, ceb_delivery.mapped):
 * the request carries the mapped body byte for byte with the mapping's
 * content type and headers; the sink's own headers win (Idempotency-Key and
 * webhook-id stay the delivery's, stable across attempts; configured
 * headers; no ce-*), the Standard Webhooks signature is over the mapped
 * body; a header that cannot be sent rejects the delivery
 * ("mapping.header"); mode = batch is refused with a mapping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ceb/ceb.h>

#include "ceb_test.h"
#include "config/ceb_core_spec.h"
#include "http_out.h"
#include "http_webhook_sig.h"
#include "ceb_test_rx.h"
#include "sink_fixture.h"

#define SECRET "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

static void respond(void *arg, const rx_request *req, size_t index,
                    rx_response *resp) {
  (void)arg;
  (void)req;
  (void)index;
  resp->status = 204;
}

static void check_signed(const rx_request *r) {
  const char *id = ceb_headers_get(&r->headers, "webhook-id");
  const char *ts = ceb_headers_get(&r->headers, "webhook-timestamp");
  const char *sig = ceb_headers_get(&r->headers, "webhook-signature");
  CHECK(id && ts && sig);
  const char *secret = SECRET;
  http_webhook_keys *k = NULL;
  CHECK_INT(http_webhook_keys_new(&secret, 1, &k, NULL), CEB_OK);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  CHECK_INT(
      http_webhook_verify(k, id, ts, sig, r->body, r->len, now.tv_sec, 300),
      CEB_OK);
  http_webhook_keys_free(k);
}

/* Delivers ev with mapping result mo, attempt n; the delivery is fx's. */
static ceb_delivery *deliver_mapped(sink_fx *fx, ceb_event *ev,
                                    const ceb_mapped_out *mo, uint32_t n) {
  ceb_delivery *d =
      ceb_fake_delivery_new(fx->fake, ev, "partners-out", NULL, n);
  CHECK(d &&
        d->struct_size >= offsetof(ceb_delivery, mapped) + sizeof(d->mapped));
  d->mapped = mo;
  fx->ds[fx->nds++] = d;
  CHECK_INT(http_sink_deliver(fx->state, d), CEB_OK);
  return d;
}

static void test_mapped_body(void) {
  rx_server *rx = rx_start(respond, NULL);
  char url[128];
  const char *kv[] = {"url",
                      fx_url(url, sizeof url, rx_port(rx), "/partner"),
                      "allow_insecure_http",
                      "true",
                      "mode",
                      "structured",
                      "webhook.secrets",
                      SECRET,
                      "headers.X-Static",
                      "configured",
                      NULL};
  sink_fx fx;
  CHECK_INT(fx_init(&fx, kv), CEB_OK);
  ceb_event *ev = fx_event("ev-map-1", "{\"outcome\":\"success\"}");
  const char body[] = "{\"type\":\"nl.edu.test.created\",\"timestamp\":"
                      "\"2026-11-26T10:00:00Z\",\"data\":{\"outcome\":"
                      "\"success\"}}";
  ceb_mapped_header hs[] = {
      {"X-Partner", "uva"},     {"Idempotency-Key", "forged"},
      {"webhook-id", "forged"}, {"X-Static", "forged"},
      {"ce-id", "forged"},      {"X-Empty", ""}};
  ceb_mapped_out mo = {
      sizeof mo, body, sizeof body - 1, "application/json", hs, 6, NULL, NULL};
  ceb_delivery *d1 = deliver_mapped(&fx, ev, &mo, 1);
  ceb_fake_settle st;
  CHECK(fx_settle(&fx, 0, &st, 10000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  /* the same delivery again (a retry): same key, signed again */
  deliver_mapped(&fx, ev, &mo, 2);
  CHECK(fx_settle(&fx, 1, &st, 10000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK(rx_wait(rx, 2, 10000));
  for (size_t i = 0; i < 2 && i < rx_count(rx); i++) {
    const rx_request *r = rx_get(rx, i);
    CHECK_STR(r->body, body);
    CHECK_INT(r->len, sizeof body - 1);
    CHECK_STR(ceb_headers_get(&r->headers, "Content-Type"), "application/json");
    CHECK_STR(ceb_headers_get(&r->headers, "X-Partner"), "uva");
    CHECK_STR(ceb_headers_get(&r->headers, "Idempotency-Key"),
              d1->idempotency_key);
    CHECK_STR(ceb_headers_get(&r->headers, "webhook-id"), d1->idempotency_key);
    CHECK_STR(ceb_headers_get(&r->headers, "X-Static"), "configured");
    CHECK(ceb_headers_get(&r->headers, "ce-id") == NULL);
    CHECK(ceb_headers_get(&r->headers, "ce-specversion") == NULL);
    size_t statics = 0;
    for (size_t k = 0; k < r->headers.count; k++)
      statics += strcasecmp(r->headers.items[k].name, "X-Static") == 0;
    CHECK_INT(statics, 1);
    CHECK(ceb_headers_get(&r->headers, "X-Empty") != NULL);
    check_signed(r);
  }

  /* a header name that is not a token cannot be sent: rejected, nothing
   * sent */
  ceb_mapped_header bad[] = {{"bad name", "x"}};
  ceb_mapped_out mb = {
      sizeof mb, body, sizeof body - 1, "application/json", bad, 1, NULL, NULL};
  deliver_mapped(&fx, ev, &mb, 1);
  CHECK(fx_settle(&fx, 2, &st, 10000));
  CHECK_INT(st.info.outcome, CEB_REJECT);
  CHECK_STR(st.reason, "mapping.header");
  CHECK_INT(rx_count(rx), 2);

  /* a string body is sent as its bytes with its content type */
  const char text[] = "plain text body";
  ceb_mapped_out mt = {
      sizeof mt, text, sizeof text - 1, "text/plain; charset=utf-8", NULL, 0,
      NULL,      NULL};
  deliver_mapped(&fx, ev, &mt, 1);
  CHECK(fx_settle(&fx, 3, &st, 10000));
  CHECK_INT(st.info.outcome, CEB_ACK);
  CHECK(rx_wait(rx, 3, 10000));
  if (rx_count(rx) >= 3) {
    const rx_request *r = rx_get(rx, 2);
    CHECK_STR(r->body, text);
    CHECK_STR(ceb_headers_get(&r->headers, "Content-Type"),
              "text/plain; charset=utf-8");
    check_signed(r);
  }
  ceb_event_unref(ev);
  fx_free(&fx);
  rx_stop(rx);
}

/* mode = batch cannot carry mapped bodies: refused at init with a line. */
static void test_batch_refused(void) {
  ceb_fake_host *fake = ceb_fake_host_new("partner", CEB_ROLE_SINK);
  ceb_config *cfg = cebi_config_new("partner");
  cebi_config_set_spec(cfg, http_sink_spec, ceb_spec_sink_common);
  cebi_config_put(cfg, "plugin", "http", "test.conf", 1);
  cebi_config_put(cfg, "url", "http://127.0.0.1:9/x", "test.conf", 2);
  cebi_config_put(cfg, "allow_insecure_http", "true", "test.conf", 3);
  cebi_config_put(cfg, "mode", "batch", "test.conf", 4);
  ceb_instance_info info = {sizeof info, "partner", CEB_ROLE_SINK, "/tmp", 1};
  void *state = NULL;
  CHECK_INT(http_sink_init(&fake->host, &fake->inst, &info, cfg, &state),
            CEB_ECONFIG);
  CHECK(state == NULL);
  info.mapped = 0; /* the same section without a mapping is fine */
  CHECK_INT(http_sink_init(&fake->host, &fake->inst, &info, cfg, &state),
            CEB_OK);
  http_sink_destroy(state);
  cebi_config_free(cfg);
  ceb_fake_host_free(fake);
}

int main(void) {
  test_mapped_body();
  test_batch_refused();
  return ceb_test_done("plugin_http_out_mapped");
}
