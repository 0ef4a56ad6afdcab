/* spank/master_addr.h: the address every task gets as MASTER_ADDR. */
#ifndef LOOM_SPANK_MASTER_ADDR_H
#define LOOM_SPANK_MASTER_ADDR_H

#include <stddef.h>

/* How names are looked up; the default (NULL) asks the resolver
 * (getaddrinfo) and slurmctld (NodeAddr). */
struct loom_addr_ops {
	int (*resolves)(const char *host);                          /* 1: yes */
	int (*node_addr)(const char *node, char *buf, size_t len);  /* 0: found */
};

/* MASTER_ADDR for a step whose first node is `node`: the name itself when
 * it resolves here (as node names do on most clusters), else the NodeAddr
 * Slurm has for it, which slurmd itself is reached at. Returns 0 and the
 * address in out, with a line for the log in note when it was not the
 * name (note[0] == 0 otherwise); -1 when out is too small. When neither
 * resolves, out is the name and note says so (a warning for the user). */
int loom_master_addr(const char *node, const struct loom_addr_ops *ops, char *out, size_t len,
		     char *note, size_t note_len, int *warn);

#endif
