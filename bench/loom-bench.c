/* bench/loom-bench.c: bandwidth and latency of libloom's collectives, in
 * the style of nccl-tests, optionally beside Open MPI's matching call on
 * the same buffers in the same run (--peer mpi) and beside single-core
 * memcpy (--memcpy). Uses only the public <loom.h>.
 *
 *   srun --mpi=pmix -N1 -n2 loom-bench allreduce -b 8 -e 64M -f 2 -c 1
 *
 * Its flags are nccl-tests' (-o is the reduction op, -c a count of checked
 * calls), the collective named first as nccl-tests' binaries name it.
 *
 * Sizes (-b, -e) are per-rank buffer bytes as in nccl-tests: the larger
 * of a rank's send and receive buffers (allgather: the receive buffer of
 * size * count elements; reduce_scatter: the send buffer). Bus bandwidth
 * is algbw times nccl-tests' factor: allreduce 2(n-1)/n, allgather,
 * reduce_scatter and alltoall (n-1)/n, broadcast and reduce 1.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <loom.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HAVE_MPI
#include <mpi.h>
#endif

#include "bench-print.h"
#include "loomvals.h"

enum coll { C_ALLREDUCE, C_ALLGATHER, C_REDUCE_SCATTER, C_BROADCAST, C_ALLTOALL, C_REDUCE, C_COUNT };

static const char *const coll_names[C_COUNT] = {
	"allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall", "reduce",
};

struct opts {
	enum coll coll;
	size_t minb, maxb, incr;
	double factor;
	/* -d, -o, -r "all": every one in turn at each size, as nccl-tests */
	loom_dtype_t dtypes[LOOM_DTYPE_COUNT];
	loom_op_t ops[LOOM_OP_COUNT];
	int ndtypes, nops, root_all;
	/* the row being measured */
	loom_dtype_t dtype;
	loom_op_t op;
	int root;
	int iters, warmup, check;
	int peer_mpi, memcpy_col;
	enum fmt fmt;
	loom_backend_t backend;
	const char *backend_name;
};

static int me, nranks;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: loom-bench [COLLECTIVE] [options]\n"
		"  COLLECTIVE            allreduce|allgather|reduce_scatter|broadcast|alltoall|reduce\n"
		"                        (also nccl-tests' all_reduce, all_gather, all_reduce_perf...;\n"
		"                        default allreduce)\n"
		"Options as nccl-tests':\n"
		"  -b, --minbytes SIZE   smallest per-rank buffer, bytes; K, M, G suffixes (default 8)\n"
		"  -e, --maxbytes SIZE   largest per-rank buffer (default 64M)\n"
		"  -f, --stepfactor F    multiply the size by F each step (default 2)\n"
		"  -i, --stepbytes SIZE  add SIZE each step instead of multiplying\n"
		"  -d, --datatype TYPE   int8|int32|int64|float16|bfloat16|float32|float64|all\n"
		"                        (also half, bf16, float, double; default float32)\n"
		"  -o, --op OP           sum|prod|min|max|avg|all for reductions (default sum)\n"
		"  -r, --root R          root of broadcast and reduce, or all (default 0)\n"
		"  -n, --iters N         timed iterations per size (default 20)\n"
		"  -w, --warmup_iters N  untimed iterations before (default 5)\n"
		"  -c, --check N         check N calls a size: fill per-rank inputs\n"
		"                        deterministically, verify the result, count wrong\n"
		"                        elements (exit 1 if any); 0: no check (default 0)\n"
		"Options of loom-bench's own:\n"
		"      --csv             rows as CSV (one header line) instead of the table\n"
		"      --json            JSON Lines: the run's settings, a line a row, totals\n"
		"      --peer mpi        also time Open MPI's matching call on the same buffers\n"
		"      --memcpy          also print memcpy bandwidth at each size: rank 0\n"
		"                        alone (memcpy), and every rank at once, the slowest\n"
		"                        (memcpy_all: a 2-rank allreduce in a node cannot\n"
		"                        beat it, each rank reads its input and writes its\n"
		"                        result)\n"
		"      --backend B       native|mpi|nccl|auto (default auto: LOOM_BACKEND)\n"
		"  -h, --help            this text\n"
		"Rank 0 prints one row per size: time is the mean over the iterations\n"
		"(slowest rank, no clock read inside the loop), best the fastest of a\n"
		"quarter as many calls (1 to 16) timed one by one after them; GB/s are\n"
		"1e9 bytes/s.\n");
}

static void die_arg(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "loom-bench: %s '%s': %s (see --help)\n", opt, val, why);
	exit(2);
}

static size_t parse_size(const char *opt, const char *s)
{
	char *end;
	double v;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || v < 0)
		die_arg(opt, s, "not a size");
	switch (*end) {
	case 'k': case 'K': v *= 1024; end++; break;
	case 'm': case 'M': v *= 1024 * 1024; end++; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		die_arg(opt, s, "not a size (a number with an optional K, M or G suffix)");
	return (size_t)v;
}

static int parse_int(const char *opt, const char *s, int min)
{
	char *end;
	long v;
	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < min || v > 1000000000)
		die_arg(opt, s, min > 0 ? "expected a positive integer" : "expected a non-negative integer");
	return (int)v;
}

static void parse_dtype(const char *s, struct opts *o)
{
	static const struct { const char *name; loom_dtype_t t; } alias[] = {
		{ "half", LOOM_FLOAT16 }, { "fp16", LOOM_FLOAT16 }, { "bf16", LOOM_BFLOAT16 },
		{ "float", LOOM_FLOAT32 }, { "fp32", LOOM_FLOAT32 }, { "double", LOOM_FLOAT64 },
		{ "fp64", LOOM_FLOAT64 }, { "int", LOOM_INT32 }, { "char", LOOM_INT8 },
	};
	int t;
	size_t i;
	o->ndtypes = 1;
	if (!strcmp(s, "all")) {
		for (t = 0; t < LOOM_DTYPE_COUNT; t++)
			o->dtypes[t] = (loom_dtype_t)t;
		o->ndtypes = LOOM_DTYPE_COUNT;
		return;
	}
	for (t = 0; t < LOOM_DTYPE_COUNT; t++)
		if (!strcmp(s, loom_dtype_name((loom_dtype_t)t))) {
			o->dtypes[0] = (loom_dtype_t)t;
			return;
		}
	for (i = 0; i < sizeof alias / sizeof alias[0]; i++)
		if (!strcmp(s, alias[i].name)) {
			o->dtypes[0] = alias[i].t;
			return;
		}
	die_arg("-d", s, "unknown datatype (int8, int32, int64, float16, bfloat16, float32, float64, all)");
}

/* the collective by name: loom's, or nccl-tests' binary's (all_reduce_perf) */
static enum coll parse_coll(const char *s)
{
	static const struct { const char *name; enum coll c; } alias[] = {
		{ "all_reduce", C_ALLREDUCE }, { "all_gather", C_ALLGATHER },
		{ "reducescatter", C_REDUCE_SCATTER }, { "bcast", C_BROADCAST },
		{ "all_to_all", C_ALLTOALL },
	};
	char name[64];
	size_t n = strlen(s), i;
	if (n >= sizeof name)
		n = sizeof name - 1;
	memcpy(name, s, n);
	name[n] = 0;
	if (n > 5 && !strcmp(name + n - 5, "_perf"))
		name[n - 5] = 0;
	for (i = 0; i < C_COUNT; i++)
		if (!strcmp(name, coll_names[i]))
			return (enum coll)i;
	for (i = 0; i < sizeof alias / sizeof alias[0]; i++)
		if (!strcmp(name, alias[i].name))
			return alias[i].c;
	die_arg("collective", s, "unknown collective (allreduce, allgather, reduce_scatter, "
		"broadcast, alltoall, reduce)");
	return C_ALLREDUCE;
}

/* a collective's name where the reduction op is asked: the old -o */
static int names_coll(const char *s)
{
	for (int i = 0; i < C_COUNT; i++)
		if (!strcmp(s, coll_names[i]))
			return 1;
	return 0;
}

static void parse_op(const char *s, struct opts *o)
{
	if (names_coll(s)) {
		fprintf(stderr, "loom-bench: -o takes the reduction op now (nccl-tests' meaning); "
			"name the collective as the first argument: loom-bench %s\n", s);
		exit(2);
	}
	o->nops = 1;
	if (!strcmp(s, "all")) {
		for (int k = 0; k < LOOM_OP_COUNT; k++)
			o->ops[k] = (loom_op_t)k;
		o->nops = LOOM_OP_COUNT;
		return;
	}
	for (int k = 0; k < LOOM_OP_COUNT; k++)
		if (!strcmp(s, loom_op_name((loom_op_t)k))) {
			o->ops[0] = (loom_op_t)k;
			return;
		}
	die_arg("--op", s, "unknown reduction (sum, prod, min, max, avg, all)");
}

static void check_gone(void)
{
	fprintf(stderr, "loom-bench: -c takes a count now (nccl-tests' meaning): -c 1 checks "
		"one call a size, -c 0 none\n");
	exit(2);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	enum { O_PEER = 256, O_MEMCPY, O_BACKEND, O_OPNAME, O_CSV, O_JSON };
	static const struct option lo[] = {
		{ "op", required_argument, 0, 'o' },
		{ "minbytes", required_argument, 0, 'b' },
		{ "maxbytes", required_argument, 0, 'e' },
		{ "stepfactor", required_argument, 0, 'f' },
		{ "stepbytes", required_argument, 0, 'i' },
		{ "datatype", required_argument, 0, 'd' },
		{ "root", required_argument, 0, 'r' },
		{ "iters", required_argument, 0, 'n' },
		{ "warmup_iters", required_argument, 0, 'w' },
		{ "check", required_argument, 0, 'c' },
		{ "help", no_argument, 0, 'h' },
		{ "op-name", required_argument, 0, O_OPNAME },
		{ "csv", no_argument, 0, O_CSV },
		{ "json", no_argument, 0, O_JSON },
		{ "peer", required_argument, 0, O_PEER },
		{ "memcpy", no_argument, 0, O_MEMCPY },
		{ "backend", required_argument, 0, O_BACKEND },
		{ 0, 0, 0, 0 },
	};
	int c;
	char *end;
	const char *minb_arg = NULL;
	memset(o, 0, sizeof *o);
	o->coll = C_ALLREDUCE;
	o->minb = 8;
	o->maxb = 64u << 20;
	o->factor = 2;
	o->dtypes[0] = LOOM_FLOAT32;
	o->ndtypes = 1;
	o->ops[0] = LOOM_SUM;
	o->nops = 1;
	o->iters = 20;
	o->warmup = 5;
	o->backend = LOOM_BACKEND_AUTO;
	o->backend_name = "auto";
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:b:e:f:i:d:r:n:w:c:h", lo, NULL)) != -1) {
		switch (c) {
		case 'o': parse_op(optarg, o); break;
		case 'b': o->minb = parse_size("-b", optarg); minb_arg = optarg; break;
		case 'e': o->maxb = parse_size("-e", optarg); break;
		case 'f':
			o->factor = strtod(optarg, &end);
			if (end == optarg || *end || !(o->factor > 1))
				die_arg("-f", optarg, "expected a number greater than 1");
			o->incr = 0;
			break;
		case 'i':
			o->incr = parse_size("-i", optarg);
			if (!o->incr)
				die_arg("-i", optarg, "expected a positive size");
			break;
		case 'd': parse_dtype(optarg, o); break;
		case 'r':
			o->root_all = !strcmp(optarg, "all");
			if (!o->root_all)
				o->root = parse_int("-r", optarg, 0);
			break;
		case 'n': o->iters = parse_int("-n", optarg, 1); break;
		case 'w': o->warmup = parse_int("-w", optarg, 0); break;
		case 'c':
			/* the old flag took none: "-c -n 5" or "--check" last */
			if (optarg[0] == '-')
				check_gone();
			o->check = parse_int("-c", optarg, 0);
			break;
		case 'h': usage(stdout); exit(0);
		case O_OPNAME:
			fprintf(stderr, "loom-bench: --op-name is gone; name the collective as the "
				"first argument: loom-bench %s\n", optarg);
			exit(2);
		case O_CSV: o->fmt = F_CSV; break;
		case O_JSON: o->fmt = F_JSON; break;
		case O_PEER:
			if (strcmp(optarg, "mpi"))
				die_arg("--peer", optarg, "the only peer is mpi");
#ifndef HAVE_MPI
			die_arg("--peer", optarg, "this loom-bench was built without MPI");
#endif
			o->peer_mpi = 1;
			break;
		case O_MEMCPY: o->memcpy_col = 1; break;
		case O_BACKEND:
			o->backend_name = optarg;
			if (!strcmp(optarg, "auto")) o->backend = LOOM_BACKEND_AUTO;
			else if (!strcmp(optarg, "native")) o->backend = LOOM_BACKEND_NATIVE;
			else if (!strcmp(optarg, "mpi")) o->backend = LOOM_BACKEND_MPI;
			else if (!strcmp(optarg, "nccl")) o->backend = LOOM_BACKEND_NCCL;
			else die_arg("--backend", optarg, "expected native, mpi, nccl or auto");
			break;
		case ':':
			if (optopt == 'c')
				check_gone();
			fprintf(stderr, "loom-bench: option '%s' needs an argument (see --help)\n",
				argv[optind - 1]);
			exit(2);
		default:
			fprintf(stderr, "loom-bench: unknown option '%s' (see --help)\n", argv[optind - 1]);
			exit(2);
		}
	}
	/* the collective by name, as nccl-tests' binaries are named */
	if (optind < argc)
		o->coll = parse_coll(argv[optind++]);
	if (optind < argc)
		die_arg("argument", argv[optind], "unexpected (one collective, then options)");
	if (o->minb > o->maxb)
		die_arg("-b", minb_arg ? minb_arg : "8", "larger than -e");
	o->dtype = o->dtypes[0];
	o->op = o->ops[0];
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int is_reduction(enum coll c)
{
	return c == C_ALLREDUCE || c == C_REDUCE_SCATTER || c == C_REDUCE;
}

static int is_rooted(enum coll c)
{
	return c == C_BROADCAST || c == C_REDUCE;
}

static double bus_factor(enum coll c, int n)
{
	switch (c) {
	case C_ALLREDUCE: return 2.0 * (n - 1) / n;
	case C_ALLGATHER:
	case C_REDUCE_SCATTER:
	case C_ALLTOALL: return (double)(n - 1) / n;
	default: return 1;
	}
}

/* Elements: count is the per-rank argument, send/recv the buffer lengths. */
struct shape { size_t count, nsend, nrecv, bytes, total; };

static struct shape shape_of(enum coll c, size_t bytes, size_t esize, int n)
{
	struct shape s;
	size_t per = bytes / esize, blk = per / (size_t)n;
	switch (c) {
	case C_ALLGATHER: s.count = blk; s.nsend = blk; s.nrecv = blk * n; break;
	case C_REDUCE_SCATTER: s.count = blk; s.nsend = blk * n; s.nrecv = blk; break;
	case C_ALLTOALL: s.count = blk; s.nsend = blk * n; s.nrecv = blk * n; break;
	default: s.count = per; s.nsend = per; s.nrecv = per; break;
	}
	s.total = s.nsend > s.nrecv ? s.nsend : s.nrecv;
	s.bytes = s.total * esize;
	return s;
}

static int run_loom(const struct opts *o, const void *send, void *recv, size_t count,
		    loom_comm_t *w)
{
	switch (o->coll) {
	case C_ALLREDUCE: return loom_allreduce(send, recv, count, o->dtype, o->op, w);
	case C_ALLGATHER: return loom_allgather(send, recv, count, o->dtype, w);
	case C_REDUCE_SCATTER: return loom_reduce_scatter(send, recv, count, o->dtype, o->op, w);
	case C_BROADCAST: return loom_broadcast(send, recv, count, o->dtype, o->root, w);
	case C_ALLTOALL: return loom_alltoall(send, recv, count, o->dtype, w);
	case C_REDUCE: return loom_reduce(send, recv, count, o->dtype, o->op, o->root, w);
	default: return LOOM_ERR_INVALID;
	}
}

#ifdef HAVE_MPI
static MPI_Datatype mpi_half, mpi_bf16;
static MPI_Op mpi_op16[LOOM_OP_COUNT];

static void op16(void *in, void *inout, int *len, MPI_Datatype *dt, loom_op_t op)
{
	loom_dtype_t t = *dt == mpi_half ? LOOM_FLOAT16 : LOOM_BFLOAT16;
	for (int i = 0; i < *len; i++) {
		double a = lv_load(in, (size_t)i, t), b = lv_load(inout, (size_t)i, t), r;
		switch (op) {
		case LOOM_PROD: r = a * b; break;
		case LOOM_MIN: r = a < b ? a : b; break;
		case LOOM_MAX: r = a > b ? a : b; break;
		default: r = a + b; break;
		}
		lv_store(inout, (size_t)i, t, (float)r);
	}
}
static void op16_sum(void *a, void *b, int *l, MPI_Datatype *d) { op16(a, b, l, d, LOOM_SUM); }
static void op16_prod(void *a, void *b, int *l, MPI_Datatype *d) { op16(a, b, l, d, LOOM_PROD); }
static void op16_min(void *a, void *b, int *l, MPI_Datatype *d) { op16(a, b, l, d, LOOM_MIN); }
static void op16_max(void *a, void *b, int *l, MPI_Datatype *d) { op16(a, b, l, d, LOOM_MAX); }

static void mpi_setup(void)
{
	MPI_Type_contiguous(2, MPI_BYTE, &mpi_half);
	MPI_Type_commit(&mpi_half);
	MPI_Type_contiguous(2, MPI_BYTE, &mpi_bf16);
	MPI_Type_commit(&mpi_bf16);
	MPI_Op_create(op16_sum, 1, &mpi_op16[LOOM_SUM]);
	MPI_Op_create(op16_prod, 1, &mpi_op16[LOOM_PROD]);
	MPI_Op_create(op16_min, 1, &mpi_op16[LOOM_MIN]);
	MPI_Op_create(op16_max, 1, &mpi_op16[LOOM_MAX]);
	mpi_op16[LOOM_AVG] = mpi_op16[LOOM_SUM];
}

static MPI_Datatype mpi_type(loom_dtype_t t)
{
	switch (t) {
	case LOOM_INT8: return MPI_INT8_T;
	case LOOM_INT32: return MPI_INT32_T;
	case LOOM_INT64: return MPI_INT64_T;
	case LOOM_FLOAT16: return mpi_half;
	case LOOM_BFLOAT16: return mpi_bf16;
	case LOOM_FLOAT32: return MPI_FLOAT;
	default: return MPI_DOUBLE;
	}
}

static MPI_Op mpi_op(loom_dtype_t t, loom_op_t op)
{
	if (t == LOOM_FLOAT16 || t == LOOM_BFLOAT16)
		return mpi_op16[op];
	switch (op) {
	case LOOM_PROD: return MPI_PROD;
	case LOOM_MIN: return MPI_MIN;
	case LOOM_MAX: return MPI_MAX;
	default: return MPI_SUM; /* AVG: SUM, then divided by size below */
	}
}

/* MPI has no average: divide the sum locally, as a user of MPI must. */
static void mpi_avg_scale(void *buf, size_t count, loom_dtype_t t)
{
	for (size_t i = 0; i < count; i++) {
		if (lv_is_float(t))
			lv_store(buf, i, t, lv_load(buf, i, t) / nranks);
		else if (t == LOOM_INT64)
			((int64_t *)buf)[i] /= nranks;
		else
			lv_store(buf, i, t, (double)(lv_load_int(buf, i, t) / nranks));
	}
}

static int run_mpi(const struct opts *o, const void *send, void *recv, size_t count)
{
	MPI_Datatype dt = mpi_type(o->dtype);
	int n = (int)count, rc;
	switch (o->coll) {
	case C_ALLREDUCE:
		rc = MPI_Allreduce(send, recv, n, dt, mpi_op(o->dtype, o->op), MPI_COMM_WORLD);
		if (o->op == LOOM_AVG)
			mpi_avg_scale(recv, count, o->dtype);
		return rc;
	case C_ALLGATHER: return MPI_Allgather(send, n, dt, recv, n, dt, MPI_COMM_WORLD);
	case C_REDUCE_SCATTER:
		rc = MPI_Reduce_scatter_block(send, recv, n, dt, mpi_op(o->dtype, o->op), MPI_COMM_WORLD);
		if (o->op == LOOM_AVG)
			mpi_avg_scale(recv, count, o->dtype);
		return rc;
	case C_BROADCAST:
		if (me == o->root)
			memcpy(recv, send, count * loom_dtype_size(o->dtype));
		return MPI_Bcast(recv, n, dt, o->root, MPI_COMM_WORLD);
	case C_ALLTOALL: return MPI_Alltoall(send, n, dt, recv, n, dt, MPI_COMM_WORLD);
	case C_REDUCE:
		rc = MPI_Reduce(send, recv, n, dt, mpi_op(o->dtype, o->op), o->root, MPI_COMM_WORLD);
		if (o->op == LOOM_AVG && me == o->root)
			mpi_avg_scale(recv, count, o->dtype);
		return rc;
	default: return MPI_ERR_OTHER;
	}
}
#endif

/* Deterministic inputs for a check (the timed loop reuses them). */
static void fill_inputs(const struct opts *o, void *send, void *recv, struct shape s)
{
	size_t es = loom_dtype_size(o->dtype);
	loom_op_t vop = is_reduction(o->coll) ? o->op : LOOM_SUM;
	lv_fill(send, s.nsend, o->dtype, vop, me, 0);
	memset(recv, 0xA5, s.nrecv * es);
}

/* Wrong elements in this rank's result. */
static long long count_wrong(const struct opts *o, const void *recv, struct shape s)
{
	long long bad = 0;
	size_t k, i;
	int r;
	loom_dtype_t t = o->dtype;
	switch (o->coll) {
	case C_ALLREDUCE:
		for (k = 0; k < s.count; k++)
			bad += !lv_reduced_ok(recv, k, t, o->op, nranks, k);
		break;
	case C_REDUCE:
		if (me == o->root)
			for (k = 0; k < s.count; k++)
				bad += !lv_reduced_ok(recv, k, t, o->op, nranks, k);
		break;
	case C_REDUCE_SCATTER:
		for (k = 0; k < s.count; k++)
			bad += !lv_reduced_ok(recv, k, t, o->op, nranks, (size_t)me * s.count + k);
		break;
	case C_BROADCAST:
		for (k = 0; k < s.count; k++)
			bad += !lv_copy_ok(recv, k, t, o->root, k);
		break;
	case C_ALLGATHER:
		for (r = 0; r < nranks; r++)
			for (k = 0; k < s.count; k++)
				bad += !lv_copy_ok(recv, (size_t)r * s.count + k, t, r, k);
		break;
	case C_ALLTOALL:
		for (r = 0; r < nranks; r++)
			for (k = 0; k < s.count; k++) {
				i = (size_t)r * s.count + k;
				bad += !lv_copy_ok(recv, i, t, r, (size_t)me * s.count + k);
			}
		break;
	default: break;
	}
	return bad;
}

static void loom_die(const char *what, int rc)
{
	fprintf(stderr, "loom-bench: rank %d: %s: %s\n", me, what, loom_strerror(rc));
	exit(2);
}

static double reduce_max(double v, loom_comm_t *w)
{
	double out = v;
	int rc = loom_allreduce(&v, &out, 1, LOOM_FLOAT64, LOOM_MAX, w);
	if (rc)
		loom_die("allreduce of the timings", rc);
	return out;
}

static long long reduce_sum_ll(long long v, loom_comm_t *w)
{
	int64_t in = v, out = 0;
	int rc = loom_allreduce(&in, &out, 1, LOOM_INT64, LOOM_SUM, w);
	if (rc)
		loom_die("allreduce of the error counts", rc);
	return out;
}

/* calls timed one by one for "best", after the -n that give the mean:
 * a quarter of them, 1 to 16 */
static int best_calls(int iters)
{
	int k = iters < 4 ? iters : iters / 4;
	return k > 16 ? 16 : k < 1 ? 1 : k;
}

/* memcpy bandwidth, best of iters: this rank alone (all NULL), or every
 * rank of all at once, each copy started from a barrier and timed on the
 * slowest rank */
static double memcpy_gbs(void *dst, const void *src, size_t bytes, int iters, loom_comm_t *all)
{
	double t0, best = 1e30;
	int rc;
	if (!bytes)
		return 0;
	memcpy(dst, src, bytes); /* fault the pages in */
	for (int i = 0; i < iters; i++) {
		if (all && (rc = loom_barrier(all)))
			loom_die("barrier", rc);
		t0 = now();
		memcpy(dst, src, bytes);
		t0 = now() - t0;
		if (all)
			t0 = reduce_max(t0, all);
		if (t0 < best)
			best = t0;
	}
	/* keep the copy observable */
	__asm__ __volatile__("" : : "r"(dst) : "memory");
	return best > 0 ? bytes / best / 1e9 : 0;
}

/* One row: o's collective at this size with o's datatype, op and root,
 * checked (-c), timed, then Open MPI's and memcpy's beside it. The wrong
 * counts and busbw go into tot, summed (main turns them into means). */
static void measure(const struct opts *o, size_t bytes, loom_comm_t *w, void *send, void *recv,
		    struct bench_row *row, struct bench_tail *tot)
{
	struct shape s = shape_of(o->coll, bytes, loom_dtype_size(o->dtype), nranks);
	double t0, best = 1e30, mean, algbw, busbw;
	long long wrong = -1, mwrong = -1;
	int i, rc;
	if (o->check) {
		/* -c N: N calls checked, their wrong elements summed */
		wrong = 0;
		for (i = 0; i < o->check; i++) {
			fill_inputs(o, send, recv, s);
			if ((rc = run_loom(o, send, recv, s.count, w)))
				loom_die(coll_names[o->coll], rc);
			wrong += reduce_sum_ll(count_wrong(o, recv, s), w);
		}
		tot->wrong += wrong;
	}
	for (i = 0; i < o->warmup; i++)
		if ((rc = run_loom(o, send, recv, s.count, w)))
			loom_die(coll_names[o->coll], rc);
	if ((rc = loom_barrier(w)))
		loom_die("barrier", rc);
	/* the mean as the peers' is taken: no clock inside the loop (two
	 * reads a call were a sixth of a 2-rank 8 B broadcast) */
	t0 = now();
	for (i = 0; i < o->iters; i++)
		if ((rc = run_loom(o, send, recv, s.count, w)))
			loom_die(coll_names[o->coll], rc);
	mean = (now() - t0) / o->iters;
	/* then the best of a few calls timed one by one */
	for (i = 0; i < best_calls(o->iters); i++) {
		double t1 = now();
		if ((rc = run_loom(o, send, recv, s.count, w)))
			loom_die(coll_names[o->coll], rc);
		t1 = now() - t1;
		if (t1 < best)
			best = t1;
	}
	mean = reduce_max(mean, w);
	best = reduce_max(best, w);
	algbw = mean > 0 ? s.bytes / mean / 1e9 : 0;
	busbw = algbw * bus_factor(o->coll, nranks);
	tot->avg_busbw += busbw;

	double mpi_mean = 0, mpi_busbw = 0;
#ifdef HAVE_MPI
	if (o->peer_mpi) {
		if (o->check) {
			mwrong = 0;
			for (i = 0; i < o->check; i++) {
				fill_inputs(o, send, recv, s);
				if (run_mpi(o, send, recv, s.count) != MPI_SUCCESS)
					loom_die("MPI peer", LOOM_ERR_SYSTEM);
				mwrong += reduce_sum_ll(count_wrong(o, recv, s), w);
			}
			tot->mpi_wrong += mwrong;
		}
		for (i = 0; i < o->warmup; i++)
			run_mpi(o, send, recv, s.count);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		for (i = 0; i < o->iters; i++)
			run_mpi(o, send, recv, s.count);
		mpi_mean = (MPI_Wtime() - t0) / o->iters;
		MPI_Allreduce(MPI_IN_PLACE, &mpi_mean, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		mpi_busbw = mpi_mean > 0 ? s.bytes / mpi_mean / 1e9 * bus_factor(o->coll, nranks) : 0;
		tot->mpi_avg_busbw += mpi_busbw;
	}
#endif
	double mc = 0, mc_all = 0;
	if (o->memcpy_col) {
		if (me == 0)
			mc = memcpy_gbs(recv, send, s.bytes, o->iters < 5 ? 5 : o->iters, NULL);
		mc_all = memcpy_gbs(recv, send, s.bytes, o->iters < 5 ? 5 : o->iters, w);
	}
	row->bytes = s.bytes;
	row->count = s.total;
	row->type = loom_dtype_name(o->dtype);
	row->redop = is_reduction(o->coll) ? loom_op_name(o->op) : "none";
	row->root = is_rooted(o->coll) ? o->root : -1;
	row->time_us = mean * 1e6;
	row->best_us = best * 1e6;
	row->algbw = algbw;
	row->busbw = busbw;
	row->wrong = wrong;
	row->mpi_wrong = mwrong;
	row->mpi_time_us = mpi_mean * 1e6;
	row->mpi_busbw = mpi_busbw;
	row->memcpy = mc;
	row->memcpy_all = mc_all;
}

int main(int argc, char **argv)
{
	struct opts o;
	loom_comm_t *w = NULL;
	int rc;
	size_t es, bytes, maxel;
	void *send, *recv;
	struct bench_head head;
	struct bench_tail tot = { 0, 0, 0, 0 };
	int rows = 0;

	parse_args(argc, argv, &o);
#ifdef HAVE_MPI
	if (o.peer_mpi) {
		/* Under srun --mpi=pmix both Open MPI and libloom attach to the
		 * step's PMIx server; the PMIx client allows that. */
		if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
			fprintf(stderr, "loom-bench: MPI_Init failed\n");
			return 2;
		}
		mpi_setup();
	}
#endif
	rc = loom_init_backend(o.backend, &w);
	if (rc) {
		fprintf(stderr, "loom-bench: --backend %s: %s\n", o.backend_name, loom_strerror(rc));
#ifdef HAVE_MPI
		if (o.peer_mpi)
			MPI_Finalize();
#endif
		return 2;
	}
	me = loom_comm_rank(w);
	nranks = loom_comm_size(w);
#ifdef HAVE_MPI
	if (o.peer_mpi) {
		int mr, ms;
		MPI_Comm_rank(MPI_COMM_WORLD, &mr);
		MPI_Comm_size(MPI_COMM_WORLD, &ms);
		if (mr != me || ms != nranks) {
			fprintf(stderr, "loom-bench: MPI rank %d of %d but loom rank %d of %d: "
				"launch both from the same srun --mpi=pmix step\n", mr, ms, me, nranks);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	}
#endif
	if (is_rooted(o.coll) && o.root >= nranks) {
		char b[32];
		snprintf(b, sizeof b, "%d", o.root);
		if (me == 0)
			fprintf(stderr, "loom-bench: -r '%s': not a rank of the %d-rank world\n", b, nranks);
		loom_finalize(w);
		return 2;
	}
	/* the largest element, for -d all */
	es = 0;
	for (int k = 0; k < o.ndtypes; k++)
		if (loom_dtype_size(o.dtypes[k]) > es)
			es = loom_dtype_size(o.dtypes[k]);
	maxel = o.maxb / es + (size_t)nranks;
	send = malloc(maxel * es + 64);
	recv = malloc(maxel * es + 64);
	if (!send || !recv) {
		fprintf(stderr, "loom-bench: cannot allocate 2 x %zu bytes\n", maxel * es);
		return 2;
	}
	memset(send, 0, maxel * es);
	memset(recv, 0, maxel * es);

	memset(&head, 0, sizeof head);
	head.version = loom_version();
	head.coll = coll_names[o.coll];
	/* the backend the world runs on, not the one asked for: with "auto",
	 * LOOM_BACKEND decides */
	head.backend = loom_comm_backend(w);
	head.dtype = o.ndtypes > 1 ? "all" : loom_dtype_name(o.dtype);
	head.op = !is_reduction(o.coll) ? NULL : o.nops > 1 ? "all" : loom_op_name(o.op);
	head.busbw_factor = o.coll == C_ALLREDUCE ? "2(n-1)/n" : is_rooted(o.coll) ? "1" : "(n-1)/n";
	head.tasks_per_node = getenv("SLURM_STEP_TASKS_PER_NODE");
	head.nranks = nranks;
	head.rooted = is_rooted(o.coll);
	head.root_all = o.root_all;
	head.root = o.root;
	head.iters = o.iters;
	head.warmup = o.warmup;
	head.check = o.check;
	head.cpus = -1;
	{
		cpu_set_t cs;
		if (sched_getaffinity(0, sizeof cs, &cs) == 0)
			head.cpus = CPU_COUNT(&cs);
	}
	head.peer_mpi = o.peer_mpi;
	head.memcpy_col = o.memcpy_col;
	if (me == 0)
		bench_print_head(stdout, o.fmt, &head);

	{
		/* before the first size, each peer runs it ten times the warm-up:
		 * the first row of a run otherwise paid the process's cold start
		 * (loom runs first at every size; Open MPI's turn came warm) */
		struct shape s = shape_of(o.coll, o.minb, loom_dtype_size(o.dtype), nranks);
		int i;
		for (i = 0; i < 10 * o.warmup; i++)
			if ((rc = run_loom(&o, send, recv, s.count, w)))
				loom_die(coll_names[o.coll], rc);
#ifdef HAVE_MPI
		for (i = 0; o.peer_mpi && i < 10 * o.warmup; i++)
			run_mpi(&o, send, recv, s.count);
#endif
	}
	for (bytes = o.minb;;) {
		/* every datatype, op and root asked for, at this size */
		int nop = is_reduction(o.coll) ? o.nops : 1;
		int nroot = is_rooted(o.coll) && o.root_all ? nranks : 1;
		for (int di = 0; di < o.ndtypes; di++)
			for (int oi = 0; oi < nop; oi++)
				for (int ri = 0; ri < nroot; ri++) {
					struct bench_row row;
					o.dtype = o.dtypes[di];
					o.op = o.ops[oi];
					if (o.root_all)
						o.root = ri;
					measure(&o, bytes, w, send, recv, &row, &tot);
					if (me == 0)
						bench_print_row(stdout, o.fmt, &head, &row);
					rows++;
				}
		/* next size */
		{
			size_t next = o.incr ? bytes + o.incr : (size_t)ceil((double)bytes * o.factor);
			if (next <= bytes)
				next = bytes + 1;
			if (bytes >= o.maxb || next > o.maxb) {
				if (bytes >= o.maxb)
					break;
				next = o.maxb;
			}
			bytes = next;
		}
	}

	if (me == 0) {
		/* measure() summed them */
		tot.avg_busbw = rows ? tot.avg_busbw / rows : 0;
		tot.mpi_avg_busbw = rows ? tot.mpi_avg_busbw / rows : 0;
		bench_print_tail(stdout, o.fmt, &head, &tot);
	}
	free(send);
	free(recv);
	rc = loom_finalize(w);
#ifdef HAVE_MPI
	if (o.peer_mpi)
		MPI_Finalize();
#endif
	if (rc) {
		fprintf(stderr, "loom-bench: loom_finalize: %s\n", loom_strerror(rc));
		return 2;
	}
	return tot.wrong || tot.mpi_wrong ? 1 : 0;
}
