/* unit test: the checkpoint plan (runtime/ckpt/test/ckpt_plan.c) as pure functions,
 * without a communicator: aggregator choice, domains, windows, every
 * rank's runs and the pieces of them in each window, direct or packed,
 * and the holes no rank holds. Expected values worked out by hand. */
#include "config.h"
#include "ckpt/ckpt_nocomm.h"
#include "loom.h"
#include "../../../t/tap.h"

#include <inttypes.h>
#include <stdint.h>

#define MAXR 4
#define MAXT 3
#define MAXB 4

/* one rank's registrations: what loom_ckpt_tensor builds */
typedef struct {
	ckpt_tensor_t t[MAXT];
	ckpt_block_t b[MAXT][MAXB];
} table_t;

typedef struct {
	int nranks, nt;
	table_t r[MAXR];
	int32_t lrs[MAXR];   /* local rank of each rank */
	long want;           /* aggregators asked for; 0: one per node */
	uint64_t chunk, window, direct_min;
	uint64_t bytes[MAXT];
} setup_t;

static void setup(setup_t *s, int nranks, uint64_t chunk, uint64_t window)
{
	memset(s, 0, sizeof *s);
	s->nranks = nranks;
	s->chunk = chunk;
	s->window = window;
	s->direct_min = 1;
}

/* tensor i of every rank: a float32 (or esize) tensor of shape s0 x s1 */
static void tensor(setup_t *s, int i, int ndim, uint64_t s0, uint64_t s1, size_t esize)
{
	for (int r = 0; r < s->nranks; r++) {
		ckpt_tensor_t *t = &s->r[r].t[i];
		t->ndim = ndim;
		t->shape[0] = s0;
		t->shape[1] = s1;
		t->esize = esize;
		t->bytes = esize * s0 * (ndim > 1 ? s1 : 1);
		t->b = s->r[r].b[i];
		s->bytes[i] = t->bytes;
	}
	if (i >= s->nt)
		s->nt = i + 1;
}

/* rank r holds the block at (o0, o1) of extent (e0, e1) of tensor i */
static void block(setup_t *s, int r, int i, uint64_t o0, uint64_t o1, uint64_t e0, uint64_t e1)
{
	ckpt_tensor_t *t = &s->r[r].t[i];
	ckpt_block_t *b = &t->b[t->nb++];
	memset(b, 0, sizeof *b);
	b->off[0] = o0;
	b->off[1] = o1;
	b->ext[0] = e0;
	b->ext[1] = e1;
}

/* the plan as rank `rank` sees it: every rank's blocks on the wire, as
 * loom_ck_plan_make gathers them */
static int build(ckpt_plan_t *p, setup_t *s, int rank)
{
	int64_t nd = 0, *desc;
	ckpt_plan_in_t in;
	int rc;
	for (int r = 0; r < s->nranks; r++) {
		int64_t n = loom_ck_plan_nblocks(s->r[r].t, s->nt);
		if (n > nd)
			nd = n;
	}
	desc = calloc((size_t)(nd * s->nranks) * CKPT_DESC_W + 1, sizeof *desc);
	for (int r = 0; r < s->nranks; r++)
		loom_ck_plan_pack(s->r[r].t, s->nt, desc + r * nd * CKPT_DESC_W, nd);
	memset(&in, 0, sizeof in);
	in.nranks = s->nranks;
	in.rank = rank;
	in.nt = s->nt;
	in.t = s->r[0].t;
	in.bytes = s->bytes;
	in.chunk = s->chunk;
	in.local_rank = s->lrs;
	in.want_aggr = s->want;
	in.window = s->window;
	in.direct_min = s->direct_min;
	in.desc = desc;
	in.ndesc = nd;
	rc = loom_ck_plan_build(p, &in);
	free(desc);
	return rc;
}

/* "v+len tT/bB@o" per piece: virtual offset, length, tensor, block and
 * offset in that block's buffer */
static void rec_fn(void *arg, uint64_t v, uint64_t len, const ckpt_vrun_t *r)
{
	char *s = arg;
	size_t n = strlen(s);
	snprintf(s + n, 512 - n, "%s%" PRIu64 "+%" PRIu64 " t%d/b%d@%" PRIu64, n ? ", " : "", v, len,
		 r->tensor, r->block, r->loff + (v - r->v));
}

static const char *pcs(const ckpt_plan_t *p, int r, uint64_t lo, uint64_t hi)
{
	static char buf[512];
	buf[0] = 0;
	loom_ck_plan_pieces(p, r, lo, hi, rec_fn, buf);
	return buf;
}

/* rank r's pieces in aggregator j's window of round k */
static const char *to_aggr(const ckpt_plan_t *p, int r, int j, int k)
{
	uint64_t lo, hi;
	loom_ck_plan_window(p, j, k, &lo, &hi);
	return pcs(p, r, lo, hi);
}

static const char *u64s(const uint64_t *v, int n)
{
	static char buf[256];
	buf[0] = 0;
	for (int i = 0; i < n; i++)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%" PRIu64, i ? " " : "", v[i]);
	return buf;
}

static const char *ints(const int *v, int n)
{
	static char buf[256];
	buf[0] = 0;
	for (int i = 0; i < n; i++)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d", i ? " " : "", v[i]);
	return buf;
}

static const char *window(const ckpt_plan_t *p, int j, int k)
{
	static char buf[64];
	uint64_t lo, hi;
	loom_ck_plan_window(p, j, k, &lo, &hi);
	snprintf(buf, sizeof buf, "[%" PRIu64 ",%" PRIu64 ")", lo, hi);
	return buf;
}

/* 4x3 float32 (48 bytes), rank 0 rows 0-1, rank 1 rows 2-3; one node:
 * one aggregator (rank 0) owning all 48 bytes in windows of 16 */
static void t_rows_one_aggregator(void)
{
	setup_t s;
	ckpt_plan_t p;
	setup(&s, 2, 8, 16);
	s.lrs[1] = 1;
	tensor(&s, 0, 2, 4, 3, 4);
	block(&s, 0, 0, 0, 0, 2, 3);
	block(&s, 1, 0, 2, 0, 2, 3);
	is_int(build(&p, &s, 1), LOOM_SUCCESS, "rows, 1 aggregator: plan built");
	is_int(p.naggr, 1, "one node: one aggregator");
	is_int(p.aggr[0], 0, "... rank 0");
	is_int(p.my_aggr, -1, "rank 1 is not one");
	is_str(u64s(p.dom, 2), "0 48", "it owns bytes 0..48");
	is_int(p.rounds, 3, "48 bytes in windows of 16: 3 rounds");
	is_str(u64s(p.cbase, 2), "0 6", "6 chunks of 8 bytes");
	is_int(p.nruns[0], 1, "rank 0: two full rows are one run");
	is_str(pcs(&p, 0, 0, 48), "0+24 t0/b0@0", "rank 0 holds bytes 0..24");
	is_str(pcs(&p, 1, 0, 48), "24+24 t0/b0@0", "rank 1 holds bytes 24..48");
	is_str(to_aggr(&p, 0, 0, 0), "0+16 t0/b0@0", "round 0 [0,16): rank 0's first 16 bytes");
	is_str(to_aggr(&p, 1, 0, 0), "", "round 0: nothing of rank 1");
	is_str(to_aggr(&p, 0, 0, 1), "16+8 t0/b0@16", "round 1 [16,32): rank 0's last 8 bytes");
	is_str(to_aggr(&p, 1, 0, 1), "24+8 t0/b0@0", "round 1: rank 1's first 8");
	is_str(to_aggr(&p, 1, 0, 2), "32+16 t0/b0@8", "round 2 [32,48): rank 1's other 16");
	is_str(window(&p, 0, 3), "[48,48)", "past the domain the window is empty");
	loom_ck_plan_free(&p);
}

/* the same tensor, rank 0 row 0, rank 1 rows 1-3; two nodes: rank 0
 * and rank 1 aggregate, 3 chunks of 8 bytes each */
static void t_rows_two_aggregators(void)
{
	setup_t s;
	ckpt_plan_t p;
	setup(&s, 2, 8, 16);
	tensor(&s, 0, 2, 4, 3, 4);
	block(&s, 0, 0, 0, 0, 1, 3);
	block(&s, 1, 0, 1, 0, 3, 3);
	is_int(build(&p, &s, 1), LOOM_SUCCESS, "rows, 2 aggregators: plan built");
	is_str(ints(p.aggr, p.naggr), "0 1", "local rank 0 of each node aggregates");
	is_int(p.my_aggr, 1, "rank 1 is aggregator 1");
	is_str(u64s(p.dom, 3), "0 24 48", "each owns 3 chunks: 0..24, 24..48");
	is_int(p.rounds, 2, "24 bytes in windows of 16: 2 rounds");
	is_str(window(&p, 0, 1), "[16,24)", "aggregator 0, round 1: the rest of its domain");
	is_str(to_aggr(&p, 0, 0, 0), "0+12 t0/b0@0", "rank 0 keeps its row in aggregator 0");
	is_str(to_aggr(&p, 1, 0, 0), "12+4 t0/b0@0", "rank 1 sends 4 bytes to aggregator 0 ...");
	is_str(to_aggr(&p, 1, 0, 1), "16+8 t0/b0@4", "... and 8 more in round 1");
	is_str(to_aggr(&p, 0, 1, 0), "", "rank 0 sends nothing to aggregator 1");
	is_str(to_aggr(&p, 1, 1, 0), "24+16 t0/b0@12", "aggregator 1 gets its own rows, round 0");
	is_str(to_aggr(&p, 1, 1, 1), "40+8 t0/b0@28", "... and round 1");
	ok(loom_ck_plan_touches(&p, 1, 0, 0), "aggregator 1 touches the file");
	loom_ck_plan_free(&p);
}

/* columns: rank 0 holds columns 0-1 (8 bytes a row), rank 1 column 2;
 * every row is a run; 2 aggregators with one window each */
static void t_columns(void)
{
	setup_t s;
	ckpt_plan_t p;
	uint64_t n;
	setup(&s, 2, 8, 24);
	tensor(&s, 0, 2, 4, 3, 4);
	block(&s, 0, 0, 0, 0, 4, 2);
	block(&s, 1, 0, 0, 2, 4, 1);
	is_int(build(&p, &s, 0), LOOM_SUCCESS, "columns: plan built");
	is_int(p.nruns[0], 4, "rank 0: a run per row");
	is_int((int)p.maxlen[1], 4, "rank 1: runs of 4 bytes");
	is_int(p.rounds, 1, "one round");
	is_str(to_aggr(&p, 1, 0, 0), "8+4 t0/b0@0, 20+4 t0/b0@4",
	       "rank 1 sends rows 0-1 of its column to aggregator 0");
	is_str(to_aggr(&p, 0, 1, 0), "24+8 t0/b0@16, 36+8 t0/b0@24",
	       "rank 0 sends rows 2-3 of its columns to aggregator 1");
	ok(loom_ck_plan_direct(&p, 1, 0, 24, &n), "direct_min 1: one message per piece");
	s.direct_min = 4;
	loom_ck_plan_free(&p);
	is_int(build(&p, &s, 0), LOOM_SUCCESS, "columns, direct_min 4: plan built");
	ok(loom_ck_plan_direct(&p, 1, 0, 24, &n), "pieces of 4 bytes on average go one message each");
	is_int((int)n, 8, "8 bytes in all");
	loom_ck_plan_free(&p);
	s.direct_min = 5;
	is_int(build(&p, &s, 0), LOOM_SUCCESS, "columns, direct_min 5: plan built");
	ok(!loom_ck_plan_direct(&p, 1, 0, 24, &n), "below 5 bytes on average they are packed");
	is_int((int)n, 8, "... 8 bytes in one message");
	ok(!loom_ck_plan_direct(&p, 0, 24, 24, &n) && n == 0, "an empty window: not direct, 0 bytes");
	loom_ck_plan_free(&p);
}

/* block-cyclic: 8 float32 in blocks of 2, rank 0 elements 0-1 and 4-5,
 * rank 1 2-3 and 6-7; one aggregator, windows of 12 cut runs */
static void t_block_cyclic(void)
{
	setup_t s;
	ckpt_plan_t p;
	setup(&s, 2, 8, 12);
	s.want = 1;
	tensor(&s, 0, 1, 8, 0, 4);
	block(&s, 0, 0, 0, 0, 2, 0);
	block(&s, 0, 0, 4, 0, 2, 0);
	block(&s, 1, 0, 2, 0, 2, 0);
	block(&s, 1, 0, 6, 0, 2, 0);
	is_int(build(&p, &s, 0), LOOM_SUCCESS, "block-cyclic: plan built");
	is_str(ints(p.aggr, p.naggr), "0", "LOOM_CKPT_AGGREGATORS=1: rank 0");
	is_int(p.my_aggr, 0, "rank 0 is aggregator 0");
	is_int(p.rounds, 3, "32 bytes in windows of 12: 3 rounds");
	is_str(pcs(&p, 0, 0, 32), "0+8 t0/b0@0, 16+8 t0/b1@0", "rank 0: its two blocks");
	is_str(to_aggr(&p, 1, 0, 0), "8+4 t0/b0@0", "round 0 [0,12): half of rank 1's block 0");
	is_str(to_aggr(&p, 1, 0, 1), "12+4 t0/b0@4", "round 1 [12,24): the other half");
	is_str(to_aggr(&p, 0, 0, 1), "16+8 t0/b1@0", "round 1: rank 0's block 1");
	is_str(to_aggr(&p, 1, 0, 2), "24+8 t0/b1@0", "round 2 [24,32): rank 1's block 1");
	loom_ck_plan_free(&p);
}

/* tensor a (4 float32), b (2x2 int32); rank 0 holds a, nobody b */
static void t_holes(void)
{
	setup_t s;
	ckpt_plan_t p;
	ckpt_cover_t c = { NULL, 0, 0, 0 };
	char win[40];
	int zero = 1, kept = 1;
	setup(&s, 2, 16, 64);
	s.lrs[1] = 1;
	tensor(&s, 0, 1, 4, 0, 4);
	tensor(&s, 1, 2, 2, 2, 4);
	is_int(build(&p, &s, 0), LOOM_SUCCESS, "holes: plan built");
	is_str(u64s(p.base, 3), "0 16 32", "files a and b one after another");
	is_str(pcs(&p, 0, 0, 32), "", "no blocks: no pieces");
	loom_ck_plan_free(&p);
	block(&s, 0, 0, 0, 0, 4, 0);
	is_int(build(&p, &s, 0), LOOM_SUCCESS, "a held by rank 0: plan built");
	is_int((int)loom_ck_plan_pieces(&p, 0, 16, 32, NULL, NULL) +
		       (int)loom_ck_plan_pieces(&p, 1, 16, 32, NULL, NULL), 0,
	       "nobody holds a byte of b");
	memset(win, 0xab, sizeof win);
	loom_ck_plan_zero_holes(&p, &c, win, 0, 32);
	for (int i = 0; i < 16; i++)
		kept &= (unsigned char)win[i] == 0xab;
	for (int i = 16; i < 32; i++)
		zero &= win[i] == 0;
	ok(kept, "zero_holes leaves a's bytes to the pieces");
	ok(zero, "... and zeroes b's");
	ok((unsigned char)win[32] == 0xab, "... and nothing past the window");
	ok(loom_ck_plan_touches(&p, 0, 1, 0), "the aggregator touches b's file (it writes its zeros)");
	loom_ck_plan_free(&p);
	free(c.iv);
	is_int(build(&p, &s, 1), LOOM_SUCCESS, "as rank 1 sees it: plan built");
	ok(!loom_ck_plan_touches(&p, 1, 0, 1), "rank 1 holds nothing and aggregates nothing: no file");
	loom_ck_plan_free(&p);
}

/* an empty file between two others: offsets belong to the next one */
static void t_tensor_of(void)
{
	setup_t s;
	ckpt_plan_t p;
	setup(&s, 1, 8, 64);
	tensor(&s, 0, 1, 4, 0, 4);
	tensor(&s, 1, 1, 0, 0, 4);
	tensor(&s, 2, 1, 2, 0, 1);
	block(&s, 0, 2, 0, 0, 2, 0);
	is_int(build(&p, &s, 0), LOOM_SUCCESS, "16, 0 and 2 bytes: plan built");
	is_str(u64s(p.base, 4), "0 16 16 18", "file offsets");
	is_str(u64s(p.cbase, 4), "0 2 2 3", "chunks: 2, none, 1");
	is_int(loom_ck_plan_tensor_of(&p, 15), 0, "byte 15 is a's");
	is_int(loom_ck_plan_tensor_of(&p, 16), 2, "byte 16 is the third file's, not the empty one's");
	is_str(pcs(&p, 0, 0, 18), "16+2 t2/b0@0", "the single rank's piece");
	is_int(p.naggr, 1, "one rank: one aggregator");
	loom_ck_plan_free(&p);
}

/* aggregators over 4 ranks on 2 nodes (local ranks 0 1 0 1) */
static void t_aggregators(void)
{
	static const struct {
		int32_t lrs[4];
		long want;
		const char *aggr;
		int me2;
		const char *what;
	} c[] = {
		{ { 0, 1, 0, 1 }, 0, "0 2", 1, "default: local rank 0 of each node" },
		{ { 0, 1, 0, 1 }, 1, "0", -1, "1 asked: the first node's local rank 0" },
		{ { 0, 1, 0, 1 }, 3, "0 1 2", 2, "3 asked: local rank 0s, then a local rank 1" },
		{ { 0, 1, 0, 1 }, 9, "0 1 2 3", 2, "more than ranks: all of them" },
		{ { 1, 2, 1, 2 }, 0, "0", -1, "no local rank 0: rank 0" },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		setup_t s;
		ckpt_plan_t p;
		setup(&s, 4, 8, 64);
		memcpy(s.lrs, c[i].lrs, sizeof s.lrs);
		s.want = c[i].want;
		tensor(&s, 0, 1, 16, 0, 4);
		if (build(&p, &s, 2) != LOOM_SUCCESS)
			diag("plan failed");
		is_str(ints(p.aggr, p.naggr), c[i].aggr, "%s", c[i].what);
		is_int(p.my_aggr, c[i].me2, "... rank 2's index among them");
		loom_ck_plan_free(&p);
	}
}

/* what another rank sent must fit the table */
static void t_bad_descriptors(void)
{
	setup_t s;
	ckpt_plan_t p;
	setup(&s, 2, 8, 64);
	tensor(&s, 0, 2, 4, 3, 4);
	block(&s, 0, 0, 0, 0, 4, 3);
	block(&s, 1, 0, 3, 0, 2, 3); /* rows 3-4 of 4 */
	is_int(build(&p, &s, 0), LOOM_ERR_MISMATCH, "a block outside the shape: mismatch");
	loom_ck_plan_free(&p);
	s.r[1].t[0].nb = 0;
	tensor(&s, 1, 1, 4, 0, 4);
	block(&s, 1, 1, 0, 0, 4, 0); /* rank 1's tensor 1: past a table of one */
	{
		int64_t desc[2 * CKPT_DESC_W];
		ckpt_plan_in_t in;
		memset(&in, 0, sizeof in);
		loom_ck_plan_pack(s.r[0].t, 1, desc, 1);
		loom_ck_plan_pack(s.r[1].t, 2, desc + CKPT_DESC_W, 1);
		in.nranks = 2;
		in.nt = 1;
		in.t = s.r[0].t;
		in.bytes = s.bytes;
		in.chunk = 8;
		in.local_rank = s.lrs;
		in.window = 64;
		in.direct_min = 1;
		in.desc = desc;
		in.ndesc = 1;
		is_int(loom_ck_plan_build(&p, &in), LOOM_ERR_MISMATCH, "a tensor index past the table: mismatch");
		loom_ck_plan_free(&p);
	}
}

/* a 4x3 float32 tensor, rank 0's block (o1, e0, e1) and rank 1's; the
 * owners of the six chunks of 8 bytes and the mean piece */
static void owners(int32_t o1a, int32_t e0a, int32_t e1a, int32_t o0b, int32_t o1b,
		   int32_t e0b, int32_t e1b, const char *want, int mean, const char *what)
{
	setup_t s;
	ckpt_plan_t p;
	int32_t o[8];
	char got[64];
	setup(&s, 2, 8, 16);
	tensor(&s, 0, 2, 4, 3, 4);
	block(&s, 0, 0, 0, (uint64_t)o1a, (uint64_t)e0a, (uint64_t)e1a);
	block(&s, 1, 0, (uint64_t)o0b, (uint64_t)o1b, (uint64_t)e0b, (uint64_t)e1b);
	build(&p, &s, 0);
	loom_ck_plan_chunk_owners(&p, o);
	snprintf(got, sizeof got, "%d %d %d %d %d %d", o[0], o[1], o[2], o[3], o[4], o[5]);
	is_str(got, want, "%s: chunk owners", what);
	is_int((int)loom_ck_plan_mean_piece(&p), mean, "%s: mean piece", what);
	loom_ck_plan_free(&p);
}

static void t_chunk_owners(void)
{
	/* rank 0 rows 0..1 (bytes 0..24), rank 1 rows 2..3: each chunk
	 * inside one rank's run, one run of 24 bytes each */
	owners(0, 2, 3, 2, 0, 2, 3, "0 0 0 1 1 1", 24, "rows");
	/* rank 0 columns 0..1 (8-byte runs at 0, 12, 24, 36), rank 1 column
	 * 2 (4-byte runs): only the runs at 0 and 24 hold a whole chunk */
	owners(0, 4, 2, 0, 2, 4, 1, "0 -1 -1 0 -1 -1", 6, "columns");
}

int main(void)
{
	plan(NO_PLAN);
	t_rows_one_aggregator();
	t_rows_two_aggregators();
	t_columns();
	t_block_cyclic();
	t_holes();
	t_tensor_of();
	t_aggregators();
	t_bad_descriptors();
	t_chunk_owners();
	done_testing();
	return exit_status();
}
