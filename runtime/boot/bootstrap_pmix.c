/* runtime/boot/bootstrap_pmix.c: bootstrap under `srun --mpi=pmix`: rank and
 * size from PMIx, then every rank publishes "ip port pid node" (PMIx_Put,
 * Commit, Fence with data collection) and reads everyone else's; rank 0
 * also publishes the world's random key, nonce and shm key, which only
 * the job's own processes can get from their PMIx server. The address is
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

int loom_pmix_finalize(void)
{
	return PMIx_Finalize(NULL, 0) == PMIX_SUCCESS ? LOOM_SUCCESS : LOOM_ERR_BOOTSTRAP;
}

/* rank 0's random bits, as hex: key, nonce, shm key */
#define SECRET_BYTES (LOOM_KEY_LEN + 8 + 16)

static int put_secret(struct loom_boot *b)
{
	uint8_t raw[SECRET_BYTES];
	char hex[2 * SECRET_BYTES + 1];
	pmix_value_t v;
	pmix_status_t st;
	if (loom_random_bytes(raw, sizeof raw))
		return LOOM_ERR_SYSTEM;
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
	memcpy(b->shm_key, raw + LOOM_KEY_LEN + 8, 16);
	OPENSSL_cleanse(raw, sizeof raw);
	b->have_secret = 1;
	return LOOM_SUCCESS;
}

int loom_boot_pmix(struct loom_boot *b)
{
	pmix_proc_t me, wild, peer;
	pmix_value_t *val = NULL, v;
	pmix_info_t info[2];
	pmix_status_t st;
	int tmo = (int)loom_env_double("LOOM_BOOTSTRAP_TIMEOUT", 120);
	uint16_t port;
	char buf[160], ipstr[32];
	int rc, i;
	bool yes = true;
	uint32_t ip = my_ip();
	if ((st = PMIx_Init(&me, NULL, 0)) != PMIX_SUCCESS) {
		LOOM_ERR("bootstrap: PMIx_Init failed: %s", PMIx_Error_string(st));
		return LOOM_ERR_BOOTSTRAP;
	}
	PMIX_PROC_CONSTRUCT(&wild);
	memcpy(wild.nspace, me.nspace, sizeof wild.nspace);
	wild.rank = PMIX_RANK_WILDCARD;
	if ((st = PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &val)) != PMIX_SUCCESS || !val) {
		LOOM_ERR("bootstrap: PMIx_Get(job size) failed: %s", PMIx_Error_string(st));
		PMIx_Finalize(NULL, 0);
		return LOOM_ERR_BOOTSTRAP;
	}
	b->size = (int)val->data.uint32;
	PMIX_VALUE_RELEASE(val);
	b->rank = (int)me.rank;
	if ((rc = loom_boot_tables(b)))
		goto fail;
	loom_node_identity(b->nodename[b->rank]);
	b->pid[b->rank] = (int)getpid();
	b->listen_fd = -1;
	if (b->size == 1) {
		if ((rc = loom_boot_fresh_ids(b)) == LOOM_SUCCESS)
			rc = loom_random_bytes(b->key, sizeof b->key);
		b->have_secret = 1;
		if (rc)
			PMIx_Finalize(NULL, 0);
		return rc;
	}
	if ((rc = loom_boot_listen(ip, 0, &b->listen_fd, &port)))
		goto fail;
	if (b->rank == 0 && (rc = put_secret(b)))
		goto fail;
	inet_ntop(AF_INET, &ip, ipstr, sizeof ipstr);
	snprintf(buf, sizeof buf, "%s %u %d %s", ipstr, port, b->pid[b->rank], b->nodename[b->rank]);
	PMIX_VALUE_CONSTRUCT(&v);
	v.type = PMIX_STRING;
	v.data.string = buf;
	if ((st = PMIx_Put(PMIX_GLOBAL, "loom.addr", &v)) != PMIX_SUCCESS ||
	    (st = PMIx_Commit()) != PMIX_SUCCESS) {
		LOOM_ERR("bootstrap: PMIx_Put/Commit failed: %s", PMIx_Error_string(st));
		rc = LOOM_ERR_BOOTSTRAP;
		goto fail;
	}
	/* with a deadline: a rank that never comes must not hang the others */
	PMIX_INFO_CONSTRUCT(&info[0]);
	PMIX_INFO_CONSTRUCT(&info[1]);
	PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &tmo, PMIX_INT);
	st = PMIx_Fence(&wild, 1, info, 2);
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	if (st != PMIX_SUCCESS) {
		LOOM_ERR("bootstrap: PMIx_Fence failed: %s%s", PMIx_Error_string(st),
			 st == PMIX_ERR_TIMEOUT ? " (LOOM_BOOTSTRAP_TIMEOUT: a rank never came)" : "");
		rc = LOOM_ERR_BOOTSTRAP;
		goto fail;
	}
	if ((rc = get_secret(b, &me)))
		goto fail;
	PMIX_PROC_CONSTRUCT(&peer);
	memcpy(peer.nspace, me.nspace, sizeof peer.nspace);
	for (i = 0; i < b->size; i++) {
		unsigned p = 0;
		int pid = 0;
		char node[64] = "", ipb[32] = "";
		peer.rank = (pmix_rank_t)i;
		val = NULL;
		if ((st = PMIx_Get(&peer, "loom.addr", NULL, 0, &val)) != PMIX_SUCCESS || !val ||
		    val->type != PMIX_STRING ||
		    sscanf(val->data.string, "%31s %u %d %63s", ipb, &p, &pid, node) != 4 ||
		    inet_pton(AF_INET, ipb, &b->ip[i]) != 1) {
			LOOM_ERR("bootstrap: no address from rank %d over PMIx (%s)", i,
				 PMIx_Error_string(st));
			if (val)
				PMIX_VALUE_RELEASE(val);
			rc = LOOM_ERR_BOOTSTRAP;
			goto fail;
		}
		PMIX_VALUE_RELEASE(val);
		b->port[i] = (uint16_t)p;
		b->pid[i] = pid;
		snprintf(b->nodename[i], 64, "%s", node);
	}
	return LOOM_SUCCESS;
fail:
	if (b->listen_fd >= 0)
		close(b->listen_fd);
	b->listen_fd = -1;
	PMIx_Finalize(NULL, 0);
	return rc;
}
