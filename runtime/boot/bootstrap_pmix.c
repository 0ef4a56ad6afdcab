/* runtime/boot/bootstrap_pmix.c: bootstrap under `srun --mpi=pmix`: rank and
 * size from PMIx, then every rank publishes "ip port pid node" (PMIx_Put,
 * Commit, Fence with data collection). Which ranks share a node comes from
 * PMIx's own map of the job (one PMIx_Resolve_peers per node), and a
 * peer's address is looked up only when the TCP engine first dials it
 * (loom_pmix_peer_addr): N lookups per rank at init cost 0.7 s of a
 * 256-rank init on the test host, and a rank talks to O(log N) of them.
 * Where PMIx cannot give the map, every address is read at init. Rank 0
 * also publishes the world's random key and nonce, which only the job's
 * own processes can get from their PMIx server (the shm key is derived
 * from them). The mesh connections' hellos are bound to the connection
 * and the rank dialed (transport_handshake.c), as under the env
 * bootstrap. The address is
 * this host's first non-loopback IPv4 address (127.0.0.1 when there is
 * none); the TCP engine listens on it alone. Built only with PMIx
 * (HAVE_PMIX). */
#include "boot/boot.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t my_ip(void)
{
	struct ifaddrs *ifa = NULL, *i;
	uint32_t ip = htonl(INADDR_LOOPBACK);
	if (getifaddrs(&ifa) != 0)
		return ip;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
		    (i->ifa_flags & IFF_LOOPBACK))
			continue;
		ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
		break;
	}
	freeifaddrs(ifa);
	return ip;
}

/* this process's PMIx identity, for the lookups after init */
static pmix_proc_t self;

/* "ip port pid node" of rank r, published before the fence */
static int read_addr(int r, uint32_t *ip, uint16_t *port, int *pid, char node[64])
{
	pmix_proc_t peer;
	pmix_value_t *val = NULL;
	pmix_status_t st;
	unsigned p = 0;
	char ipb[32] = "", nb[64] = "";
	int pd = 0, ok;
	PMIX_PROC_CONSTRUCT(&peer);
	memcpy(peer.nspace, self.nspace, sizeof peer.nspace);
	peer.rank = (pmix_rank_t)r;
	st = PMIx_Get(&peer, "loom.addr", NULL, 0, &val);
	ok = st == PMIX_SUCCESS && val && val->type == PMIX_STRING &&
	     sscanf(val->data.string, "%31s %u %d %63s", ipb, &p, &pd, nb) == 4 && p > 0 && p < 65536 &&
	     inet_pton(AF_INET, ipb, ip) == 1;
	if (val)
		PMIX_VALUE_RELEASE(val);
	if (!ok) {
		LOOM_ERR("bootstrap: no address from rank %d over PMIx (%s)", r, PMIx_Error_string(st));
		return LOOM_ERR_BOOTSTRAP;
	}
	*port = (uint16_t)p;
	if (pid)
		*pid = pd;
	if (node)
		snprintf(node, 64, "%s", nb);
	return LOOM_SUCCESS;
}

int loom_pmix_peer_addr(int rank, uint32_t *ip, uint16_t *port)
{
	return read_addr(rank, ip, port, NULL, NULL);
}

/* Every rank's node from PMIx's map of the job: the nodes, then the ranks
 * of each. 0 when each of the size ranks was placed exactly once. */
static int node_map(struct loom_boot *b)
{
	char *nodes = NULL, *save = NULL, *node;
	unsigned char *seen = calloc((size_t)b->size, 1);
	int placed = 0, ok = seen != NULL;
	if (!ok || PMIx_Resolve_nodes(self.nspace, &nodes) != PMIX_SUCCESS || !nodes) {
		free(seen);
		return -1;
	}
	for (node = strtok_r(nodes, ",", &save); ok && node; node = strtok_r(NULL, ",", &save)) {
		pmix_proc_t *procs = NULL;
		size_t np = 0, k;
		if (strlen(node) >= 64 || PMIx_Resolve_peers(node, self.nspace, &procs, &np) != PMIX_SUCCESS) {
			ok = 0;
			break;
		}
		for (k = 0; k < np && ok; k++) {
			pmix_rank_t r = procs[k].rank;
			if (r >= (pmix_rank_t)b->size || seen[r]) {
				ok = 0;
				break;
			}
			seen[r] = 1;
			placed++;
			snprintf(b->nodename[r], 64, "%s", node);
		}
		if (procs)
			PMIX_PROC_FREE(procs, np);
	}
	free(nodes);
	free(seen);
	return ok && placed == b->size ? 0 : -1;
}

int loom_pmix_finalize(void)
{
	return PMIx_Finalize(NULL, 0) == PMIX_SUCCESS ? LOOM_SUCCESS : LOOM_ERR_BOOTSTRAP;
}

/* rank 0's key and random nonce, as hex (the shm key is derived). The key
 * is LOOM_JOB_SECRET's where loom.so gave one, so that a newcomer of a
 * --loom-join step, which proves that secret, can join this world
 * (core/comm_grow.c); else random bits. */
#define SECRET_BYTES (LOOM_KEY_LEN + 8)

static int put_secret(struct loom_boot *b)
{
	uint8_t raw[SECRET_BYTES];
	char hex[2 * SECRET_BYTES + 1];
	pmix_value_t v;
	pmix_status_t st;
	if (loom_random_bytes(raw, sizeof raw))
		return LOOM_ERR_SYSTEM;
	if (b->have_secret)
		memcpy(raw, b->key, LOOM_KEY_LEN);
	loom_hex_encode(raw, sizeof raw, hex);
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = hex;
	st = PMIx_Put(PMIX_GLOBAL, "loom.secret", &v);
	OPENSSL_cleanse(raw, sizeof raw);
	if (st != PMIX_SUCCESS) {
		LOOM_ERR("bootstrap: PMIx_Put(loom.secret) failed: %s", PMIx_Error_string(st));
		return LOOM_ERR_BOOTSTRAP;
	}
	return LOOM_SUCCESS;
}

static int get_secret(struct loom_boot *b, const pmix_proc_t *me)
{
	pmix_proc_t zero;
	pmix_value_t *val = NULL;
	pmix_status_t st;
	uint8_t raw[SECRET_BYTES];
	int ok;
	PMIX_PROC_CONSTRUCT(&zero);
	memcpy(zero.nspace, me->nspace, sizeof zero.nspace);
	zero.rank = 0;
	st = PMIx_Get(&zero, "loom.secret", NULL, 0, &val);
	ok = st == PMIX_SUCCESS && val && val->type == PMIX_STRING && val->data.string &&
	     strlen(val->data.string) == 2 * sizeof raw &&
	     loom_hex_decode(val->data.string, raw, sizeof raw) == (size_t)-1;
	if (val)
		PMIX_VALUE_RELEASE(val);
	if (!ok) {
		LOOM_ERR("bootstrap: no key from rank 0 over PMIx (%s)", PMIx_Error_string(st));
		return LOOM_ERR_BOOTSTRAP;
	}
	memcpy(b->key, raw, LOOM_KEY_LEN);
	memcpy(&b->nonce, raw + LOOM_KEY_LEN, 8);
	loom_boot_shm_key(b);
	OPENSSL_cleanse(raw, sizeof raw);
	b->have_secret = 1;
	return LOOM_SUCCESS;
}

/* PMIx_Init, and the job's size and this process' rank; wild names
 * every rank of the job. On failure PMIx is finalized again. */
static int pmix_start(struct loom_boot *b, pmix_proc_t *me, pmix_proc_t *wild)
{
	pmix_value_t *val = NULL;
	pmix_status_t st;
	if ((st = PMIx_Init(me, NULL, 0)) != PMIX_SUCCESS) {
		LOOM_ERR("bootstrap: PMIx_Init failed: %s", PMIx_Error_string(st));
		return LOOM_ERR_BOOTSTRAP;
	}
	PMIX_PROC_CONSTRUCT(wild);
	memcpy(wild->nspace, me->nspace, sizeof wild->nspace);
	wild->rank = PMIX_RANK_WILDCARD;
	if ((st = PMIx_Get(wild, PMIX_JOB_SIZE, NULL, 0, &val)) != PMIX_SUCCESS || !val) {
		LOOM_ERR("bootstrap: PMIx_Get(job size) failed: %s", PMIx_Error_string(st));
		PMIx_Finalize(NULL, 0);
		return LOOM_ERR_BOOTSTRAP;
	}
	b->size = (int)val->data.uint32;
	PMIX_VALUE_RELEASE(val);
	b->rank = (int)me->rank;
	return LOOM_SUCCESS;
}

/* this rank's address, pid and node, as "loom.addr" for the others */
static int publish(const struct loom_boot *b, uint32_t ip, uint16_t port)
{
	pmix_value_t v;
	pmix_status_t st;
	char buf[160], ipstr[32];
	inet_ntop(AF_INET, &ip, ipstr, sizeof ipstr);
	snprintf(buf, sizeof buf, "%s %u %d %s", ipstr, port, b->pid[b->rank], b->nodename[b->rank]);
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = buf;
	if ((st = PMIx_Put(PMIX_GLOBAL, "loom.addr", &v)) != PMIX_SUCCESS ||
	    (st = PMIx_Commit()) != PMIX_SUCCESS) {
		LOOM_ERR("bootstrap: PMIx_Put/Commit failed: %s", PMIx_Error_string(st));
		return LOOM_ERR_BOOTSTRAP;
	}
	return LOOM_SUCCESS;
}

/* every rank's published data, with a deadline: a rank that never comes
 * must not hang the others */
static int fence(const pmix_proc_t *wild)
{
	pmix_info_t info[2];
	pmix_status_t st;
	int tmo = (int)loom_env_double("LOOM_BOOTSTRAP_TIMEOUT", 120);
	bool yes = true;
	PMIX_INFO_CONSTRUCT(&info[0]);
	PMIX_INFO_CONSTRUCT(&info[1]);
	PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &tmo, PMIX_INT);
	st = PMIx_Fence(wild, 1, info, 2);
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	if (st != PMIX_SUCCESS) {
		LOOM_ERR("bootstrap: PMIx_Fence failed: %s%s", PMIx_Error_string(st),
			 st == PMIX_ERR_TIMEOUT ? " (LOOM_BOOTSTRAP_TIMEOUT: a rank never came)" : "");
		return LOOM_ERR_BOOTSTRAP;
	}
	return LOOM_SUCCESS;
}

int loom_boot_pmix(struct loom_boot *b)
{
	pmix_proc_t me, wild;
	uint16_t port;
	int rc, i;
	uint32_t ip = my_ip();
	double t0 = loom_now(), t_init, t_fence;
	if ((rc = pmix_start(b, &me, &wild)))
		return rc;
	t_init = loom_now();
	if ((rc = loom_boot_tables(b)))
		goto fail;
	loom_node_identity(b->nodename[b->rank]);
	b->pid[b->rank] = (int)getpid();
	b->listen_fd = -1;
	if (b->size == 1) {
		if ((rc = loom_random_bytes(b->key, sizeof b->key)) == LOOM_SUCCESS)
			rc = loom_boot_fresh_ids(b);
		b->have_secret = 1;
		if (rc)
			PMIx_Finalize(NULL, 0);
		return rc;
	}
	if ((rc = loom_boot_listen(ip, 0, &b->listen_fd, &port)))
		goto fail;
	/* every rank reads LOOM_JOB_SECRET: a malformed one fails them all */
	if ((rc = loom_boot_keys(b)) || (b->rank == 0 && (rc = put_secret(b))) ||
	    (rc = publish(b, ip, port)) || (rc = fence(&wild)))
		goto fail;
	t_fence = loom_now();
	if ((rc = get_secret(b, &me)))
		goto fail;
	self = me;
	if (node_map(b) == 0) {
		b->lazy_addresses = 1;  /* the engine asks loom_pmix_peer_addr */
	} else {
		LOOM_INFO("bootstrap: PMIx gives no map of the job's nodes: every rank's address read now");
		for (i = 0; i < b->size; i++)
			if ((rc = read_addr(i, &b->ip[i], &b->port[i], &b->pid[i], b->nodename[i])))
				goto fail;
	}
	LOOM_INFO("bootstrap pmix: PMIx_Init %.3f s, put and fence %.3f s, %s %.3f s",
		  t_init - t0, t_fence - t_init, b->lazy_addresses ? "the node map" : "every address",
		  loom_now() - t_fence);
	return LOOM_SUCCESS;
fail:
	if (b->listen_fd >= 0)
		close(b->listen_fd);
	b->listen_fd = -1;
	PMIx_Finalize(NULL, 0);
	return rc;
}
