/* runtime/boot/boot.h: forming the native world: PMIx, the RANK /
 * MASTER_ADDR rendezvous and the address table they leave (bootstrap*.c),
 * and the world itself with its finalize (world.c). Connections between
 * ranks are made later, by the TCP engine, on first use. */
#ifndef LOOM_BOOT_BOOT_H
#define LOOM_BOOT_BOOT_H

#include "core/core.h"

/* ---- bootstrap ---- */
/* a newcomer's world communicator: the grown one (bootstrap_join.c) */
struct loom_joined {
	uint64_t ctx;
	int n, me;
	int *wr;                        /* its members' world ranks */
	char name[64];
};
struct loom_boot {
	int rank, size;
	uint64_t nonce;
	uint8_t key[LOOM_KEY_LEN];      /* the handshakes' HMAC key */
	uint8_t shm_key[16];            /* shm names: derived from key and nonce */
	int have_secret;                /* key from LOOM_JOB_SECRET or PMIx */
	int listen_fd;                  /* the engine's, for the job's life */
	uint32_t *ip;                   /* world rank -> address (network order) */
	uint16_t *port;                 /* world rank -> the port it listens on */
	char (*nodename)[64];
	int *pid;                       /* 0 where not known (lazy addresses) */
	int lazy_addresses;             /* ip/port left 0: looked up at first dial */
	struct loom_joined *joined;     /* a newcomer's (LOOM_JOIN): the world's caller takes it */
};
int loom_boot_env(struct loom_boot *b);
/* LOOM_JOIN: a newcomer to a growing communicator (core/comm_grow.c) */
int loom_boot_join(struct loom_boot *b);
#ifdef HAVE_PMIX
int loom_boot_pmix(struct loom_boot *b);
int loom_pmix_finalize(void);
/* rank's TCP address, from what it published before the fence */
int loom_pmix_peer_addr(int rank, uint32_t *ip, uint16_t *port);
#endif
/* shared by both: listen; the tables, by size */
int loom_boot_listen(uint32_t ip, uint16_t want_port, int *fd, uint16_t *port);
int loom_boot_tables(struct loom_boot *b);
void loom_node_identity(char out[64]);

/* ---- world.c: the native world ---- */
int loom_native_world(struct loom_comm **world);
int loom_native_finalize(struct loom_comm *world);


/* the job key and the random bits of a world (rank 0 makes them) */
int loom_boot_keys(struct loom_boot *b);
int loom_boot_fresh_ids(struct loom_boot *b);  /* after the key: the nonce and shm key */
void loom_boot_shm_key(struct loom_boot *b);   /* shm_key from key and nonce */

#endif
