/* The loader accepts a well-formed plugin and rejects each defect with a
 * one-line reason naming it, leaving nothing loaded. ABI 1.1: a plugin
 * built for 1.0 still loads and delivers; a 1.1 plugin sees the journaled
 * bytes (ceb_delivery.encoded) from a 1.1 host and none from a delivery
 * shaped by a 1.0 host. ABI 1.2: the same for the egress mapping's result
 * (ceb_delivery.mapped) and ceb_instance_info.mapped. */
#include "ceb_test.h"
#include "config/ceb_config_build.h"
#include "loader/ceb_loader.h"

#include <dlfcn.h>
#include <string.h>

static void expect_reject(ceb_loader *l, const char *name, int want_status,
                          const char *want_text) {
  ceb_loaded_plugin *p = NULL;
  char err[512] = "";
  int st = ceb_loader_load(l, name, &p, err, sizeof err);
  CHECK_MSG(st == want_status, "%s: status %d (%s), want %d", name, st, err,
            want_status);
  CHECK(p == NULL);
  CHECK_MSG(strstr(err, want_text) != NULL, "%s: reason '%s' lacks '%s'", name,
            err, want_text);
  CHECK_MSG(strchr(err, '\n') == NULL, "%s: reason is not one line", name);
  /* Rejected libraries are closed: nothing stays mapped. */
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.so", CEB_ABI_DIR, name);
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  CHECK_MSG(h == NULL, "%s still loaded after rejection", name);
  if (h) dlclose(h);
}

static char g_detail[64];
static int g_settles;

static void fake_settle(ceb_instance *inst, ceb_delivery *d,
                        const ceb_settle_info *info) {
  (void)inst;
  (void)d;
  g_settles++;
  snprintf(g_detail, sizeof g_detail, "%s", info->detail ? info->detail : "");
}

/* Runs one delivery through plugin p (init, deliver, destroy) with a
 * delivery of struct_size dsize carrying "{...}" as its encoded bytes and
 * a mapped body "<a/>" with one header; returns the settle's detail. */
static const char *deliver_one(const ceb_loaded_plugin *p, uint32_t dsize) {
  ceb_host host = {.struct_size = sizeof host,
                   .abi_major = CEB_ABI_MAJOR,
                   .abi_minor = CEB_ABI_MINOR,
                   .settle = fake_settle};
  void *state = NULL;
  g_detail[0] = '\0';
  int settles = g_settles;
  CHECK_INT(p->desc->init(&host, (ceb_instance *)&host, NULL, NULL, &state),
            CEB_OK);
  ceb_event *ev = ceb_event_new();
  static const char json[] = "{\"specversion\":\"1.0\"}";
  ceb_delivery d = {.struct_size = dsize,
                    .event = ev,
                    .route = "r",
                    .attempt = 1,
                    .encoded = json,
                    .encoded_len = sizeof json - 1};
  static const ceb_mapped_header hdr = {"X-Partner", "1"};
  static const ceb_mapped_out mapped = {.struct_size = sizeof mapped,
                                        .body = "<a/>",
                                        .body_len = 4,
                                        .content_type = "application/xml",
                                        .headers = &hdr,
                                        .nheaders = 1};
  d.mapped = &mapped;
  CHECK_INT(p->desc->deliver(state, &d), CEB_OK);
  CHECK_INT(g_settles, settles + 1);
  p->desc->destroy(state);
  ceb_event_unref(ev);
  return g_detail;
}

int main(void) {
  ceb_loader *l = ceb_loader_new(CEB_ABI_DIR);
  CHECK(l != NULL);

  ceb_loaded_plugin *good = NULL, *again = NULL;
  char err[512] = "";
  CHECK_INT(ceb_loader_load(l, "abigood", &good, err, sizeof err), CEB_OK);
  CHECK(good && good->desc && strcmp(good->desc->name, "abigood") == 0);
  CHECK(good && (good->desc->roles & CEB_ROLE_SINK));
  /* Cached: one handle per plugin name. */
  CHECK_INT(ceb_loader_load(l, "abigood", &again, err, sizeof err), CEB_OK);
  CHECK(again == good);
  CHECK_INT(good->desc->abi_minor, 4);
  /* 1.4 plugin, 1.4 host: the journaled bytes and the mapped body */
  CHECK_STR(deliver_one(good, sizeof(ceb_delivery)),
            "encoded 21 { mapped 4 application/xml 1");
  /* a delivery as a 1.1 host builds it: no mapped member read */
  CHECK_STR(deliver_one(good, CEB_DELIVERY_SIZE_1_1), "encoded 21 { unmapped");
  /* a delivery as a 1.0 host builds it: not read past its end */
  CHECK_STR(deliver_one(good, CEB_DELIVERY_SIZE_1_0), "no encoded unmapped");
  /* ABI 1.2: info.mapped reaches the plugin (the test plugin refuses a
   * mapped instance); an info as a 1.1 host builds it is not read past
   * its end, whatever lies behind it. */
  {
    ceb_instance_info info = {.struct_size = sizeof info,
                              .name = "s",
                              .role = CEB_ROLE_SINK,
                              .mapped = 1};
    void *st = NULL;
    CHECK_INT(good->desc->init(NULL, NULL, &info, NULL, &st), CEB_EUNSUPPORTED);
    info.struct_size = offsetof(ceb_instance_info, data_dir) + sizeof(char *);
    CHECK_INT(good->desc->init(NULL, NULL, &info, NULL, &st), CEB_OK);
    good->desc->destroy(st);
    CHECK(!ceb_instance_mapped(NULL));
  }

  /* Minor versions: an older plugin loads, a newer one is refused. */
  ceb_loaded_plugin *old = NULL, *binds = NULL;
  CHECK_INT(ceb_loader_load(l, "minor0", &old, err, sizeof err), CEB_OK);
  CHECK(old && old->desc->abi_minor == 0 && CEB_ABI_MINOR >= 1);
  /* the 1.0 plugin (1.0 descriptor) delivers through a 1.1 host */
  CHECK(old && old->desc->struct_size == CEB_PLUGIN_SIZE_1_0);
  if (old) CHECK_STR(deliver_one(old, sizeof(ceb_delivery)), "1.0");
  expect_reject(l, "nextminor", CEB_EABI, "newer than this host");
  /* a 1.2 plugin (before submit_mapped_batch) loads in a 1.3 host */
  ceb_loaded_plugin *m2 = NULL;
  CHECK_INT(ceb_loader_load(l, "minor2", &m2, err, sizeof err), CEB_OK);
  CHECK(m2 && m2->desc->abi_minor == 2 && CEB_ABI_MINOR == 4);
  /* a 1.3 plugin (before submit_mapped_async) loads in a 1.4 host */
  ceb_loaded_plugin *m3 = NULL;
  CHECK_INT(ceb_loader_load(l, "minor3", &m3, err, sizeof err), CEB_OK);
  CHECK(m3 && m3->desc->abi_minor == 3);
  /* ABI 1.1: a plugin using ceb_config_bind resolves it in libceb (RTLD_NOW)
   * and its init sees the bound fields equal the host's parsed values. */
  CHECK_INT(ceb_loader_load(l, "binds", &binds, err, sizeof err), CEB_OK);
  CHECK_MSG(binds != NULL, "binds: %s", err);
  if (binds) {
    CHECK_INT(binds->desc->abi_minor, CEB_ABI_MINOR);
    ceb_config *cfg = cebi_config_new("b");
    CHECK(cfg != NULL);
    cebi_config_set_spec(cfg, binds->desc->config_sink, NULL);
    void *state = NULL;
    /* An unset PATH without default binds NULL: init refuses. */
    CHECK_INT(binds->desc->init(NULL, NULL, NULL, cfg, &state), CEB_ECONFIG);
    CHECK_INT(cebi_config_put(cfg, "path", "/srv/x", "d/a.conf", 7), CEB_OK);
    CHECK_INT(binds->desc->init(NULL, NULL, NULL, cfg, &state), CEB_OK);
    binds->desc->destroy(state);
    cebi_config_free(cfg);
  }

  expect_reject(l, "badmajor", CEB_EABI, "major versions must match");
  expect_reject(l, "newerminor", CEB_EABI, "newer than this host");
  expect_reject(l, "shortstruct", CEB_EABI, "short struct");
  expect_reject(l, "noinit", CEB_EABI, "'init'");
  expect_reject(l, "nodeliver", CEB_EABI, "'deliver' (required by the sink");
  expect_reject(l, "nosymbol", CEB_EABI, "does not export ceb_plugin_query");
  expect_reject(l, "declines", CEB_EABI, "declined ABI");
  expect_reject(l, "wrongname", CEB_EABI, "expected 'wrongname'");
  expect_reject(l, "undefined", CEB_EABI, "abi_symbol_nobody_defines");
  expect_reject(l, "notelf", CEB_EABI, "cannot load");
  expect_reject(l, "missing", CEB_ENOTFOUND, "not found");
  expect_reject(l, "../etc/passwd", CEB_EINVAL, "invalid plugin name");

  /* The pure check, on descriptors built here. */
  ceb_plugin d = *good->desc;
  CHECK_INT(ceb_plugin_check(&d, err, sizeof err), CEB_OK);
  d.roles = 0;
  CHECK_INT(ceb_plugin_check(&d, err, sizeof err), CEB_EABI);
  CHECK(strstr(err, "roles") != NULL);
  d = *good->desc;
  d.roles = CEB_ROLE_CONTRACTS;
  CHECK_INT(ceb_plugin_check(&d, err, sizeof err), CEB_EABI);
  CHECK(strstr(err, "'sync'") != NULL);
  d = *good->desc;
  d.struct_size = 4;
  CHECK_INT(ceb_plugin_check(&d, err, sizeof err), CEB_EABI);

  char roles[64];
  CHECK_STR(ceb_roles_str(CEB_ROLE_SOURCE | CEB_ROLE_SINK | CEB_ROLE_TOPICS,
                          roles, sizeof roles),
            "source,sink,topics");
  CHECK_STR(
      ceb_roles_str(CEB_ROLE_SINK | CEB_ROLE_MAPPINGS, roles, sizeof roles),
      "sink,mappings");
  /* ABI 1.2: a sink that takes mappings is a known role */
  d = *good->desc;
  d.roles = CEB_ROLE_SINK | CEB_ROLE_MAPPINGS;
  CHECK_INT(ceb_plugin_check(&d, err, sizeof err), CEB_OK);

  /* ABI 1.2 host services (queue_*, lead): CEB_HOST_HAS sees them in a
   * 1.2 table and not in a table a 1.1 host built (it ends before
   * submit_mapped), whatever lies behind it; they follow submit_mapped in
   * declaration order, after every member a 1.1 plugin reads. */
  {
    ceb_host hh = {.struct_size = sizeof hh,
                   .abi_major = CEB_ABI_MAJOR,
                   .abi_minor = CEB_ABI_MINOR,
                   .queue_append = (void *)1,
                   .queue_fetch = (void *)1,
                   .queue_commit = (void *)1,
                   .queue_stats = (void *)1,
                   .queue_wake = (void *)1,
                   .lead = (void *)1};
    ceb_host *h = &hh; /* CEB_HOST_HAS takes a pointer variable */
    CHECK(CEB_HOST_HAS(h, queue_append) && CEB_HOST_HAS(h, lead));
    h->struct_size = (uint32_t)offsetof(ceb_host, submit_mapped);
    CHECK(!CEB_HOST_HAS(h, queue_append) && !CEB_HOST_HAS(h, queue_fetch));
    CHECK(!CEB_HOST_HAS(h, queue_commit) && !CEB_HOST_HAS(h, lead));
    CHECK(offsetof(ceb_host, queue_append) > offsetof(ceb_host, submit_mapped));
    CHECK(offsetof(ceb_host, lead) > offsetof(ceb_host, queue_wake));
    h->struct_size = sizeof hh;
    h->lead = NULL;
    CHECK(!CEB_HOST_HAS(h, lead)); /* present but unset */
    /* the register's readers (contract_get, contract_list) come after
     * lead: a table that ends at lead (an earlier 1.2 host) has neither */
    h->contract_get = (void *)1;
    h->contract_list = (void *)1;
    CHECK(CEB_HOST_HAS(h, contract_get) && CEB_HOST_HAS(h, contract_list));
    CHECK(offsetof(ceb_host, contract_get) > offsetof(ceb_host, lead));
    h->struct_size = (uint32_t)(offsetof(ceb_host, lead) + sizeof(h->lead));
    CHECK(!CEB_HOST_HAS(h, contract_get) && !CEB_HOST_HAS(h, contract_list));
    /* the job status (event_status) comes after contract_list: a table
     * that ends there has none */
    h->struct_size = sizeof hh;
    h->event_status = (void *)1;
    CHECK(CEB_HOST_HAS(h, event_status));
    CHECK(offsetof(ceb_host, event_status) > offsetof(ceb_host, contract_list));
    h->struct_size =
        (uint32_t)(offsetof(ceb_host, contract_list) + sizeof(void *));
    CHECK(!CEB_HOST_HAS(h, event_status) && CEB_HOST_HAS(h, contract_list));
    /* ABI 1.3: submit_mapped_batch is appended after every 1.2 member: a
     * 1.2 host's table (ending at event_status) has none, whatever lies
     * behind it */
    h->struct_size = sizeof hh;
    h->submit_mapped_batch = (void *)1;
    CHECK(CEB_HOST_HAS(h, submit_mapped_batch));
    CHECK(offsetof(ceb_host, submit_mapped_batch) >
          offsetof(ceb_host, event_status));
    CHECK(sizeof(ceb_host) >=
          offsetof(ceb_host, submit_mapped_batch) + sizeof(void *));
    h->struct_size =
        (uint32_t)(offsetof(ceb_host, event_status) + sizeof(void *));
    CHECK(!CEB_HOST_HAS(h, submit_mapped_batch) &&
          CEB_HOST_HAS(h, event_status));
    /* ceb_mapped_doc starts with its struct_size, so a later minor can
     * append to it (the host refuses a document shorter than its own) */
    CHECK_INT(offsetof(ceb_mapped_doc, struct_size), 0);
    /* 1.3: callbacks follows submit_mapped_batch; a 1.2 host's table ends
     * before both, so a source sees no callbacks there */
    h->callbacks = (int (*)(ceb_instance *))(void *)1;
    h->struct_size = sizeof hh;
    CHECK(CEB_HOST_HAS(h, callbacks));
    CHECK(offsetof(ceb_host, callbacks) >
          offsetof(ceb_host, submit_mapped_batch));
    h->struct_size =
        (uint32_t)(offsetof(ceb_host, event_status) + sizeof(void *));
    CHECK(!CEB_HOST_HAS(h, callbacks) && CEB_HOST_HAS(h, event_status));
    /* 1.4: submit_mapped_async is appended after callbacks; a 1.3 host's
     * table (ending at callbacks) has none, whatever lies behind it, and
     * a source falls back to submit_mapped */
    h->submit_mapped_async = (void *)1;
    h->struct_size = sizeof hh;
    CHECK(CEB_HOST_HAS(h, submit_mapped_async));
    CHECK(offsetof(ceb_host, submit_mapped_async) >
          offsetof(ceb_host, callbacks));
    CHECK_INT(sizeof(ceb_host),
              offsetof(ceb_host, submit_mapped_async) + sizeof(void *));
    h->struct_size = (uint32_t)(offsetof(ceb_host, callbacks) + sizeof(void *));
    CHECK(!CEB_HOST_HAS(h, submit_mapped_async) && CEB_HOST_HAS(h, callbacks));
  }
  {
    /* ceb_submit_result: the 1.4 refusal members follow every 1.0 member,
     * so a 1.3 host's result (struct_size up to duplicates) is a prefix a
     * 1.4 plugin recognises by its struct_size (http_in_submit.c) */
    CHECK(offsetof(ceb_submit_result, refused) >=
          offsetof(ceb_submit_result, duplicates) + sizeof(size_t));
    CHECK(offsetof(ceb_submit_result, failed_index) >
          offsetof(ceb_submit_result, violations));
    CHECK_INT(offsetof(ceb_submit_result, struct_size), 0);
  }
  {
    /* ceb_submit_opts.key_limited (1.2) is appended after the 1.0 members:
     * the host reads a pre-1.2 plugin's opts (struct_size up to
     * failed_index) and writes key_limited only when struct_size covers
     * it (runtime_submit.c) */
    CHECK(offsetof(ceb_submit_opts, key_limited) >=
          offsetof(ceb_submit_opts, failed_index) + sizeof(size_t *));
    /* 1.3: callback follows key_limited; the host reads it only when
     * struct_size covers it (a 1.2 plugin's opts end before) */
    CHECK(offsetof(ceb_submit_opts, callback) >=
          offsetof(ceb_submit_opts, key_limited) + sizeof(int *));
    CHECK_INT(sizeof(ceb_submit_opts),
              offsetof(ceb_submit_opts, callback) + sizeof(char *));
  }

  /* ceb_settle_info: the 1.2 response body follows every 1.0 member, so a
   * 1.0 plugin's shorter struct (CEB_SETTLE_INFO_SIZE_1_0) is a prefix */
  CHECK(CEB_SETTLE_INFO_SIZE_1_0 <= offsetof(ceb_settle_info, body));
  CHECK(offsetof(ceb_settle_info, body_len) > offsetof(ceb_settle_info, body));
  CHECK(CEB_SETTLE_INFO_SIZE_1_0 ==
        offsetof(ceb_settle_info, flags) + sizeof(unsigned));

  ceb_loader_free(l);
  return ceb_test_done("abi_loader");
}
