/* spank/master_addr.c: MASTER_ADDR that resolves. torchrun-style programs
 * (PyTorch's env:// rendezvous, gloo, NCCL's bootstrap) connect to
 * MASTER_ADDR by name; on clusters whose node names are not in DNS or
 * /etc/hosts (NodeAddr differs from NodeName) the first node's name hangs
 * them in rendezvous, while Slurm reaches the node at its NodeAddr. */
#include "master_addr.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <slurm/slurm.h>

static int resolves_getaddrinfo(const char *host)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &res) != 0)
		return 0;
	freeaddrinfo(res);
	return 1;
}

/* one RPC to slurmctld, made once per node of the step (user_init) */
static int node_addr_slurm(const char *node, char *buf, size_t len)
{
	node_info_msg_t *msg = NULL;
	int rc = -1;
	if (slurm_load_node_single(&msg, (char *)node, SHOW_ALL) != SLURM_SUCCESS || !msg)
		return -1;
	if (msg->record_count >= 1 && msg->node_array[0].node_addr &&
	    msg->node_array[0].node_addr[0] && strlen(msg->node_array[0].node_addr) < len) {
		strcpy(buf, msg->node_array[0].node_addr);
		rc = 0;
	}
	slurm_free_node_info_msg(msg);
	return rc;
}

static const struct loom_addr_ops default_ops = { resolves_getaddrinfo, node_addr_slurm };

int loom_master_addr(const char *node, const struct loom_addr_ops *ops, char *out, size_t len,
		     char *note, size_t note_len, int *warn)
{
	char addr[256];
	if (!ops)
		ops = &default_ops;
	note[0] = 0;
	*warn = 0;
	if (strlen(node) >= len)
		return -1;
	strcpy(out, node);
	if (ops->resolves(node))
		return 0;
	if (ops->node_addr(node, addr, sizeof addr) == 0 && strcmp(addr, node) && ops->resolves(addr)) {
		if (strlen(addr) >= len)
			return -1;
		strcpy(out, addr);
		snprintf(note, note_len, "node name %s does not resolve here: MASTER_ADDR is its NodeAddr %s",
			 node, addr);
		return 0;
	}
	*warn = 1;
	snprintf(note, note_len,
		 "MASTER_ADDR=%s: that node name does not resolve here and Slurm has no NodeAddr for it "
		 "that does; programs that rendezvous at MASTER_ADDR (torchrun, gloo) will fail "
		 "(make the node names resolve, or set NodeAddr in slurm.conf)", node);
	return 0;
}
