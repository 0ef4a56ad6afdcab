/* runtime/util/resolve.c: a host name to its first IPv4 address, as a
 * newcomer dials the job's nodes and as the grow's leader checks that it
 * listens where they dial. */
#include "config.h"

#include "util/util.h"

#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

int loom_resolve4(const char *host, uint32_t *ip)
{
	struct addrinfo hints, *ai = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (!host || !*host || getaddrinfo(host, NULL, &hints, &ai) || !ai)
		return -1;
	*ip = ((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr;
	freeaddrinfo(ai);
	return 0;
}
