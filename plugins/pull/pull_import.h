/* Moving a pull queue file of an earlier version (<data_dir>/queue.db, the
 * queue the plugin kept itself before the queue moved into the host's
 * store) into the store, so an upgrade loses no event a consumer has not
 * committed. */
#ifndef PULL_IMPORT_H
#define PULL_IMPORT_H

#include <ceb/plugin.h>

/* Control thread (init). When data_dir holds queue.db: appends its events
 * not committed, in order, to the instance's queue in the host's store
 * (ceb_host.queue_append, under their own keys: a second run after a crash
 * midway stores none twice), waits until each is durable, then renames the
 * file to queue.db.imported so it is not read again. CEB_OK (also when
 * there is no file), or < 0 with a log line: the file stays and the next
 * start tries again. */
int pull_import(const ceb_host *host, ceb_instance *inst, const char *data_dir);

#endif
