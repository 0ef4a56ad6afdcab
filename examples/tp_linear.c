/* examples/tp_linear.c: tensor-parallel linear layers (Megatron style).
 *
 *   Y = tanh(X W1)    column-parallel: TP rank t holds the columns
 *                     [t h, (t+1) h) of W1 (h = hidden / tp) and computes
 *                     its slice of Y, no communication;
 *   Z = Y W2          row-parallel: TP rank t holds rows [t h, (t+1) h) of
 *                     W2, computes the partial product Y_t W2_t; the sum
 *                     over the TP group is Z.
 *
 * The TP group comes from loom_mesh(world, size / tp, tp, 1); each data-
 * parallel replica gets its own inputs. Checked against the serial
 * computation of the same X, W1, W2 done by every rank:
 *   - Y gathered with loom_allgather equals the serial Y bit for bit (each
 *     element is computed the same way);
 *   - Z by loom_allreduce, and Z by loom_reduce_scatter (each rank gets
 *     batch / tp rows) then loom_allgather, are within the fp32 summation
 *     bound of the serial Z: |Z - Z_serial| <= 2 hidden eps sum_k |Y_bk W2_kj|
 *     (only the order of the sum over k differs).
 *
 *   srun --mpi=pmix -N2 -n4 loom-tp-linear --tp 2
 */
#include "common.h"

#include <float.h>
#include <getopt.h>
#include <math.h>

struct cfg {
	int tp, batch, in, hidden, out, iters, log_every;
	uint64_t seed;
};

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n"
	       "Column-parallel then row-parallel linear layers over the tensor-parallel\n"
	       "group of loom_mesh, checked against the serial matmul.\n\n"
	       "  --tp N         tensor-parallel size, divides the world (default 2 when\n"
	       "                 the world size is even, else 1)\n"
	       "  --batch N      rows of X, a multiple of tp (default 8)\n"
	       "  --input N      columns of X (default 64)\n"
	       "  --hidden N     columns of W1 = rows of W2, a multiple of tp (default 256)\n"
	       "  --output N     columns of W2 (default 32)\n"
	       "  --iters N      forward passes, each with new inputs (default 10)\n"
	       "  --seed N       weights and data seed (default 1)\n"
	       "  --log-every N  progress line every N passes (default 5; 0: none)\n"
	       "  --help         this text\n\n"
	       "Tolerance: gathered Y exact; Z within 2*hidden*FLT_EPSILON*sum_k |Y_bk W2_kj|.\n"
	       "Prints PASS and exits 0 when every check holds, FAIL and exits 1 otherwise.\n"
	       "Example: srun --mpi=pmix -N2 -n4 %s --tp 2\n",
	       ex_prog, ex_prog);
}

static void parse(int argc, char **argv, struct cfg *c)
{
	static const struct option lo[] = {
		{ "tp", required_argument, 0, 't' },     { "batch", required_argument, 0, 'b' },
		{ "input", required_argument, 0, 'i' },  { "hidden", required_argument, 0, 'H' },
		{ "output", required_argument, 0, 'o' }, { "iters", required_argument, 0, 'n' },
		{ "seed", required_argument, 0, 'S' },   { "log-every", required_argument, 0, 'L' },
		{ "help", no_argument, 0, 'h' },         { 0, 0, 0, 0 }
	};
	int o;
	memset(c, 0, sizeof *c);
	c->batch = 8;
	c->in = 64;
	c->hidden = 256;
	c->out = 32;
	c->iters = 10;
	c->seed = 1;
	c->log_every = 5;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 't': c->tp = (int)ex_parse_long("--tp", optarg, 1, 1 << 16); break;
		case 'b': c->batch = (int)ex_parse_long("--batch", optarg, 1, 1 << 16); break;
		case 'i': c->in = (int)ex_parse_long("--input", optarg, 1, 1 << 14); break;
		case 'H': c->hidden = (int)ex_parse_long("--hidden", optarg, 1, 1 << 16); break;
		case 'o': c->out = (int)ex_parse_long("--output", optarg, 1, 1 << 14); break;
		case 'n': c->iters = (int)ex_parse_long("--iters", optarg, 1, 1 << 20); break;
		case 'S': c->seed = (uint64_t)ex_parse_long("--seed", optarg, 0, LONG_MAX); break;
		case 'L': c->log_every = (int)ex_parse_long("--log-every", optarg, 0, 1 << 20); break;
		case 'h': if (ex_first_task()) usage(); exit(0);
		default: ex_getopt_error(lo, argv);
		}
	}
	if (optind < argc)
		ex_usage_error("unexpected argument '%s'", argv[optind]);
}

/* Y[b][j] = tanh(sum_d X[b][d] W1[d][j]) for j in [j0, j1): one function for
 * the serial and the sharded product, so both compute each element alike */
static void layer1(const float *X, const float *W1, int B, int D, int H, int j0, int j1, float *Y,
		   int ldy)
{
	for (int b = 0; b < B; b++)
		for (int j = j0; j < j1; j++) {
			float a = 0;
			for (int d = 0; d < D; d++)
				a += X[(size_t)b * D + d] * W1[(size_t)d * H + j];
			Y[(size_t)b * ldy + (j - j0)] = tanhf(a);
		}
}

/* Z[b][o] = sum_{k in [k0,k1)} Y[b][k - k0] W2[k][o] */
static void layer2(const float *Y, int ldy, const float *W2, int B, int O, int k0, int k1, float *Z)
{
	for (int b = 0; b < B; b++)
		for (int o = 0; o < O; o++) {
			float a = 0;
			for (int k = k0; k < k1; k++)
				a += Y[(size_t)b * ldy + (k - k0)] * W2[(size_t)k * O + o];
			Z[(size_t)b * O + o] = a;
		}
}

int main(int argc, char **argv)
{
	struct cfg c;
	loom_mesh_t m;
	int size, tp, h, pass = 1;
	float *W1, *W2, *X, *Ys, *Zs, *Yt, *Yg, *Yfull, *Zt, *Z, *Zrs, *Zblk;
	double *bound, worst_ar = 0, worst_rs = 0, worst_ratio = 0;
	uint64_t s;

	ex_prog = "loom-tp-linear";
	parse(argc, argv, &c);
	ex_init(ex_prog);
	size = loom_comm_size(ex_world);
	tp = c.tp ? c.tp : (size % 2 == 0 ? 2 : 1);
	{
		const char *bad = NULL;
		char why[160];
		if (size % tp)
			snprintf(why, sizeof why, "--tp %d does not divide the world size %d", tp, size),
				bad = why;
		else if (c.hidden % tp)
			snprintf(why, sizeof why, "--hidden %d is not a multiple of --tp %d", c.hidden, tp),
				bad = why;
		else if (c.batch % tp)
			snprintf(why, sizeof why, "--batch %d is not a multiple of --tp %d", c.batch, tp),
				bad = why;
		if (bad) {
			if (loom_comm_rank(ex_world) == 0)
				fprintf(stderr, "%s: %s\n", ex_prog, bad);
			loom_finalize(ex_world);
			return 2;
		}
	}
	ex_check(loom_mesh(ex_world, size / tp, tp, 1, &m), "loom_mesh");
	h = c.hidden / tp;

	W1 = ex_alloc((size_t)c.in * c.hidden, sizeof(float));
	W2 = ex_alloc((size_t)c.hidden * c.out, sizeof(float));
	X = ex_alloc((size_t)c.batch * c.in, sizeof(float));
	Ys = ex_alloc((size_t)c.batch * c.hidden, sizeof(float));
	Zs = ex_alloc((size_t)c.batch * c.out, sizeof(float));
	Yt = ex_alloc((size_t)c.batch * h, sizeof(float));
	Yg = ex_alloc((size_t)c.batch * c.hidden, sizeof(float));
	Yfull = ex_alloc((size_t)c.batch * c.hidden, sizeof(float));
	Zt = ex_alloc((size_t)c.batch * c.out, sizeof(float));
	Z = ex_alloc((size_t)c.batch * c.out, sizeof(float));
	Zrs = ex_alloc((size_t)c.batch * c.out, sizeof(float));
	Zblk = ex_alloc((size_t)(c.batch / tp) * c.out, sizeof(float));
	bound = ex_alloc((size_t)c.batch * c.out, sizeof(double));

	s = c.seed * 31337u;
	for (size_t i = 0; i < (size_t)c.in * c.hidden; i++)
		W1[i] = ex_randf(&s) / sqrtf((float)c.in);
	for (size_t i = 0; i < (size_t)c.hidden * c.out; i++)
		W2[i] = ex_randf(&s) / sqrtf((float)c.hidden);

	ex_say("%d ranks: dp %d x tp %d; X %dx%d, W1 %dx%d (%d columns per TP rank), "
	       "W2 %dx%d (%d rows per TP rank)",
	       size, size / tp, tp, c.batch, c.in, c.in, c.hidden, h, c.hidden, c.out, h);
	for (int it = 0; it < c.iters; it++) {
		int y_exact = 1;
		double w_ar = 0, w_rs = 0;
		s = (c.seed * 1000003u + (uint64_t)m.dp_index) * 8191u + (uint64_t)it;
		for (size_t i = 0; i < (size_t)c.batch * c.in; i++)
			X[i] = ex_randf(&s);

		/* serial */
		layer1(X, W1, c.batch, c.in, c.hidden, 0, c.hidden, Ys, c.hidden);
		layer2(Ys, c.hidden, W2, c.batch, c.out, 0, c.hidden, Zs);
		for (int b = 0; b < c.batch; b++)
			for (int o = 0; o < c.out; o++) {
				double a = 0;
				for (int k = 0; k < c.hidden; k++)
					a += fabs((double)Ys[(size_t)b * c.hidden + k] * W2[(size_t)k * c.out + o]);
				bound[(size_t)b * c.out + o] = 2.0 * c.hidden * FLT_EPSILON * a;
			}

		/* column-parallel layer 1, then gather Y to check it */
		layer1(X, W1, c.batch, c.in, c.hidden, m.tp_index * h, (m.tp_index + 1) * h, Yt, h);
		ex_check(loom_allgather(Yt, Yg, (size_t)c.batch * h, LOOM_FLOAT32, m.tp), "loom_allgather Y");
		for (int t = 0; t < tp; t++)  /* block t is B x h: columns [t h, (t+1) h) */
			for (int b = 0; b < c.batch; b++)
				memcpy(Yfull + (size_t)b * c.hidden + (size_t)t * h,
				       Yg + (size_t)t * c.batch * h + (size_t)b * h, (size_t)h * sizeof(float));
		y_exact = memcmp(Yfull, Ys, (size_t)c.batch * c.hidden * sizeof(float)) == 0;

		/* row-parallel layer 2: partial sums, then allreduce / reduce-scatter */
		layer2(Yt, h, W2, c.batch, c.out, m.tp_index * h, (m.tp_index + 1) * h, Zt);
		ex_check(loom_allreduce(Zt, Z, (size_t)c.batch * c.out, LOOM_FLOAT32, LOOM_SUM, m.tp),
			 "loom_allreduce Z");
		ex_check(loom_reduce_scatter(Zt, Zblk, (size_t)(c.batch / tp) * c.out, LOOM_FLOAT32,
					     LOOM_SUM, m.tp), "loom_reduce_scatter Z");
		ex_check(loom_allgather(Zblk, Zrs, (size_t)(c.batch / tp) * c.out, LOOM_FLOAT32, m.tp),
			 "loom_allgather Z");
		for (size_t i = 0; i < (size_t)c.batch * c.out; i++) {
			double ea = fabs((double)Z[i] - Zs[i]), er = fabs((double)Zrs[i] - Zs[i]);
			if (!(ea <= bound[i]) || !(er <= bound[i]))
				pass = 0;
			if (ea > w_ar) w_ar = ea;
			if (er > w_rs) w_rs = er;
			if (bound[i] > 0 && (ea > er ? ea : er) / bound[i] > worst_ratio)
				worst_ratio = (ea > er ? ea : er) / bound[i];
		}
		if (!y_exact) {
			fprintf(stderr, "%s: rank %d, pass %d: gathered Y differs from the serial Y\n",
				ex_prog, loom_comm_rank(ex_world), it + 1);
			pass = 0;
		}
		if (w_ar > worst_ar) worst_ar = w_ar;
		if (w_rs > worst_rs) worst_rs = w_rs;
		if (c.log_every && ((it + 1) % c.log_every == 0 || it + 1 == c.iters))
			ex_say("pass %d/%d: Y %s serial; max |Z - Z_serial|: allreduce %.3g, "
			       "reduce-scatter+allgather %.3g", it + 1, c.iters,
			       y_exact ? "==" : "!=", w_ar, w_rs);
	}
	{
		double v[3] = { worst_ar, worst_rs, worst_ratio }, mx[3];
		ex_check(loom_allreduce(v, mx, 3, LOOM_FLOAT64, LOOM_MAX, ex_world), "loom_allreduce");
		pass = ex_all_pass(pass);
		ex_say("%s: column-parallel Y equals the serial Y bit for bit; row-parallel Z by "
		       "allreduce (max err %.3g) and by reduce-scatter + allgather (max err %.3g) "
		       "within the fp32 summation bound of the serial matmul (worst %.3g of the bound)",
		       pass ? "PASS" : "FAIL", mx[0], mx[1], mx[2]);
	}
	loom_mesh_free(&m);
	free(W1); free(W2); free(X); free(Ys); free(Zs); free(Yt); free(Yg); free(Yfull);
	free(Zt); free(Z); free(Zrs); free(Zblk); free(bound);
	loom_finalize(ex_world);
	return pass ? 0 : 1;
}
