/* runtime/boot/bootstrap_env.h: what the files of the env rendezvous
 * share (bootstrap_env.c says which calls which): the job's settings
 * (bootstrap_job.c), rank 0's side (bootstrap_rank0.c), the hello to it
 * (bootstrap_hello.c) and the meeting of one node's ranks with its
 * leader's group hello (bootstrap_node.c). */
#ifndef LOOM_BOOT_BOOTSTRAP_ENV_H
#define LOOM_BOOT_BOOTSTRAP_ENV_H

#include "boot/boot.h"
#include "boot/rendezvous.h"

#define RV_GROUP_READ 5.0   /* seconds a group's entries may take after its hello */

/* what the rendezvous knows of the job and has of the world */
struct rv_job {
	struct loom_boot *b;
	const char *maddr;
	int mport;
	uint32_t mip;
	double deadline, tmo;
	int local_rank, local_size;     /* local_size 0: flat */
	char sock[RV_NODE_NAME_LEN];    /* the node rendezvous' abstract name */
	struct rv_entry me;
	struct rv_head *reply;          /* the world's bits and table, once known */
	size_t rlen;
};

/* bootstrap_job.c */
int loom_rv_env_int(const char *name, long lo, long hi, int *out);
int loom_rv_alloc_reply(struct rv_job *j);

/* bootstrap_rank0.c */
/* rank 0: hellos on listening socket ls until every rank is in (own: its
 * node's entries, itself first), then the table to each connection */
int loom_rv_rank0(struct rv_job *j, int ls, const struct rv_ranked *own, uint32_t nown);

/* bootstrap_hello.c */
int loom_rv_dial_rank0(struct rv_job *j, struct loom_hs_peer *p);
/* the hello (and what follows it, a group's entries), then the table */
int loom_rv_hello_rank0(struct rv_job *j, struct loom_hs_peer *p, const struct rv_hello *h,
			const void *follow, size_t flen);

/* bootstrap_node.c */
/* LOCAL_RANK / LOCAL_WORLD_SIZE, unless LOOM_BOOTSTRAP_TREE=0 */
int loom_rv_tree_mode(struct rv_job *j);
/* this rank's entry and engine socket, and the node's socket name */
int loom_rv_tree_entry(struct rv_job *j);
/* LOCAL_RANK 0: its node's ranks, then its group to rank 0 (rank 0
 * itself: ls0, MASTER_PORT, taken after its node) */
int loom_rv_node_leader(struct rv_job *j, int ls0);
int loom_rv_node_member(struct rv_job *j);

#endif
