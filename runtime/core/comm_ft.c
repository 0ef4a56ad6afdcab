/* runtime/core/comm_ft.c: the native backend's agreement among the
 * members still alive, and the shrink built on it (docs/fault-tolerance.md).
 *
 * The model is fail-stop: a member dies or its connections drop, and the
 * TCP engine then fails what we wait for from it (its connection closed,
 * or a dial refused). Messages go straight through the engine, on a
 * context of their own per agreement, so a failed or revoked
 * communicator still agrees. Each member holds an estimate: the AND of
 * the flags it has seen and a bit per member known failed.
 *   phase 1: every member sends its estimate to every other one it does
 *            not know failed and merges what comes (a loss sets the
 *            sender's bit; a member marked failed by what came is
 *            waited for no more): n (n - 1) messages, one round;
 *   phase 2: coordinators in rank order: coordinator r sends its
 *            estimate to the members it does not know failed; the others
 *            take it as theirs, or go on with their own when r is lost.
 * The lowest member that lives through the call is a coordinator every
 * survivor hears (nobody sees a live member's connection drop), so from
 * its round on every survivor and every later coordinator holds its
 * estimate: the decision is the same everywhere. Phase 2 takes one
 * message latency per live member, n - 1 messages each. A member alive
 * but not answering is lost to the engine after LOOM_HEARTBEAT (its
 * silence, or a dial to it unanswered); with the heartbeat off it ends
 * the call with LOOM_ERR_TIMEOUT on who waits for it: nothing is agreed
 * then. The fence around the call: comm_fence.c. */
#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG_GATHER 1ull
#define TAG_ROUND 0x100ull   /* + the coordinator's rank */

/* an estimate on the wire: flag, then one bit per member, failed */
struct est {
	int n;
	size_t len;
	uint8_t *b;          /* [0..3] flag (0/1), [4..] the bits */
};

static int est_init(struct est *e, int n)
{
	e->n = n;
	e->len = 4 + ((size_t)n + 7) / 8;
	e->b = calloc(1, e->len);
	return e->b ? 0 : -1;
}
static int est_failed(const struct est *e, int i) { return e->b[4 + i / 8] >> (i % 8) & 1; }
static void est_fail(struct est *e, int i) { e->b[4 + i / 8] |= (uint8_t)(1u << (i % 8)); }
static int est_flag(const struct est *e) { return e->b[0]; }

/* e = e AND/UNION what came in o */
static void est_merge(struct est *e, const uint8_t *o)
{
	size_t k;
	e->b[0] = e->b[0] && o[0];
	for (k = 4; k < e->len; k++)
		e->b[k] |= o[k];
}

/* the engine's transfers of one step, waited for together */
struct io {
	struct loom_comm *c;
	uint64_t ctx;
	double deadline;
	struct loom_bell bell;
	struct loom_treq *t;
	int nt;
};

static void io_post(struct io *io, int is_send, int peer, uint64_t tag, void *buf, size_t len)
{
	struct loom_treq *r = &io->t[io->nt++];
	memset(r, 0, sizeof *r);
	r->kind = is_send ? TREQ_SEND : TREQ_RECV;
	r->peer = loom_comm_wrank(io->c, peer);
	r->ctx = io->ctx;
	r->tag = tag;
	r->buf = buf;
	r->len = len;
	r->eager = 1;
	r->bell = &io->bell;
	loom_tcp_post(io->c->w->eng, r);
}

/* every posted transfer done (each with its status), or LOOM_ERR_TIMEOUT
 * at the deadline with the rest taken back */
static int io_wait(struct io *io)
{
	for (;;) {
		uint32_t seen = atomic_load(&io->bell.seq);
		int i, left = 0;
		for (i = 0; i < io->nt; i++)
			left += !atomic_load(&io->t[i].done);
		if (!left)
			break;
		if (loom_now() >= io->deadline) {
			for (i = 0; i < io->nt; i++)
				loom_tcp_cancel(io->c->w->eng, &io->t[i]);
			io->nt = 0;
			return LOOM_ERR_TIMEOUT;
		}
		loom_bell_wait(&io->bell, seen, 0.1);
	}
	io->nt = 0;
	return LOOM_SUCCESS;
}

/* phase 1's transfers with each member: its estimate merged as it comes
 * (or its bit set when the receive failed), and the transfers with a
 * member that an estimate marks failed taken back: failed stays failed,
 * so nothing it could send changes the outcome, and a member stopped
 * without a word costs only the wait of the first survivor that lost it
 * (LOOM_HEARTBEAT), not one more per survivor that never talked to it */
struct g1 {
	int nf, *who, *ti;
	char *seen;
	uint8_t *in;
};

static int gather_wait(struct io *io, struct est *e, struct g1 *g)
{
	int k, left;
	for (;;) {
		uint32_t bell = atomic_load(&io->bell.seq);
		left = 0;
		for (k = 0; k < g->nf; k++) {
			struct loom_treq *r = &io->t[g->ti[k]];
			if (!g->seen[k] && atomic_load(&r->done)) {
				g->seen[k] = 1;
				if (r->status == LOOM_SUCCESS)
					est_merge(e, g->in + e->len * (size_t)g->who[k]);
				else
					est_fail(e, g->who[k]);
			}
		}
		for (k = 0; k < g->nf; k++) {
			struct loom_treq *r = &io->t[g->ti[k]], *s = r + 1;
			if (est_failed(e, g->who[k]) && !(atomic_load(&r->done) && atomic_load(&s->done))) {
				loom_tcp_cancel(io->c->w->eng, r);
				loom_tcp_cancel(io->c->w->eng, s);
			}
			left += !atomic_load(&r->done) || !atomic_load(&s->done);
		}
		if (!left)
			break;
		if (loom_now() >= io->deadline) {
			for (k = 0; k < io->nt; k++)
				loom_tcp_cancel(io->c->w->eng, &io->t[k]);
			io->nt = 0;
			return LOOM_ERR_TIMEOUT;
		}
		loom_bell_wait(&io->bell, bell, 0.1);
	}
	io->nt = 0;
	return LOOM_SUCCESS;
}

/* phase 1: estimates to and from every member not known failed */
static int gather(struct io *io, struct est *e)
{
	struct loom_comm *c = io->c;
	struct g1 g = { 0 };
	int n = c->size, i, rc;
	uint8_t *mine = malloc(e->len);
	g.who = calloc((size_t)n, sizeof *g.who);
	g.ti = calloc((size_t)n, sizeof *g.ti);
	g.seen = calloc((size_t)n, 1);
	g.in = malloc(e->len * (size_t)n);
	rc = g.who && g.ti && g.seen && g.in && mine ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
	if (rc == LOOM_SUCCESS)
		memcpy(mine, e->b, e->len);
	for (i = 0; rc == LOOM_SUCCESS && i < n; i++) {
		if (i == c->rank || est_failed(e, i))
			continue;
		g.who[g.nf] = i;
		g.ti[g.nf++] = io->nt;
		io_post(io, 0, i, TAG_GATHER, g.in + e->len * (size_t)i, e->len);
		io_post(io, 1, i, TAG_GATHER, mine, e->len);
	}
	if (rc == LOOM_SUCCESS)
		rc = gather_wait(io, e, &g);
	free(g.who); free(g.ti); free(g.seen); free(g.in); free(mine);
	return rc;
}

/* phase 2: each coordinator's estimate becomes everyone's who hears it */
static int rounds(struct io *io, struct est *e)
{
	struct loom_comm *c = io->c;
	int r, i, rc = LOOM_SUCCESS;
	uint8_t *buf = malloc(e->len);
	char *lost = calloc((size_t)c->size, 1);   /* seen gone here, not agreed */
	if (!buf || !lost) {
		free(buf); free(lost);
		return LOOM_ERR_NOMEM;
	}
	for (r = 0; r < c->size && rc == LOOM_SUCCESS; r++) {
		if (est_failed(e, r) || lost[r])
			continue;
		if (r == c->rank) {
			memcpy(buf, e->b, e->len);
			for (i = 0; i < c->size; i++)
				if (i != r && !est_failed(e, i) && !lost[i])
					io_post(io, 1, i, TAG_ROUND + (uint64_t)r, buf, e->len);
			rc = io_wait(io);
			continue;
		}
		io_post(io, 0, r, TAG_ROUND + (uint64_t)r, buf, e->len);
		rc = io_wait(io);
		if (rc == LOOM_SUCCESS && io->t[0].status == LOOM_SUCCESS)
			memcpy(e->b, buf, e->len);
		else if (rc == LOOM_SUCCESS)
			lost[r] = 1;
	}
	free(buf);
	free(lost);
	return rc;
}

/* the agreed failed set kept on c, for loom_comm_failed and the shrink */
static int keep_failed(struct loom_comm *c, const struct est *e)
{
	int i, k = 0, *f = malloc((size_t)c->size * sizeof *f);
	if (!f)
		return LOOM_ERR_NOMEM;
	for (i = 0; i < c->size; i++)
		if (est_failed(e, i))
			f[k++] = i;
	free(c->ft_failed);
	c->ft_failed = f;
	c->ft_nfailed = k;
	return LOOM_SUCCESS;
}

int loom_native_agree(struct loom_comm *c, int *flag)
{
	struct io io = { 0 };
	struct est e;
	int i, rc, lost = 0;
	double t0 = loom_now();
	if ((rc = loom_native_fenced(c)))
		return rc;
	if (est_init(&e, c->size))
		return LOOM_ERR_NOMEM;
	io.c = c;
	io.ctx = loom_mix64(loom_mix64(c->ctx, 0x6167726565ull), ++c->ft_epoch);
	io.deadline = t0 + c->timeout;
	io.t = calloc(2 * (size_t)c->size, sizeof *io.t);
	e.b[0] = *flag != 0;
	for (i = 0; i < c->ft_nfailed; i++)   /* failed stays failed */
		est_fail(&e, c->ft_failed[i]);
	for (i = 0; i < c->size; i++)
		if (i != c->rank && loom_tcp_peer_gone(c->w->eng, loom_comm_wrank(c, i)))
			est_fail(&e, i);
	rc = io.t ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
	if (rc == LOOM_SUCCESS && c->size > 1)
		rc = gather(&io, &e);
	if (rc == LOOM_SUCCESS && c->size > 1)
		rc = rounds(&io, &e);
	if (rc == LOOM_SUCCESS)
		rc = keep_failed(c, &e);
	if (rc == LOOM_SUCCESS)   /* fenced during the call: it agreed with nobody */
		rc = loom_native_fenced(c);
	if (rc == LOOM_SUCCESS) {
		loom_native_fence_failed(c);
		*flag = est_flag(&e);
		for (i = 0; i < c->size; i++)
			lost += est_failed(&e, i);
		LOOM_INFO("comm %s: agreement %llu: flag %d, %d failed, %.3f s", c->name,
			  (unsigned long long)c->ft_epoch, *flag, lost, loom_now() - t0);
	} else {
		LOOM_ERR("comm %s: agreement %llu failed: %s", c->name,
			 (unsigned long long)c->ft_epoch, loom_strerror(rc));
	}
	free(io.t);
	free(e.b);
	return rc;
}

/* ---- the shrink ---- */

int loom_native_shrink(struct loom_comm *c, struct loom_comm **out)
{
	int flag = 1, rc = loom_native_agree(c, &flag), i, k, m = 0, me = -1, *wr;
	char name[96];
	*out = NULL;
	if (rc != LOOM_SUCCESS)
		return rc;
	if (!(wr = malloc((size_t)c->size * sizeof *wr)))
		return LOOM_ERR_NOMEM;
	for (i = 0, k = 0; i < c->size; i++) {
		if (k < c->ft_nfailed && c->ft_failed[k] == i) {
			k++;
			continue;
		}
		if (i == c->rank)
			me = m;
		wr[m++] = loom_comm_wrank(c, i);
	}
	if (me < 0) {   /* the others count this member failed: it is out */
		LOOM_ERR("comm %s: shrink: the survivors count this rank failed", c->name);
		free(wr);
		return LOOM_ERR_REVOKED;
	}
	snprintf(name, sizeof name, "%s.s%llu", c->name, (unsigned long long)c->ft_epoch);
	*out = loom_comm_create(c->w, loom_mix64(loom_mix64(c->ctx, 0x736872696e6bull), c->ft_epoch),
				m, wr, me, name);
	free(wr);
	if (!*out)
		return LOOM_ERR_NOMEM;
	(*out)->be = c->be;
	(*out)->timeout = c->timeout;
	LOOM_INFO("comm %s: shrunk to %s: %d of %d members, rank %d", c->name, name, m, c->size, me);
	return LOOM_SUCCESS;
}
