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
int loom_boot_listen(int *fd, uint16_t *port);
int loom_boot_mesh(struct loom_boot *b, const uint32_t *ip, const uint16_t *port, double deadline);
void loom_node_identity(char out[64]);
int loom_fd_write_all(int fd, const void *buf, size_t len, double deadline);
int loom_fd_read_all(int fd, void *buf, size_t len, double deadline);

/* ---- world.c: the native world ---- */
int loom_native_world(struct loom_comm **world);
int loom_native_finalize(struct loom_comm *world);

#endif
