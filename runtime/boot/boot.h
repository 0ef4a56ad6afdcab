/* runtime/boot/boot.h: forming the native world: PMIx, the RANK /
 * MASTER_ADDR rendezvous, the TCP mesh (bootstrap*.c), and the world
 * itself with its finalize (world.c). */
#ifndef LOOM_BOOT_BOOT_H
#define LOOM_BOOT_BOOT_H

#include "core/core.h"

/* ---- bootstrap ---- */
struct loom_boot {
	int rank, size;
	uint64_t nonce;
	uint8_t key[LOOM_KEY_LEN];      /* the handshakes' HMAC key */
	uint8_t shm_key[16];            /* rank 0's random bits: shm names */
	int have_secret;                /* key from LOOM_JOB_SECRET or PMIx */
	int listen_fd;
	int *peer_fds;           /* world rank -> connected socket (-1 for self) */
	char (*nodename)[64];
	int *pid;
};
int loom_boot_env(struct loom_boot *b);
#ifdef HAVE_PMIX
int loom_boot_pmix(struct loom_boot *b);
int loom_pmix_finalize(void);
#endif
/* shared by both: listen, and build the mesh from an address table */
int loom_boot_listen(uint32_t ip, uint16_t want_port, int *fd, uint16_t *port);
int loom_boot_mesh(struct loom_boot *b, const uint32_t *ip, const uint16_t *port, double deadline);
void loom_node_identity(char out[64]);
int loom_fd_write_all(int fd, const void *buf, size_t len, double deadline);
int loom_fd_read_all(int fd, void *buf, size_t len, double deadline);

/* ---- world.c: the native world ---- */
int loom_native_world(struct loom_comm **world);
int loom_native_finalize(struct loom_comm *world);


/* ---- handshake.c: the authenticated hello of every connection ---- */
#define LOOM_HS_CH 16
#define LOOM_HS_MAX_PAYLOAD 128
#define LOOM_HS_RENDEZVOUS 1u   /* kinds: what the connection is for */
#define LOOM_HS_MESH 2u
#define LOOM_HS_FORGED 1        /* loom_hs_read_reply: the server lacks the key */
struct loom_hs_peer {
	int fd, rank, size;
	uint32_t ip;                    /* network order */
	uint8_t srv_ch[LOOM_HS_CH], cli_ch[LOOM_HS_CH];
	uint8_t payload[LOOM_HS_MAX_PAYLOAD];
};
struct loom_hs_cfg {
	const uint8_t *key;
	uint32_t kind;
	size_t plen;                    /* the hello's payload length, fixed by kind */
	const char *what;               /* names the port in log lines */
	/* a hello that proved the key: 1 takes p->fd, 0 refuses (logged,
	 * dropped), < 0 a fatal status for the whole accept */
	int (*on_peer)(void *arg, const struct loom_hs_peer *p);
	void *arg;
};
/* accept until `need` peers were taken: LOOM_ERR_TIMEOUT at deadline */
int loom_hs_accept(int lfd, const struct loom_hs_cfg *cfg, int need, double deadline);
/* digest: SHA-256 of reply when the caller has it (one table, many
 * replies), else NULL */
int loom_hs_reply(const uint8_t *key, const struct loom_hs_peer *p, const void *reply, size_t rlen,
		  const uint8_t *digest, double deadline);
/* client: connect (retrying until deadline) and read the challenge; send
 * the hello; read and check the reply */
int loom_hs_dial(uint32_t ip, uint16_t port, uint32_t kind, double deadline, struct loom_hs_peer *p);
int loom_hs_hello(const uint8_t *key, struct loom_hs_peer *p, uint32_t kind, int rank, int size,
		  const void *payload, size_t plen, double deadline);
int loom_hs_read_reply(const uint8_t *key, const struct loom_hs_peer *p, void *reply, size_t rlen,
		       double deadline);
/* the job key and the random bits of a world (rank 0 makes them) */
int loom_boot_keys(struct loom_boot *b);
int loom_boot_fresh_ids(struct loom_boot *b);

#endif
