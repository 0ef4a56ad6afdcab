/* spank/topo_cache.h: the node's topology cached as hwloc XML in one
 * root-owned file (plugstack topology_cache=, default
 * /var/lib/loom/topology.xml), written once per boot by the first step
 * that binds, so that later steps load a small XML document instead of
 * discovering the machine (sysfs, PCI) again. */
#ifndef LOOM_SPANK_TOPO_CACHE_H
#define LOOM_SPANK_TOPO_CACHE_H

#include <stddef.h>

#include "topology.h"

enum loom_topo_cache_rc {
	LOOM_TOPO_CACHE_REUSED,         /* t from the cache */
	LOOM_TOPO_CACHE_WRITTEN,        /* t discovered live, the cache (re)written */
	LOOM_TOPO_CACHE_UNWRITTEN,      /* t discovered live, the cache not written (note) */
	LOOM_TOPO_CACHE_REFUSED,        /* t not filled: the cache is unsafe or unusable (note) */
};

/* What the cache is valid for: the boot (boot_id), the node name, the
 * hwloc version, the online CPUs and the number of PCI devices. -1 when
 * the boot id cannot be read. */
int loom_topo_cache_key(char *key, size_t len);

/* Fill t from the cache at PATH (absolute) when it is there, safe and made
 * for this key; else discover the node and (re)write the cache. The cache
 * is used or written only when every directory on its path is owned by
 * root and writable by nobody else (above it: or sticky), no component is
 * a symbolic link, and the file is a regular file owned by root and
 * writable only by it. Writes go to a new file (O_EXCL) renamed over
 * the old one. NOTE says what happened, for the log. */
enum loom_topo_cache_rc loom_topo_cache_load(struct loom_topo *t, const char *path,
					     const char *nvml_lib, char *note, size_t notelen);

#endif
