/* runtime/coll/xfer.c: the sends and receives of one operation, over shm or
 * TCP per peer, with the operation's deadline. Waiting spins briefly, yields
 * the core a while (util/sync.c: loom_backoff_step), then sleeps on the
 * communicator's bell (rung by shm peers and by the TCP
 * engine), and wakes at least every 100 ms to check the deadline, peers'
 * liveness and aborts. Transfers to one peer complete in posting order. */
#include "coll/coll.h"
#include "flight/flight.h"

#include <sched.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A TCP transfer goes as messages of up to SEG bytes, all posted at
 * once; each is announced and answered (transport_tcp_match.c's rendezvous)
 * and completes on its own: the larger SEG, the fewer round trips,
 * engine wake-ups and completions a transfer costs, while a segment
 * still lands in the receive as it comes (docs/algorithms.md has the
 * sizes measured). A receive-reduce still reduces each segment as it
 * lands. */
#define SEG (4u << 20)
/* TCP bytes left, all in receives, that the waiting thread reads from
 * the socket itself (pull_small) */
#define PULL_BYTES (256u * 1024)

static void begin(struct loom_xctx *x, struct loom_comm *c, const char *opname, uint64_t seq,
		  uint64_t tag, double deadline, double started)
{
	x->n = 0;
	x->status = 0;
	x->x = x->inl;
	x->cap = (int)(sizeof x->inl / sizeof x->inl[0]);
	x->top = NULL;
	x->topseq = 0;
	x->c = c;
	x->opname = opname;
	x->seq = seq;
	x->tag = tag;
	x->deadline = deadline;
	x->started = started;
}

void loom_x_begin(struct loom_xctx *x, struct loom_comm *c, const char *opname, uint64_t seq,
		  uint64_t tag, double deadline)
{
	begin(x, c, opname, seq, tag, deadline, loom_now_coarse());
}

void loom_x_begin_o(struct loom_xctx *x, struct loom_comm *c, const struct loom_opctx *o,
		    uint64_t tag)
{
	/* the operation's own start: one clock read less per small call */
	begin(x, c, o->name, o->seq, tag, o->deadline, o->started);
	x->top = o->top;
	x->topseq = o->topseq;
}

/* Where a TCP receive-reduce of len bytes lands: the communicator's
 * scratch, kept from one operation to the next (a fresh allocation of
 * many MiB costs a page fault and a cleared page per 4 KiB, every time),
 * unless another transfer of the operation holds it. */
#define SCRATCH_MAX (64u << 20)
static char *landing(struct loom_comm *c, struct loom_xreq *q, size_t len)
{
	struct loom_coll_state *st = loom_coll_state_of(c);
	if (st && !st->scratch_busy && len <= SCRATCH_MAX) {
		if (st->scratch_len < len) {
			char *n = realloc(st->scratch, len);
			if (n) {
				st->scratch = n;
				st->scratch_len = len;
			}
		}
		if (st->scratch_len >= len) {
			st->scratch_busy = 1;
			q->tmp_lent = 1;
			return st->scratch;
		}
	}
	return malloc(len);
}

static void land_free(struct loom_comm *c, struct loom_xreq *q)
{
	if (q->tmp_lent)  /* lent by landing: c->coll is there */
		c->coll->scratch_busy = 0;
	else
		free(q->tmp);
	q->tmp = NULL;
	q->tmp_lent = 0;
}

static int add(struct loom_xctx *x, int kind, int peer, void *buf, size_t len, loom_dtype_t dt,
	       loom_op_t op)
{
	struct loom_comm *c = x->c;
	struct loom_xreq *q;
	if (x->status)
		return -1;
	if (x->n == x->cap) {
		int cap = 2 * x->cap;
		struct loom_xreq **nx = x->x == x->inl ? malloc((size_t)cap * sizeof *nx)
						       : realloc(x->x, (size_t)cap * sizeof *nx);
		if (!nx) {
			x->status = LOOM_ERR_NOMEM;
			return -1;
		}
		if (x->x == x->inl)
			memcpy(nx, x->inl, sizeof x->inl);
		x->x = nx;
		x->cap = cap;
	}
	if (x->n < (int)(sizeof x->pool / sizeof x->pool[0])) {
		q = &x->pool[x->n];
		memset(q, 0, sizeof *q);
	} else {
		q = calloc(1, sizeof *q);
	}
	if (!q) {
		x->status = LOOM_ERR_NOMEM;
		return -1;
	}
	q->kind = kind;
	q->peer = peer;
	q->buf = buf;
	q->len = len;
	q->dt = dt;
	q->op = op;
	q->shm = loom_comm_uses_shm(c, peer);
	if (!q->shm) {
		int k;
		char *base = buf;
		q->nseg = len ? (int)((len + SEG - 1) / SEG) : 1;
		q->segs = calloc((size_t)q->nseg, sizeof *q->segs);
		if (kind == XRECV_REDUCE && len) {
			q->tmp = landing(c, q, len);
			base = q->tmp;
		}
		if (!q->segs || (kind == XRECV_REDUCE && len && !q->tmp)) {
			free(q->segs);
			land_free(c, q);
			if (q < x->pool || q >= x->pool + sizeof x->pool / sizeof x->pool[0])
				free(q);
			x->status = LOOM_ERR_NOMEM;
			return -1;
		}
		for (k = 0; k < q->nseg; k++) {
			struct loom_treq *t = &q->segs[k];
			size_t off = (size_t)k * SEG;
			t->kind = kind == XSEND ? TREQ_SEND : TREQ_RECV;
			t->peer = loom_comm_wrank(c, peer);
			t->ctx = c->ctx;
			t->tag = x->tag;
			t->buf = base + off;
			t->len = len - off < SEG ? len - off : SEG;
			t->bell = loom_comm_bell(c);
			loom_tcp_post(c->w->eng, t);
		}
	}
	x->x[x->n] = q;
	return x->n++;
}

int loom_x_send(struct loom_xctx *x, int peer, const void *buf, size_t len)
{
	return add(x, XSEND, peer, (void *)buf, len, LOOM_INT8, LOOM_SUM);
}

int loom_x_recv(struct loom_xctx *x, int peer, void *buf, size_t len)
{
	return add(x, XRECV, peer, buf, len, LOOM_INT8, LOOM_SUM);
}

int loom_x_recv_reduce(struct loom_xctx *x, int peer, void *buf, size_t count, loom_dtype_t dt,
		       loom_op_t op)
{
	return add(x, XRECV_REDUCE, peer, buf, count * loom_dtype_size(dt), dt, op);
}

/* one pass over everything pending; 1 when something moved */
static int progress(struct loom_xctx *x)
{
	struct loom_comm *c = x->c;
	int i, j, moved = 0;
	for (i = 0; i < x->n && !x->status; i++) {
		struct loom_xreq *q = x->x[i];
		if (q->done)
			continue;
		if (q->shm) {
			int blocked = 0, rc;
			for (j = 0; j < i && !blocked; j++) {
				struct loom_xreq *p = x->x[j];
				if (!p->done && p->shm && p->peer == q->peer &&
				    (p->kind == XSEND) == (q->kind == XSEND))
					blocked = 1;
			}
			if (blocked)
				continue;
			rc = loom_shm_progress(c->shm, loom_comm_local_idx(c, q->peer), q,
					       loom_x_shm_tag(x->tag));
			if (rc < 0) {
				x->status = rc;
				q->status = rc;
				return 1;
			}
			moved |= rc;
		} else {
			while (q->segdone < q->nseg && atomic_load(&q->segs[q->segdone].done)) {
				struct loom_treq *t = &q->segs[q->segdone];
				if (t->status) {
					x->status = t->status;
					q->status = t->status;
					return 1;
				}
				if (q->kind == XRECV_REDUCE && t->len)
					loom_reduce_local(q->buf + (t->buf - q->tmp), t->buf,
							  t->len / loom_dtype_size(q->dt), q->dt, q->op);
				q->segdone++;
				moved = 1;
			}
			if (q->segdone == q->nseg)
				q->done = 1;
		}
	}
	return moved;
}

/* gone: its TCP connection lost, or, on this node, its process gone, or
 * stopped and then probed over TCP (a dial, unanswered within
 * LOOM_HEARTBEAT while it stays stopped): a stopped process holds its
 * shared memory without a word. Only a stopped peer is probed: a wait
 * on a running one makes no connection. */
static int peer_dead(struct loom_comm *c, int peer)
{
	int lidx;
	if (peer == c->rank)
		return 0;
	if (loom_tcp_peer_gone(c->w->eng, loom_comm_wrank(c, peer)))
		return 1;
	lidx = loom_comm_local_idx(c, peer);
	return lidx >= 0 && (loom_shm_peer_gone(c->shm, lidx) ||
			     (loom_shm_peer_stopped(c->shm, lidx) &&
			      loom_tcp_probe(c->w->eng, loom_comm_wrank(c, peer))));
}

static void poison(struct loom_comm *c, int status)
{
	int zero = 0;
	atomic_compare_exchange_strong(&c->failed, &zero, status);
}

/* the communicator's failure (its own, or its parent's: an abort), 0 if none */
int loom_x_comm_failed(struct loom_comm *c)
{
	int f = atomic_load(&c->failed);
	if (!f && c->parent)
		f = atomic_load(&c->parent->failed);
	return f;
}

/* What a waiter checks when it has nothing to do: every 0.2 s whether a
 * peer it waits for is gone, and the deadline. fbox_peer >= 0: it waits for
 * that rank's fast box; else for its pending transfers. 0: wait on. */
/* A peer that wrote its last bytes and exited: they are in (ring, box or
 * engine) before its death is seen, so look once more before calling it
 * lost. 1: what we wait for from it is still missing. */
static int still_missing(struct loom_xctx *x, int i, int (*ready)(void *), void *arg)
{
	if (ready)
		return !ready(arg);
	return !x->x[i]->done && (progress(x), !x->status) && !x->x[i]->done;
}

static int wait_checks(struct loom_xctx *x, double now, double *next_check, int fbox_peer,
		       int (*ready)(void *), void *arg)
{
	struct loom_comm *c = x->c;
	int i;
	if (now >= *next_check) {
		*next_check = now + 0.2;
		for (i = 0; i < (fbox_peer >= 0 ? 1 : x->n); i++) {
			int peer = fbox_peer >= 0 ? fbox_peer : x->x[i]->peer;
			if ((fbox_peer >= 0 || !x->x[i]->done) && peer_dead(c, peer) &&
			    still_missing(x, i, ready, arg)) {
				LOOM_ERR("comm %s: %s seq %llu: rank %d is gone", c->name, x->opname,
					 (unsigned long long)x->seq, peer);
				poison(c, LOOM_ERR_PEER_LOST);
				return x->status = LOOM_ERR_PEER_LOST;
			}
		}
	}
	if (now >= x->deadline) {
		int *who = calloc((size_t)x->n + 1, sizeof *who), nw = 0;
		if (who && fbox_peer >= 0)
			who[nw++] = fbox_peer;
		for (i = 0; who && fbox_peer < 0 && i < x->n; i++) {
			struct loom_xreq *q = x->x[i];
			int j, dup = 0;
			if (q->done || q->kind == XSEND)
				continue;
			for (j = 0; j < nw; j++)
				dup |= who[j] == q->peer;
			if (!dup)
				who[nw++] = q->peer;
		}
		loom_report_timeout(c, x->opname, x->seq, now - x->started, who, nw, x->top, x->topseq);
		free(who);
		poison(c, LOOM_ERR_TIMEOUT);
		return x->status = LOOM_ERR_TIMEOUT;
	}
	return 0;
}

/* how long to sleep on the bell: until the next check, at most 0.1 s */
static double nap_of(const struct loom_xctx *x, double now, double next_check)
{
	double left = x->deadline - now, nap = next_check - now;
	if (left < nap)
		nap = left;
	if (nap > 0.1)
		nap = 0.1;
	if (nap < 0.001)
		nap = 0.001;
	return nap;
}

/* What is left to wait for: TCP bytes, whether any
 * transfer over shared memory is left, the first TCP receive's peer */
static size_t tcp_left(const struct loom_xctx *x, int *shm, int *recv_peer)
{
	size_t left = 0;
	int i;
	*shm = 0;
	*recv_peer = -1;
	for (i = 0; i < x->n; i++) {
		const struct loom_xreq *q = x->x[i];
		if (q->done)
			continue;
		if (q->shm) {
			*shm = 1;
			continue;
		}
		if (q->segdone < q->nseg)
			left += q->len - (size_t)q->segdone * SEG;
		if (q->kind != XSEND && *recv_peer < 0)
			*recv_peer = q->peer;
	}
	return left;
}

/* Small TCP receives left: read their peers' sockets here rather than
 * wait for the engine thread to (loom_tcp_pull). 8 B allreduce, 4 ranks on
 * 2 nodes of 2 cores: the hop over TCP was two wake-ups long. */
static void pull_small(struct loom_xctx *x)
{
	int shm, peer;
	if (tcp_left(x, &shm, &peer) <= PULL_BYTES && peer >= 0)
		loom_tcp_pull(x->c->w->eng, loom_comm_wrank(x->c, peer));
}

/* 1 when what is left to wait for is TCP bulk only (64 KiB or more, no
 * shared-memory transfer): the engine thread moves those bytes and rings
 * the bell as each segment lands, so after the short spin this thread
 * sleeps rather than yields. A yielding waiter takes the core from the
 * engine threads whenever ranks outnumber cores. */
static int tcp_bulk(const struct loom_xctx *x)
{
	int shm, peer;
	return tcp_left(x, &shm, &peer) >= 64 * 1024 && !shm;
}

/* How long a waiter yields before it sleeps. sched_yield() gives the
 * core to a task queued on it only now and then (CFS), so where ranks
 * outnumber cores a waiter can hold the core from the very rank it waits
 * for until it sleeps: then every wait lasts the whole window, whatever
 * its length (docs/algorithms.md). So after LOOM_SLEEPY_RUN waits in a
 * row that each ended asleep, a communicator's waiters sleep right after
 * the spin, until one wait ends while still spinning or yielding. */
double loom_x_yield_window(const struct loom_comm *c)
{
	return c->coll && c->coll->sleepy >= LOOM_SLEEPY_RUN ? 0 : LOOM_YIELD_S;
}

void loom_x_wait_ended(struct loom_comm *c, int slept)
{
	struct loom_coll_state *st = loom_coll_state_of(c);
	if (st)  /* else no record: waits keep the full window */
		st->sleepy = slept ? st->sleepy + (st->sleepy < LOOM_SLEEPY_RUN) : 0;
}

int loom_x_wait(struct loom_xctx *x, int handle)
{
	struct loom_comm *c = x->c;
	struct loom_bell *bell = loom_comm_bell(c);
	struct loom_backoff b;
	double next_check = loom_now() + 0.2;
	int slept = 0;  /* slept because the yield window ran out */
	loom_backoff_init(&b, loom_x_yield_window(c));
	for (;;) {
		uint32_t seen = atomic_load(&bell->seq);
		int moved = progress(x), i, all = 1, f;
		double now;
		if (x->status) {
			/* a transfer failed: report the communicator's cause (an abort
			 * that came in just before the aborting rank's exit) if any */
			if ((f = loom_x_comm_failed(c)))
				x->status = f;
			return x->status;
		}
		if (handle >= 0)
			all = x->x[handle]->done;
		else
			for (i = 0; i < x->n; i++)
				if (!x->x[i]->done)
					all = 0;
		if (all) {
			loom_x_wait_ended(c, slept);
			return LOOM_SUCCESS;
		}
		if ((f = loom_x_comm_failed(c))) {
			x->status = f;
			return f;
		}
		if (moved) {
			loom_backoff_reset(&b);
			continue;
		}
		pull_small(x);
		if (loom_backoff_step(&b))
			slept = 1;
		else if (!(b.n >= LOOM_YIELD_FROM && tcp_bulk(x)))
			continue;  /* TCP bulk sleeps by design: not counted */
		now = loom_now();
		if (wait_checks(x, now, &next_check, -1, NULL, NULL))
			return x->status;
		loom_bell_wait(bell, seen, nap_of(x, now, next_check));
	}
}

/* A rank that waits for room reads the line its peer writes at every
 * operation (the peer's done). Read at every spin, it is pulled away
 * from the peer before each of the peer's stores, which then miss: a
 * reduce root, whose peers post up to 64 operations ahead and wait for
 * room, paid that at every call. Read every 32nd spin (about a
 * microsecond), the peer keeps it; the waiter still has the rest of its
 * ring queued for the peer, so seeing the room later costs nothing. */
#define LOOM_SPACE_POLL 32u

/* Wait until ready(arg): a local peer's change in shared memory (the fast
 * boxes). Spins, yields, then sleeps (at once when that peer sleeps
 * itself: it is descheduled, nothing comes before it is woken). */
static int wait_shm(struct loom_xctx *x, int peer, int (*ready)(void *), void *arg, int lazy)
{
	struct loom_comm *c = x->c;
	struct loom_backoff b;
	double next_check = 0;
	int f, lidx = loom_comm_local_idx(c, peer), dozing = 0, slept = 0, rc = LOOM_SUCCESS;
	loom_backoff_init(&b, loom_x_yield_window(c));
	for (;;) {
		double now, nap;
		/* lazy: while spinning, every LOOM_SPACE_POLL-th pass only.
		 * Once dozing, at every pass: a nap that found ready(arg)
		 * returns at once, and b.n stands still on that path, so a
		 * skipped look here napped and came back forever (a reduce
		 * whose root had fallen asleep hung so) */
		if ((!lazy || dozing || b.n >= LOOM_YIELD_FROM || b.n % LOOM_SPACE_POLL == 0) &&
		    ready(arg))
			break;
		if ((f = loom_x_comm_failed(c))) {
			rc = x->status = f;
			break;
		}
		if (b.n == 0)  /* a wait begins: not when the data was there */
			loom_shm_here(c->shm);
		/* the peer last ran on this CPU, so it is not running: give it
		 * the CPU now rather than after LOOM_SPIN_S, which every wait of
		 * two ranks of a node on one core would spend for nothing */
		if ((b.n & 15) == 1 && b.n < LOOM_YIELD_FROM && loom_shm_peer_beside(c->shm, lidx)) {
			b.n++;
			sched_yield();
			continue;
		}
		if (b.n > 64 && loom_shm_peer_asleep(c->shm, lidx))
			;  /* the peer sleeps: nothing comes before it is woken */
		else if (loom_backoff_step(&b))
			slept = 1;
		else
			continue;
		now = loom_now();
		if (next_check == 0)
			next_check = now + 0.2;
		if (wait_checks(x, now, &next_check, peer, ready, arg)) {
			rc = x->status;
			break;
		}
		nap = nap_of(x, now, next_check);
		if (!dozing) {
			loom_shm_doze(c->shm, 1);
			dozing = 1;
			if (nap > LOOM_SHM_FIRST_NAP)
				nap = LOOM_SHM_FIRST_NAP;
		}
		loom_shm_nap(c->shm, nap, ready, arg);
	}
	if (dozing)
		loom_shm_doze(c->shm, 0);
	if (!rc)
		loom_x_wait_ended(c, slept);
	return rc;
}

int loom_x_wait_shm(struct loom_xctx *x, int peer, int (*ready)(void *), void *arg)
{
	return wait_shm(x, peer, ready, arg, 0);
}

int loom_x_wait_shm_space(struct loom_xctx *x, int peer, int (*ready)(void *), void *arg)
{
	return wait_shm(x, peer, ready, arg, 1);
}

void loom_x_abandon(struct loom_xctx *x)
{
	int i, k;
	for (i = 0; i < x->n; i++) {
		struct loom_xreq *q = x->x[i];
		if (!q->shm && q->segs)
			for (k = 0; k < q->nseg; k++)
				if (!atomic_load(&q->segs[k].done))
					loom_tcp_cancel(x->c->w->eng, &q->segs[k]);
		free(q->segs);
		land_free(x->c, q);
		if (q < x->pool || q >= x->pool + sizeof x->pool / sizeof x->pool[0])
			free(q);
	}
	if (x->x != x->inl)
		free(x->x);
	x->x = x->inl;
	x->n = 0;
}

int loom_x_end(struct loom_xctx *x)
{
	int rc = x->status ? x->status : loom_x_wait(x, -1);
	loom_x_abandon(x);
	return rc;
}

static void append_ranks(char *out, size_t cap, const struct loom_comm *c, const int *r, int n)
{
	size_t len = strlen(out);
	int i;
	for (i = 0; i < n && len + 24 < cap; i++) {
		if (c->is_world)
			len += (size_t)snprintf(out + len, cap - len, "%s%d", i ? "," : "", r[i]);
		else
			len += (size_t)snprintf(out + len, cap - len, "%s%d (world %d)", i ? "," : "",
						r[i], loom_comm_wrank(c, r[i]));
	}
}

/* One line: comm, op, sequence number, and the ranks that never arrived
 * (asked over TCP: which operation has each rank entered on this comm). */
/* Which ranks of q have not entered operation seq? (asked over TCP: each
 * rank's engine answers with the sequence number it has entered on q).
 * Fills late[] and mute[] (no answer); returns 0 when it could not ask. */
static int ask_late(struct loom_comm *q, uint64_t seq, int *late, int *nl, int *mute, int *nm)
{
	struct loom_bell *bell = loom_comm_bell(q);
	double until = loom_now() + 1.0;
	int i, nq = 0;
	_Atomic int64_t *rep = atomic_load(&q->status_rep);
	*nl = *nm = 0;
	if (!q->w->eng || q->size < 2)
		return 0;
	if (!rep) {  /* made by the first diagnosis: no O(n) table in every communicator */
		_Atomic int64_t *fresh = calloc((size_t)q->size, sizeof *fresh), *none = NULL;
		if (!fresh)
			return 0;
		for (i = 0; i < q->size; i++)
			atomic_store(&fresh[i], -2);
		if (!atomic_compare_exchange_strong(&q->status_rep, &none, fresh))
			free((void *)fresh);
		rep = atomic_load(&q->status_rep);
	}
	for (i = 0; i < q->size; i++)
		atomic_store(&rep[i], -2);
	for (i = 0; i < q->size; i++)
		if (i != q->rank && !loom_tcp_peer_gone(q->w->eng, loom_comm_wrank(q, i))) {
			loom_tcp_control(q->w->eng, loom_comm_wrank(q, i), CTL_STATUS_REQ, q->ctx, (int64_t)seq);
			nq++;
		}
	while (nq && loom_now() < until) {
		uint32_t seen = atomic_load(&bell->seq);
		int got = 0;
		for (i = 0; i < q->size; i++)
			if (i != q->rank && atomic_load(&rep[i]) != -2)
				got++;
		if (got >= nq)
			break;
		loom_bell_wait(bell, seen, 0.05);
	}
	for (i = 0; i < q->size; i++) {
		int64_t v;
		if (i == q->rank)
			continue;
		v = atomic_load(&rep[i]);
		if (v == -2)
			mute[(*nm)++] = i;
		else if (v < (int64_t)seq)
			late[(*nl)++] = i;
	}
	return 1;
}

/* One line: communicator, operation, sequence number, and the ranks that
 * never arrived (in the user's communicator; for the inner steps of a
 * hierarchical collective, the inner communicator's ranks otherwise). */
void loom_report_timeout(struct loom_comm *c, const char *opname, uint64_t seq, double waited,
			 const int *waiting, int nwaiting, struct loom_comm *top, uint64_t topseq)
{
	char line[640] = "";
	struct loom_comm *q = top ? top : c;
	uint64_t qseq = top ? topseq : seq;
	int n = c->size > q->size ? c->size : q->size;
	int *late = calloc((size_t)n + 1, sizeof *late), nl = 0;
	int *mute = calloc((size_t)n + 1, sizeof *mute), nm = 0;
	if (late && mute)
		ask_late(q, qseq, late, &nl, mute, &nm);
	if (nl) {
		snprintf(line, sizeof line, "rank%s ", nl > 1 ? "s" : "");
		append_ranks(line, sizeof line, q, late, nl);
		strncat(line, " never arrived", sizeof line - strlen(line) - 1);
	} else if (nwaiting) {
		snprintf(line, sizeof line, "all ranks arrived; %s rank%s ", c->name, nwaiting > 1 ? "s" : "");
		append_ranks(line, sizeof line, c, waiting, nwaiting);
		strncat(line, " did not send in time", sizeof line - strlen(line) - 1);
	} else {
		snprintf(line, sizeof line, "all ranks arrived; still sending");
	}
	if (nm) {
		strncat(line, "; no answer from ", sizeof line - strlen(line) - 1);
		append_ranks(line, sizeof line, q, mute, nm);
	}
	if (q != c)
		LOOM_ERR("timeout: comm %s op %s seq %llu (in %s) after %.1f s: %s", q->name, opname,
			 (unsigned long long)qseq, c->name, waited, line);
	else
		LOOM_ERR("timeout: comm %s op %s seq %llu after %.1f s: %s", c->name, opname,
			 (unsigned long long)seq, waited, line);
	loom_flight_log_verdict();
	free(late);
	free(mute);
}
