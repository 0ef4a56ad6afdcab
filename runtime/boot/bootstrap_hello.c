/* runtime/boot/bootstrap_hello.c: the other side of rank 0's: a flat
 * rank's or a node leader's hello to rank 0, then the route and the
 * table, from rank 0 or from this rank's parent in the fan-out
 * (rendezvous.h), and the table on to this rank's own children there. */
#include "boot/bootstrap_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int loom_rv_dial_rank0(struct rv_job *j, struct loom_hs_peer *p)
{
	int rc = loom_hs_dial_tcp(j->mip, (uint16_t)j->mport, LOOM_HS_RENDEZVOUS, j->deadline, p);
	if (rc)
		LOOM_ERR("bootstrap: cannot reach MASTER_ADDR:MASTER_PORT %s:%d after %.0f s (LOOM_BOOTSTRAP_TIMEOUT)%s",
			 j->maddr, j->mport, j->tmo, rc == LOOM_ERR_BOOTSTRAP ? ": what answers there is not loom" : "");
	return rc ? LOOM_ERR_BOOTSTRAP : LOOM_SUCCESS;
}

/* the children in the fan-out that came to the tree socket */
struct tree_kids {
	int size, n;                    /* the world's size; children taken */
	struct loom_hs_peer *p;
};

/* a tree hello: it proved the key, so it is a rank of this job */
static int tree_child(void *arg, const struct loom_hs_peer *p)
{
	struct tree_kids *k = arg;
	if (p->size != k->size)
		return 0;
	k->p[k->n++] = *p;
	return 1;
}

/* the table to the n children that dial the tree socket ts */
static int table_to_children(struct rv_job *j, int ts, int n, const uint8_t *digest)
{
	struct loom_boot *b = j->b;
	struct tree_kids k = { b->size, 0, calloc((size_t)n, sizeof(struct loom_hs_peer)) };
	struct loom_hs_cfg cfg = { b->key, LOOM_HS_TREE, 0, "the bootstrap tree socket", tree_child, &k, 0, NULL,
				   b->rank };
	int rc, i;
	if (!k.p)
		return LOOM_ERR_NOMEM;
	rc = loom_hs_accept(ts, &cfg, n, j->deadline);
	if (rc)
		LOOM_ERR("bootstrap: rank %d: %d of its %d children in the table's fan-out came for it within %.0f s "
			 "(LOOM_BOOTSTRAP_TIMEOUT)", b->rank, k.n, n, j->tmo);
	for (i = 0; i < k.n; i++) {
		if (!rc && loom_hs_reply(b->key, &k.p[i], j->reply, j->rlen, digest, j->deadline)) {
			LOOM_ERR("bootstrap: rank %d: cannot send the table to rank %d", b->rank, k.p[i].rank);
			rc = LOOM_ERR_BOOTSTRAP;
		}
		close(k.p[i].fd);
	}
	free(k.p);
	return rc;
}

/* the table from this rank's parent in the fan-out, on its tree socket */
static int table_from_parent(struct rv_job *j, const struct rv_route *r)
{
	struct loom_boot *b = j->b;
	struct loom_hs_peer p;
	struct in_addr a = { r->parent_ip };
	int rc = loom_hs_dial_tcp(r->parent_ip, r->parent_port, LOOM_HS_TREE, j->deadline, &p);
	if (!rc)
		rc = loom_hs_hello(b->key, &p, LOOM_HS_TREE, b->rank, b->size, r->parent, NULL, 0, j->deadline);
	if (!rc)
		rc = loom_hs_read_reply(b->key, &p, j->reply, j->rlen, j->deadline);
	if (p.fd >= 0)
		close(p.fd);
	if (rc == LOOM_HS_GAVE_UP)
		LOOM_ERR("bootstrap: rank %d, this rank's parent in the table's fan-out, gave up; see its log", r->parent);
	else if (rc)
		LOOM_ERR("bootstrap: no table from rank %d at %s:%u, this rank's parent in the table's fan-out, within "
			 "%.0f s (LOOM_BOOTSTRAP_TIMEOUT): see its log", r->parent, inet_ntoa(a), r->parent_port, j->tmo);
	return rc ? LOOM_ERR_BOOTSTRAP : LOOM_SUCCESS;
}

/* the hello and what follows it on connection p, then the route (and
 * the table when rank 0 sends it itself); LOOM_HS_CLOSED when rank 0
 * closed before its route */
static int hello_once(struct rv_job *j, struct loom_hs_peer *p, const struct rv_hello *h, const void *follow,
		      size_t flen, struct rv_route *r)
{
	struct loom_boot *b = j->b;
	int rc = loom_hs_hello(b->key, p, LOOM_HS_RENDEZVOUS, b->rank, b->size, 0, h, sizeof *h, j->deadline);
	if (!rc && flen && loom_fd_write_all(p->fd, follow, flen, j->deadline))
		rc = LOOM_HS_CLOSED;
	if (!rc)
		rc = loom_hs_read_reply(b->key, p, r, sizeof *r, j->deadline);
	if (!rc && r->parent < 0) {
		rc = loom_hs_read_reply(b->key, p, j->reply, j->rlen, j->deadline);
		if (rc == LOOM_HS_CLOSED)
			rc = LOOM_ERR_BOOTSTRAP;  /* it took us: no second hello */
	}
	return rc;
}

/* rank 0 closed the connection before its reply: it never took the hello
 * (it says so when it refuses one, or gives up), so dial again after a
 * short pause, until the deadline */
static int redial(struct rv_job *j, struct loom_hs_peer *p, int *pause_ms)
{
	struct timespec ts;
	double left = j->deadline - loom_now();
	int ms = *pause_ms + (int)(getpid() % 7) * *pause_ms / 7;
	close(p->fd);
	p->fd = -1;
	if (left * 1000 < ms)
		return LOOM_ERR_TIMEOUT;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	nanosleep(&ts, NULL);
	if (*pause_ms < 50)
		*pause_ms *= 2;
	return loom_hs_dial_tcp(j->mip, (uint16_t)j->mport, LOOM_HS_RENDEZVOUS, j->deadline, p);
}

/* The hello (and what follows it, a group's entries), then the route and
 * the table, from rank 0 or from this rank's parent in the fan-out; then
 * the table to this rank's own children there. The tree socket listens
 * where rank 0 sees us, before the hello that names it. A connection
 * that rank 0 closes without a word is dialed again (a flood on
 * MASTER_PORT costs redials, not the job); a refusal ends at once. */
int loom_rv_hello_rank0(struct rv_job *j, struct loom_hs_peer *p, const struct rv_hello *hello,
			const void *follow, size_t flen)
{
	struct loom_boot *b = j->b;
	struct rv_hello h = *hello;
	struct rv_route r;
	struct sockaddr_in me;
	socklen_t ml = sizeof me;
	uint8_t d[32];
	int ts = -1, closed = 0, pause_ms = 10, rc = loom_rv_alloc_reply(j);
	memset(&r, 0, sizeof r);
	r.parent = -1;
	if (!rc && (getsockname(p->fd, (struct sockaddr *)&me, &ml) ||
		    loom_boot_listen(me.sin_addr.s_addr, 0, &ts, &h.tport)))
		rc = LOOM_ERR_BOOTSTRAP;
	while (!rc && (rc = hello_once(j, p, &h, follow, flen, &r)) == LOOM_HS_CLOSED) {
		closed++;
		if ((rc = redial(j, p, &pause_ms)) != LOOM_SUCCESS)
			break;
	}
	if (rc) {
		memset(&r, 0, sizeof r);
		r.parent = -1;
	}
	if (p->fd >= 0)
		close(p->fd);
	if (rc == LOOM_HS_FORGED)
		LOOM_ERR("bootstrap: the process at MASTER_ADDR:MASTER_PORT %s:%d does not hold this job's secret: "
			 "another program holds that port (or LOOM_JOB_SECRET differs between the ranks)",
			 j->maddr, j->mport);
	else if (rc == LOOM_HS_REFUSED)
		LOOM_ERR("bootstrap: rendezvous at %s:%d failed: rank 0 refused us: our hello failed its check "
			 "(LOOM_JOB_SECRET differs from rank 0's?)", j->maddr, j->mport);
	else if (rc == LOOM_HS_GAVE_UP)
		LOOM_ERR("bootstrap: rendezvous at %s:%d failed: rank 0 gave up; see its log", j->maddr, j->mport);
	else if (rc && closed)
		LOOM_ERR("bootstrap: rendezvous at %s:%d failed: rank 0 closed the connection before its reply %d "
			 "times (a flood of connections on MASTER_PORT, or rank 0 restarting?), then %s within %.0f s "
			 "(LOOM_BOOTSTRAP_TIMEOUT)", j->maddr, j->mport, closed,
			 rc == LOOM_HS_CLOSED ? "closed it again" : "no reply", j->tmo);
	else if (rc == LOOM_ERR_TIMEOUT)
		LOOM_ERR("bootstrap: rendezvous at %s:%d failed: no reply from rank 0 within %.0f s "
			 "(LOOM_BOOTSTRAP_TIMEOUT)", j->maddr, j->mport, j->tmo);
	else if (rc)
		LOOM_ERR("bootstrap: rendezvous at %s:%d failed: rank 0 closed the connection in the middle of its "
			 "reply (it failed? see its log)", j->maddr, j->mport);
	else if (closed)
		LOOM_INFO("bootstrap: rank 0 closed the connection before its reply %d times (a flood of "
			  "connections on MASTER_PORT?); the hello went through on the next", closed);
	if (!rc && (r.children < 0 || r.children > b->size || r.parent >= b->size)) {
		LOOM_ERR("bootstrap: rank 0's route says parent %d and %d children in a world of %d", r.parent,
			 r.children, b->size);
		r.children = 0;
		rc = LOOM_ERR_BOOTSTRAP;
	}
	if (!rc && r.parent >= 0)
		rc = table_from_parent(j, &r);
	if (!rc && (loom_sha256(j->reply, j->rlen, d), memcmp(d, r.digest, sizeof d))) {
		LOOM_ERR("bootstrap: the table from rank %d does not match the digest rank 0 sent", r.parent < 0 ? 0 : r.parent);
		rc = LOOM_ERR_BOOTSTRAP;
	}
	if (!rc && r.children > 0)
		rc = table_to_children(j, ts, r.children, r.digest);
	else if (rc && ts >= 0 && r.children > 0)
		loom_hs_give_up(ts, r.children, loom_now() + 5);  /* they fail now, not at the deadline */
	if (ts >= 0)
		close(ts);
	return rc ? LOOM_ERR_BOOTSTRAP : LOOM_SUCCESS;
}
