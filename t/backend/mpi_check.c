/* t/backend/mpi_check.c: a backend check through loom.h only (written for
 * the MPI backend, runs on any: LOOM_BACKEND picks it). Inputs are small
 * integers, exact in every dtype, so every rank's results are compared
 * for equality with a serial reference computed from all ranks' inputs,
 * whatever order the backend reduces in.
 *
 *   mpi_check coll      every collective x dtype x op x size x in-place
 *   mpi_check comm      split (reversed keys, LOOM_UNDEFINED), dup, mesh
 *   mpi_check nb        non-blocking collectives and isend/irecv, test
 *   mpi_check timeout   the last rank skips (LOOM_TIMEOUT decides how
 *                       long the others wait), then an abort
 *   mpi_check all       coll, comm and nb
 *   mpi_check time SIZE ITERS   mean allreduce time (float32 sum)
 * Each rank prints "mpi_check: rank R: <mode>: N checks, F failed
 * (backend B)"; rank 0 ends with "mpi_check summary: backend=B ranks=N
 * checks=C failed=F" (failures of every rank, summed). Exit 0 iff F == 0.
 */
#include <loom.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static loom_comm_t *world;
static int me, nr;
static long nchecks, nfailed;

static void check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int cond, const char *fmt, ...)
{
	va_list ap;
	nchecks++;
	if (cond)
		return;
	nfailed++;
	if (nfailed > 20)
		return;
	fprintf(stderr, "mpi_check: rank %d: FAIL: ", me);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- values: element i of rank r's input, as a double ---- */
static double val(loom_op_t op, int r, size_t i, int salt)
{
	long h = (long)((i * 2654435761u + (size_t)r * 40503u + (size_t)salt * 977u) % 1000003u);
	if (op == LOOM_PROD) {
		static const int v[] = { 1, -1, 2, 1, -2, 1 };
		return v[h % 6];
	}
	return (double)(h % 17) - 8;  /* -8..8: sums over a few ranks are exact in bf16 and int8 */
}

static void put(void *buf, loom_dtype_t dt, size_t i, double x)
{
	switch (dt) {
	case LOOM_INT8: ((int8_t *)buf)[i] = (int8_t)x; break;
	case LOOM_INT32: ((int32_t *)buf)[i] = (int32_t)x; break;
	case LOOM_INT64: ((int64_t *)buf)[i] = (int64_t)x; break;
	case LOOM_FLOAT32: ((float *)buf)[i] = (float)x; break;
	case LOOM_FLOAT64: ((double *)buf)[i] = x; break;
	default: {
		/* 16-bit floats: small integers are exact; build the bits */
		float f = (float)x;
		uint32_t u;
		memcpy(&u, &f, 4);
		if (dt == LOOM_BFLOAT16) {
			((uint16_t *)buf)[i] = (uint16_t)(u >> 16);
		} else {
			/* integers |x| <= 2048 are exact in fp16 */
			uint16_t s = (uint16_t)((u >> 16) & 0x8000), h = 0;
			int e = (int)((u >> 23) & 0xff) - 127;
			if (f != 0)
				h = (uint16_t)(((e + 15) << 10) | ((u >> 13) & 0x3ff));
			((uint16_t *)buf)[i] = (uint16_t)(s | h);
		}
	}
	}
}

static double get(const void *buf, loom_dtype_t dt, size_t i)
{
	switch (dt) {
	case LOOM_INT8: return ((const int8_t *)buf)[i];
	case LOOM_INT32: return ((const int32_t *)buf)[i];
	case LOOM_INT64: return (double)((const int64_t *)buf)[i];
	case LOOM_FLOAT32: return ((const float *)buf)[i];
	case LOOM_FLOAT64: return ((const double *)buf)[i];
	default: {
		uint16_t h = ((const uint16_t *)buf)[i];
		uint32_t u;
		float f;
		if (dt == LOOM_BFLOAT16) {
			u = (uint32_t)h << 16;
		} else {
			uint32_t s = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
			u = e ? s | ((e - 15 + 127) << 23) | (m << 13) : s;  /* no subnormals used */
		}
		memcpy(&f, &u, 4);
		return f;
	}
	}
}

/* the reduction of every rank's element i, as the dtype stores it */
static double reduce_ref(loom_op_t op, loom_dtype_t dt, size_t i, int salt)
{
	double acc = val(op, 0, i, salt);
	int r;
	for (r = 1; r < nr; r++) {
		double x = val(op, r, i, salt);
		switch (op) {
		case LOOM_SUM: case LOOM_AVG: acc += x; break;
		case LOOM_PROD: acc *= x; break;
		case LOOM_MIN: acc = x < acc ? x : acc; break;
		default: acc = x > acc ? x : acc;
		}
	}
	if (op == LOOM_AVG) {
		if (dt == LOOM_INT8 || dt == LOOM_INT32 || dt == LOOM_INT64)
			acc = (double)((long long)acc / nr);
		else if (dt == LOOM_FLOAT64)
			acc = acc / nr;
		else
			acc = (double)((float)acc / (float)nr);
		if (dt == LOOM_FLOAT16 || dt == LOOM_BFLOAT16) {
			/* the stored 16-bit value of the fp32 quotient (nearest even) */
			float f = (float)acc;
			uint32_t u;
			memcpy(&u, &f, 4);
			if (dt == LOOM_BFLOAT16) {
				u += 0x7fff + ((u >> 16) & 1);
				u &= 0xffff0000u;
				memcpy(&f, &u, 4);
				return f;
			}
			return (double)f;  /* fp16 compared with a tolerance below */
		}
	}
	return acc;
}

static int same(double got, double want, loom_dtype_t dt, loom_op_t op)
{
	if (op == LOOM_AVG && dt == LOOM_FLOAT16)
		return fabs(got - want) <= fabs(want) * 0x1p-10 + 0x1p-24;
	return got == want;
}

static const loom_dtype_t dtypes[] = { LOOM_INT8, LOOM_INT32, LOOM_INT64, LOOM_FLOAT16,
				       LOOM_BFLOAT16, LOOM_FLOAT32, LOOM_FLOAT64 };
#define NDT (sizeof dtypes / sizeof dtypes[0])

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "mpi_check: out of memory\n");
		exit(2);
	}
	return p;
}

/* ---- collectives ---- */
static void one_reduction(int kind, loom_dtype_t dt, loom_op_t op, size_t n, int inplace,
			  int root, int salt)
{
	size_t es = loom_dtype_size(dt), nin = kind == 2 ? n * (size_t)nr : n, i;
	char *s = xmalloc(nin * es), *r = xmalloc(nin * es);
	const char *what = kind == 0 ? "allreduce" : kind == 1 ? "reduce" : "reduce_scatter";
	int rc, bad = 0;
	for (i = 0; i < nin; i++)
		put(s, dt, i, val(op, me, i, salt));
	if (inplace)
		memcpy(r, s, nin * es);
	if (kind == 0)
		rc = loom_allreduce(inplace ? r : s, r, n, dt, op, world);
	else if (kind == 1)
		rc = loom_reduce(inplace && me == root ? r : s, r, n, dt, op, root, world);
	else
		rc = loom_reduce_scatter(inplace ? r : s, r, n, dt, op, world);
	check(rc == 0, "%s %s %s n=%zu%s: %s", what, loom_dtype_name(dt), loom_op_name(op), n,
	      inplace ? " in place" : "", loom_strerror(rc));
	if (!rc && (kind != 1 || me == root)) {
		for (i = 0; i < n; i++) {
			size_t gi = kind == 2 ? (size_t)me * n + i : i;
			double want = reduce_ref(op, dt, gi, salt), got = get(r, dt, i);
			if (!same(got, want, dt, op) && bad++ < 3)
				fprintf(stderr, "mpi_check: rank %d: %s %s %s n=%zu%s root=%d: [%zu] = %g, want %g\n",
					me, what, loom_dtype_name(dt), loom_op_name(op), n,
					inplace ? " in place" : "", root, i, got, want);
		}
		check(bad == 0, "%s %s %s n=%zu%s: %d wrong elements", what, loom_dtype_name(dt),
		      loom_op_name(op), n, inplace ? " in place" : "", bad);
	}
	free(s);
	free(r);
}

static void data_movers(loom_dtype_t dt, size_t n, int inplace, int salt)
{
	size_t es = loom_dtype_size(dt), i, N = n * (size_t)nr;
	char *s = xmalloc(N * es), *r = xmalloc(N * es);
	int rc, bad, root, j;
	/* allgather */
	for (i = 0; i < n; i++)
		put(inplace ? r + (size_t)me * n * es : s, dt, i, val(LOOM_SUM, me, i, salt));
	rc = loom_allgather(inplace ? r + (size_t)me * n * es : s, r, n, dt, world);
	bad = 0;
	for (j = 0; !rc && j < nr; j++)
		for (i = 0; i < n; i++)
			bad += get(r, dt, (size_t)j * n + i) != val(LOOM_SUM, j, i, salt);
	check(rc == 0 && bad == 0, "allgather %s n=%zu%s: %s, %d wrong", loom_dtype_name(dt), n,
	      inplace ? " in place" : "", loom_strerror(rc), bad);
	/* broadcast from every root */
	for (root = 0; root < nr; root++) {
		for (i = 0; i < n; i++)
			put(s, dt, i, me == root ? val(LOOM_SUM, root, i, salt + 1) : 99);
		if (inplace)
			memcpy(r, s, n * es);
		else
			for (i = 0; i < n; i++)
				put(r, dt, i, 77);
		rc = loom_broadcast(inplace ? r : s, r, n, dt, root, world);
		bad = 0;
		for (i = 0; !rc && i < n; i++)
			bad += get(r, dt, i) != val(LOOM_SUM, root, i, salt + 1);
		check(rc == 0 && bad == 0, "broadcast %s n=%zu root=%d%s: %s, %d wrong",
		      loom_dtype_name(dt), n, root, inplace ? " in place" : "", loom_strerror(rc), bad);
	}
	/* alltoall: block j of rank me's send goes to rank j */
	for (j = 0; j < nr; j++)
		for (i = 0; i < n; i++)
			put(s, dt, (size_t)j * n + i, val(LOOM_SUM, me * nr + j, i, salt + 2));
	if (inplace)
		memcpy(r, s, N * es);
	rc = loom_alltoall(inplace ? r : s, r, n, dt, world);
	bad = 0;
	for (j = 0; !rc && j < nr; j++)
		for (i = 0; i < n; i++)
			bad += get(r, dt, (size_t)j * n + i) != val(LOOM_SUM, j * nr + me, i, salt + 2);
	check(rc == 0 && bad == 0, "alltoall %s n=%zu%s: %s, %d wrong", loom_dtype_name(dt), n,
	      inplace ? " in place" : "", loom_strerror(rc), bad);
	free(s);
	free(r);
}

static void run_coll(void)
{
	static const size_t sizes[] = { 0, 1, 7, 1000, 65539 };
	size_t si, d;
	int op, ip, kind, salt = 0;
	for (d = 0; d < NDT; d++)
		for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
			for (ip = 0; ip < 2; ip++) {
				for (op = 0; op < LOOM_OP_COUNT; op++)
					for (kind = 0; kind < 3; kind++) {
						/* big sizes: a subset of ops */
						if (sizes[si] > 1000 && op != LOOM_SUM && op != LOOM_AVG)
							continue;
						salt++;
						one_reduction(kind, dtypes[d], (loom_op_t)op, sizes[si], ip,
							      salt % nr, salt);
					}
				data_movers(dtypes[d], sizes[si], ip, salt++);
			}
	/* one large allreduce (16 MiB of float32 per rank) */
	one_reduction(0, LOOM_FLOAT32, LOOM_SUM, (size_t)4 << 20, 0, 0, 7);
	one_reduction(0, LOOM_BFLOAT16, LOOM_SUM, (size_t)1 << 20, 1, 0, 8);
	check(loom_barrier(world) == 0, "barrier");
}

/* ---- communicators ---- */
static void group_sum(loom_comm_t *c, const char *what, long want_sum, int want_size, int want_rank)
{
	int64_t x = me, y = -1;
	int rc = loom_allreduce(&x, &y, 1, LOOM_INT64, LOOM_SUM, c);
	check(rc == 0 && y == want_sum, "%s: sum of world ranks %lld, want %ld (%s)", what,
	      (long long)y, want_sum, loom_strerror(rc));
	check(loom_comm_size(c) == want_size, "%s: size %d, want %d", what, loom_comm_size(c),
	      want_size);
	check(loom_comm_rank(c) == want_rank, "%s: rank %d, want %d", what, loom_comm_rank(c),
	      want_rank);
}

static void run_comm(void)
{
	loom_comm_t *s = NULL, *d = NULL, *u = NULL;
	int color = me % 2, j, n = 0, pos = 0, rc;
	long sum = 0;
	static const int shapes[][3] = { { 2, 2, 1 }, { 1, 2, 2 }, { 2, 1, 2 }, { 4, 1, 1 },
					 { 1, 4, 1 }, { 1, 1, 4 }, { 2, 1, 1 }, { 1, 2, 1 },
					 { 1, 1, 2 }, { 1, 1, 1 } };
	size_t k;
	/* split by parity, keys reversed: rank order in the group is reversed */
	rc = loom_comm_split(world, color, nr - me, &s);
	check(rc == 0 && s, "split: %s", loom_strerror(rc));
	for (j = 0; j < nr; j++)
		if (j % 2 == color) {
			n++;
			sum += j;
			if (j > me)
				pos++;
		}
	if (s)
		group_sum(s, "split by parity, reversed keys", sum, n, pos);
	rc = loom_comm_split(world, me == 0 ? LOOM_UNDEFINED : 1, 0, &u);
	check(rc == 0 && (me == 0 ? u == NULL : u != NULL), "split with LOOM_UNDEFINED on rank 0");
	if (u)
		group_sum(u, "split without rank 0", (long)nr * (nr - 1) / 2, nr - 1, me - 1);
	rc = loom_comm_dup(s ? s : world, &d);
	check(rc == 0 && d, "dup of the split: %s", loom_strerror(rc));
	if (d)
		group_sum(d, "dup", sum, n, pos);
	check(loom_comm_free(d) == 0 && (!u || loom_comm_free(u) == 0) && loom_comm_free(s) == 0,
	      "free");
	for (k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
		int dp = shapes[k][0], tp = shapes[k][1], pp = shapes[k][2];
		loom_mesh_t m;
		int ti, di, pi;
		long st = 0, sd = 0, sp = 0;
		if (dp * tp * pp != nr)
			continue;
		rc = loom_mesh(world, dp, tp, pp, &m);
		check(rc == 0, "mesh %dx%dx%d: %s", dp, tp, pp, loom_strerror(rc));
		if (rc)
			continue;
		ti = me % tp;
		di = (me / tp) % dp;
		pi = me / (tp * dp);
		check(m.tp_index == ti && m.dp_index == di && m.pp_index == pi,
		      "mesh %dx%dx%d: indices", dp, tp, pp);
		for (j = 0; j < tp; j++)
			st += (pi * dp + di) * tp + j;
		for (j = 0; j < dp; j++)
			sd += (pi * dp + j) * tp + ti;
		for (j = 0; j < pp; j++)
			sp += (j * dp + di) * tp + ti;
		group_sum(m.tp, "mesh tp", st, tp, ti);
		group_sum(m.dp, "mesh dp", sd, dp, di);
		group_sum(m.pp, "mesh pp", sp, pp, pi);
		loom_mesh_free(&m);
	}
}

/* ---- non-blocking ---- */
static void run_nb(void)
{
	enum { N = 3001 };
	float *a = xmalloc(N * sizeof *a), *ar = xmalloc(N * sizeof *ar);
	int32_t *g = xmalloc((size_t)nr * N * sizeof *g), *b = xmalloc(N * sizeof *b);
	int32_t *t = xmalloc((size_t)nr * N * sizeof *t), *tr = xmalloc((size_t)nr * N * sizeof *tr);
	int32_t *rs = xmalloc(N * sizeof *rs), mine[N], got[N], got2[N], two[N];
	loom_request_t *q[8], *ps[2], *pr[2];
	int i, j, rc, done = 0, bad = 0, next = (me + 1) % nr, prev = (me + nr - 1) % nr;
	for (i = 0; i < N; i++) {
		a[i] = (float)val(LOOM_SUM, me, (size_t)i, 1);
		b[i] = me == 0 ? i : -1;
		mine[i] = me * 100000 + i;
		two[i] = -mine[i];
	}
	for (i = 0; i < nr * N; i++)
		t[i] = (int32_t)(me * 1000000 + i);
	rc = loom_iallreduce(a, ar, N, LOOM_FLOAT32, LOOM_SUM, world, &q[0]);
	rc |= loom_iallgather(mine, g, N, LOOM_INT32, world, &q[1]);
	rc |= loom_ibroadcast(b, b, N, LOOM_INT32, 0, world, &q[2]);
	rc |= loom_ialltoall(t, tr, N, LOOM_INT32, world, &q[3]);
	rc |= loom_ireduce_scatter(t, rs, N, LOOM_INT32, LOOM_MAX, world, &q[4]);
	rc |= loom_ibarrier(world, &q[5]);
	check(rc == 0, "start six non-blocking collectives");
	if (rc)
		return;
	while (!done) {
		rc = loom_test(q[0], &done);
		if (rc)
			break;
	}
	check(rc == 0 && done, "loom_test completes the iallreduce: %s", loom_strerror(rc));
	for (i = 1; i < 6; i++) {
		rc = loom_wait(q[i]);
		check(rc == 0, "wait for request %d: %s", i, loom_strerror(rc));
	}
	for (i = 0; i < N; i++)
		bad += ar[i] != (float)reduce_ref(LOOM_SUM, LOOM_FLOAT32, (size_t)i, 1);
	check(bad == 0, "iallreduce result (%d wrong)", bad);
	bad = 0;
	for (j = 0; j < nr; j++)
		for (i = 0; i < N; i++)
			bad += g[j * N + i] != j * 100000 + i;
	check(bad == 0, "iallgather result (%d wrong)", bad);
	bad = 0;
	for (i = 0; i < N; i++)
		bad += b[i] != i;
	check(bad == 0, "ibroadcast in place (%d wrong)", bad);
	bad = 0;
	for (j = 0; j < nr; j++)
		for (i = 0; i < N; i++)
			bad += tr[j * N + i] != j * 1000000 + me * N + i;
	check(bad == 0, "ialltoall result (%d wrong)", bad);
	bad = 0;
	for (i = 0; i < N; i++)
		bad += rs[i] != (nr - 1) * 1000000 + me * N + i;
	check(bad == 0, "ireduce_scatter MAX (%d wrong)", bad);
	/* a ring of two messages each way, posted receive-first: in order */
	rc = loom_irecv(got, N, LOOM_INT32, prev, world, &pr[0]);
	rc |= loom_irecv(got2, N, LOOM_INT32, prev, world, &pr[1]);
	rc |= loom_isend(mine, N, LOOM_INT32, next, world, &ps[0]);
	rc |= loom_isend(two, N, LOOM_INT32, next, world, &ps[1]);
	check(rc == 0, "post isend/irecv");
	if (rc)
		return;
	for (i = 0; i < 2; i++) {
		check(loom_wait(pr[i]) == 0, "wait irecv %d", i);
		check(loom_wait(ps[i]) == 0, "wait isend %d", i);
	}
	bad = 0;
	for (i = 0; i < N; i++)
		bad += got[i] != prev * 100000 + i || got2[i] != -(prev * 100000 + i);
	check(bad == 0, "isend/irecv ring: both messages, in order (%d wrong)", bad);
	/* blocking send/recv: even ranks send first */
	if (nr > 1) {
		if (me % 2 == 0) {
			rc = loom_send(mine, N, LOOM_INT32, next, world);
			rc |= loom_recv(got, N, LOOM_INT32, prev, world);
		} else {
			rc = loom_recv(got, N, LOOM_INT32, prev, world);
			rc |= loom_send(mine, N, LOOM_INT32, next, world);
		}
		check(rc == 0 && got[N - 1] == prev * 100000 + N - 1, "send/recv ring");
	}
	free(a); free(ar); free(g); free(b); free(t); free(tr); free(rs);
}

/* ---- deadlines and abort ---- */
static void run_timeout(void)
{
	loom_comm_t *d1 = NULL, *d2 = NULL, *d3 = NULL;
	int32_t x = 1, y = 0;
	loom_request_t *q;
	int rc, skipper = nr - 1;
	/* d1..d3 inherit LOOM_TIMEOUT from the world; the world itself gets
	 * a long deadline for the barriers between the cases */
	check(loom_comm_dup(world, &d1) == 0 && loom_comm_dup(world, &d2) == 0 &&
	      loom_comm_dup(world, &d3) == 0, "three dups");
	loom_comm_set_timeout(world, 120);
	if (!d1 || !d2 || !d3)
		return;
	/* no durations measured: the statuses say what happened, the
	 * caller's outer timeout bounds how long it may take */
	if (me != skipper) {
		rc = loom_allreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, d1);
		check(rc == LOOM_ERR_TIMEOUT, "allreduce without rank %d: %s, want %s", skipper,
		      loom_strerror(rc), loom_strerror(LOOM_ERR_TIMEOUT));
		rc = loom_barrier(d1);
		check(rc == LOOM_ERR_TIMEOUT, "the timed-out comm fails later ops: %s",
		      loom_strerror(rc));
		rc = loom_iallreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, d2, &q);
		check(rc == 0, "iallreduce without rank %d starts", skipper);
		if (!rc) {
			rc = loom_wait(q);
			check(rc == LOOM_ERR_TIMEOUT, "its loom_wait times out: %s", loom_strerror(rc));
		}
		fprintf(stderr, "mpi_check: rank %d: timeout: got %s\n", me, loom_strerror(rc));
	}
	check(loom_barrier(world) == 0, "world barrier after the timeouts");
	/* rank 0 aborts d3 while the others wait in an allreduce on it: they
	 * must get ABORTED (or PEER_LOST), not TIMEOUT (d3 has LOOM_TIMEOUT's
	 * deadline, so an abort that was not noticed ends as a timeout) */
	if (me == 0) {
		check(loom_comm_abort(d3) == 0, "abort");
	} else {
		rc = loom_allreduce(&x, &y, 1, LOOM_INT32, LOOM_SUM, d3);
		check(rc == LOOM_ERR_ABORTED || rc == LOOM_ERR_PEER_LOST,
		      "allreduce on a comm rank 0 aborted: %s", loom_strerror(rc));
	}
	check(loom_barrier(world) == 0, "world barrier after the abort");
	loom_comm_free(d1);
	loom_comm_free(d2);
	loom_comm_free(d3);
}

static void run_time(size_t bytes, int iters)
{
	size_t n = bytes / 4 ? bytes / 4 : 1;
	float *s = xmalloc(n * 4), *r = xmalloc(n * 4);
	double t0, best = 1e30;
	int i, rep;
	for (i = 0; i < (int)n; i++)
		s[i] = 1;
	for (i = 0; i < 3; i++)
		loom_allreduce(s, r, n, LOOM_FLOAT32, LOOM_SUM, world);
	for (rep = 0; rep < 3; rep++) {
		double t, tmax;
		loom_barrier(world);
		t0 = now();
		for (i = 0; i < iters; i++)
			loom_allreduce(s, r, n, LOOM_FLOAT32, LOOM_SUM, world);
		t = (now() - t0) / iters;
		loom_allreduce(&t, &tmax, 1, LOOM_FLOAT64, LOOM_MAX, world);
		if (tmax < best)
			best = tmax;
	}
	check(r[0] == (float)nr, "allreduce result");
	if (me == 0)
		printf("mpi_check time: backend=%s ranks=%d bytes=%zu allreduce %.2f us\n",
		       loom_comm_backend(world), nr, n * 4, best * 1e6);
	free(s);
	free(r);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	int64_t tot[2], mine[2];
	int rc = loom_init(&world);
	if (rc) {
		fprintf(stderr, "mpi_check: loom_init: %s\n", loom_strerror(rc));
		return 2;
	}
	me = loom_comm_rank(world);
	nr = loom_comm_size(world);
	if (!strcmp(mode, "coll") || !strcmp(mode, "all"))
		run_coll();
	if (!strcmp(mode, "comm") || !strcmp(mode, "all"))
		run_comm();
	if (!strcmp(mode, "nb") || !strcmp(mode, "all"))
		run_nb();
	if (!strcmp(mode, "timeout"))
		run_timeout();
	if (!strcmp(mode, "time"))
		run_time(argc > 2 ? (size_t)strtoull(argv[2], NULL, 0) : 8,
			 argc > 3 ? atoi(argv[3]) : 100);
	fprintf(stderr, "mpi_check: rank %d: %s: %ld checks, %ld failed (backend %s)\n", me, mode,
		nchecks, nfailed, loom_comm_backend(world));
	mine[0] = nchecks;
	mine[1] = nfailed;
	rc = loom_allreduce(mine, tot, 2, LOOM_INT64, LOOM_SUM, world);
	if (rc)
		fprintf(stderr, "mpi_check: rank %d: summary allreduce: %s\n", me, loom_strerror(rc));
	else if (me == 0)
		printf("mpi_check summary: backend=%s ranks=%d checks=%lld failed=%lld\n",
		       loom_comm_backend(world), nr, (long long)tot[0], (long long)tot[1]);
	rc = loom_finalize(world) || rc;
	return nfailed || rc ? 1 : 0;
}
