/* runtime/boot/rendezvous.h: the env rendezvous' wire records and the
 * bookkeeping rank 0 and each node leader do with them (rendezvous.c:
 * pure, unit-tested in runtime/boot/test/rendezvous.c). bootstrap_env.c moves
 * them over sockets. */
#ifndef LOOM_BOOT_RENDEZVOUS_H
#define LOOM_BOOT_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

/* a rank's entry in the world table */
struct rv_entry {
	uint32_t ip;
	uint16_t port, pad;
	int32_t pid;
	char node[64];
};

/* an entry with its world rank: a node's ranks, from leader to rank 0 */
struct rv_ranked {
	int32_t rank;
	struct rv_entry e;
};

/* a hello to rank 0 (rank and size travel in the handshake). Flat, count
 * 0: the rank's own entry, at the address its hello is bound to (the
 * handshake's MAC covers it and rank 0 checks it). A
 * node leader's group hello, count > 0: its node's count rv_ranked follow
 * the hello on the same connection, digest is their SHA-256, so the
 * hello's MAC covers them. A leader that failed its node sends count
 * RV_ABORT, so that rank 0 and through it every node fails now, not at
 * the deadline. */
#define RV_ABORT 0xffffffffu   /* count: the leader gave up on its node (see its log) */
struct rv_hello {
	int32_t pid;
	uint16_t port;
	uint16_t tport;         /* its tree socket: where its children dial for the table */
	char node[64];
	uint32_t count;
	uint8_t digest[32];
};

/* a local rank's hello to its node leader */
struct rv_local_hello {
	int32_t local_rank, local_size;
	struct rv_entry e;
};

/* the table reply (encrypted on the wire): the world's nonce, then the
 * table; each rank derives the shm key from the job key and the nonce */
struct rv_head {
	uint64_t nonce;
};

/* Rank 0's first reply to each connection (a node leader or a flat rank):
 * where the table reply comes from. Rank 0 sends it to RV_FANOUT of them
 * only; the others take it from their parent in a RV_FANOUT-ary tree of
 * rank 0's connections (by the order rank 0 took them), on the parent's
 * tree socket, and pass it to their own children: rank 0 sends the
 * N-entry table RV_FANOUT times instead of once per connection. */
#define RV_FANOUT 4
struct rv_route {
	uint8_t digest[32];     /* SHA-256 of the table reply, wherever it comes from */
	int32_t parent;         /* -1: it follows on this connection; else the world rank to dial */
	uint32_t parent_ip;     /* network order */
	uint16_t parent_port, pad;
	int32_t children;       /* how many dial this rank's tree socket for it */
};
/* connection i of n (0-based, rank 0 is the tree's root): the index of
 * its parent (-1: rank 0) and its number of children */
void loom_rv_tree_place(int i, int n, int fanout, int *parent, int *children);

/* the table as it fills: rank 0's world, or a leader's node */
struct rv_table {
	int size, filled;
	struct rv_entry *tab;           /* by world rank */
	unsigned char *have;
};
int loom_rv_table_init(struct rv_table *t, int size);
void loom_rv_table_free(struct rv_table *t);
/* one rank's entry: 0, or -1 with why filled (out of range, twice) */
int loom_rv_take(struct rv_table *t, int rank, const struct rv_entry *e, char *why, size_t wlen);
/* a node leader's group: all taken or none. -1 with why when the leader
 * is not among them, a rank is out of range or already in, or there are
 * more than the ranks still missing */
int loom_rv_take_group(struct rv_table *t, int leader, const struct rv_ranked *g, uint32_t n,
		       char *why, size_t wlen);
/* the ranks not in yet, as "3,5,9" (cut short to fit) */
void loom_rv_missing(const struct rv_table *t, char *out, size_t len);

/* the node rendezvous' abstract socket name (without the leading NUL):
 * the same for every rank of one job on one node, different between
 * jobs (MASTER_ADDR:MASTER_PORT) and between the nodes that share a host
 * (the node identity) */
#define RV_NODE_NAME_LEN 48
void loom_rv_node_socket_name(const char *maddr, int mport, const char *node, char out[RV_NODE_NAME_LEN]);

#endif
