/* runtime/ckpt.c: coordinated checkpoint/restart over libloom's public
 * collectives: stop-signal agreement, two-phase (aggregated) and
 * independent writes, atomic commit, verified and resharding loads.
 * Format: docs/checkpoint-format.md. */
#include "config.h"
#include "loom.h"
#include "loom_internal.h"
#include "ckpt.h"
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* signals                                                             */

static volatile sig_atomic_t ck_flag;   /* the stop signal's number, 0: none */
static pthread_mutex_t ck_sig_lock = PTHREAD_MUTEX_INITIALIZER;
static int ck_sig_refs;
static int ck_sigs[2], ck_nsigs;
static struct sigaction ck_old[2];

static void ck_handler(int sig, siginfo_t *si, void *uc)
{
	ck_flag = sig;
	for (int i = 0; i < ck_nsigs; i++) {
		if (ck_sigs[i] != sig)
			continue;
		if (ck_old[i].sa_flags & SA_SIGINFO) {
			if (ck_old[i].sa_sigaction)
				ck_old[i].sa_sigaction(sig, si, uc);
		} else if (ck_old[i].sa_handler != SIG_DFL && ck_old[i].sa_handler != SIG_IGN) {
			ck_old[i].sa_handler(sig);
		}
	}
}

static int ck_parse_signal(const char *s)
{
	static const struct { const char *n; int v; } tab[] = {
		{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "USR1", SIGUSR1 },
		{ "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "ALRM", SIGALRM }, { "CONT", SIGCONT },
		{ "URG", SIGURG }, { "XCPU", SIGXCPU }, { "PWR", SIGPWR },
	};
	char buf[32];
	size_t n = strcspn(s, "@");
	if (n == 0 || n >= sizeof buf)
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (buf[0] >= '0' && buf[0] <= '9') {
		char *e;
		long v = strtol(buf, &e, 10);
		return (*e || v <= 0 || v >= NSIG || v == SIGKILL || v == SIGSTOP) ? -1 : (int)v;
	}
	const char *p = strncmp(buf, "SIG", 3) ? buf : buf + 3;
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (!strcmp(p, tab[i].n))
			return tab[i].v;
	return -1;
}

static const char *sig_name(int sig)
{
	static char buf[16];
	const char *n = sigabbrev_np(sig);
	if (n)
		return n;
	snprintf(buf, sizeof buf, "%d", sig);
	return buf;
}

static void ck_signals_install(void)
{
	const char *e = getenv("LOOM_CKPT_SIGNAL");
	pthread_mutex_lock(&ck_sig_lock);
	if (ck_sig_refs++ == 0) {
		int want[2], nw = 0;
		ck_flag = 0;    /* a stop of an earlier, closed handle is over */
		want[nw++] = SIGTERM;
		if (e && *e) {
			int s = ck_parse_signal(e);
			if (s < 0)
				LOOM_WARN("ckpt: LOOM_CKPT_SIGNAL=%s is not a signal name or number; "
					  "only SIGTERM is caught", e);
			else if (s != SIGTERM)
				want[nw++] = s;
		}
		ck_nsigs = 0;
		for (int i = 0; i < nw; i++) {
			struct sigaction old;
			if (sigaction(want[i], NULL, &old) != 0)
				continue;
			if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
				continue; /* the program ignores it: leave it so */
			ck_sigs[ck_nsigs] = want[i];
			ck_old[ck_nsigs] = old;
			ck_nsigs++;
		}
		for (int i = 0; i < ck_nsigs; i++) {
			struct sigaction sa;
			memset(&sa, 0, sizeof sa);
			sa.sa_sigaction = ck_handler;
			sa.sa_flags = SA_SIGINFO | SA_RESTART;
			sigemptyset(&sa.sa_mask);
			sigaction(ck_sigs[i], &sa, NULL);
		}
	}
	pthread_mutex_unlock(&ck_sig_lock);
}

static void ck_signals_remove(void)
{
	pthread_mutex_lock(&ck_sig_lock);
	if (--ck_sig_refs == 0) {
		for (int i = 0; i < ck_nsigs; i++) {
			struct sigaction cur;
			/* put the old one back unless someone replaced ours meanwhile */
			if (sigaction(ck_sigs[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
			    cur.sa_sigaction == ck_handler)
				sigaction(ck_sigs[i], &ck_old[i], NULL);
		}
		ck_nsigs = 0;
	}
	pthread_mutex_unlock(&ck_sig_lock);
}

/* ------------------------------------------------------------------ */
/* handle                                                              */

typedef struct {
	uint64_t off[CKPT_MAX_NDIM], ext[CKPT_MAX_NDIM];
	void *data;
} ck_block_t;

typedef struct {
	char name[CKPT_NAME_MAX + 1];
	int dtype, ndim;
	uint64_t shape[CKPT_MAX_NDIM];
	uint64_t bytes;
	size_t esize;
	ck_block_t *b;
	int nb, cap;
} ck_tensor_t;

struct loom_ckpt {
	loom_comm_t *comm;
	char *dir;
	int rank, size, keep;
	loom_ckpt_mode_t mode;
	ck_tensor_t *t;
	int nt, cap;
	char job[64];
	loom_ckpt_stats_t st;
	int stopped;       /* the signal number agreed on by should_stop */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* every rank gets the worst (most negative) status */
static int agree(loom_ckpt_t *ck, int rc)
{
	int32_t v = rc, out = 0;
	int c = loom_allreduce(&v, &out, 1, LOOM_INT32, LOOM_MIN, ck->comm);
	return c != LOOM_SUCCESS ? c : out;
}

static long env_long(const char *name, long def, long lo, long hi)
{
	const char *e = getenv(name);
	char *end;
	long v;
	if (!e || !*e)
		return def;
	v = strtol(e, &end, 10);
	if (*end || v < lo || v > hi) {
		LOOM_WARN("ckpt: %s=%s ignored (want %ld..%ld); using %ld", name, e, lo, hi, def);
		return def;
	}
	return v;
}

int loom_ckpt_open(loom_comm_t *comm, const char *dir, loom_ckpt_t **out)
{
	loom_ckpt_t *ck;
	int rc = LOOM_SUCCESS;
	struct stat st;
	const char *e;
	if (!out)
		return LOOM_ERR_INVALID;
	*out = NULL;
	if (!comm)
		return LOOM_ERR_INVALID;
	if (!dir || !*dir)
		dir = getenv("LOOM_CKPT_DIR");
	ck = calloc(1, sizeof *ck);
	if (!ck)
		return LOOM_ERR_NOMEM;
	ck->comm = comm;
	ck->rank = loom_comm_rank(comm);
	ck->size = loom_comm_size(comm);
	ck->keep = (int)env_long("LOOM_CKPT_KEEP", 2, 1, 1000000);
	ck->mode = LOOM_CKPT_TWO_PHASE;
	if ((e = getenv("LOOM_CKPT_MODE")) && *e) {
		if (!strcmp(e, "independent"))
			ck->mode = LOOM_CKPT_INDEPENDENT;
		else if (strcmp(e, "two-phase"))
			LOOM_WARN("ckpt: LOOM_CKPT_MODE=%s not understood (two-phase|independent); "
				  "using two-phase", e);
	}
	e = getenv("SLURM_JOB_ID");
	snprintf(ck->job, sizeof ck->job, "%s", e && *e ? e : "nojob");
	if (!dir || !*dir) {
		LOOM_ERR("ckpt: no checkpoint directory: pass one to loom_ckpt_open or set "
			 "LOOM_CKPT_DIR (srun --loom-ckpt=DIR)");
		rc = LOOM_ERR_INVALID;
	} else if (stat(dir, &st) != 0) {
		LOOM_ERR("ckpt: checkpoint directory %s: %s", dir, strerror(errno));
		rc = LOOM_ERR_IO;
	} else if (!S_ISDIR(st.st_mode)) {
		LOOM_ERR("ckpt: checkpoint directory %s is not a directory", dir);
		rc = LOOM_ERR_IO;
	} else if (access(dir, W_OK | X_OK) != 0) {
		LOOM_ERR("ckpt: checkpoint directory %s is not writable: %s", dir, strerror(errno));
		rc = LOOM_ERR_IO;
	} else if (!(ck->dir = strdup(dir))) {
		rc = LOOM_ERR_NOMEM;
	}
	rc = agree(ck, rc);
	if (rc != LOOM_SUCCESS) {
		free(ck->dir);
		free(ck);
		return rc;
	}
	/* a request of an earlier run of this job has been acted on */
	if (ck->rank == 0) {
		char p[4200];
		snprintf(p, sizeof p, "%s/%s", ck->dir, CKPT_REQUEUE_FILE);
		unlink(p);
	}
	ck_signals_install();
	*out = ck;
	return LOOM_SUCCESS;
}

int loom_ckpt_set_keep(loom_ckpt_t *ck, int keep)
{
	if (!ck || keep < 1)
		return LOOM_ERR_INVALID;
	ck->keep = keep;
	return LOOM_SUCCESS;
}

int loom_ckpt_set_mode(loom_ckpt_t *ck, loom_ckpt_mode_t mode)
{
	if (!ck || (mode != LOOM_CKPT_TWO_PHASE && mode != LOOM_CKPT_INDEPENDENT))
		return LOOM_ERR_INVALID;
	ck->mode = mode;
	return LOOM_SUCCESS;
}

const char *loom_ckpt_dir(const loom_ckpt_t *ck)
{
	return ck ? ck->dir : NULL;
}

int loom_ckpt_stats(const loom_ckpt_t *ck, loom_ckpt_stats_t *st)
{
	if (!ck || !st)
		return LOOM_ERR_INVALID;
	*st = ck->st;
	return LOOM_SUCCESS;
}

int loom_ckpt_close(loom_ckpt_t *ck)
{
	if (!ck)
		return LOOM_ERR_INVALID;
	ck_signals_remove();
	for (int i = 0; i < ck->nt; i++)
		free(ck->t[i].b);
	free(ck->t);
	free(ck->dir);
	free(ck);
	return LOOM_SUCCESS;
}

int loom_ckpt_tensor(loom_ckpt_t *ck, const char *name, loom_dtype_t dtype, int ndim,
		     const size_t *shape, const size_t *offset, const size_t *extent, void *data)
{
	ck_tensor_t *t = NULL;
	uint64_t sh[CKPT_MAX_NDIM], off[CKPT_MAX_NDIM], ext[CKPT_MAX_NDIM];
	int declare = !offset && !extent && !data;
	if (!ck || !ckpt_name_ok(name) || loom_dtype_size(dtype) == 0 || ndim < 1 ||
	    ndim > CKPT_MAX_NDIM || !shape || (!declare && (!offset || !extent || !data))) {
		LOOM_ERR("ckpt: loom_ckpt_tensor(%s): bad argument", name && ckpt_name_ok(name) ? name : "?");
		return LOOM_ERR_INVALID;
	}
	for (int d = 0; d < ndim; d++) {
		sh[d] = shape[d];
		off[d] = declare ? 0 : offset[d];
		ext[d] = declare ? 0 : extent[d];
	}
	if (!declare && ckpt_block_runs(ndim, sh, off, ext, 1, NULL, NULL) < 0) {
		LOOM_ERR("ckpt: tensor %s: block outside the global shape", name);
		return LOOM_ERR_INVALID;
	}
	for (int i = 0; i < ck->nt; i++)
		if (!strcmp(ck->t[i].name, name))
			t = &ck->t[i];
	if (t) {
		if (t->dtype != (int)dtype || t->ndim != ndim || memcmp(t->shape, sh, sizeof(uint64_t) * (size_t)ndim)) {
			LOOM_ERR("ckpt: tensor %s registered again with another dtype or shape", name);
			return LOOM_ERR_INVALID;
		}
	} else {
		if (ck->nt == ck->cap) {
			int nc = ck->cap ? 2 * ck->cap : 8;
			ck_tensor_t *nt = realloc(ck->t, sizeof *nt * (size_t)nc);
			if (!nt)
				return LOOM_ERR_NOMEM;
			ck->t = nt;
			ck->cap = nc;
		}
		t = &ck->t[ck->nt++];
		memset(t, 0, sizeof *t);
		strcpy(t->name, name);
		t->dtype = (int)dtype;
		t->ndim = ndim;
		t->esize = loom_dtype_size(dtype);
		t->bytes = t->esize;
		for (int d = 0; d < ndim; d++) {
			t->shape[d] = sh[d];
			t->bytes *= sh[d];
		}
	}
	if (declare)
		return LOOM_SUCCESS;
	if (t->nb == t->cap) {
		int nc = t->cap ? 2 * t->cap : 4;
		ck_block_t *nb = realloc(t->b, sizeof *nb * (size_t)nc);
		if (!nb)
			return LOOM_ERR_NOMEM;
		t->b = nb;
		t->cap = nc;
	}
	ck_block_t *b = &t->b[t->nb++];
	memset(b, 0, sizeof *b);
	memcpy(b->off, off, sizeof(uint64_t) * (size_t)ndim);
	memcpy(b->ext, ext, sizeof(uint64_t) * (size_t)ndim);
	b->data = data;
	return LOOM_SUCCESS;
}

int loom_ckpt_should_stop(loom_ckpt_t *ck, long long step, int *stop)
{
	int64_t v[3], r[3];
	int rc;
	if (!ck || !stop)
		return LOOM_ERR_INVALID;
	v[0] = ck->stopped ? ck->stopped : ck_flag;
	v[1] = step;
	v[2] = -(int64_t)step;
	rc = loom_allreduce(v, r, 3, LOOM_INT64, LOOM_MAX, ck->comm);
	if (rc != LOOM_SUCCESS)
		return rc;
	if (r[1] != -r[2]) {
		LOOM_ERR("ckpt: loom_ckpt_should_stop called for different steps (%lld..%lld)",
			 (long long)-r[2], (long long)r[1]);
		return LOOM_ERR_MISMATCH;
	}
	if (r[0] && !ck->stopped) {
		ck->stopped = (int)r[0];
		if (ck->rank == 0)
			LOOM_INFO("ckpt: stop agreed at step %lld (SIG%s)", step,
				  sig_name((int)r[0]));
	}
	*stop = r[0] ? 1 : 0;
	return LOOM_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* the plan: every rank's runs in the virtual byte space (the tensor
 * files one after another), aggregators and their domains             */

typedef struct {
	uint64_t v, len;  /* virtual offset, length */
	uint64_t loff;    /* offset in the block's buffer (own runs only) */
	int tensor, block;
} vrun_t;

typedef struct {
	int nt;
	uint64_t *base;      /* virtual offset of tensor i's file; [nt] = total */
	uint64_t *cbase;     /* index of tensor i's first chunk; [nt] = chunk count */
	uint64_t chunk;
	int naggr, *aggr;    /* aggregator ranks, ascending */
	int my_aggr;         /* index of this rank in aggr, -1 if none */
	uint64_t *dom;       /* naggr + 1 domain starts */
	vrun_t **runs;       /* per rank, sorted by v */
	long *nruns;
	uint64_t *maxlen;    /* per rank: longest run */
	uint64_t window;
	uint64_t direct_min;  /* see direct_ok */
	int rounds;
} plan_t;

/* Pieces of at least p->direct_min bytes on average (LOOM_CKPT_DIRECT_BYTES,
 * default 32 KiB) go as one message each, straight from the rank's buffer
 * into the aggregator's window (and back on load); smaller ones are packed
 * into one message per window, since a message per few bytes would cost
 * more than the two copies it saves. */
#define DIRECT_MIN_DEFAULT (32L << 10)

static void plan_free(plan_t *p)
{
	free(p->base);
	free(p->cbase);
	free(p->aggr);
	free(p->dom);
}

typedef struct {
	vrun_t *v;
	long n, cap;
	uint64_t base;
	int tensor, block;
	int oom;
} runacc_t;

static void acc_run(void *arg, const ckpt_run_t *r)
{
	runacc_t *a = arg;
	if (a->oom)
		return;
	if (a->n == a->cap) {
		long nc = a->cap ? 2 * a->cap : 64;
		vrun_t *nv = realloc(a->v, sizeof *nv * (size_t)nc);
		if (!nv) {
			a->oom = 1;
			return;
		}
		a->v = nv;
		a->cap = nc;
	}
	vrun_t *x = &a->v[a->n];
	/* merge with the previous run when contiguous in file and buffer */
	if (a->n > 0 && x[-1].tensor == a->tensor && x[-1].block == a->block &&
	    x[-1].v + x[-1].len == a->base + r->foff && x[-1].loff + x[-1].len == r->loff) {
		x[-1].len += r->len;
		return;
	}
	x->v = a->base + r->foff;
	x->len = r->len;
	x->loff = r->loff;
	x->tensor = a->tensor;
	x->block = a->block;
	a->n++;
}

static int cmp_vrun(const void *a, const void *b)
{
	const vrun_t *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	if (x->tensor != y->tensor)
		return x->tensor - y->tensor;
	return x->block - y->block;
}

#define DESC_W (2 + 2 * CKPT_MAX_NDIM) /* tensor, block, off[8], ext[8] */

static int plan_make(loom_ckpt_t *ck, plan_t *p, const uint64_t *bytes, uint64_t chunk)
{
	int size = ck->size, rc = LOOM_SUCCESS;
	int64_t mynb = 0, maxnb = 0, *desc = NULL, *all = NULL;
	int32_t lr, *lrs = NULL;
	memset(p, 0, sizeof *p);
	p->nt = ck->nt;
	p->chunk = chunk;
	p->base = calloc((size_t)ck->nt + 1, sizeof *p->base);
	p->cbase = calloc((size_t)ck->nt + 1, sizeof *p->cbase);
	p->runs = calloc((size_t)size, sizeof *p->runs);
	p->nruns = calloc((size_t)size, sizeof *p->nruns);
	p->maxlen = calloc((size_t)size, sizeof *p->maxlen);
	p->aggr = calloc((size_t)size, sizeof *p->aggr);
	lrs = calloc((size_t)size, sizeof *lrs);
	if (!p->base || !p->cbase || !p->runs || !p->nruns || !p->maxlen || !p->aggr || !lrs)
		rc = LOOM_ERR_NOMEM;
	rc = agree(ck, rc);
	if (rc)
		goto out;
	for (int i = 0; i < ck->nt; i++) {
		p->base[i + 1] = p->base[i] + bytes[i];
		p->cbase[i + 1] = p->cbase[i] + ckpt_nchunks(bytes[i], chunk);
		mynb += ck->t[i].nb;
	}
	/* aggregators: local rank 0 of each node, or LOOM_CKPT_AGGREGATORS
	 * ranks taken node by node (local rank 0s first, then 1s...) */
	lr = loom_comm_local_rank(ck->comm);
	if ((rc = loom_allgather(&lr, lrs, 1, LOOM_INT32, ck->comm)))
		goto out;
	long want = env_long("LOOM_CKPT_AGGREGATORS", 0, 0, 1000000);
	if (want > size)
		want = size;
	{
		char *pick = calloc((size_t)size, 1);
		int n = 0;
		if (!pick) {
			rc = LOOM_ERR_NOMEM;
			goto out;
		}
		if (want == 0) {
			for (int r = 0; r < size; r++)
				pick[r] = lrs[r] == 0;
		} else {
			for (int level = 0; n < want; level++)
				for (int r = 0; r < size && n < want; r++)
					if (lrs[r] == level && !pick[r]) {
						pick[r] = 1;
						n++;
					}
		}
		p->naggr = 0;
		p->my_aggr = -1;
		for (int r = 0; r < size; r++)
			if (pick[r]) {
				if (r == ck->rank)
					p->my_aggr = p->naggr;
				p->aggr[p->naggr++] = r;
			}
		free(pick);
		if (p->naggr == 0) { /* odd local ranks: fall back to rank 0 */
			p->aggr[p->naggr++] = 0;
			p->my_aggr = ck->rank == 0 ? 0 : -1;
		}
	}
	p->dom = calloc((size_t)p->naggr + 1, sizeof *p->dom);
	if (!p->dom) {
		rc = LOOM_ERR_NOMEM;
		goto out;
	}
	ckpt_domains((size_t)ck->nt, bytes, chunk, p->naggr, p->dom);
	p->window = (uint64_t)env_long("LOOM_CKPT_BUFFER_MB", 32, 1, 1 << 20) << 20;
	if (getenv("LOOM_CKPT_BUFFER_BYTES")) /* for tests: tiny windows */
		p->window = (uint64_t)env_long("LOOM_CKPT_BUFFER_BYTES", 1 << 20, 1, 1L << 40);
	p->direct_min = (uint64_t)env_long("LOOM_CKPT_DIRECT_BYTES", DIRECT_MIN_DEFAULT, 1, 1L << 40);
	{ /* the largest block count, window and direct threshold: both ends
	   * of every message must cut the same pieces, so one value for all
	   * ranks even if their environments differ */
		int64_t mine[3] = { mynb, (int64_t)p->window, (int64_t)p->direct_min }, most[3];
		if ((rc = loom_allreduce(mine, most, 3, LOOM_INT64, LOOM_MAX, ck->comm)))
			goto out;
		maxnb = most[0];
		p->window = (uint64_t)most[1];
		p->direct_min = (uint64_t)most[2];
	}
	p->rounds = 0;
	for (int j = 0; j < p->naggr; j++) {
		uint64_t d = p->dom[j + 1] - p->dom[j];
		int r = (int)((d + p->window - 1) / p->window);
		if (r > p->rounds)
			p->rounds = r;
	}
	/* everyone's blocks */
	if (maxnb == 0)
		goto out;
	desc = malloc(sizeof *desc * (size_t)maxnb * DESC_W);
	all = malloc(sizeof *all * (size_t)maxnb * DESC_W * (size_t)size);
	rc = agree(ck, desc && all ? LOOM_SUCCESS : LOOM_ERR_NOMEM);
	if (rc)
		goto out;
	{
		int64_t k = 0;
		for (int i = 0; i < ck->nt; i++)
			for (int b = 0; b < ck->t[i].nb; b++, k++) {
				int64_t *d = desc + k * DESC_W;
				d[0] = i;
				d[1] = b;
				for (int x = 0; x < CKPT_MAX_NDIM; x++) {
					d[2 + x] = (int64_t)ck->t[i].b[b].off[x];
					d[2 + CKPT_MAX_NDIM + x] = (int64_t)ck->t[i].b[b].ext[x];
				}
			}
		for (; k < maxnb; k++)
			desc[k * DESC_W] = -1;
	}
	if ((rc = loom_allgather(desc, all, (size_t)maxnb * DESC_W, LOOM_INT64, ck->comm)))
		goto out;
	for (int r = 0; r < size && !rc; r++) {
		runacc_t a;
		memset(&a, 0, sizeof a);
		for (int64_t k = 0; k < maxnb; k++) {
			int64_t *d = all + ((int64_t)r * maxnb + k) * DESC_W;
			uint64_t off[CKPT_MAX_NDIM], ext[CKPT_MAX_NDIM];
			if (d[0] < 0)
				break;
			if (d[0] >= ck->nt) {
				rc = LOOM_ERR_MISMATCH;
				break;
			}
			ck_tensor_t *t = &ck->t[d[0]];
			for (int x = 0; x < CKPT_MAX_NDIM; x++) {
				off[x] = (uint64_t)d[2 + x];
				ext[x] = (uint64_t)d[2 + CKPT_MAX_NDIM + x];
			}
			a.base = p->base[d[0]];
			a.tensor = (int)d[0];
			a.block = (int)d[1];
			if (ckpt_block_runs(t->ndim, t->shape, off, ext, t->esize, acc_run, &a) < 0) {
				rc = LOOM_ERR_MISMATCH;
				break;
			}
		}
		if (a.oom)
			rc = LOOM_ERR_NOMEM;
		if (a.n > 1)
			qsort(a.v, (size_t)a.n, sizeof *a.v, cmp_vrun);
		p->runs[r] = a.v;
		p->nruns[r] = a.n;
		for (long i = 0; i < a.n; i++)
			if (a.v[i].len > p->maxlen[r])
				p->maxlen[r] = a.v[i].len;
	}
out:
	free(desc);
	free(all);
	free(lrs);
	return rc;
}

static void plan_release(loom_ckpt_t *ck, plan_t *p)
{
	if (p->runs)
		for (int r = 0; r < ck->size; r++)
			free(p->runs[r]);
	free(p->runs);
	free(p->nruns);
	free(p->maxlen);
	plan_free(p);
}

/* The pieces of rank r's runs inside [lo, hi), in order: calls fn for
 * each (virtual offset, length, run). Returns the byte total. */
typedef void (*piece_fn)(void *arg, uint64_t v, uint64_t len, const vrun_t *run);

static uint64_t pieces(const plan_t *p, int r, uint64_t lo, uint64_t hi, piece_fn fn, void *arg)
{
	const vrun_t *v = p->runs[r];
	long n = p->nruns[r], a = 0, b = n;
	uint64_t tot = 0;
	if (n == 0 || lo >= hi)
		return 0;
	/* first run with v >= lo - maxlen */
	uint64_t from = lo > p->maxlen[r] ? lo - p->maxlen[r] : 0;
	while (a < b) {
		long m = (a + b) / 2;
		if (v[m].v < from)
			a = m + 1;
		else
			b = m;
	}
	for (long i = a; i < n && v[i].v < hi; i++) {
		uint64_t s = v[i].v > lo ? v[i].v : lo;
		uint64_t e = v[i].v + v[i].len < hi ? v[i].v + v[i].len : hi;
		if (s >= e)
			continue;
		if (fn)
			fn(arg, s, e - s, &v[i]);
		tot += e - s;
	}
	return tot;
}

/* ------------------------------------------------------------------ */
/* files and the aggregator's window                                   */

static int pwrite_all(int fd, const char *buf, uint64_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, buf, len > (1u << 30) ? (1u << 30) : (size_t)len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int64_t pread_all(int fd, char *buf, uint64_t len, uint64_t off)
{
	uint64_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got > (1u << 30) ? (1u << 30) : (size_t)(len - got),
				  (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (uint64_t)n;
	}
	return (int64_t)got;
}

/* streaming chunk sums over an aggregator's domain, fed in order */
typedef struct {
	int algo;
	ckpt_hash_t h;
	int open;
	uint64_t *sums; /* all chunks of the plan (zero where not ours) */
} sumst_t;

static int tensor_of(const plan_t *p, uint64_t v)
{
	int a = 0, b = p->nt - 1;
	while (a < b) { /* last tensor with base <= v and a non-empty file */
		int m = (a + b + 1) / 2;
		if (p->base[m] <= v)
			a = m;
		else
			b = m - 1;
	}
	while (a < p->nt - 1 && p->base[a + 1] <= v)
		a++;
	return a;
}

/* feed window bytes [lo, lo+len) to the chunk sums */
static void sums_feed(const plan_t *p, sumst_t *s, const char *buf, uint64_t lo, uint64_t len)
{
	uint64_t v = lo, end = lo + len;
	while (v < end) {
		int t = tensor_of(p, v);
		uint64_t in = v - p->base[t];
		uint64_t cend = (in / p->chunk + 1) * p->chunk;
		uint64_t tb = p->base[t + 1] - p->base[t];
		if (cend > tb)
			cend = tb;
		uint64_t n = cend - in;
		if (n > end - v)
			n = end - v;
		if (!s->open) {
			ckpt_hash_init(&s->h, s->algo);
			s->open = 1;
		}
		ckpt_hash_update(&s->h, buf + (v - lo), (size_t)n);
		v += n;
		if (in + n == cend) {
			s->sums[p->cbase[t] + in / p->chunk] = ckpt_hash_final(&s->h);
			s->open = 0;
		}
	}
}

/* write (or read) the window [lo, hi) of the virtual space to the files */
static int window_io(const plan_t *p, const int *fds, char *buf, uint64_t lo, uint64_t hi,
		     int writing, char *why, size_t whylen, char *const *fnames)
{
	uint64_t v = lo;
	while (v < hi) {
		int t = tensor_of(p, v);
		uint64_t in = v - p->base[t], n = p->base[t + 1] - v;
		if (n > hi - v)
			n = hi - v;
		if (n == 0) {
			v++;
			continue;
		}
		if (writing) {
			if (pwrite_all(fds[t], buf + (v - lo), n, in) != 0) {
				snprintf(why, whylen, "write %s: %s", fnames[t], strerror(errno));
				return LOOM_ERR_IO;
			}
#ifdef SYNC_FILE_RANGE_WRITE
			/* start the write-back now, so that the disk works while the
			 * next window is exchanged and the final fsync finds little
			 * left to do (a hint: errors surface at fsync) */
			(void)sync_file_range(fds[t], (off_t)in, (off_t)n, SYNC_FILE_RANGE_WRITE);
#endif
		} else {
			int64_t got = pread_all(fds[t], buf + (v - lo), n, in);
			if (got < 0) {
				snprintf(why, whylen, "read %s: %s", fnames[t], strerror(errno));
				return LOOM_ERR_IO;
			}
			if ((uint64_t)got < n) {
				snprintf(why, whylen, "file %s is short: %" PRIu64 " bytes, expected %" PRIu64,
					 fnames[t], in + (uint64_t)got, p->base[t + 1] - p->base[t]);
				memset(buf + (v - lo) + got, 0, n - (uint64_t)got);
				return LOOM_ERR_CORRUPT;
			}
		}
		v += n;
	}
	return LOOM_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* the exchange: rounds over windows, isend/irecv of packed pieces     */

typedef struct {
	char *dst;        /* pack: send buffer; unpack: receive buffer */
	uint64_t pos;
	uint64_t lo;      /* window start */
	char *win;        /* window buffer (aggregator) */
	loom_ckpt_t *ck;
	int to_window;    /* 1: local data -> window/pack; 0: window/pack -> local */
} packst_t;

static char *run_ptr(loom_ckpt_t *ck, const vrun_t *r, uint64_t v)
{
	return (char *)ck->t[r->tensor].b[r->block].data + r->loff + (v - r->v);
}

/* own data <-> packed buffer */
static void pack_fn(void *arg, uint64_t v, uint64_t len, const vrun_t *r)
{
	packst_t *s = arg;
	if (s->to_window)
		memcpy(s->dst + s->pos, run_ptr(s->ck, r, v), len);
	else
		memcpy(run_ptr(s->ck, r, v), s->dst + s->pos, len);
	s->pos += len;
}

/* packed buffer <-> window */
static void unpack_fn(void *arg, uint64_t v, uint64_t len, const vrun_t *r)
{
	packst_t *s = arg;
	(void)r;
	if (s->to_window)
		memcpy(s->win + (v - s->lo), s->dst + s->pos, len);
	else
		memcpy(s->dst + s->pos, s->win + (v - s->lo), len);
	s->pos += len;
}

/* own data <-> window directly (this rank is the aggregator) */
static void self_fn(void *arg, uint64_t v, uint64_t len, const vrun_t *r)
{
	packst_t *s = arg;
	if (s->to_window)
		memcpy(s->win + (v - s->lo), run_ptr(s->ck, r, v), len);
	else
		memcpy(run_ptr(s->ck, r, v), s->win + (v - s->lo), len);
}

/* the bytes of [lo, hi) that some rank holds, as sorted intervals */
typedef struct {
	uint64_t (*iv)[2];
	long n, cap;
	int oom;
} cover_t;

static void cover_fn(void *arg, uint64_t v, uint64_t len, const vrun_t *r)
{
	cover_t *c = arg;
	(void)r;
	if (c->oom)
		return;
	if (c->n == c->cap) {
		long nc = c->cap ? 2 * c->cap : 256;
		void *ni = realloc(c->iv, sizeof *c->iv * (size_t)nc);
		if (!ni) {
			c->oom = 1;
			return;
		}
		c->iv = ni;
		c->cap = nc;
	}
	c->iv[c->n][0] = v;
	c->iv[c->n][1] = v + len;
	c->n++;
}

static int cmp_iv(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Zero only the window's holes (bytes no rank holds): the pieces
 * overwrite the rest, so clearing it all would be one more pass over
 * every byte written. */
static void zero_holes(const plan_t *p, int size, cover_t *c, char *win, uint64_t lo,
		       uint64_t hi)
{
	uint64_t at = lo;
	c->n = 0;
	c->oom = 0;
	for (int r = 0; r < size; r++)
		pieces(p, r, lo, hi, cover_fn, c);
	if (c->oom) {
		memset(win, 0, hi - lo);
		return;
	}
	qsort(c->iv, (size_t)c->n, sizeof *c->iv, cmp_iv);
	for (long i = 0; i < c->n; i++) {
		if (c->iv[i][0] > at)
			memset(win + (at - lo), 0, c->iv[i][0] - at);
		if (c->iv[i][1] > at)
			at = c->iv[i][1];
	}
	if (hi > at)
		memset(win + (at - lo), 0, hi - at);
}


typedef struct {
	uint64_t n, bytes;
} tally_t;

static void tally_fn(void *arg, uint64_t v, uint64_t len, const vrun_t *r)
{
	tally_t *t = arg;
	(void)v;
	(void)r;
	t->n++;
	t->bytes += len;
}

/* rank r's pieces in [lo, hi): how many, how many bytes (*bytes), and
 * whether they go one message each (1) or packed (0). The same answer on
 * both ends: it depends on the plan only. */
static int direct_ok(const plan_t *p, int r, uint64_t lo, uint64_t hi, uint64_t *bytes)
{
	tally_t t = { 0, 0 };
	pieces(p, r, lo, hi, tally_fn, &t);
	*bytes = t.bytes;
	return t.n > 0 && t.bytes / t.n >= p->direct_min;
}

/* the requests of one round */
typedef struct {
	loom_request_t **q;
	int n, cap;
} reqv_t;

/* start an isend (send) or irecv of len bytes with peer, kept in v */
static int reqv_post(reqv_t *v, loom_comm_t *comm, int send, void *buf, uint64_t len, int peer)
{
	int rc;
	if (v->n == v->cap) {
		int nc = v->cap ? 2 * v->cap : 64;
		loom_request_t **nq = realloc(v->q, sizeof *nq * (size_t)nc);
		if (!nq)
			return LOOM_ERR_NOMEM;
		v->q = nq;
		v->cap = nc;
	}
	rc = send ? loom_isend(buf, len, LOOM_INT8, peer, comm, &v->q[v->n])
		  : loom_irecv(buf, len, LOOM_INT8, peer, comm, &v->q[v->n]);
	if (!rc)
		v->n++;
	return rc;
}

/* one message per piece: window side (aggregator) or rank side */
typedef struct {
	loom_ckpt_t *ck;
	reqv_t *reqs;
	char *win;
	uint64_t lo;
	int peer, send, window_side, rc;
} directst_t;

static void direct_fn(void *arg, uint64_t v, uint64_t len, const vrun_t *r)
{
	directst_t *d = arg;
	if (d->rc)
		return;
	d->rc = reqv_post(d->reqs, d->ck->comm, d->send,
			  d->window_side ? d->win + (v - d->lo) : run_ptr(d->ck, r, v), len, d->peer);
}

static int grow(char **buf, uint64_t *cap, uint64_t need)
{
	if (need <= *cap)
		return 0;
	char *nb = realloc(*buf, need);
	if (!nb)
		return -1;
	*buf = nb;
	*cap = need;
	return 0;
}

/* an aggregator's window is hashed and written by a thread while the next
 * window's pieces are exchanged (two window buffers) */
typedef struct {
	const plan_t *p;
	const int *fds;
	char *const *fnames;
	sumst_t *sums;
	char *buf;
	uint64_t lo, hi;
	int skip_io, rc;
	char why[512];
} wjob_t;

static void *writer_main(void *arg)
{
	wjob_t *j = arg;
	sums_feed(j->p, j->sums, j->buf, j->lo, j->hi - j->lo);
	if (!j->skip_io)
		j->rc = window_io(j->p, j->fds, j->buf, j->lo, j->hi, 1, j->why, sizeof j->why,
				  j->fnames);
	return NULL;
}

static void writer_join(pthread_t *th, int *active, wjob_t *j, int *io_rc, char *why, size_t whylen)
{
	if (!*active)
		return;
	pthread_join(*th, NULL);
	*active = 0;
	if (j->rc && !*io_rc) {
		*io_rc = j->rc;
		snprintf(why, whylen, "%s", j->why);
	}
}

/* save (writing = 1): ranks -> aggregators -> files; load: the reverse.
 * Aggregators keep chunk sums of what they write or read. io_rc gets the
 * first local I/O failure (the exchange goes on so that no rank hangs). */
static int exchange(loom_ckpt_t *ck, const plan_t *p, const int *fds, char *const *fnames,
		    sumst_t *sums, int writing, int *io_rc, char *why, size_t whylen)
{
	int size = ck->size, rc = LOOM_SUCCESS;
	char *win = NULL, *win2 = NULL, **sbuf = NULL, **rbuf = NULL;
	uint64_t wincap = 0, win2cap = 0, *scap = NULL, *rcap = NULL, *slen = NULL, *rlen = NULL;
	reqv_t reqs = { NULL, 0, 0 };
	int wactive = 0;
	pthread_t wth;
	wjob_t wjob;
	cover_t cover = { NULL, 0, 0, 0 };
	memset(&wjob, 0, sizeof wjob);
	sbuf = calloc((size_t)p->naggr, sizeof *sbuf);
	scap = calloc((size_t)p->naggr, sizeof *scap);
	slen = calloc((size_t)p->naggr, sizeof *slen);
	rbuf = calloc((size_t)size, sizeof *rbuf);
	rcap = calloc((size_t)size, sizeof *rcap);
	rlen = calloc((size_t)size, sizeof *rlen);
	if (!sbuf || !scap || !slen || !rbuf || !rcap || !rlen) {
		rc = LOOM_ERR_NOMEM;
		goto out;
	}
	for (int k = 0; k < p->rounds && rc == LOOM_SUCCESS; k++) {
		uint64_t mlo = 0, mhi = 0;
		reqs.n = 0;
		if (p->my_aggr >= 0) {
			uint64_t d0 = p->dom[p->my_aggr], d1 = p->dom[p->my_aggr + 1];
			mlo = d0 + (uint64_t)k * p->window;
			mhi = mlo + p->window < d1 ? mlo + p->window : d1;
			if (mlo > mhi)
				mlo = mhi;
			if (grow(&win, &wincap, mhi - mlo + 1)) {
				rc = LOOM_ERR_NOMEM;
				break;
			}
			if (writing)
				zero_holes(p, size, &cover, win, mlo, mhi);
			else if (mhi > mlo && !*io_rc) {
				int e = window_io(p, fds, win, mlo, mhi, 0, why, whylen, fnames);
				if (e)
					*io_rc = e;
			}
			if (!writing && mhi > mlo)
				sums_feed(p, sums, win, mlo, mhi - mlo);
		}
		/* aggregator side: receive from (save) or send to (load) every rank */
		if (p->my_aggr >= 0) {
			for (int r = 0; r < size; r++) {
				packst_t s = { NULL, 0, mlo, win, ck, 0 };
				if (r == ck->rank)
					continue;
				if (direct_ok(p, r, mlo, mhi, &rlen[r])) {
					directst_t d = { ck, &reqs, win, mlo, r, !writing, 1, 0 };
					rlen[r] = 0; /* nothing to unpack */
					pieces(p, r, mlo, mhi, direct_fn, &d);
					if ((rc = d.rc))
						break;
					continue;
				}
				if (!rlen[r])
					continue;
				if (grow(&rbuf[r], &rcap[r], rlen[r])) {
					rc = LOOM_ERR_NOMEM;
					break;
				}
				if (!writing) {
					s.dst = rbuf[r];
					s.to_window = 0;
					pieces(p, r, mlo, mhi, unpack_fn, &s);
				}
				if ((rc = reqv_post(&reqs, ck->comm, !writing, rbuf[r], rlen[r], r)))
					break;
			}
		}
		/* every rank: its pieces to (save) or from (load) each aggregator */
		for (int j = 0; j < p->naggr && !rc; j++) {
			uint64_t d0 = p->dom[j], d1 = p->dom[j + 1];
			uint64_t lo = d0 + (uint64_t)k * p->window, hi;
			if (lo > d1)
				lo = d1;
			hi = lo + p->window < d1 ? lo + p->window : d1;
			if (p->aggr[j] == ck->rank) {
				packst_t s = { NULL, 0, lo, win, ck, writing };
				pieces(p, ck->rank, lo, hi, self_fn, &s);
				continue;
			}
			if (direct_ok(p, ck->rank, lo, hi, &slen[j])) {
				directst_t d = { ck, &reqs, NULL, lo, p->aggr[j], writing, 0, 0 };
				slen[j] = 0; /* nothing to unpack */
				pieces(p, ck->rank, lo, hi, direct_fn, &d);
				if ((rc = d.rc))
					break;
				continue;
			}
			if (!slen[j])
				continue;
			if (grow(&sbuf[j], &scap[j], slen[j])) {
				rc = LOOM_ERR_NOMEM;
				break;
			}
			if (writing) {
				packst_t s = { sbuf[j], 0, lo, NULL, ck, 1 };
				pieces(p, ck->rank, lo, hi, pack_fn, &s);
			}
			if ((rc = reqv_post(&reqs, ck->comm, writing, sbuf[j], slen[j], p->aggr[j])))
				break;
		}
		for (int i = 0; i < reqs.n; i++) {
			int w = loom_wait(reqs.q[i]);
			if (w && !rc)
				rc = w;
		}
		if (rc)
			break;
		if (!writing) { /* unpack what the aggregators sent */
			for (int j = 0; j < p->naggr; j++) {
				uint64_t d0 = p->dom[j], d1 = p->dom[j + 1];
				uint64_t lo = d0 + (uint64_t)k * p->window, hi;
				if (lo > d1)
					lo = d1;
				hi = lo + p->window < d1 ? lo + p->window : d1;
				if (p->aggr[j] == ck->rank || !slen[j])
					continue;
				packst_t s = { sbuf[j], 0, lo, NULL, ck, 0 };
				pieces(p, ck->rank, lo, hi, pack_fn, &s);
			}
		} else if (p->my_aggr >= 0 && mhi > mlo) {
			for (int r = 0; r < size; r++) {
				if (r == ck->rank || !rlen[r])
					continue;
				packst_t s = { rbuf[r], 0, mlo, win, ck, 1 };
				pieces(p, r, mlo, mhi, unpack_fn, &s);
			}
			writer_join(&wth, &wactive, &wjob, io_rc, why, whylen);
			wjob.p = p;
			wjob.fds = fds;
			wjob.fnames = fnames;
			wjob.sums = sums;
			wjob.buf = win;
			wjob.lo = mlo;
			wjob.hi = mhi;
			wjob.skip_io = *io_rc != 0;
			wjob.rc = 0;
			if (pthread_create(&wth, NULL, writer_main, &wjob) == 0) {
				char *t = win;
				uint64_t c = wincap;
				wactive = 1;
				win = win2; /* the next round fills the other buffer */
				wincap = win2cap;
				win2 = t;
				win2cap = c;
			} else {
				writer_main(&wjob);
				if (wjob.rc && !*io_rc) {
					*io_rc = wjob.rc;
					snprintf(why, whylen, "%s", wjob.why);
				}
			}
		}
		memset(slen, 0, sizeof *slen * (size_t)p->naggr);
		memset(rlen, 0, sizeof *rlen * (size_t)size);
	}
out:
	writer_join(&wth, &wactive, &wjob, io_rc, why, whylen);
	free(cover.iv);
	free(win);
	free(win2);
	if (sbuf)
		for (int j = 0; j < p->naggr; j++)
			free(sbuf[j]);
	if (rbuf)
		for (int r = 0; r < size; r++)
			free(rbuf[r]);
	free(sbuf);
	free(rbuf);
	free(scap);
	free(rcap);
	free(slen);
	free(rlen);
	free(reqs.q);
	return rc;
}

/* aggregators read their domains back for the chunk sums (independent mode) */
static int readback_sums(const plan_t *p, const int *fds, char *const *fnames, sumst_t *sums,
			 char *why, size_t whylen)
{
	uint64_t d0, d1;
	char *buf;
	int rc = LOOM_SUCCESS;
	if (p->my_aggr < 0)
		return LOOM_SUCCESS;
	d0 = p->dom[p->my_aggr];
	d1 = p->dom[p->my_aggr + 1];
	if (!(buf = malloc(p->window)))
		return LOOM_ERR_NOMEM;
	for (uint64_t lo = d0; lo < d1 && !rc; lo += p->window) {
		uint64_t hi = lo + p->window < d1 ? lo + p->window : d1;
		rc = window_io(p, fds, buf, lo, hi, 0, why, whylen, fnames);
		if (!rc)
			sums_feed(p, sums, buf, lo, hi - lo);
	}
	free(buf);
	return rc;
}

/* ------------------------------------------------------------------ */
/* save                                                                */

static int table_check(loom_ckpt_t *ck)
{
	uint32_t h = 0;
	int64_t v[2], r[2];
	int rc;
	for (int i = 0; i < ck->nt; i++) {
		h = ckpt_crc32c(h, ck->t[i].name, strlen(ck->t[i].name) + 1);
		h = ckpt_crc32c(h, &ck->t[i].dtype, sizeof ck->t[i].dtype);
		h = ckpt_crc32c(h, ck->t[i].shape, sizeof(uint64_t) * (size_t)ck->t[i].ndim);
	}
	v[0] = (int64_t)h;
	v[1] = -(int64_t)h;
	if ((rc = loom_allreduce(v, r, 2, LOOM_INT64, LOOM_MAX, ck->comm)))
		return rc;
	if (r[0] != -r[1]) {
		if (ck->rank == 0)
			LOOM_ERR("ckpt: ranks registered different tensors (names, dtypes, shapes or "
				 "order differ)");
		return LOOM_ERR_MISMATCH;
	}
	return LOOM_SUCCESS;
}

static void close_fds(int *fds, int n)
{
	if (!fds)
		return;
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
}

static char **file_names(int n)
{
	char **f = calloc((size_t)n + 1, sizeof *f);
	if (!f)
		return NULL;
	for (int i = 0; i < n; i++) {
		f[i] = malloc(24);
		if (!f[i]) {
			for (int k = 0; k < i; k++)
				free(f[k]);
			free(f);
			return NULL;
		}
		snprintf(f[i], 24, "t%d.bin", i);
	}
	return f;
}

static void free_names(char **f, int n)
{
	if (!f)
		return;
	for (int i = 0; i < n; i++)
		free(f[i]);
	free(f);
}

/* does this rank touch tensor t's file in this operation? */
static int touches(const plan_t *p, int rank, int t, int independent)
{
	if (independent)
		for (long i = 0; i < p->nruns[rank]; i++)
			if (p->runs[rank][i].tensor == t)
				return 1;
	if (p->my_aggr >= 0) {
		uint64_t d0 = p->dom[p->my_aggr], d1 = p->dom[p->my_aggr + 1];
		if (d0 < p->base[t + 1] && p->base[t] < d1)
			return 1;
	}
	return 0;
}

/* Rank 0, after committing a checkpoint that a stop signal asked for:
 * tell loom.so (which requeues the job when its tasks exit) before any
 * rank returns from the save. Only under Slurm; nothing else reads it. */
static void requeue_request(loom_ckpt_t *ck, long long step)
{
	const char *restart = getenv("SLURM_RESTART_COUNT"), *want = getenv("LOOM_CKPT_REQUEUE");
	char text[256];
	if (!getenv("SLURM_JOB_ID") || (want && !strcmp(want, "0")))
		return;
	snprintf(text, sizeof text, "job=%s\nrestart=%s\nstep=%lld\nsignal=%s\n", ck->job,
		 restart && *restart ? restart : "0", step, sig_name(ck->stopped));
	if (ckpt_write_small(ck->dir, CKPT_REQUEUE_FILE, text) != LOOM_SUCCESS)
		LOOM_WARN("ckpt: cannot write %s/%s (%s): the job will not be requeued",
			  ck->dir, CKPT_REQUEUE_FILE, strerror(errno));
	else
		LOOM_WARN("ckpt: checkpoint step %lld committed after SIG%s: asking for a requeue "
			  "of job %s", step, sig_name(ck->stopped), ck->job);
}

int loom_ckpt_save(loom_ckpt_t *ck, long long step)
{
	char tmp[4096] = "", fin[4096], why[512] = "", **fnames = NULL;
	uint64_t *bytes = NULL, chunk;
	int *fds = NULL, rc, io_rc = 0, algo = ckpt_sum_default();
	plan_t p;
	sumst_t sums = { algo, { 0, 0, NULL }, 0, NULL };
	double t0 = now_s(), t1;
	if (!ck || step < 0)
		return LOOM_ERR_INVALID;
	memset(&p, 0, sizeof p);
	if ((rc = table_check(ck)))
		return rc;
	chunk = (uint64_t)env_long("LOOM_CKPT_CHUNK", (long)CKPT_DEFAULT_CHUNK, 1, 1L << 40);
	bytes = calloc((size_t)ck->nt + 1, sizeof *bytes);
	fnames = file_names(ck->nt);
	fds = malloc(sizeof *fds * ((size_t)ck->nt + 1));
	rc = agree(ck, bytes && fnames && fds ? LOOM_SUCCESS : LOOM_ERR_NOMEM);
	if (rc)
		goto out;
	for (int i = 0; i < ck->nt; i++) {
		bytes[i] = ck->t[i].bytes;
		fds[i] = -1;
	}
	if ((rc = plan_make(ck, &p, bytes, chunk)))
		goto out;
	sums.sums = calloc((size_t)p.cbase[ck->nt] + 1, sizeof *sums.sums);
	snprintf(tmp, sizeof tmp, "%s/.tmp-step-%lld-%s", ck->dir, step, ck->job);
	snprintf(fin, sizeof fin, "%s/step-%lld", ck->dir, step);
	/* rank 0 makes the temporary directory and full-size files */
	rc = sums.sums ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
	if (ck->rank == 0 && !rc) {
		ckpt_rmtree(tmp); /* a crashed attempt of this job */
		if (mkdir(tmp, 0755) != 0) {
			LOOM_ERR("ckpt: mkdir %s: %s", tmp, strerror(errno));
			rc = LOOM_ERR_IO;
		}
		for (int i = 0; i < ck->nt && !rc; i++) {
			char f[4200];
			snprintf(f, sizeof f, "%s/%s", tmp, fnames[i]);
			int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0 || ftruncate(fd, (off_t)bytes[i]) != 0) {
				LOOM_ERR("ckpt: create %s: %s", f, strerror(errno));
				rc = LOOM_ERR_IO;
			}
			if (fd >= 0)
				close(fd);
		}
	}
	if ((rc = agree(ck, rc)))
		goto out;
	for (int i = 0; i < ck->nt && !rc; i++) {
		if (!touches(&p, ck->rank, i, ck->mode == LOOM_CKPT_INDEPENDENT))
			continue;
		char f[4200];
		snprintf(f, sizeof f, "%s/%s", tmp, fnames[i]);
		if ((fds[i] = open(f, O_RDWR | O_CLOEXEC)) < 0) {
			LOOM_ERR("ckpt: open %s: %s", f, strerror(errno));
			rc = LOOM_ERR_IO;
		}
	}
	if ((rc = agree(ck, rc)))
		goto out;
	/* the data */
	if (ck->mode == LOOM_CKPT_TWO_PHASE) {
		rc = exchange(ck, &p, fds, fnames, &sums, 1, &io_rc, why, sizeof why);
		if (rc)
			goto out;
	} else {
		for (long i = 0; i < p.nruns[ck->rank] && !io_rc; i++) {
			const vrun_t *r = &p.runs[ck->rank][i];
			if (pwrite_all(fds[r->tensor], run_ptr(ck, r, r->v), r->len,
				       r->v - p.base[r->tensor]) != 0) {
				snprintf(why, sizeof why, "write %s: %s", fnames[r->tensor], strerror(errno));
				io_rc = LOOM_ERR_IO;
			}
		}
	}
	for (int i = 0; i < ck->nt && !io_rc; i++)
		if (fds[i] >= 0 && fsync(fds[i]) != 0) {
			snprintf(why, sizeof why, "fsync %s: %s", fnames[i], strerror(errno));
			io_rc = LOOM_ERR_IO;
		}
	if (io_rc)
		LOOM_ERR("ckpt: step %lld: %s", step, why);
	if ((rc = agree(ck, io_rc)))
		goto out;
	if (ck->mode == LOOM_CKPT_INDEPENDENT) {
		io_rc = readback_sums(&p, fds, fnames, &sums, why, sizeof why);
		if (io_rc)
			LOOM_ERR("ckpt: step %lld: %s", step, why);
		if ((rc = agree(ck, io_rc)))
			goto out;
	}
	if (p.cbase[ck->nt] && (rc = loom_allreduce(sums.sums, sums.sums, (size_t)p.cbase[ck->nt],
						    LOOM_INT64, LOOM_SUM, ck->comm)))
		goto out;
	t1 = now_s();
	ck->st.data_s = t1 - t0;
	/* commit: manifest, fsync, rename, latest, prune (rank 0) */
	if (ck->rank == 0) {
		ckpt_manifest_t m;
		char mf[4200];
		memset(&m, 0, sizeof m);
		m.step = step;
		m.algo = algo;
		m.chunk = chunk;
		m.ntensors = ck->nt;
		snprintf(m.writer, sizeof m.writer, "job=%s ranks=%d aggregators=%d mode=%s", ck->job,
			 ck->size, p.naggr, ck->mode == LOOM_CKPT_TWO_PHASE ? "two-phase" : "independent");
		m.t = calloc((size_t)ck->nt + 1, sizeof *m.t);
		if (!m.t)
			rc = LOOM_ERR_NOMEM;
		for (int i = 0; i < ck->nt && !rc; i++) {
			ckpt_mtensor_t *t = &m.t[i];
			strcpy(t->name, ck->t[i].name);
			t->dtype = ck->t[i].dtype;
			t->ndim = ck->t[i].ndim;
			memcpy(t->shape, ck->t[i].shape, sizeof t->shape);
			t->bytes = bytes[i];
			snprintf(t->file, sizeof t->file, "%s", fnames[i]);
			t->sum = ckpt_file_sum(algo, sums.sums + p.cbase[i], p.cbase[i + 1] - p.cbase[i]);
		}
		snprintf(mf, sizeof mf, "%s/MANIFEST", tmp);
		FILE *f = rc ? NULL : fopen(mf, "we");
		if (!rc && (!f || ckpt_manifest_write(f, &m) != LOOM_SUCCESS || fflush(f) != 0 ||
			    fsync(fileno(f)) != 0)) {
			LOOM_ERR("ckpt: write %s: %s", mf, strerror(errno));
			rc = LOOM_ERR_IO;
		}
		if (f && fclose(f) != 0 && !rc)
			rc = LOOM_ERR_IO;
		free(m.t);
		if (!rc && ckpt_fsync_path(tmp) != 0) {
			LOOM_ERR("ckpt: fsync %s: %s", tmp, strerror(errno));
			rc = LOOM_ERR_IO;
		}
		if (!rc) {
			struct stat st;
			char aside[4200];
			aside[0] = 0;
			if (stat(fin, &st) == 0) { /* the same step again: move the old aside */
				snprintf(aside, sizeof aside, "%s/.replaced-step-%lld-%s", ck->dir, step, ck->job);
				ckpt_rmtree(aside);
				if (rename(fin, aside) != 0)
					aside[0] = 0;
			}
			if (rename(tmp, fin) != 0 || ckpt_fsync_path(ck->dir) != 0) {
				LOOM_ERR("ckpt: rename %s to %s: %s", tmp, fin, strerror(errno));
				rc = LOOM_ERR_IO;
				if (aside[0])
					rename(aside, fin);
			} else if (aside[0]) {
				ckpt_rmtree(aside);
			}
		}
		if (!rc && ckpt_write_latest(ck->dir, step) != LOOM_SUCCESS) {
			LOOM_ERR("ckpt: update %s/latest: %s", ck->dir, strerror(errno));
			rc = LOOM_ERR_IO;
		}
		if (!rc)
			ckpt_prune(ck->dir, ck->keep, step);
		if (!rc && ck->stopped)
			requeue_request(ck, step);
	}
	rc = agree(ck, rc);
	ck->st.commit_s = now_s() - t1;
out:
	ck->st.total_s = now_s() - t0;
	ck->st.bytes = 0;
	for (int i = 0; bytes && i < ck->nt; i++)
		ck->st.bytes += bytes[i];
	ck->st.aggregators = p.naggr;
	ck->st.rounds = p.rounds;
	ck->st.mode = ck->mode;
	if (rc == LOOM_SUCCESS)
		loom_metrics_checkpoint(ck->comm->metrics, ck->st.total_s, ck->st.bytes);
	if (rc && ck->rank == 0 && tmp[0])
		ckpt_rmtree(tmp); /* never a committed one: tmp is ours */
	close_fds(fds, ck->nt);
	free_names(fnames, ck->nt);
	free(bytes);
	free(sums.sums);
	plan_release(ck, &p);
	return rc;
}

/* ------------------------------------------------------------------ */
/* load                                                                */

static int comm_error(int rc)
{
	return rc == LOOM_ERR_PEER_LOST || rc == LOOM_ERR_TIMEOUT || rc == LOOM_ERR_ABORTED ||
	       rc == LOOM_ERR_BOOTSTRAP || rc == LOOM_ERR_NOMEM;
}

int loom_ckpt_load(loom_ckpt_t *ck, long long step)
{
	char sdir[4096], why[600] = "", **fnames = NULL;
	uint64_t *bytes = NULL, *want = NULL;
	int *fds = NULL, rc, io_rc = 0;
	ckpt_manifest_t m;
	plan_t p;
	sumst_t sums = { 0, { 0, 0, NULL }, 0, NULL };
	double t0 = now_s();
	if (!ck || step < 0)
		return LOOM_ERR_INVALID;
	memset(&p, 0, sizeof p);
	memset(&m, 0, sizeof m);
	if ((rc = table_check(ck)))
		return rc;
	snprintf(sdir, sizeof sdir, "%s/step-%lld", ck->dir, step);
	rc = ckpt_manifest_load(sdir, &m, why, sizeof why);
	if (rc == LOOM_SUCCESS && !ckpt_sum_supported(m.algo)) {
		snprintf(why, sizeof why, "%.400s/MANIFEST: checksum %s not supported by this build", sdir,
			 ckpt_sum_name(m.algo));
		rc = LOOM_ERR_UNSUPPORTED;
	}
	if (rc == LOOM_SUCCESS && m.step != step) {
		snprintf(why, sizeof why, "%.400s/MANIFEST says step %lld", sdir, m.step);
		rc = LOOM_ERR_CORRUPT;
	}
	bytes = calloc((size_t)ck->nt + 1, sizeof *bytes);
	want = calloc((size_t)ck->nt + 1, sizeof *want);
	fnames = calloc((size_t)ck->nt + 1, sizeof *fnames);
	fds = malloc(sizeof *fds * ((size_t)ck->nt + 1));
	if (!rc && (!bytes || !want || !fnames || !fds))
		rc = LOOM_ERR_NOMEM;
	/* all of them, also when the manifest already failed: close_fds at
	 * the end must not close a descriptor the program owns */
	for (int i = 0; fds && i < ck->nt; i++)
		fds[i] = -1;
	for (int i = 0; i < ck->nt && !rc; i++) {
		const ckpt_mtensor_t *t = NULL;
		for (int k = 0; k < m.ntensors; k++)
			if (!strcmp(m.t[k].name, ck->t[i].name))
				t = &m.t[k];
		if (!t) {
			snprintf(why, sizeof why, "%.300s: no tensor %s", sdir, ck->t[i].name);
			rc = LOOM_ERR_NOT_FOUND;
		} else if (t->dtype != ck->t[i].dtype || t->ndim != ck->t[i].ndim ||
			   memcmp(t->shape, ck->t[i].shape, sizeof(uint64_t) * (size_t)t->ndim)) {
			snprintf(why, sizeof why, "%.300s: tensor %s has another dtype or shape (%s, %d dims)",
				 sdir, t->name, loom_dtype_name((loom_dtype_t)t->dtype), t->ndim);
			rc = LOOM_ERR_MISMATCH;
		} else {
			bytes[i] = t->bytes;
			want[i] = t->sum;
			fnames[i] = strdup(t->file);
			if (!fnames[i])
				rc = LOOM_ERR_NOMEM;
		}
	}
	if (rc && ck->rank == 0)
		LOOM_WARN("ckpt: %s", why);
	if ((rc = agree(ck, rc)))
		goto out;
	sums.algo = m.algo;
	if ((rc = plan_make(ck, &p, bytes, m.chunk)))
		goto out;
	sums.sums = calloc((size_t)p.cbase[ck->nt] + 1, sizeof *sums.sums);
	if (!sums.sums)
		io_rc = LOOM_ERR_NOMEM;
	for (int i = 0; i < ck->nt && !io_rc; i++) {
		char f[4200];
		struct stat st;
		if (!touches(&p, ck->rank, i, 0))
			continue;
		snprintf(f, sizeof f, "%s/%s", sdir, fnames[i]);
		if ((fds[i] = open(f, O_RDONLY | O_CLOEXEC)) < 0) {
			snprintf(why, sizeof why, "%.400s: %s", f, strerror(errno));
			io_rc = LOOM_ERR_CORRUPT;
		} else if (fstat(fds[i], &st) == 0 && (uint64_t)st.st_size != bytes[i]) {
			snprintf(why, sizeof why, "%.400s: size %lld bytes, manifest says %" PRIu64, f,
				 (long long)st.st_size, bytes[i]);
			io_rc = LOOM_ERR_CORRUPT;
		}
	}
	if (io_rc) /* the exchange still runs; nothing is read */
		for (int i = 0; i < ck->nt; i++)
			if (fds[i] >= 0) {
				close(fds[i]);
				fds[i] = -1;
			}
	rc = exchange(ck, &p, fds, fnames, &sums, 0, &io_rc, why, sizeof why);
	if (rc)
		goto out;
	if (io_rc)
		LOOM_WARN("ckpt: step %lld: %s", step, why);
	if ((rc = agree(ck, io_rc)))
		goto out;
	if (p.cbase[ck->nt] && (rc = loom_allreduce(sums.sums, sums.sums, (size_t)p.cbase[ck->nt],
						    LOOM_INT64, LOOM_SUM, ck->comm)))
		goto out;
	for (int i = 0; i < ck->nt; i++) {
		uint64_t got = ckpt_file_sum(m.algo, sums.sums + p.cbase[i], p.cbase[i + 1] - p.cbase[i]);
		if (got != want[i]) {
			if (ck->rank == 0)
				LOOM_WARN("ckpt: %s/%s (tensor %s): %s checksum mismatch: expected %016" PRIx64
					  ", got %016" PRIx64, sdir, fnames[i], ck->t[i].name,
					  ckpt_sum_name(m.algo), want[i], got);
			rc = LOOM_ERR_CORRUPT;
		}
	}
out:
	ck->st.total_s = ck->st.data_s = now_s() - t0;
	ck->st.commit_s = 0;
	ck->st.bytes = 0;
	for (int i = 0; bytes && i < ck->nt; i++)
		ck->st.bytes += bytes[i];
	ck->st.aggregators = p.naggr;
	ck->st.rounds = p.rounds;
	ck->st.mode = LOOM_CKPT_TWO_PHASE;
	if (fds)
		close_fds(fds, ck->nt);
	if (fnames)
		for (int i = 0; i < ck->nt; i++)
			free(fnames[i]);
	free(fnames);
	free(bytes);
	free(want);
	free(sums.sums);
	ckpt_manifest_free(&m);
	plan_release(ck, &p);
	return rc;
}

/* rank 0's list of committed steps (descending), on every rank */
static int steps_everywhere(loom_ckpt_t *ck, long long **steps, int *n)
{
	int64_t cnt = 0;
	long long *v = NULL;
	int c = 0, rc = LOOM_SUCCESS;
	if (ck->rank == 0) {
		rc = ckpt_list_steps(ck->dir, &v, &c);
		cnt = rc ? -1 : c;
	}
	if ((rc = loom_broadcast(&cnt, &cnt, 1, LOOM_INT64, 0, ck->comm)))
		goto fail;
	if (cnt < 0) {
		rc = LOOM_ERR_IO;
		goto fail;
	}
	if (ck->rank != 0 && cnt > 0 && !(v = calloc((size_t)cnt, sizeof *v)))
		rc = LOOM_ERR_NOMEM;
	if ((rc = agree(ck, rc)))
		goto fail;
	if (cnt > 0 && (rc = loom_broadcast(v, v, (size_t)cnt, LOOM_INT64, 0, ck->comm)))
		goto fail;
	*steps = v;
	*n = (int)cnt;
	return LOOM_SUCCESS;
fail:
	free(v);
	*steps = NULL;
	*n = 0;
	return rc;
}

int loom_ckpt_latest(loom_ckpt_t *ck, long long *step)
{
	int64_t s = -1;
	int rc;
	if (!ck || !step)
		return LOOM_ERR_INVALID;
	*step = -1;
	if (ck->rank == 0) {
		long long *v = NULL;
		int n = 0;
		ckpt_list_steps(ck->dir, &v, &n);
		for (int i = 0; i < n && s < 0; i++) {
			char sdir[4096], why[512];
			ckpt_manifest_t m;
			snprintf(sdir, sizeof sdir, "%s/step-%lld", ck->dir, v[i]);
			if (ckpt_manifest_load(sdir, &m, why, sizeof why) == LOOM_SUCCESS && m.step == v[i])
				s = v[i];
			else
				LOOM_WARN("ckpt: skipping step-%lld: %s", v[i], why);
			ckpt_manifest_free(&m);
		}
		free(v);
	}
	if ((rc = loom_broadcast(&s, &s, 1, LOOM_INT64, 0, ck->comm)))
		return rc;
	*step = s;
	return s < 0 ? LOOM_ERR_NOT_FOUND : LOOM_SUCCESS;
}

int loom_ckpt_restore(loom_ckpt_t *ck, long long *step)
{
	long long *v = NULL;
	int n = 0, rc;
	if (!ck || !step)
		return LOOM_ERR_INVALID;
	*step = -1;
	if ((rc = steps_everywhere(ck, &v, &n)))
		return rc;
	rc = LOOM_ERR_NOT_FOUND;
	for (int i = 0; i < n; i++) {
		rc = loom_ckpt_load(ck, v[i]);
		if (rc == LOOM_SUCCESS) {
			*step = v[i];
			if (i > 0 && ck->rank == 0)
				LOOM_WARN("ckpt: restored step-%lld (the newest usable checkpoint in %s)",
					  v[i], ck->dir);
			break;
		}
		if (comm_error(rc))
			break;
		if (ck->rank == 0)
			LOOM_WARN("ckpt: step-%lld in %s is unusable (%s)%s", v[i], ck->dir,
				  loom_strerror(rc), i + 1 < n ? "; falling back to the previous one" :
				  "; no older checkpoint");
		rc = LOOM_ERR_NOT_FOUND;
	}
	free(v);
	return rc;
}

int loom_ckpt_resume_step(loom_ckpt_t *ck, long long *step)
{
	const char *e = getenv("SLURM_RESTART_COUNT");
	long restarts = e ? strtol(e, NULL, 10) : 0;
	int rc;
	if (!ck || !step)
		return LOOM_ERR_INVALID;
	rc = loom_ckpt_latest(ck, step);
	if (rc != LOOM_SUCCESS && rc != LOOM_ERR_NOT_FOUND)
		return rc;
	if (ck->rank == 0 && restarts > 0) {
		if (*step >= 0)
			LOOM_WARN("ckpt: restart %ld of job %s: resuming after step %lld from %s",
				  restarts, ck->job, *step, ck->dir);
		else
			LOOM_WARN("ckpt: restart %ld of job %s but no committed checkpoint in %s: "
				  "starting from the beginning", restarts, ck->job, ck->dir);
	}
	return LOOM_SUCCESS;
}
