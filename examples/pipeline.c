/* examples/pipeline.c: pipeline-parallel training with a 1F1B schedule.
 *
 * The model is a stack of P dense layers, a_{s+1} = tanh(a_s W_s^T + b_s),
 * with a squared-error loss on the last one; stage s (the pipeline group of
 * loom_mesh(world, size / P, 1, P)) holds layer s. Each step splits the
 * batch into M micro-batches and runs the one-forward-one-backward
 * schedule: stage s does min(P - s - 1, M) forwards, then alternates one
 * forward and one backward, then drains the remaining backwards.
 * Activations go down the pipeline and gradients up it, point to point
 * (loom_isend, whose buffers stay untouched until the step's end, and
 * loom_recv; messages between two ranks arrive in order, and each
 * direction carries one kind of message). Each step ends with SGD.
 *
 * Check: every rank also runs the whole model serially, micro-batch by
 * micro-batch in the same order, with the same functions; its stage's
 * weight gradients, weights after every step, and (last stage) the loss
 * must be bit-identical.
 *
 * Bubble: per stage, 1 - (time computing) / (time of the schedule),
 * averaged over stages, next to the 1F1B ideal (P - 1) / (M + P - 1).
 *
 *   srun --mpi=pmix -N2 -n4 loom-pipeline --micro-batches 8
 */
#include "common.h"

#include <getopt.h>
#include <math.h>

struct cfg {
	int stages, micro, mbsize, width, steps, log_every;
	double lr;
	uint64_t seed;
};

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n"
	       "Train a P-layer model with P pipeline stages and micro-batches in a 1F1B\n"
	       "schedule over loom_isend/loom_recv; check against the serial run and print\n"
	       "the bubble fraction.\n\n"
	       "  --stages P           pipeline stages, 2..4, dividing the world size\n"
	       "                       (default: the world size when it is 2..4)\n"
	       "  --micro-batches M    micro-batches per step (default 8)\n"
	       "  --micro-batch-size N rows per micro-batch (default 16)\n"
	       "  --width N            width of every layer (default 128)\n"
	       "  --steps N            training steps (default 4)\n"
	       "  --lr X               learning rate (default 0.1)\n"
	       "  --seed N             seed (default 1)\n"
	       "  --log-every N        progress line every N steps (default 1; 0: none)\n"
	       "  --help               this text\n\n"
	       "Prints PASS and exits 0 when gradients, weights and loss are bit-identical\n"
	       "to the serial run, FAIL and exits 1 otherwise.\n"
	       "Example: srun --mpi=pmix -N2 -n4 %s\n",
	       ex_prog, ex_prog);
}

static void parse(int argc, char **argv, struct cfg *c)
{
	static const struct option lo[] = {
		{ "stages", required_argument, 0, 'p' },
		{ "micro-batches", required_argument, 0, 'm' },
		{ "micro-batch-size", required_argument, 0, 'n' },
		{ "width", required_argument, 0, 'w' },
		{ "steps", required_argument, 0, 's' },
		{ "lr", required_argument, 0, 'l' },
		{ "seed", required_argument, 0, 'S' },
		{ "log-every", required_argument, 0, 'L' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	int o;
	memset(c, 0, sizeof *c);
	c->micro = 8;
	c->mbsize = 16;
	c->width = 128;
	c->steps = 4;
	c->lr = 0.1;
	c->seed = 1;
	c->log_every = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 'p': c->stages = (int)ex_parse_long("--stages", optarg, 2, 4); break;
		case 'm': c->micro = (int)ex_parse_long("--micro-batches", optarg, 1, 4096); break;
		case 'n': c->mbsize = (int)ex_parse_long("--micro-batch-size", optarg, 1, 1 << 16); break;
		case 'w': c->width = (int)ex_parse_long("--width", optarg, 1, 4096); break;
		case 's': c->steps = (int)ex_parse_long("--steps", optarg, 1, 1 << 20); break;
		case 'l': c->lr = ex_parse_double("--lr", optarg, 0, 100); break;
		case 'S': c->seed = (uint64_t)ex_parse_long("--seed", optarg, 0, LONG_MAX); break;
		case 'L': c->log_every = (int)ex_parse_long("--log-every", optarg, 0, 1 << 20); break;
		case 'h': if (ex_first_task()) usage(); exit(0);
		default: ex_getopt_error(lo, argv);
		}
	}
	if (optind < argc)
		ex_usage_error("unexpected argument '%s'", argv[optind]);
}

/* one layer: W is width x width (row o: weights of output o), b width */
struct layer {
	float *W, *b, *gW, *gb;
};

static int Wd;  /* width */

static void layer_forward(const struct layer *L, const float *in, float *out, int rows)
{
	for (int r = 0; r < rows; r++)
		for (int o = 0; o < Wd; o++) {
			float a = L->b[o];
			const float *w = L->W + (size_t)o * Wd, *x = in + (size_t)r * Wd;
			for (int i = 0; i < Wd; i++)
				a += w[i] * x[i];
			out[(size_t)r * Wd + o] = tanhf(a);
		}
}

/* gout: dLoss/d(out); accumulates gW, gb; gin (may be NULL): dLoss/d(in) */
static void layer_backward(struct layer *L, const float *in, const float *out, const float *gout,
			   float *gin, float *delta, int rows)
{
	for (size_t e = 0; e < (size_t)rows * Wd; e++)
		delta[e] = gout[e] * (1 - out[e] * out[e]);
	for (int r = 0; r < rows; r++) {
		const float *d = delta + (size_t)r * Wd, *x = in + (size_t)r * Wd;
		for (int o = 0; o < Wd; o++) {
			float *g = L->gW + (size_t)o * Wd;
			L->gb[o] += d[o];
			for (int i = 0; i < Wd; i++)
				g[i] += d[o] * x[i];
		}
	}
	if (gin)
		for (int r = 0; r < rows; r++)
			for (int i = 0; i < Wd; i++) {
				float a = 0;
				for (int o = 0; o < Wd; o++)
					a += delta[(size_t)r * Wd + o] * L->W[(size_t)o * Wd + i];
				gin[(size_t)r * Wd + i] = a;
			}
}

/* loss of one micro-batch and its gradient; scale = 1 / (rows of the batch) */
static float loss_grad(const float *out, const float *target, float *g, int rows, float scale)
{
	float l = 0;
	for (size_t e = 0; e < (size_t)rows * Wd; e++) {
		float d = out[e] - target[e];
		l += 0.5f * d * d * scale;
		g[e] = d * scale;
	}
	return l;
}

static void layer_init(struct layer *L, int s, uint64_t seed)
{
	uint64_t st = seed * 65537u + (uint64_t)s * 977u + 5;
	size_t n = (size_t)Wd * Wd;
	L->W = ex_alloc(n, sizeof(float));
	L->gW = ex_alloc(n, sizeof(float));
	L->b = ex_alloc((size_t)Wd, sizeof(float));
	L->gb = ex_alloc((size_t)Wd, sizeof(float));
	for (size_t e = 0; e < n; e++)
		L->W[e] = ex_randf(&st) * 1.5f / sqrtf((float)Wd);
	for (int o = 0; o < Wd; o++)
		L->b[o] = 0.1f * ex_randf(&st);
}

static void layer_zero_grad(struct layer *L)
{
	memset(L->gW, 0, (size_t)Wd * Wd * sizeof(float));
	memset(L->gb, 0, (size_t)Wd * sizeof(float));
}

static void layer_sgd(struct layer *L, float lr)
{
	for (size_t e = 0; e < (size_t)Wd * Wd; e++)
		L->W[e] -= lr * L->gW[e];
	for (int o = 0; o < Wd; o++)
		L->b[o] -= lr * L->gb[o];
}

static int layer_same(const struct layer *a, const struct layer *b, int grads)
{
	size_t n = (size_t)Wd * Wd * sizeof(float), nb = (size_t)Wd * sizeof(float);
	if (grads)
		return !memcmp(a->gW, b->gW, n) && !memcmp(a->gb, b->gb, nb);
	return !memcmp(a->W, b->W, n) && !memcmp(a->b, b->b, nb);
}

/* inputs and targets of micro-batch i of step t for data-parallel replica d */
static void make_batch(const struct cfg *c, int d, int t, int i, float *x, float *y)
{
	uint64_t st = ((c->seed * 7u + (uint64_t)d) * 1009u + (uint64_t)t) * 4099u + (uint64_t)i;
	for (size_t e = 0; e < (size_t)c->mbsize * Wd; e++) {
		x[e] = ex_randf(&st);
		y[e] = 0.8f * ex_randf(&st);
	}
}

int main(int argc, char **argv)
{
	struct cfg c;
	loom_mesh_t m;
	int size, P, s, M, R, pass = 1;
	size_t act;
	struct layer L, *Ls;
	float *ain, *aout, *gbuf, *gin, *delta, *x, *y, *g2, *tmp;
	loom_request_t **reqs;
	double bubble_sum = 0, sched_sum = 0;

	ex_prog = "loom-pipeline";
	parse(argc, argv, &c);
	ex_init(ex_prog);
	size = loom_comm_size(ex_world);
	P = c.stages ? c.stages : size;
	if (P < 2 || P > 4 || size % P) {
		if (loom_comm_rank(ex_world) == 0) {
			if (c.stages)
				fprintf(stderr, "%s: --stages %d does not divide the world size %d\n",
					ex_prog, P, size);
			else
				fprintf(stderr, "%s: needs 2 to 4 ranks (or --stages 2..4 dividing the "
					"world size); the world has %d\n", ex_prog, size);
		}
		loom_finalize(ex_world);
		return 2;
	}
	ex_check(loom_mesh(ex_world, size / P, 1, P, &m), "loom_mesh");
	s = m.pp_index;
	M = c.micro;
	R = c.mbsize;
	Wd = c.width;
	act = (size_t)R * Wd;

	layer_init(&L, s, c.seed);
	Ls = ex_alloc((size_t)P, sizeof *Ls);
	for (int k = 0; k < P; k++)
		layer_init(&Ls[k], k, c.seed);
	/* per micro-batch: the stage's input and output activations, the gradient
	 * received (or, last stage, computed) and the one sent up */
	ain = ex_alloc((size_t)M * act, sizeof(float));
	aout = ex_alloc((size_t)M * act, sizeof(float));
	gbuf = ex_alloc((size_t)M * act, sizeof(float));
	gin = ex_alloc((size_t)M * act, sizeof(float));
	delta = ex_alloc(act, sizeof(float));
	x = ex_alloc(act, sizeof(float));
	y = ex_alloc(act, sizeof(float));
	g2 = ex_alloc(act, sizeof(float));
	tmp = ex_alloc((size_t)(P + 1) * act, sizeof(float));
	reqs = ex_alloc((size_t)2 * M, sizeof *reqs);

	ex_say("%d ranks: %d replicas x %d stages, %d micro-batches of %d rows, width %d, %d steps; "
	       "1F1B ideal bubble (P-1)/(M+P-1) = %.3f",
	       size, size / P, P, M, R, Wd, c.steps, (double)(P - 1) / (M + P - 1));

	for (int t = 0; t < c.steps; t++) {
		int nreq = 0, warm = P - s - 1 < M ? P - s - 1 : M, nf = 0, nb = 0;
		float loss = 0, loss_serial = 0;
		double busy = 0, t0, t1;
		const float scale = 1.0f / (float)(M * R);

		layer_zero_grad(&L);
		ex_check(loom_barrier(m.pp), "loom_barrier");
		t0 = ex_now();
		/* the 1F1B schedule of stage s: warm forwards, (F, B) pairs, drain */
		while (nf < M || nb < M) {
			int do_f = nf < M && (nf < warm || nf - nb <= warm), i;
			double c0;
			if (do_f) {
				i = nf++;
				if (s == 0)
					make_batch(&c, m.dp_index, t, i, ain + i * act, y);
				else
					ex_check(loom_recv(ain + i * act, act, LOOM_FLOAT32, s - 1, m.pp),
						 "loom_recv activation");
				c0 = ex_now();
				layer_forward(&L, ain + i * act, aout + i * act, R);
				if (s == P - 1) {
					make_batch(&c, m.dp_index, t, i, x, y);
					loss += loss_grad(aout + i * act, y, gbuf + i * act, R, scale);
				}
				busy += ex_now() - c0;
				if (s < P - 1)
					ex_check(loom_isend(aout + i * act, act, LOOM_FLOAT32, s + 1, m.pp,
							    &reqs[nreq++]), "loom_isend activation");
			} else {
				i = nb++;
				if (s < P - 1)
					ex_check(loom_recv(gbuf + i * act, act, LOOM_FLOAT32, s + 1, m.pp),
						 "loom_recv gradient");
				c0 = ex_now();
				layer_backward(&L, ain + i * act, aout + i * act, gbuf + i * act,
					       s > 0 ? gin + i * act : NULL, delta, R);
				busy += ex_now() - c0;
				if (s > 0)
					ex_check(loom_isend(gin + i * act, act, LOOM_FLOAT32, s - 1, m.pp,
							    &reqs[nreq++]), "loom_isend gradient");
			}
		}
		for (int k = 0; k < nreq; k++)
			ex_check(loom_wait(reqs[k]), "loom_wait");
		t1 = ex_now();
		bubble_sum += (t1 - t0) - busy;
		sched_sum += t1 - t0;

		/* the serial run of the same step, same functions, same order */
		for (int k = 0; k < P; k++)
			layer_zero_grad(&Ls[k]);
		for (int i = 0; i < M; i++) {
			float *a = tmp;  /* a_0 .. a_P */
			make_batch(&c, m.dp_index, t, i, a, y);
			for (int k = 0; k < P; k++)
				layer_forward(&Ls[k], a + k * act, a + (k + 1) * act, R);
			loss_serial += loss_grad(a + P * act, y, x, R, scale);
			for (int k = P - 1; k >= 0; k--) {
				/* x holds dLoss/d a_{k+1}; g2 receives dLoss/d a_k */
				layer_backward(&Ls[k], a + k * act, a + (k + 1) * act, x,
					       k > 0 ? g2 : NULL, delta, R);
				if (k > 0)
					memcpy(x, g2, act * sizeof(float));
			}
		}
		if (!layer_same(&L, &Ls[s], 1)) {
			fprintf(stderr, "%s: rank %d (stage %d), step %d: gradients differ from the "
				"serial run\n", ex_prog, loom_comm_rank(ex_world), s, t + 1);
			pass = 0;
		}
		if (s == P - 1 && memcmp(&loss, &loss_serial, sizeof loss)) {
			fprintf(stderr, "%s: rank %d, step %d: loss %.9g, serial %.9g\n", ex_prog,
				loom_comm_rank(ex_world), t + 1, loss, loss_serial);
			pass = 0;
		}
		layer_sgd(&L, (float)c.lr);
		for (int k = 0; k < P; k++)
			layer_sgd(&Ls[k], (float)c.lr);
		if (!layer_same(&L, &Ls[s], 0))
			pass = 0;
		{
			float lv[2] = { loss, loss_serial };
			ex_check(loom_broadcast(lv, lv, 2, LOOM_FLOAT32, P - 1, m.pp), "loom_broadcast");
			if (c.log_every && ((t + 1) % c.log_every == 0 || t + 1 == c.steps))
				ex_say("step %d/%d: loss %.6f (serial %.6f), schedule %.2f ms",
				       t + 1, c.steps, lv[0], lv[1], 1e3 * (t1 - t0));
		}
	}
	{
		double v[2] = { bubble_sum, sched_sum }, sum[2];
		ex_check(loom_allreduce(v, sum, 2, LOOM_FLOAT64, LOOM_SUM, ex_world), "loom_allreduce");
		ex_say("bubble fraction: measured %.3f (idle share of the schedule, mean over %d "
		       "ranks), 1F1B ideal %.3f",
		       sum[1] > 0 ? sum[0] / sum[1] : 0.0, size, (double)(P - 1) / (M + P - 1));
	}
	pass = ex_all_pass(pass);
	ex_say("%s: %d stages x %d micro-batches: gradients, weights and loss bit-identical "
	       "to the serial run in all %d steps", pass ? "PASS" : "FAIL", P, M, c.steps);

	loom_mesh_free(&m);
	free(ain); free(aout); free(gbuf); free(gin); free(delta); free(x); free(y); free(g2); free(tmp);
	free(reqs);
	for (int k = 0; k < P; k++) {
		free(Ls[k].W); free(Ls[k].b); free(Ls[k].gW); free(Ls[k].gb);
	}
	free(Ls);
	free(L.W); free(L.b); free(L.gW); free(L.gb);
	loom_finalize(ex_world);
	return pass ? 0 : 1;
}
