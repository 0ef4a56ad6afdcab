/* t/runtime/node-socket-name MASTER_ADDR MASTER_PORT NODE: the abstract
 * socket name (without its leading NUL) on which that node's LOCAL_RANK 0
 * holds the env rendezvous, for tests that squat on it (t2007) */
#include "config.h"
#include "boot/rendezvous.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	char name[RV_NODE_NAME_LEN];
	if (argc != 4) {
		fprintf(stderr, "usage: %s MASTER_ADDR MASTER_PORT NODE\n", argv[0]);
		return 2;
	}
	loom_rv_node_socket_name(argv[1], atoi(argv[2]), argv[3], name);
	puts(name);
	return 0;
}
