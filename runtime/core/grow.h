/* runtime/core/grow.h: what a growing communicator's leader and its
 * newcomers say to each other (comm_grow.c, boot/bootstrap_join.c,
 * docs/fault-tolerance.md). The newcomer's hello is the handshake's
 * (kind LOOM_HS_JOIN, to 0: the leader's role), its payload a
 * loom_join_hello; the leader's two replies, encrypted under a key of
 * the connection's, are a loom_join_head, then the table: base + nnew
 * loom_join_entry (every world rank's address and node), then `members`
 * int32 world ranks (the members before the newcomers, in order). Every
 * count is checked against the bounds below before it sizes anything. */
#ifndef LOOM_CORE_GROW_H
#define LOOM_CORE_GROW_H

#include "core/core.h"

#define LOOM_GROW_MAX_NEW 4096          /* newcomers of one grow */
#define LOOM_GROW_MAX_WORLD (1 << 20)   /* world ranks, the env bootstrap's bound */

struct loom_join_hello {
	int32_t pid;
	uint16_t port, pad;             /* where its engine listens */
	char node[64];
};

struct loom_join_head {
	uint64_t nonce;                 /* the world's: the mesh hello's payload, the shm key */
	uint64_t ctx;                   /* the grown communicator's */
	int32_t base, nnew;             /* the newcomers are world ranks base.. base+nnew-1 */
	int32_t index;                  /* this newcomer's: world rank base + index */
	int32_t members;                /* before the newcomers */
	char name[64];                  /* the grown communicator's */
};

struct loom_join_entry {
	uint32_t ip;                    /* network order; 0: not known (never dialed) */
	uint16_t port, pad;
	int32_t pid;
	char node[64];
};

/* 0 when every count of h is in bounds, else -1 with why */
int loom_join_head_check(const struct loom_join_head *h, char *why, size_t wlen);
size_t loom_join_table_len(const struct loom_join_head *h);  /* checked h */
/* the world grows to base + n ranks: those from w->size to base are not
 * known here (never dialed), the n newcomers are e[0..n-1] */
int loom_world_grow(struct loom_world *w, int base, int n, const struct loom_join_entry *e);

#endif
