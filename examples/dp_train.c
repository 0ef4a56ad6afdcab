/* examples/dp_train.c: data-parallel SGD with loom_dp.
 *
 * A small MLP (in -> hidden -> hidden -> 1, tanh, logistic output, binary
 * cross-entropy) learns a fixed teacher on synthetic data. Each step's
 * global batch is split evenly over the ranks; each rank back-propagates
 * its shard layer by layer and marks each layer's gradients ready, so the
 * bucket reductions run while the earlier layers are still computed.
 *
 * Check: rank 0 then replays the whole run serially: for every step it
 * computes the shard gradients of every virtual rank with the same code
 * and combines them in rank order ((g0 + g1) + ...) / n in fp32, rounding
 * each shard to bfloat16 first for --bf16. The loss curve and the final
 * parameters must be
 *   bit-identical            with --ordered (fp32 or bf16 wire), and
 *   within --tol (relative)  with the default allreduce, whose summation
 *                            order is the algorithm's (default 1e-4 fp32,
 *                            1e-2 bf16, whose wire keeps 8 significant bits
 *                            and whose allreduce rounds partial sums too;
 *                            near zero relative to a floor: see rel_diff).
 * Every rank must also end with the same parameters as rank 0.
 *
 * Checkpoint/restart: with LOOM_CKPT_DIR set (srun --loom-ckpt=DIR) or
 * --ckpt DIR, each rank saves its 1/n slice of every parameter with
 * loom_ckpt; a stop signal (preemption's SIGTERM,
 * --loom-ckpt-signal) makes every rank agree on a step, save it and exit 0,
 * and loom.so requeues the job. A (re)started run resumes after the newest
 * checkpoint that verifies. The data of step t depends only on t and the
 * seed, and rank 0's serial replay always starts from the initial
 * parameters, so a resumed run passes only when its final parameters are
 * bit-identical to those of an uninterrupted one (its loss curve is
 * compared from the step it resumed at; --steps may grow on a restart).
 *
 *   srun --mpi=pmix -N2 -n4 loom-dp-train --ordered
 */
#include "common.h"

#include <getopt.h>
#include <math.h>
#include <signal.h>

struct cfg {
	int steps, batch, in, hidden, log_every;
	double lr, tol;
	uint64_t seed;
	long bucket_kb;
	int ordered, bf16;
	const char *ckpt_dir;  /* NULL: LOOM_CKPT_DIR, if set */
	int ckpt_every, step_ms;
	int heal, micro;        /* --heal: survive lost ranks; micro-batches a step */
	int kill_at;            /* --kill-at STEP:RANKS (tests): those ranks die */
	int spare_wait;         /* --spare-wait S: --heal waits that long for spares */
	char kill_ranks[64];
	int timing;             /* --timing: "timing:" lines of the heal's phases */
};

/* the wall clock when main began (--timing's exec event) */
static double t_exec;

/* parameters (or gradients) of the MLP, one array each, forward order */
enum { W1, B1, W2, B2, W3, B3, NPARAM };
static const char *const param_name[NPARAM] = { "w1", "b1", "w2", "b2", "w3", "b3" };
struct model {
	float *p[NPARAM];
	size_t n[NPARAM];
};

static void model_alloc(struct model *m, int in, int hid)
{
	m->n[W1] = (size_t)hid * in;
	m->n[B1] = hid;
	m->n[W2] = (size_t)hid * hid;
	m->n[B2] = hid;
	m->n[W3] = hid;
	m->n[B3] = 1;
	for (int i = 0; i < NPARAM; i++)
		m->p[i] = ex_alloc(m->n[i], sizeof(float));
}

static void model_copy(struct model *d, const struct model *s)
{
	for (int i = 0; i < NPARAM; i++)
		memcpy(d->p[i], s->p[i], s->n[i] * sizeof(float));
}

static void model_free(struct model *m)
{
	for (int i = 0; i < NPARAM; i++)
		free(m->p[i]);
}

/* the data set: one sample per global row, a pure function of the seed */
struct data {
	int rows, in;
	float *x, *y;
};

static void make_data(struct data *d, const struct cfg *c)
{
	uint64_t s = c->seed * 7919u + 1;
	float *teacher = ex_alloc((size_t)c->in, sizeof(float));
	d->rows = c->batch * 8;  /* 8 distinct global batches, then they repeat */
	d->in = c->in;
	d->x = ex_alloc((size_t)d->rows * c->in, sizeof(float));
	d->y = ex_alloc((size_t)d->rows, sizeof(float));
	for (int j = 0; j < c->in; j++)
		teacher[j] = ex_randf(&s);
	for (int r = 0; r < d->rows; r++) {
		float z = 0;
		for (int j = 0; j < c->in; j++) {
			float v = ex_randf(&s);
			d->x[(size_t)r * c->in + j] = v;
			z += teacher[j] * v;
		}
		d->y[r] = sinf(3 * z) + 0.3f * z > 0 ? 1.0f : 0.0f;
	}
	free(teacher);
}

/* forward + backward on rows [row0, row0 + m) of the data; gradients are the
 * mean over those rows. After each layer's gradients are complete,
 * layer_done(layer) is called (layer 2, then 1, then 0). Returns the mean
 * loss of the shard. */
struct scratch {
	float *h1, *h2, *d2, *d1;  /* m x hidden each */
	float *dz;                 /* m */
};

typedef void (*layer_cb)(void *arg, int layer);

static float shard_step(const struct model *P, struct model *G, const struct data *D, int row0,
			int m, int hid, struct scratch *s, layer_cb cb, void *arg)
{
	const int in = D->in;
	double loss = 0;
	for (int i = 0; i < NPARAM; i++)
		memset(G->p[i], 0, G->n[i] * sizeof(float));
	/* forward */
	for (int r = 0; r < m; r++) {
		const float *x = D->x + (size_t)(row0 + r) * in;
		float *h1 = s->h1 + (size_t)r * hid, *h2 = s->h2 + (size_t)r * hid;
		float z = P->p[B3][0];
		for (int k = 0; k < hid; k++) {
			float a = P->p[B1][k];
			const float *w = P->p[W1] + (size_t)k * in;
			for (int j = 0; j < in; j++)
				a += w[j] * x[j];
			h1[k] = tanhf(a);
		}
		for (int k = 0; k < hid; k++) {
			float a = P->p[B2][k];
			const float *w = P->p[W2] + (size_t)k * hid;
			for (int j = 0; j < hid; j++)
				a += w[j] * h1[j];
			h2[k] = tanhf(a);
		}
		for (int k = 0; k < hid; k++)
			z += P->p[W3][k] * h2[k];
		{
			float y = D->y[row0 + r];
			/* log(1 + e^z) - y z, computed without overflow */
			float sp = z > 0 ? z + log1pf(expf(-z)) : log1pf(expf(z));
			float p = 1.0f / (1.0f + expf(-z));
			loss += sp - y * z;
			s->dz[r] = (p - y) / (float)m;
		}
	}
	/* layer 2 (output) */
	for (int r = 0; r < m; r++) {
		const float *h2 = s->h2 + (size_t)r * hid;
		float *d2 = s->d2 + (size_t)r * hid;
		float dz = s->dz[r];
		G->p[B3][0] += dz;
		for (int k = 0; k < hid; k++) {
			G->p[W3][k] += dz * h2[k];
			d2[k] = dz * P->p[W3][k] * (1 - h2[k] * h2[k]);
		}
	}
	if (cb)
		cb(arg, 2);
	/* layer 1 */
	for (int r = 0; r < m; r++) {
		const float *h1 = s->h1 + (size_t)r * hid, *d2 = s->d2 + (size_t)r * hid;
		float *d1 = s->d1 + (size_t)r * hid;
		for (int k = 0; k < hid; k++) {
			float *gw = G->p[W2] + (size_t)k * hid;
			G->p[B2][k] += d2[k];
			for (int j = 0; j < hid; j++)
				gw[j] += d2[k] * h1[j];
		}
		for (int j = 0; j < hid; j++) {
			float a = 0;
			for (int k = 0; k < hid; k++)
				a += P->p[W2][(size_t)k * hid + j] * d2[k];
			d1[j] = a * (1 - h1[j] * h1[j]);
		}
	}
	if (cb)
		cb(arg, 1);
	/* layer 0 */
	for (int r = 0; r < m; r++) {
		const float *x = D->x + (size_t)(row0 + r) * in, *d1 = s->d1 + (size_t)r * hid;
		for (int k = 0; k < hid; k++) {
			float *gw = G->p[W1] + (size_t)k * in;
			G->p[B1][k] += d1[k];
			for (int j = 0; j < in; j++)
				gw[j] += d1[k] * x[j];
		}
	}
	if (cb)
		cb(arg, 0);
	return (float)(loss / m);
}

static void sgd(struct model *P, const struct model *G, float lr)
{
	for (int i = 0; i < NPARAM; i++)
		for (size_t e = 0; e < P->n[i]; e++)
			P->p[i][e] -= lr * G->p[i][e];
}

/* global rows of virtual rank r's shard at step t */
static int shard_row0(const struct cfg *c, const struct data *D, int t, int r, int n)
{
	return (t * c->batch) % D->rows + r * (c->batch / n);
}

struct ready_arg {
	loom_dp_t *dp;
	int idx[NPARAM];
};

static void mark_ready(void *argp, int layer)
{
	struct ready_arg *a = argp;
	ex_check(loom_dp_ready(a->dp, a->idx[2 * layer + 1]), "loom_dp_ready (bias)");
	ex_check(loom_dp_ready(a->dp, a->idx[2 * layer]), "loom_dp_ready (weights)");
}

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n"
	       "Train a small MLP by data-parallel SGD with loom_dp and check it against\n"
	       "the serial run of the same global batch (done by rank 0 afterwards).\n\n"
	       "  --steps N        SGD steps (default 200)\n"
	       "  --batch N        global batch, split evenly over the ranks (default 64)\n"
	       "  --input N        input features (default 32)\n"
	       "  --hidden N       width of the two hidden layers (default 128)\n"
	       "  --lr X           learning rate (default 0.5)\n"
	       "  --seed N         data and initialisation seed (default 1)\n"
	       "  --bucket-kb N    bucket cap in KiB; 0: LOOM_BUCKET_MB (default 32)\n"
	       "  --ordered        LOOM_DP_ORDERED: fixed reduction order, exact match\n"
	       "  --bf16           LOOM_DP_BF16_WIRE: bfloat16 gradients on the wire\n"
	       "  --tol X          relative tolerance without --ordered\n"
	       "                   (default 1e-4, 1e-2 with --bf16; values smaller than\n"
	       "                   0.014 * lr * sqrt(steps) are compared relative to that)\n"
	       "  --log-every N    progress line every N steps (default 50; 0: none)\n"
	       "  --ckpt DIR       checkpoint directory (default: $LOOM_CKPT_DIR, set by\n"
	       "                   srun --loom-ckpt=DIR; without either: no checkpoints)\n"
	       "  --ckpt-every N   also checkpoint every N steps (default 0: only on a\n"
	       "                   stop signal)\n"
	       "  --step-ms N      sleep N ms per step, to stand in for real compute\n"
	       "  --heal           survive lost ranks: revoke, shrink, restore the newest\n"
	       "                   checkpoint on the survivors and go on (implies --ordered;\n"
	       "                   the result does not depend on the rank count)\n"
	       "  --micro N        --heal: micro-batches a step, shared out over the ranks\n"
	       "                   (default 16; divides --batch; at most 16 ranks)\n"
	       "  --spare-wait S   --heal: after a shrink, wait up to S s for as many spares\n"
	       "                   as ranks were lost (the same command started with\n"
	       "                   srun --jobid=$SLURM_JOB_ID --overlap -N1 -n K -w NODE\n"
	       "                   --loom-join), else go on with fewer ranks (default 0)\n"
	       "  --kill-at S:R,.. tests: ranks R,.. kill themselves (SIGKILL) at step S\n"
	       "  --timing         --heal: every rank prints 'timing: rank R EVENT step S at T'\n"
	       "                   (T: wall clock, s) at exec, init, kill, detect, shrunk,\n"
	       "                   grown (spares taken), restored, first-step (after a\n"
	       "                   start or a heal), stop-saved\n"
	       "  --help           this text\n\n"
	       "Prints PASS and exits 0 when the check holds, FAIL and exits 1 otherwise.\n"
	       "Example: srun --mpi=pmix -N2 -n4 %s --ordered\n",
	       ex_prog, ex_prog);
}

static void parse(int argc, char **argv, struct cfg *c)
{
	static const struct option lo[] = {
		{ "steps", required_argument, 0, 's' },   { "batch", required_argument, 0, 'b' },
		{ "input", required_argument, 0, 'i' },   { "hidden", required_argument, 0, 'H' },
		{ "lr", required_argument, 0, 'l' },      { "seed", required_argument, 0, 'S' },
		{ "bucket-kb", required_argument, 0, 'k' }, { "ordered", no_argument, 0, 'o' },
		{ "bf16", no_argument, 0, 'f' },          { "tol", required_argument, 0, 't' },
		{ "log-every", required_argument, 0, 'L' }, { "help", no_argument, 0, 'h' },
		{ "ckpt", required_argument, 0, 'C' },    { "ckpt-every", required_argument, 0, 'E' },
		{ "step-ms", required_argument, 0, 'M' },
		{ "heal", no_argument, 0, 'R' },          { "micro", required_argument, 0, 'm' },
		{ "kill-at", required_argument, 0, 'K' }, { "timing", no_argument, 0, 'T' },
		{ "spare-wait", required_argument, 0, 'W' },
		{ 0, 0, 0, 0 }
	};
	int o;
	memset(c, 0, sizeof *c);
	c->steps = 200;
	c->batch = 64;
	c->in = 32;
	c->hidden = 128;
	c->lr = 0.5;
	c->seed = 1;
	c->bucket_kb = 32;
	c->tol = -1;
	c->log_every = 50;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 's': c->steps = (int)ex_parse_long("--steps", optarg, 1, 1000000); break;
		case 'b': c->batch = (int)ex_parse_long("--batch", optarg, 1, 1 << 20); break;
		case 'i': c->in = (int)ex_parse_long("--input", optarg, 1, 4096); break;
		case 'H': c->hidden = (int)ex_parse_long("--hidden", optarg, 1, 4096); break;
		case 'l': c->lr = ex_parse_double("--lr", optarg, 1e-9, 100); break;
		case 'S': c->seed = (uint64_t)ex_parse_long("--seed", optarg, 0, LONG_MAX); break;
		case 'k': c->bucket_kb = ex_parse_long("--bucket-kb", optarg, 0, 1 << 22); break;
		case 'o': c->ordered = 1; break;
		case 'f': c->bf16 = 1; break;
		case 't': c->tol = ex_parse_double("--tol", optarg, 0, 1); break;
		case 'L': c->log_every = (int)ex_parse_long("--log-every", optarg, 0, 1000000); break;
		case 'C': c->ckpt_dir = optarg; break;
		case 'E': c->ckpt_every = (int)ex_parse_long("--ckpt-every", optarg, 0, 1000000); break;
		case 'M': c->step_ms = (int)ex_parse_long("--step-ms", optarg, 0, 60000); break;
		case 'R': c->heal = c->ordered = 1; break;
		case 'T': c->timing = 1; break;
		case 'm': c->micro = (int)ex_parse_long("--micro", optarg, 1, 4096); break;
		case 'K':
			if (sscanf(optarg, "%d:%63s", &c->kill_at, c->kill_ranks) != 2 || c->kill_at < 0)
				ex_usage_error("--kill-at: expected STEP:RANK[,RANK...], got '%s'", optarg);
			break;
		case 'W': c->spare_wait = (int)ex_parse_long("--spare-wait", optarg, 0, 86400); break;
		case 'h': if (ex_first_task()) usage(); exit(0);
		default: ex_getopt_error(lo, argv);
		}
	}
	if (optind < argc)
		ex_usage_error("unexpected argument '%s'", argv[optind]);
	if (c->tol < 0)
		c->tol = c->bf16 ? 1e-2 : 1e-4;
	if (!c->micro)
		c->micro = 16;
	if (c->heal && c->bf16)
		ex_usage_error("--heal takes the fp32 wire, not --bf16");
	if (c->heal && c->batch % c->micro)
		ex_usage_error("--batch %d is not %d equal micro-batches (--micro)", c->batch, c->micro);
}

/* The comparison without --ordered: |a - b| <= tol * max(|b|, floor), i.e.
 * relative, but for values near zero relative to a floor.
 *
 * Why a floor, and why this one. An allreduce in another order, or a bf16
 * wire, changes each step's averaged gradient g by rounding: bf16 keeps 8
 * significant bits (relative error up to 2^-8 per rounding), and the
 * allreduce rounds its partial sums a few more times (about log2 of the
 * ranks) than the serial replay, which rounds each shard once. Each step
 * moves a parameter by lr * g, so the difference a step adds is about
 * lr * |g| * 2^-8 * (a few), whatever the parameter's own value: it is
 * absolute, not relative. A parameter that is near zero at the end (the
 * biases start at 0; dp_train's weights start at up to 1/sqrt(fan-in), i.e.
 * 0.18 and 0.09 by default, and some cross zero) can so differ by more than
 * tol of itself. The roundings have random signs, so over T steps the
 * differences add like a random walk, ~ sqrt(T). Measured with the
 * defaults (4 ranks on 2 nodes, --bf16, lr 0.5, seeds 1, 3, 7): the largest
 * absolute difference of a parameter below 0.1 was 8e-5 after 5 steps,
 * 2.6e-4 after 60 and 4.7e-4 after 200 (sqrt(T) indeed; fp32: 1.2e-7
 * after 200). The floor makes tol * floor twice that at the default
 * tolerance 1e-2:
 *     floor = 0.014 * lr * sqrt(T)     (0.054 after 60 steps at lr 0.5,
 *                                       0.1 after 200)
 * A value above the floor (most weights) is held to tol of itself, one
 * below it to tol * floor (5e-4 after 60 steps): a gradient off by 1-5%
 * in one layer already fails (seen: W3's by 1%, W1's by 2%, B2's by 5%,
 * all of which passed the old bound), let alone a rank's gradient missing
 * or counted twice. The old bound, |a - b| / (1 + |b|), was absolute (tol
 * itself, 1e-2 with bf16) for all of this model's parameters, which are
 * all below 1. */
static double diff_floor(const struct cfg *c)
{
	return 0.014 * c->lr * sqrt((double)c->steps);
}

static double rel_diff(double a, double b, double floor)
{
	double d = fabs(a - b), m = fabs(b) > floor ? fabs(b) : floor;
	if (isnan(d))
		return INFINITY;
	return d == 0 ? 0 : d / m;
}

/* largest rel_diff over the model */
static double model_diff(const struct model *a, const struct model *b, double floor)
{
	double worst = 0;
	for (int i = 0; i < NPARAM; i++)
		for (size_t e = 0; e < a->n[i]; e++) {
			double d = rel_diff(a->p[i][e], b->p[i][e], floor);
			if (d > worst)
				worst = d;
		}
	return worst;
}

static int model_same(const struct model *a, const struct model *b)
{
	for (int i = 0; i < NPARAM; i++)
		if (memcmp(a->p[i], b->p[i], a->n[i] * sizeof(float)))
			return 0;
	return 1;
}

/* FNV-1a over the parameters' bytes: compare runs by one line */
static uint64_t model_digest(const struct model *m)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < NPARAM; i++) {
		const unsigned char *b = (const unsigned char *)m->p[i];
		for (size_t e = 0; e < m->n[i] * sizeof(float); e++)
			h = (h ^ b[e]) * 1099511628211ull;
	}
	return h;
}

/* rank r's slice of an n-element parameter */
static void slice(size_t n, int r, int nranks, size_t *lo, size_t *len)
{
	*lo = n * (size_t)r / (size_t)nranks;
	*len = n * (size_t)(r + 1) / (size_t)nranks - *lo;
}

/* Register the checkpointed state and restore the newest checkpoint that
 * verifies. Returns the number of steps already done (0: fresh start). */
static int ckpt_setup(loom_ckpt_t *ck, const struct cfg *c, struct model *P, int rank, int n)
{
	long long done = -1;
	int rc;
	for (int i = 0; i < NPARAM; i++) {
		size_t lo, len;
		slice(P->n[i], rank, n, &lo, &len);
		ex_check(loom_ckpt_tensor(ck, param_name[i], LOOM_FLOAT32, 1, &P->n[i],
					  len ? &lo : NULL, len ? &len : NULL,
					  len ? P->p[i] + lo : NULL), "loom_ckpt_tensor");
	}
	rc = loom_ckpt_restore(ck, &done);
	if (rc == LOOM_ERR_NOT_FOUND)
		return 0;
	ex_check(rc, "loom_ckpt_restore");
	if (done > c->steps) {
		if (rank == 0)
			fprintf(stderr, "%s: the checkpoint in %s is of step %lld, beyond --steps %d\n",
				ex_prog, loom_ckpt_dir(ck), done, c->steps);
		exit(2);
	}
	/* every rank restored its own slices: share them */
	for (int i = 0; i < NPARAM; i++)
		for (int r = 0; r < n; r++) {
			size_t lo, len;
			slice(P->n[i], r, n, &lo, &len);
			if (len)
				ex_check(loom_broadcast(P->p[i] + lo, P->p[i] + lo, len, LOOM_FLOAT32, r,
							ex_world), "loom_broadcast");
		}
	{
		const char *rs = getenv("SLURM_RESTART_COUNT");
		ex_say("resuming after step %lld from %s (restart %s)", done, loom_ckpt_dir(ck),
		       rs && *rs ? rs : "0");
	}
	return (int)done;
}

/* ---- --heal: data-parallel SGD that survives lost ranks ----
 *
 * The result must not depend on the rank count, so that survivors that
 * go on with fewer ranks end bit-identical to an uninterrupted run. The
 * global batch is cut into --micro micro-batches, shared out over the
 * ranks in order; each micro-batch's gradient travels in a slot of its
 * own (the loom_dp tensors are micro x parameters, zero outside the
 * rank's slots), so loom_dp's ordered sum adds a value to zeros only and
 * is exact. The gradient is rounded to 20 significant bits (heal_quant)
 * and scaled by the rank count n <= 16 before, which makes x * n and
 * loom_dp's division by n exact too. Each rank then sums the micro-batch
 * gradients in micro-batch order: the same floats, the same order,
 * whatever n. On PEER_LOST or REVOKED the survivors revoke, shrink,
 * take spares when --spare-wait says to wait for them (loom_comm_grow:
 * processes of the same command started with --loom-join, whose world
 * is the grown one), reopen the checkpoint on the new world and redo the
 * steps from the newest checkpoint, the spares with them. */
struct heal {
	struct cfg *c;
	struct data *D;
	struct model P, P0, G, slots;  /* slots: micro x n[i] floats per parameter */
	struct scratch S;
	loom_dp_t *dp;
	loom_ckpt_t *ck;
	loom_comm_t *world0;
	float *loss_curve, *mloss;
	int rank, n, mb, heals;
	int first0;             /* the step this process started at */
	int wrank;              /* the rank in the first world (--timing) */
	int fresh;              /* --timing: no step done since the last attach */
	int spare;              /* this process joined as a spare (--loom-join) */
};

/* --timing: one line of an event of this rank, on the wall clock (the
 * ranks of the test cluster share one host's clock) */
static void heal_mark(const struct heal *h, const char *what, int step, double at)
{
	struct timespec ts;
	if (!h->c->timing)
		return;
	if (at <= 0) {
		clock_gettime(CLOCK_REALTIME, &ts);
		at = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
	}
	printf("%s: timing: rank %d %s step %d at %.6f\n", ex_prog, h->wrank, what, step, at);
	fflush(stdout);
}

/* g rounded to 20 significant bits (nearest, ties to even), -0 as +0 */
static float heal_quant(float g)
{
	uint32_t u;
	g += 0.0f;
	memcpy(&u, &g, sizeof u);
	if ((u & 0x7f800000u) != 0x7f800000u)
		u = (u + 0x7u + ((u >> 4) & 1u)) & ~0xfu;
	memcpy(&g, &u, sizeof g);
	return g;
}

/* micro-batches [lo, hi) of rank r of n */
static void heal_share(int micro, int r, int n, int *lo, int *hi)
{
	*lo = micro * r / n;
	*hi = micro * (r + 1) / n;
}

static int heal_row0(const struct cfg *c, const struct data *D, int t, int v)
{
	return (t * c->batch) % D->rows + v * (c->batch / c->micro);
}

/* the dp engine and the checkpoint on ex_world; restores the newest
 * checkpoint (else the initial parameters). Returns the first step. */
static int heal_attach(struct heal *h)
{
	int first = 0;
	h->rank = loom_comm_rank(ex_world);
	h->n = loom_comm_size(ex_world);
	ex_check(loom_dp_create(ex_world, (size_t)h->c->bucket_kb * 1024, LOOM_DP_ORDERED, &h->dp),
		 "loom_dp_create");
	for (int i = 0; i < NPARAM; i++)
		ex_check(loom_dp_add(h->dp, h->slots.p[i], h->slots.n[i], NULL), "loom_dp_add");
	model_copy(&h->P, &h->P0);
	if (h->c->ckpt_dir && *h->c->ckpt_dir) {
		ex_check(loom_ckpt_open(ex_world, h->c->ckpt_dir, &h->ck), "loom_ckpt_open");
		first = ckpt_setup(h->ck, h->c, &h->P, h->rank, h->n);
	}
	heal_mark(h, "restored", first, 0);
	h->fresh = 1;
	return first;
}

/* one step on ex_world: LOOM_SUCCESS, or the status of the failed call */
static int heal_step(struct heal *h, int t)
{
	const struct cfg *c = h->c;
	int lo, hi, rc;
	heal_share(c->micro, h->rank, h->n, &lo, &hi);
	for (int i = 0; i < NPARAM; i++)
		memset(h->slots.p[i], 0, h->slots.n[i] * sizeof(float));
	memset(h->mloss, 0, (size_t)c->micro * sizeof(float));
	for (int v = lo; v < hi; v++) {
		h->mloss[v] = shard_step(&h->P, &h->G, h->D, heal_row0(c, h->D, t, v), h->mb,
					 c->hidden, &h->S, NULL, NULL);
		for (int i = 0; i < NPARAM; i++)
			for (size_t e = 0; e < h->G.n[i]; e++)
				h->slots.p[i][(size_t)v * h->G.n[i] + e] =
					heal_quant(h->G.p[i][e]) * (float)h->n;
	}
	if ((rc = loom_dp_finish(h->dp)) ||
	    (rc = loom_allreduce(h->mloss, h->mloss, (size_t)c->micro, LOOM_FLOAT32, LOOM_SUM,
				 ex_world)))
		return rc;
	h->loss_curve[t] = 0;
	for (int v = 0; v < c->micro; v++)
		h->loss_curve[t] = v ? h->loss_curve[t] + h->mloss[v] : h->mloss[v];
	h->loss_curve[t] /= (float)c->micro;
	/* the micro-batches' gradients, summed in micro-batch order */
	for (int i = 0; i < NPARAM; i++)
		for (size_t e = 0; e < h->G.n[i]; e++) {
			float acc = h->slots.p[i][e];
			for (int v = 1; v < c->micro; v++)
				acc += h->slots.p[i][(size_t)v * h->G.n[i] + e];
			h->G.p[i][e] = acc / (float)c->micro;
		}
	sgd(&h->P, &h->G, (float)c->lr);
	return LOOM_SUCCESS;
}

/* after a shrink to *s: up to --spare-wait s for nlost spares; their
 * count (0: none came, *s is still the shrunk world) */
static int heal_take_spares(const struct heal *h, loom_comm_t **s, int nlost, const char *lost)
{
	loom_comm_t *g = NULL;
	double tmo = getenv("LOOM_TIMEOUT") ? atof(getenv("LOOM_TIMEOUT")) : 600;
	int rc;
	if (h->c->spare_wait <= 0 || nlost < 1 || loom_comm_size(*s) + nlost > 16 ||
	    loom_comm_size(*s) + nlost > h->c->micro)
		return 0;
	ex_say("heal: ranks %s lost; waiting up to %d s for %d spare(s): srun --jobid=$SLURM_JOB_ID "
	       "--overlap -N1 -n %d -w NODE --loom-join %s --heal ...", lost, h->c->spare_wait, nlost, nlost,
	       ex_prog);
	loom_comm_set_timeout(*s, h->c->spare_wait);
	rc = loom_comm_grow(*s, nlost, &g);
	loom_comm_set_timeout(*s, tmo > 0 ? tmo : 600);
	if (rc != LOOM_SUCCESS) {
		ex_say("heal: no spare joined (%s): going on with %d ranks", loom_strerror(rc), loom_comm_size(*s));
		return 0;
	}
	loom_comm_set_timeout(g, tmo > 0 ? tmo : 600);
	loom_comm_free(*s);
	*s = g;
	return nlost;
}

/* a member is lost: revoke, shrink (and take spares), restore on the new
 * world. Returns the step to go on from. */
static int heal_recover(struct heal *h, int t, int why)
{
	loom_comm_t *s = NULL;
	int failed[64], nf = 0, was = h->n, first, rc, spares;
	char list[400] = "";
	const char *cache = getenv("LOOM_CKPT_CACHE");
	double t0 = ex_now();
	heal_mark(h, "detect", t + 1, 0);
	loom_comm_revoke(ex_world);
	if ((rc = loom_comm_shrink(ex_world, &s)) != LOOM_SUCCESS) {
		fprintf(stderr, "%s: rank %d: loom_comm_shrink after %s at step %d: %s\n", ex_prog,
			h->rank, loom_strerror(why), t + 1, loom_strerror(rc));
		exit(1);
	}
	heal_mark(h, "shrunk", t + 1, 0);
	loom_comm_failed(ex_world, failed, 64, &nf);
	for (int k = 0; k < nf && k < 64; k++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", k ? "," : "", failed[k]);
	spares = heal_take_spares(h, &s, nf, list);
	if (spares)
		heal_mark(h, "grown", t + 1, 0);
	loom_dp_free(h->dp);
	if (h->ck)
		loom_ckpt_close(h->ck);
	h->ck = NULL;
	if (ex_world != h->world0)
		loom_comm_free(ex_world);
	ex_world = s;
	h->heals++;
	if (spares)
		ex_say("heal: %s at step %d; ranks %s of %d lost; %d spare(s) joined; %d ranks go on",
		       loom_strerror(why), t + 1, list, was, spares, loom_comm_size(s));
	else
		ex_say("heal: %s at step %d; ranks %s of %d lost; %d ranks go on", loom_strerror(why), t + 1,
		       list, was, loom_comm_size(s));
	first = heal_attach(h);
	ex_say("heal: restored step %d on the %d %s from %s (%.3f s since the failure)", first,
	       h->n, spares ? "ranks, spares included," : "survivors", !h->ck ? "nothing: no checkpoint directory, the initial parameters" :
	       first == 0 ? "nothing: no checkpoint yet, the initial parameters" :
	       cache && *cache ? "the node caches and partner copies when they hold that step, "
				 "else the shared directory (libloom's ckpt line says which)" :
	       "the shared directory", ex_now() - t0);
	return first;
}

/* ranks of --kill-at end themselves here (only in the first world) */
static void heal_maybe_die(const struct heal *h, int t)
{
	char buf[64], *tok, *save = NULL;
	if (!h->c->kill_ranks[0] || t != h->c->kill_at || ex_world != h->world0 || h->spare)
		return;
	snprintf(buf, sizeof buf, "%s", h->c->kill_ranks);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (atoi(tok) == h->rank) {
			fprintf(stderr, "%s: rank %d: --kill-at: SIGKILL at step %d\n", ex_prog, h->rank,
				t + 1);
			heal_mark(h, "kill", t + 1, 0);
			raise(SIGKILL);
		}
}

/* rank 0's serial replay of the micro-batches: PASS when bit-identical */
static int heal_check(struct heal *h)
{
	const struct cfg *c = h->c;
	struct model Q, Gr, acc;
	float *ref = ex_alloc((size_t)c->steps, sizeof(float));
	int same;
	model_alloc(&Q, c->in, c->hidden);
	model_alloc(&Gr, c->in, c->hidden);
	model_alloc(&acc, c->in, c->hidden);
	model_copy(&Q, &h->P0);
	for (int t = 0; t < c->steps; t++) {
		float l = 0;
		for (int v = 0; v < c->micro; v++) {
			float lv = shard_step(&Q, &Gr, h->D, heal_row0(c, h->D, t, v), h->mb, c->hidden,
					      &h->S, NULL, NULL);
			l = v ? l + lv : lv;
			for (int i = 0; i < NPARAM; i++)
				for (size_t e = 0; e < Gr.n[i]; e++) {
					float g = heal_quant(Gr.p[i][e]);
					acc.p[i][e] = v ? acc.p[i][e] + g : g;
				}
		}
		for (int i = 0; i < NPARAM; i++)
			for (size_t e = 0; e < acc.n[i]; e++)
				acc.p[i][e] = acc.p[i][e] / (float)c->micro;
		ref[t] = l / (float)c->micro;
		sgd(&Q, &acc, (float)c->lr);
	}
	same = model_same(&h->P, &Q) &&
	       !memcmp(ref + h->first0, h->loss_curve + h->first0,
		       (size_t)(c->steps - h->first0) * sizeof(float));
	printf("%s: final parameters: fnv1a64 %016llx after %d steps on %d ranks (%d heals)\n",
	       ex_prog, (unsigned long long)model_digest(&h->P), c->steps, h->n, h->heals);
	printf("%s: %s: loss curve and final parameters %s the serial run of %d micro-batches "
	       "(exact comparison)\n", ex_prog, same ? "PASS" : "FAIL",
	       same ? "bit-identical to" : "DIFFER from", c->micro);
	fflush(stdout);
	free(ref);
	model_free(&Q);
	model_free(&Gr);
	model_free(&acc);
	return same;
}

/* the training loop from step t: heals on a lost rank; 1 when a stop
 * signal ended it (its checkpoint committed), 0 at the last step */
static int heal_loop(struct heal *h, int t)
{
	const struct cfg *c = h->c;
	while (t < c->steps) {
		int rc, stop = 0;
		heal_maybe_die(h, t);
		rc = heal_step(h, t);
		if (rc == LOOM_SUCCESS && h->fresh) {
			heal_mark(h, "first-step", t + 1, 0);
			h->fresh = 0;
		}
		if (rc == LOOM_SUCCESS && h->ck)
			rc = loom_ckpt_should_stop(h->ck, t + 1, &stop);
		if (rc == LOOM_SUCCESS && h->ck &&
		    (stop || (c->ckpt_every && (t + 1) % c->ckpt_every == 0)))
			rc = loom_ckpt_save(h->ck, t + 1);
		if (rc == LOOM_ERR_PEER_LOST || rc == LOOM_ERR_REVOKED) {
			t = heal_recover(h, t, rc);
			continue;
		}
		ex_check(rc, "step");
		if (stop) {
			heal_mark(h, "stop-saved", t + 1, 0);
			ex_say("stop signal: checkpoint of step %d committed in %s; exiting "
			       "(a requeued job resumes from it)", t + 1, loom_ckpt_dir(h->ck));
			return 1;
		}
		if (c->log_every && ((t + 1) % c->log_every == 0 || t + 1 == c->steps))
			ex_say("step %d/%d loss %.6f (%d ranks)", t + 1, c->steps, h->loss_curve[t], h->n);
		if (c->step_ms) {
			struct timespec ts = { c->step_ms / 1000, (long)(c->step_ms % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
		t++;
	}
	return 0;
}

static int heal_main(struct cfg *c)
{
	struct heal h;
	struct data D;
	int pass = 1, t;
	memset(&h, 0, sizeof h);
	h.c = c;
	h.D = &D;
	h.world0 = ex_world;
	h.n = loom_comm_size(ex_world);
	h.wrank = loom_comm_rank(ex_world);
	heal_mark(&h, "exec", 0, t_exec);
	heal_mark(&h, "init", 0, 0);
	h.spare = getenv("LOOM_JOIN") && *getenv("LOOM_JOIN");
	if (h.n > 16 || h.n > c->micro) {
		if (loom_comm_rank(ex_world) == 0)
			fprintf(stderr, "%s: --heal: %d ranks: at most 16 and at most --micro %d\n",
				ex_prog, h.n, c->micro);
		loom_finalize(ex_world);
		return 2;
	}
	h.mb = c->batch / c->micro;
	make_data(&D, c);
	model_alloc(&h.P, c->in, c->hidden);
	model_alloc(&h.P0, c->in, c->hidden);
	model_alloc(&h.G, c->in, c->hidden);
	for (int i = 0; i < NPARAM; i++) {
		h.slots.n[i] = h.G.n[i] * (size_t)c->micro;
		h.slots.p[i] = ex_alloc(h.slots.n[i], sizeof(float));
	}
	h.S.h1 = ex_alloc((size_t)h.mb * c->hidden, sizeof(float));
	h.S.h2 = ex_alloc((size_t)h.mb * c->hidden, sizeof(float));
	h.S.d1 = ex_alloc((size_t)h.mb * c->hidden, sizeof(float));
	h.S.d2 = ex_alloc((size_t)h.mb * c->hidden, sizeof(float));
	h.S.dz = ex_alloc((size_t)h.mb, sizeof(float));
	h.loss_curve = ex_alloc((size_t)c->steps, sizeof(float));
	h.mloss = ex_alloc((size_t)c->micro, sizeof(float));
	/* the initial parameters: a function of the seed alone */
	{
		uint64_t s = c->seed * 104729u + 3;
		for (int i = 0; i < NPARAM; i++) {
			float scale = 1.0f / sqrtf((float)(i < B1 + 1 ? c->in : c->hidden));
			for (size_t e = 0; e < h.P0.n[i]; e++)
				h.P0.p[i][e] = (i % 2) ? 0.0f : ex_randf(&s) * scale;
		}
	}
	if (!c->ckpt_dir)
		c->ckpt_dir = getenv("LOOM_CKPT_DIR");
	t = h.first0 = heal_attach(&h);
	if (h.spare) {
		printf("%s: rank %d: joined as a spare: %d ranks, from step %d\n", ex_prog, h.rank, h.n, t);
		fflush(stdout);
	}
	ex_say("--heal: %d ranks, global batch %d in %d micro-batches of %d, MLP %d-%d-%d-1, "
	       "checkpoint %s every %d steps", h.n, c->batch, c->micro, h.mb, c->in, c->hidden,
	       c->hidden, c->ckpt_dir && *c->ckpt_dir ? c->ckpt_dir : "(none)", c->ckpt_every);
	if (heal_loop(&h, t)) {
		/* a stop signal: the checkpoint is committed, the requeue asked */
		loom_ckpt_close(h.ck);
		loom_dp_free(h.dp);
		if (ex_world != h.world0)
			loom_comm_free(ex_world);
		loom_finalize(h.world0);
		return 0;
	}
	if (h.rank == 0)
		pass = heal_check(&h);
	ex_check(loom_broadcast(&pass, &pass, 1, LOOM_INT32, 0, ex_world), "loom_broadcast");
	if (h.ck)
		ex_check(loom_ckpt_close(h.ck), "loom_ckpt_close");
	loom_dp_free(h.dp);
	if (ex_world != h.world0)
		loom_comm_free(ex_world);
	loom_finalize(h.world0);
	return pass ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct cfg c;
	struct data D;
	struct model P, G, P0;
	struct scratch S;
	struct ready_arg ra;
	loom_dp_stats_t st;
	int rank, n, m, pass = 1;
	float *loss_curve, *shard_losses;
	double t_train, dmax_ranks = 0;
	unsigned flags;
	loom_ckpt_t *ck = NULL;
	int first = 0, stopped = 0, ran;

	ex_prog = "loom-dp-train";
	{
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		t_exec = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
	}
	parse(argc, argv, &c);
	ex_init(ex_prog);
	if (c.heal)
		return heal_main(&c);
	rank = loom_comm_rank(ex_world);
	n = loom_comm_size(ex_world);
	if (c.batch % n) {
		if (rank == 0)
			fprintf(stderr, "%s: --batch %d does not split evenly over %d ranks\n", ex_prog,
				c.batch, n);
		loom_finalize(ex_world);
		return 2;
	}
	m = c.batch / n;
	flags = (c.ordered ? LOOM_DP_ORDERED : 0) | (c.bf16 ? LOOM_DP_BF16_WIRE : 0);

	make_data(&D, &c);
	model_alloc(&P, c.in, c.hidden);
	model_alloc(&G, c.in, c.hidden);
	model_alloc(&P0, c.in, c.hidden);
	S.h1 = ex_alloc((size_t)m * c.hidden, sizeof(float));
	S.h2 = ex_alloc((size_t)m * c.hidden, sizeof(float));
	S.d1 = ex_alloc((size_t)m * c.hidden, sizeof(float));
	S.d2 = ex_alloc((size_t)m * c.hidden, sizeof(float));
	S.dz = ex_alloc((size_t)m, sizeof(float));
	loss_curve = ex_alloc((size_t)c.steps, sizeof(float));
	shard_losses = ex_alloc((size_t)n, sizeof(float));

	/* every rank initialises differently: the broadcast makes them rank 0's */
	{
		uint64_t s = c.seed * 104729u + 17u * (uint64_t)rank + 3;
		for (int i = 0; i < NPARAM; i++) {
			float scale = 1.0f / sqrtf((float)(i < B1 + 1 ? c.in : c.hidden));
			for (size_t e = 0; e < P.n[i]; e++)
				P.p[i][e] = (i % 2) ? 0.0f : ex_randf(&s) * scale;
		}
	}
	ex_check(loom_dp_create(ex_world, (size_t)c.bucket_kb * 1024, flags, &ra.dp), "loom_dp_create");
	for (int i = 0; i < NPARAM; i++) {
		ex_check(loom_dp_add(ra.dp, G.p[i], G.n[i], &ra.idx[i]), "loom_dp_add");
		ex_check(loom_dp_broadcast_params(ra.dp, P.p[i], P.n[i]), "loom_dp_broadcast_params");
	}
	model_copy(&P0, &P);
	if (!c.ckpt_dir)
		c.ckpt_dir = getenv("LOOM_CKPT_DIR");
	if (c.ckpt_dir && *c.ckpt_dir) {
		ex_check(loom_ckpt_open(ex_world, c.ckpt_dir, &ck), "loom_ckpt_open");
		first = ckpt_setup(ck, &c, &P, rank, n);
	}

	ex_say("%d ranks, global batch %d (%d per rank), MLP %d-%d-%d-1 (%zu parameters), "
	       "%d buckets, %s wire, %s reduction",
	       n, c.batch, m, c.in, c.hidden, c.hidden,
	       P.n[W1] + P.n[B1] + P.n[W2] + P.n[B2] + P.n[W3] + P.n[B3],
	       loom_dp_bucket_count(ra.dp), c.bf16 ? "bf16" : "fp32",
	       c.ordered ? "ordered (rank-order sum)" : "allreduce");

	ex_check(loom_barrier(ex_world), "loom_barrier");
	t_train = ex_now();
	for (int t = first; t < c.steps; t++) {
		float l = shard_step(&P, &G, &D, shard_row0(&c, &D, t, rank, n), m, c.hidden, &S,
				     mark_ready, &ra);
		float sum;
		ex_check(loom_dp_finish(ra.dp), "loom_dp_finish");
		ex_check(loom_allgather(&l, shard_losses, 1, LOOM_FLOAT32, ex_world), "loom_allgather");
		sum = shard_losses[0];
		for (int r = 1; r < n; r++)
			sum += shard_losses[r];
		loss_curve[t] = sum / (float)n;
		sgd(&P, &G, (float)c.lr);
		if (c.log_every && ((t + 1) % c.log_every == 0 || t + 1 == c.steps))
			ex_say("step %d/%d loss %.6f", t + 1, c.steps, loss_curve[t]);
		if (ck) {
			int stop;
			ex_check(loom_ckpt_should_stop(ck, t + 1, &stop), "loom_ckpt_should_stop");
			if (stop || (c.ckpt_every && (t + 1) % c.ckpt_every == 0))
				ex_check(loom_ckpt_save(ck, t + 1), "loom_ckpt_save");
			if (stop) {
				ex_say("stop signal: checkpoint of step %d committed in %s; exiting "
				       "(a requeued job resumes from it)", t + 1, loom_ckpt_dir(ck));
				stopped = 1;
				break;
			}
		}
		if (c.step_ms) {
			struct timespec ts = { c.step_ms / 1000, (long)(c.step_ms % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	t_train = ex_now() - t_train;
	if (stopped) {
		loom_ckpt_close(ck);
		loom_dp_free(ra.dp);
		loom_finalize(ex_world);
		return 0;
	}
	ran = c.steps - first > 0 ? c.steps - first : 1;

	/* overlap, averaged over ranks */
	{
		double v[3], sum[3];
		ex_check(loom_dp_stats(ra.dp, &st), "loom_dp_stats");
		v[0] = st.comm_s;
		v[1] = st.wait_s;
		v[2] = t_train;
		ex_check(loom_allreduce(v, sum, 3, LOOM_FLOAT64, LOOM_SUM, ex_world), "loom_allreduce");
		for (int i = 0; i < 3; i++)
			sum[i] /= n;
		ex_say("overlap: communication %.3f ms/step, exposed wait %.3f ms/step, "
		       "%.1f%% of communication hidden behind backward compute "
		       "(%d buckets, %zu bytes/step/rank, step %.3f ms)",
		       1e3 * sum[0] / ran, 1e3 * sum[1] / ran,
		       sum[0] > 0 ? 100.0 * (1 - sum[1] / sum[0]) : 0.0, st.buckets, st.wire_bytes,
		       1e3 * sum[2] / ran);
	}

	/* every rank holds rank 0's parameters? */
	{
		struct model R;
		double d;
		model_alloc(&R, c.in, c.hidden);
		model_copy(&R, &P);
		for (int i = 0; i < NPARAM; i++)
			ex_check(loom_broadcast(R.p[i], R.p[i], R.n[i], LOOM_FLOAT32, 0, ex_world),
				 "loom_broadcast");
		d = model_same(&R, &P) ? 0 : model_diff(&P, &R, diff_floor(&c));
		ex_check(loom_allreduce(&d, &dmax_ranks, 1, LOOM_FLOAT64, LOOM_MAX, ex_world),
			 "loom_allreduce");
		model_free(&R);
	}

	/* rank 0: the serial run of the same global batches */
	if (rank == 0) {
		struct model Q, Gr, acc;
		float *ref_curve = ex_alloc((size_t)c.steps, sizeof(float));
		int curve_same = 1, params_same;
		double curve_diff = 0, param_diff;
		model_alloc(&Q, c.in, c.hidden);
		model_alloc(&Gr, c.in, c.hidden);
		model_alloc(&acc, c.in, c.hidden);
		model_copy(&Q, &P0);
		for (int t = 0; t < c.steps; t++) {
			float lsum = 0;
			for (int r = 0; r < n; r++) {
				float l = shard_step(&Q, &Gr, &D, shard_row0(&c, &D, t, r, n), m,
						     c.hidden, &S, NULL, NULL);
				lsum = r ? lsum + l : l;
				for (int i = 0; i < NPARAM; i++)
					for (size_t e = 0; e < Gr.n[i]; e++) {
						float g = c.bf16 ? loom_dp_bf16_round(Gr.p[i][e]) : Gr.p[i][e];
						acc.p[i][e] = r ? acc.p[i][e] + g : g;
					}
			}
			for (int i = 0; i < NPARAM; i++)
				for (size_t e = 0; e < acc.n[i]; e++)
					acc.p[i][e] = acc.p[i][e] / (float)n;
			ref_curve[t] = lsum / (float)n;
			sgd(&Q, &acc, (float)c.lr);
		}
		for (int t = first; t < c.steps; t++) {
			double d = rel_diff(loss_curve[t], ref_curve[t], diff_floor(&c));
			if (memcmp(&loss_curve[t], &ref_curve[t], sizeof(float)))
				curve_same = 0;
			if (d > curve_diff)
				curve_diff = d;
		}
		params_same = model_same(&P, &Q);
		param_diff = model_diff(&P, &Q, diff_floor(&c));
		printf("%s: serial run: loss %.6f -> %.6f; distributed: %.6f -> %.6f\n", ex_prog,
		       ref_curve[0], ref_curve[c.steps - 1], loss_curve[first < c.steps ? first : c.steps - 1],
		       loss_curve[c.steps - 1]);
		printf("%s: final parameters: fnv1a64 %016llx after %d steps%s\n", ex_prog,
		       (unsigned long long)model_digest(&P), c.steps,
		       first ? " (resumed run)" : "");
		printf("%s: max relative difference: loss curve %.3g, final parameters %.3g, "
		       "between ranks %.3g (values below %.3g relative to that)\n", ex_prog, curve_diff,
		       param_diff, dmax_ranks, diff_floor(&c));
		if (c.ordered) {
			pass = curve_same && params_same && dmax_ranks == 0;
			printf("%s: %s: loss curve and final parameters %s the serial run "
			       "(ordered %s, exact comparison), ranks %s\n", ex_prog,
			       pass ? "PASS" : "FAIL",
			       curve_same && params_same ? "bit-identical to" : "DIFFER from",
			       c.bf16 ? "bf16" : "fp32", dmax_ranks == 0 ? "identical" : "DIFFER");
		} else {
			pass = curve_diff <= c.tol && param_diff <= c.tol && dmax_ranks <= c.tol;
			printf("%s: %s: loss curve and final parameters match the serial run "
			       "within relative tolerance %g (%s wire, allreduce order)%s\n", ex_prog,
			       pass ? "PASS" : "FAIL", c.tol, c.bf16 ? "bf16" : "fp32",
			       pass ? "" : ": exceeded");
		}
		if (!(ref_curve[c.steps - 1] < ref_curve[0]))
			printf("%s: note: the loss did not decrease (try another --lr)\n", ex_prog);
		fflush(stdout);
		free(ref_curve);
		model_free(&Q);
		model_free(&Gr);
		model_free(&acc);
	}
	ex_check(loom_broadcast(&pass, &pass, 1, LOOM_INT32, 0, ex_world), "loom_broadcast");

	if (ck)
		ex_check(loom_ckpt_close(ck), "loom_ckpt_close");
	loom_dp_free(ra.dp);
	model_free(&P);
	model_free(&G);
	model_free(&P0);
	free(S.h1); free(S.h2); free(S.d1); free(S.d2); free(S.dz);
	free(D.x); free(D.y);
	free(loss_curve);
	free(shard_losses);
	loom_finalize(ex_world);
	return pass ? 0 : 1;
}
