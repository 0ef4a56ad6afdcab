/* spank/flight_dir.h: LOOM_FLIGHT_DIR, the runtime's flight records
 * (docs/environment.md): which directory a job's tasks get, and the
 * removal of a cleanly ended step's node-local records, as the job's user. */
#ifndef LOOM_SPANK_FLIGHT_DIR_H
#define LOOM_SPANK_FLIGHT_DIR_H

#include <stddef.h>
#include <sys/types.h>

#include "plugstack_config.h"

struct loom_user_ids;

/* The directory for job (user uid) under the site's configuration: 1 and
 * the path in out when node-local (the plugin removes it), 2 when shared
 * (kept), 0 when the site turned it off, -1 with err. */
int loom_flight_dir_for(const struct loom_config *cfg, unsigned long job, unsigned long uid,
			char *out, size_t len, char *err, size_t errlen);

/* As root, before the user's tasks start: when other users may write the
 * parent of PATH (root's or the user's, sticky), make PATH a directory of
 * uid:gid, 0700, removing whatever else is at its name (said in note).
 * 1 made or already the user's, 0 nothing done (the parent is not shared:
 * the runtime makes it as the user), -1 with err. */
int loom_flight_dir_make(const char *path, uid_t uid, gid_t gid, char *note, size_t notelen,
			 char *err, size_t errlen);

/* As the job's user (a child that takes its ids; root never opens a path
 * the user controls): remove DIR/step<STEP>-rank*.flight (regular files,
 * links are not followed), then DIR when that left it empty. 0 (also when
 * DIR is absent), -1 with err. */
int loom_flight_clean_as(const char *dir, unsigned step, const struct loom_user_ids *ids,
			 char *err, size_t errlen);

#endif
