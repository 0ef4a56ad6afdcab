/* examples/matmul_io.c: a matrix in one file, two-phase I/O, parallel matmul.
 *
 *   1. A (n x n, float32, row-major) is written to DIR/loom-matmul-A.bin
 *      with the two-phase writer, each rank holding a block of rows;
 *   2. every rank reads its block of rows back with the two-phase reader
 *      (into a fresh buffer) and computes its rows of C = A B, where B
 *      (n x k) is generated identically on every rank;
 *   3. C is written to DIR/loom-matmul-C.bin with the two-phase writer.
 * Block distribution: rank r owns rows [r n / P ...) (the first n % P ranks
 * get one more row).
 *
 * Two-phase I/O, implemented here over loom's public point-to-point calls
 * (loom.h has no general file I/O call; its checkpoint engine uses the
 * same idea for its own files): one aggregator per node (the rank with
 * loom_comm_local_rank() == 0). The file is cut into one contiguous domain
 * per aggregator; in rounds of --buffer-kb, an aggregator reads its window
 * with one pread and sends each rank the part it owns (read), or receives
 * the parts from the ranks and issues one pwrite (write). Only aggregators
 * open the file: P ranks make naggr large sequential requests, not P small
 * ones. DIR must be visible at the same path from every node.
 *
 * Check: every rank's block read back equals the data generated for it;
 * then rank 0 reads both files with plain stdio, checks A against the
 * generator and C against its own serial product of the whole matrix,
 * computed row by row with the same function: bit-identical.
 *
 *   srun --mpi=pmix -N2 -n4 loom-matmul-io --n 1024 --dir /shared/scratch
 */
#include "common.h"

#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <unistd.h>

struct cfg {
	long n, k, buffer_kb;
	int keep, log_every;
	uint64_t seed;
	const char *dir;
};

static void usage(void)
{
	printf("Usage: %s [OPTION]...\n"
	       "Write an n x n matrix to one file with a two-phase writer, read it back by\n"
	       "blocks of rows with a two-phase reader (one aggregator per node), multiply by\n"
	       "an n x k matrix in parallel, write the product with the two-phase writer,\n"
	       "and check both files against the serial computation.\n\n"
	       "  --n N           rows and columns of A (default 1024: a 4 MiB file)\n"
	       "  --k N           columns of B and C (default 64)\n"
	       "  --dir DIR       where the files go, the same path on every node (default .)\n"
	       "  --buffer-kb N   aggregator buffer per round, KiB (default 1024)\n"
	       "  --seed N        seed (default 1)\n"
	       "  --keep          keep the files (default: rank 0 removes them)\n"
	       "  --log-every N   progress line every N I/O rounds (default 4; 0: none)\n"
	       "  --help          this text\n\n"
	       "Prints PASS and exits 0 when the files equal the serial result bit for bit,\n"
	       "FAIL and exits 1 otherwise.\n"
	       "Example: srun --mpi=pmix -N2 -n4 %s --dir /shared/scratch\n",
	       ex_prog, ex_prog);
}

static void parse(int argc, char **argv, struct cfg *c)
{
	static const struct option lo[] = {
		{ "n", required_argument, 0, 'n' },         { "k", required_argument, 0, 'k' },
		{ "dir", required_argument, 0, 'd' },       { "buffer-kb", required_argument, 0, 'b' },
		{ "seed", required_argument, 0, 'S' },      { "keep", no_argument, 0, 'K' },
		{ "log-every", required_argument, 0, 'L' }, { "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 }
	};
	int o;
	struct stat st;
	memset(c, 0, sizeof *c);
	c->n = 1024;
	c->k = 64;
	c->buffer_kb = 1024;
	c->seed = 1;
	c->dir = ".";
	c->log_every = 4;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 'n': c->n = ex_parse_long("--n", optarg, 1, 1 << 16); break;
		case 'k': c->k = ex_parse_long("--k", optarg, 1, 1 << 12); break;
		case 'd': c->dir = optarg; break;
		case 'b': c->buffer_kb = ex_parse_long("--buffer-kb", optarg, 1, 1 << 20); break;
		case 'S': c->seed = (uint64_t)ex_parse_long("--seed", optarg, 0, LONG_MAX); break;
		case 'K': c->keep = 1; break;
		case 'L': c->log_every = (int)ex_parse_long("--log-every", optarg, 0, 1 << 20); break;
		case 'h': if (ex_first_task()) usage(); exit(0);
		default: ex_getopt_error(lo, argv);
		}
	}
	if (optind < argc)
		ex_usage_error("unexpected argument '%s'", argv[optind]);
	if (stat(c->dir, &st) != 0 || !S_ISDIR(st.st_mode))
		ex_usage_error("--dir %s: not a directory", c->dir);
}

/* ---- two-phase I/O over contiguous per-rank byte ranges ---- */
struct tp_io {
	loom_comm_t *comm;
	int rank, size, naggr, me_aggr;  /* me_aggr: my index among aggregators, or -1 */
	int *aggr;                       /* aggregator index -> comm rank */
	int64_t *lo, *hi;                /* rank -> its byte range [lo, hi) */
	int64_t *dom;                    /* naggr + 1 domain starts */
	size_t buf;
	int rounds;
	char *cbuf;
	int log_every;
	const char *what;
	double t_io;                     /* pread/pwrite time on this rank */
};

static void tp_setup(struct tp_io *t, loom_comm_t *comm, int64_t lo, int64_t hi, int64_t total,
		     size_t buf, int log_every)
{
	int mine = loom_comm_local_rank(comm) == 0, *flags;
	int64_t mr[2] = { lo, hi }, *all;
	memset(t, 0, sizeof *t);
	t->comm = comm;
	t->rank = loom_comm_rank(comm);
	t->size = loom_comm_size(comm);
	t->log_every = log_every;
	flags = ex_alloc((size_t)t->size, sizeof(int));
	ex_check(loom_allgather(&mine, flags, 1, LOOM_INT32, comm), "loom_allgather aggregators");
	t->aggr = ex_alloc((size_t)t->size, sizeof(int));
	t->me_aggr = -1;
	for (int r = 0; r < t->size; r++)
		if (flags[r]) {
			if (r == t->rank)
				t->me_aggr = t->naggr;
			t->aggr[t->naggr++] = r;
		}
	free(flags);
	all = ex_alloc((size_t)2 * t->size, sizeof(int64_t));
	ex_check(loom_allgather(mr, all, 2, LOOM_INT64, comm), "loom_allgather ranges");
	t->lo = ex_alloc((size_t)t->size, sizeof(int64_t));
	t->hi = ex_alloc((size_t)t->size, sizeof(int64_t));
	for (int r = 0; r < t->size; r++) {
		t->lo[r] = all[2 * r];
		t->hi[r] = all[2 * r + 1];
	}
	free(all);
	/* contiguous, balanced domains, boundaries on 4-byte elements */
	t->dom = ex_alloc((size_t)t->naggr + 1, sizeof(int64_t));
	for (int j = 0; j <= t->naggr; j++)
		t->dom[j] = j == t->naggr ? total : (total * j / t->naggr) / 4 * 4;
	t->buf = buf;
	for (int j = 0; j < t->naggr; j++) {
		int64_t len = t->dom[j + 1] - t->dom[j];
		int r = (int)((len + (int64_t)buf - 1) / (int64_t)buf);
		if (r > t->rounds)
			t->rounds = r;
	}
	if (t->me_aggr >= 0)
		t->cbuf = ex_alloc(buf, 1);
}

static void tp_free(struct tp_io *t)
{
	free(t->aggr); free(t->lo); free(t->hi); free(t->dom); free(t->cbuf);
}

/* aggregator j's window in round k: [*wlo, *whi), maybe empty */
static void tp_window(const struct tp_io *t, int j, int k, int64_t *wlo, int64_t *whi)
{
	*wlo = t->dom[j] + (int64_t)k * (int64_t)t->buf;
	*whi = *wlo + (int64_t)t->buf;
	if (*whi > t->dom[j + 1])
		*whi = t->dom[j + 1];
	if (*wlo > *whi)
		*wlo = *whi;
}

static int overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1, int64_t *o0, int64_t *o1)
{
	*o0 = a0 > b0 ? a0 : b0;
	*o1 = a1 < b1 ? a1 : b1;
	return *o0 < *o1;
}

static void tp_progress(const struct tp_io *t, int k)
{
	if (t->log_every && ((k + 1) % t->log_every == 0 || k + 1 == t->rounds))
		ex_say("%s: round %d/%d done", t->what, k + 1, t->rounds);
}

/* my bytes [lo[rank], hi[rank]) of path into local; returns 0 or -1 (any rank) */
static int tp_read(struct tp_io *t, const char *path, char *local)
{
	int fd = -1, err = 0, any;
	loom_request_t **req = ex_alloc((size_t)t->size, sizeof *req);
	t->what = "two-phase read";
	if (t->me_aggr >= 0 && (fd = open(path, O_RDONLY)) < 0) {
		fprintf(stderr, "%s: rank %d: open %s: %s\n", ex_prog, t->rank, path, strerror(errno));
		err = 1;
	}
	for (int k = 0; k < t->rounds; k++) {
		int nreq = 0;
		int64_t wlo, whi, o0, o1;
		if (t->me_aggr >= 0) {  /* phase 1: one read; phase 2: scatter to owners */
			tp_window(t, t->me_aggr, k, &wlo, &whi);
			if (whi > wlo && fd >= 0) {
				double t0 = ex_now();
				ssize_t got = pread(fd, t->cbuf, (size_t)(whi - wlo), (off_t)wlo);
				t->t_io += ex_now() - t0;
				if (got != whi - wlo) {
					fprintf(stderr, "%s: rank %d: read %s at %lld: %s\n", ex_prog, t->rank,
						path, (long long)wlo, got < 0 ? strerror(errno) : "short read");
					err = 1;
				}
			}
			for (int r = 0; r < t->size; r++)
				if (overlap(wlo, whi, t->lo[r], t->hi[r], &o0, &o1)) {
					if (r == t->rank)
						memcpy(local + (o0 - t->lo[r]), t->cbuf + (o0 - wlo), (size_t)(o1 - o0));
					else
						ex_check(loom_isend(t->cbuf + (o0 - wlo), (size_t)(o1 - o0), LOOM_INT8,
								    r, t->comm, &req[nreq++]), "loom_isend");
				}
		}
		for (int j = 0; j < t->naggr; j++) {
			if (t->aggr[j] == t->rank)
				continue;
			tp_window(t, j, k, &wlo, &whi);
			if (overlap(wlo, whi, t->lo[t->rank], t->hi[t->rank], &o0, &o1))
				ex_check(loom_recv(local + (o0 - t->lo[t->rank]), (size_t)(o1 - o0), LOOM_INT8,
						   t->aggr[j], t->comm), "loom_recv");
		}
		for (int q = 0; q < nreq; q++)
			ex_check(loom_wait(req[q]), "loom_wait");
		tp_progress(t, k);
	}
	if (fd >= 0)
		close(fd);
	free(req);
	ex_check(loom_allreduce(&err, &any, 1, LOOM_INT32, LOOM_MAX, t->comm), "loom_allreduce");
	return any ? -1 : 0;
}

/* my bytes from local into [lo[rank], hi[rank]) of path (created, sized total) */
static int tp_write(struct tp_io *t, const char *path, const char *local, int64_t total)
{
	int fd = -1, err = 0, any;
	loom_request_t **req = ex_alloc((size_t)t->naggr, sizeof *req);
	t->what = "two-phase write";
	if (t->rank == 0) {  /* one rank creates the file at its final size */
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || ftruncate(fd, (off_t)total) != 0) {
			fprintf(stderr, "%s: create %s: %s\n", ex_prog, path, strerror(errno));
			err = 1;
		}
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	ex_check(loom_barrier(t->comm), "loom_barrier");
	if (t->me_aggr >= 0 && !err && (fd = open(path, O_WRONLY)) < 0) {
		fprintf(stderr, "%s: rank %d: open %s: %s\n", ex_prog, t->rank, path, strerror(errno));
		err = 1;
	}
	for (int k = 0; k < t->rounds; k++) {
		int nreq = 0;
		int64_t wlo, whi, o0, o1;
		/* phase 1: every rank sends its part of each window to its aggregator */
		for (int j = 0; j < t->naggr; j++) {
			if (t->aggr[j] == t->rank)
				continue;
			tp_window(t, j, k, &wlo, &whi);
			if (overlap(wlo, whi, t->lo[t->rank], t->hi[t->rank], &o0, &o1))
				ex_check(loom_isend(local + (o0 - t->lo[t->rank]), (size_t)(o1 - o0),
						    LOOM_INT8, t->aggr[j], t->comm, &req[nreq++]), "loom_isend");
		}
		/* phase 2: the aggregator assembles its window and writes it at once */
		if (t->me_aggr >= 0) {
			tp_window(t, t->me_aggr, k, &wlo, &whi);
			memset(t->cbuf, 0, t->buf);
			for (int r = 0; r < t->size; r++)
				if (overlap(wlo, whi, t->lo[r], t->hi[r], &o0, &o1)) {
					if (r == t->rank)
						memcpy(t->cbuf + (o0 - wlo), local + (o0 - t->lo[r]), (size_t)(o1 - o0));
					else
						ex_check(loom_recv(t->cbuf + (o0 - wlo), (size_t)(o1 - o0), LOOM_INT8,
								   r, t->comm), "loom_recv");
				}
			if (whi > wlo && fd >= 0) {
				double t0 = ex_now();
				ssize_t put = pwrite(fd, t->cbuf, (size_t)(whi - wlo), (off_t)wlo);
				t->t_io += ex_now() - t0;
				if (put != whi - wlo) {
					fprintf(stderr, "%s: rank %d: write %s at %lld: %s\n", ex_prog, t->rank,
						path, (long long)wlo, put < 0 ? strerror(errno) : "short write");
					err = 1;
				}
			}
		}
		for (int q = 0; q < nreq; q++)
			ex_check(loom_wait(req[q]), "loom_wait");
		tp_progress(t, k);
	}
	if (fd >= 0) {
		if (fsync(fd) != 0 || close(fd) != 0) {
			fprintf(stderr, "%s: rank %d: fsync %s: %s\n", ex_prog, t->rank, path, strerror(errno));
			err = 1;
		}
	}
	free(req);
	ex_check(loom_allreduce(&err, &any, 1, LOOM_INT32, LOOM_MAX, t->comm), "loom_allreduce");
	return any ? -1 : 0;
}

/* ---- the computation ---- */
static float a_elem(uint64_t seed, long n, long i, long j)
{
	uint64_t s = seed * 0x100000001b3ull + (uint64_t)i * (uint64_t)n + (uint64_t)j;
	return ex_randf(&s);
}

/* C row = A row x B, the same function for the parallel and serial product */
static void row_times(const float *arow, const float *B, long n, long k, float *crow)
{
	for (long j = 0; j < k; j++)
		crow[j] = 0;
	for (long l = 0; l < n; l++) {
		float a = arow[l];
		const float *b = B + (size_t)l * k;
		for (long j = 0; j < k; j++)
			crow[j] += a * b[j];
	}
}

static long row0_of(long n, int P, int r)
{
	return (long)r * (n / P) + (r < n % P ? r : n % P);
}

int main(int argc, char **argv)
{
	struct cfg c;
	struct tp_io io;
	int rank, P, pass = 1;
	long r0, r1, rows;
	float *B, *Agen, *A, *C;
	char pa[4096], pc[4096];
	uint64_t s;
	double t0, t_wa, t_ra, t_mm, t_wc;

	ex_prog = "loom-matmul-io";
	parse(argc, argv, &c);
	ex_init(ex_prog);
	rank = loom_comm_rank(ex_world);
	P = loom_comm_size(ex_world);
	snprintf(pa, sizeof pa, "%s/loom-matmul-A.bin", c.dir);
	snprintf(pc, sizeof pc, "%s/loom-matmul-C.bin", c.dir);
	r0 = row0_of(c.n, P, rank);
	r1 = row0_of(c.n, P, rank + 1);
	rows = r1 - r0;

	B = ex_alloc((size_t)c.n * c.k, sizeof(float));
	s = c.seed * 977u + 1;
	for (size_t e = 0; e < (size_t)c.n * c.k; e++)
		B[e] = ex_randf(&s);
	Agen = ex_alloc((size_t)rows * c.n, sizeof(float));
	A = ex_alloc((size_t)rows * c.n, sizeof(float));
	C = ex_alloc((size_t)rows * c.k, sizeof(float));
	for (long i = 0; i < rows; i++)
		for (long j = 0; j < c.n; j++)
			Agen[(size_t)i * c.n + j] = a_elem(c.seed, c.n, r0 + i, j);

	/* A: write, then read back */
	tp_setup(&io, ex_world, (int64_t)r0 * c.n * 4, (int64_t)r1 * c.n * 4, (int64_t)c.n * c.n * 4,
		 (size_t)c.buffer_kb * 1024, c.log_every);
	ex_say("%d ranks, %d aggregators (one per node), A %ldx%ld in %s (%.1f MiB), "
	       "B %ldx%ld, %d I/O rounds of %ld KiB",
	       P, io.naggr, c.n, c.n, pa, (double)c.n * c.n * 4 / 1048576.0, c.n, c.k, io.rounds,
	       c.buffer_kb);
	t0 = ex_now();
	if (tp_write(&io, pa, (const char *)Agen, (int64_t)c.n * c.n * 4))
		pass = 0;
	t_wa = ex_now() - t0;
	t0 = ex_now();
	if (pass && tp_read(&io, pa, (char *)A))
		pass = 0;
	t_ra = ex_now() - t0;
	tp_free(&io);
	if (pass && memcmp(A, Agen, (size_t)rows * c.n * sizeof(float))) {
		fprintf(stderr, "%s: rank %d: rows %ld..%ld read back differ from those written\n",
			ex_prog, rank, r0, r1 - 1);
		pass = 0;
	}
	pass = ex_all_pass(pass);

	/* C = A B, my rows */
	t0 = ex_now();
	for (long i = 0; i < rows; i++)
		row_times(A + (size_t)i * c.n, B, c.n, c.k, C + (size_t)i * c.k);
	t_mm = ex_now() - t0;

	t0 = ex_now();
	tp_setup(&io, ex_world, (int64_t)r0 * c.k * 4, (int64_t)r1 * c.k * 4, (int64_t)c.n * c.k * 4,
		 (size_t)c.buffer_kb * 1024, c.log_every);
	if (pass && tp_write(&io, pc, (const char *)C, (int64_t)c.n * c.k * 4))
		pass = 0;
	tp_free(&io);
	t_wc = ex_now() - t0;
	ex_say("times: write A %.3f s (%.1f MiB/s), read A %.3f s (%.1f MiB/s), "
	       "multiply %.3f s, write C %.3f s",
	       t_wa, (double)c.n * c.n * 4 / 1048576.0 / (t_wa > 0 ? t_wa : 1), t_ra,
	       (double)c.n * c.n * 4 / 1048576.0 / (t_ra > 0 ? t_ra : 1), t_mm, t_wc);

	/* rank 0: the serial computation from the files, with plain stdio */
	if (rank == 0 && pass) {
		FILE *fa = fopen(pa, "rb"), *fc = fopen(pc, "rb");
		float *arow = ex_alloc((size_t)c.n, sizeof(float)), *crow = ex_alloc((size_t)c.k, sizeof(float));
		float *cfile = ex_alloc((size_t)c.k, sizeof(float));
		long bad_a = 0, bad_c = 0;
		if (!fa || !fc) {
			fprintf(stderr, "%s: cannot reopen %s or %s: %s\n", ex_prog, pa, pc, strerror(errno));
			pass = 0;
		}
		for (long i = 0; pass && i < c.n; i++) {
			if (fread(arow, sizeof(float), (size_t)c.n, fa) != (size_t)c.n ||
			    fread(cfile, sizeof(float), (size_t)c.k, fc) != (size_t)c.k) {
				fprintf(stderr, "%s: %s or %s is short at row %ld\n", ex_prog, pa, pc, i);
				pass = 0;
				break;
			}
			for (long j = 0; j < c.n; j++) {
				float want = a_elem(c.seed, c.n, i, j);
				bad_a += memcmp(&want, &arow[j], sizeof want) != 0;
			}
			row_times(arow, B, c.n, c.k, crow);
			bad_c += memcmp(crow, cfile, (size_t)c.k * sizeof(float)) != 0;
		}
		if (pass && (fgetc(fa) != EOF || fgetc(fc) != EOF)) {
			fprintf(stderr, "%s: a file is longer than the matrix\n", ex_prog);
			pass = 0;
		}
		if (bad_a || bad_c) {
			fprintf(stderr, "%s: %ld elements of A and %ld rows of C in the files differ "
				"from the serial computation\n", ex_prog, bad_a, bad_c);
			pass = 0;
		}
		if (fa) fclose(fa);
		if (fc) fclose(fc);
		free(arow); free(crow); free(cfile);
		if (!c.keep) {
			unlink(pa);
			unlink(pc);
		}
	}
	ex_check(loom_broadcast(&pass, &pass, 1, LOOM_INT32, 0, ex_world), "loom_broadcast");
	ex_say("%s: A read back by the two-phase reader equals what was written; the files "
	       "hold A and C = A B bit-identical to the serial computation (%ldx%ld times %ldx%ld)",
	       pass ? "PASS" : "FAIL", c.n, c.n, c.n, c.k);
	free(B); free(Agen); free(A); free(C);
	loom_finalize(ex_world);
	return pass ? 0 : 1;
}
