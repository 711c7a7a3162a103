/* Internals shared by the files of the mqtt plugin. */
#ifndef CEB_MQTT_PLUGIN_H
#define CEB_MQTT_PLUGIN_H

#include <ceb/ceb.h>

extern const ceb_config_spec mqtt_spec_source[];
extern const ceb_config_spec mqtt_spec_sink[];

/* Source role (mqtt_source.c): the ceb_plugin lifecycle for [source x]. */
int mqtt_source_init(const ceb_host *host, ceb_instance *inst,
                     const ceb_instance_info *info, const ceb_config *cfg,
                     void **state);
int mqtt_source_start(void *state);
int mqtt_source_drain(void *state, int64_t deadline_ms);
void mqtt_source_destroy(void *state);

/* Sink role (mqtt_sink.c). */
int mqtt_sink_init(const ceb_host *host, ceb_instance *inst,
                   const ceb_instance_info *info, const ceb_config *cfg,
                   void **state);
int mqtt_sink_start(void *state);
int mqtt_sink_drain(void *state, int64_t deadline_ms);
void mqtt_sink_destroy(void *state);
int mqtt_sink_deliver(void *state, ceb_delivery *d);

/* Expands ${attr} in tmpl from ev's attributes into a new topic name
 * (free()). NULL with *err set to a static reason when an attribute is
 * missing or the result is not a valid MQTT topic name. */
char *mqtt_topic_expand(const char *tmpl, const ceb_event *ev,
                        const char **err);
/* 1 when name is a valid topic name to publish to (non-empty UTF-8 without
 * wildcards or NUL, at most 65535 bytes). */
int mqtt_topic_valid(const char *name);
/* 1 when filter is a valid subscription filter; a shared subscription
 * ($share/<name>/<filter>) needs a valid share name and a valid filter. */
int mqtt_filter_valid(const char *filter);
/* 1 when name may be an MQTT 5 share name (non-empty UTF-8 without '/',
 * '+' or '#'). */
int mqtt_share_name_valid(const char *name);
/* n new strings "$share/<group>/<filters[i]>" (free with
 * mqtt_share_filters_free(out, n)); NULL when out of memory. */
char **mqtt_share_filters(const char *group, const char *const *filters,
                          size_t n);
void mqtt_share_filters_free(char **filters, size_t n);

#endif
