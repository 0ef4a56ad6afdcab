/* spank/hostlist.h: Slurm hostlist expressions ("n[1-3,7],gpu-[01-04]").
 * The parsing is Slurm's own (slurm_hostlist_create/shift from
 * <slurm/slurm.h>): loom.so does not link libslurm, these symbols come from
 * the process that loads it (srun, slurmstepd). Unit tests link -lslurm. */
#ifndef LOOM_SPANK_HOSTLIST_H
#define LOOM_SPANK_HOSTLIST_H

#include <stddef.h>

/* First host of LIST into buf. 0, or -1 when LIST is empty, malformed or
 * the name does not fit. */
int loom_hostlist_first(const char *list, char *buf, size_t len);

/* Every host of LIST, comma separated, into buf. 0, or -1 when LIST is
 * empty, malformed or the names do not fit. */
int loom_hostlist_expand(const char *list, char *buf, size_t len);

/* Number of hosts in LIST, -1 when malformed. */
int loom_hostlist_count(const char *list);

/* Tasks on node NODEID from a SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE
 * value such as "2(x3),1": -1 when malformed or NODEID is out of range. */
int loom_tasks_on_node(const char *tasks_per_node, unsigned nodeid);

#endif
