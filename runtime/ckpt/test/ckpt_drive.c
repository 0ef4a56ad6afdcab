/* ckpt-drive: drives loom_ckpt_* for the cluster tests (t/t4*.t).
 *
 *   ckpt-drive save DIR STEP LAYOUT [N]  fill with values of STEP, save; N saves:
 *                                        steps STEP..STEP+N-1, then loom_ckpt_wait
 *   ckpt-drive restore DIR LAYOUT        restore, check the values, print the step
 *   ckpt-drive train DIR LAYOUT STEPS    loop: should_stop each step, save on stop
 *   ckpt-drive asave DIR STEP LAYOUT [N] async saves of steps STEP..STEP+N-1,
 *                                        the buffers overwritten as each returns,
 *                                        collectives on the world while the
 *                                        writer runs, then loom_ckpt_wait
 *
 *   ckpt-drive heal DIR LAYOUT STEPS     saves of steps 1..STEPS; when one fails
 *                                        with PEER_LOST or REVOKED: revoke,
 *                                        shrink, a new loom_ckpt_open on the
 *                                        survivors, restore, check the values,
 *                                        go on saving on the survivors
 *
 * heal: every rank writes DIR/pid.RANK first (killpoint's
 * LOOM_TEST_KILL_ALSO kills a node's other ranks with the one that hits
 * the point); CKPT_DRIVE_KILL=STEP:R[,R...] makes those ranks SIGKILL
 * themselves before the save of STEP; CKPT_DRIVE_HIDE_SHARED=1 makes the
 * survivors' rank 0 rename every step's t*.bin in DIR to t*.bin.hidden
 * before the restore (and back after it): a restore that reads the
 * shared directory's data fails.
 *
 * A save killed at a chosen point of its commit: `save` under the
 * LD_PRELOAD shim runtime/ckpt/test/killpoint.c (LOOM_TEST_KILL_AT).
 * `train` saves every CKPT_DRIVE_SAVE_EVERY steps too when that is set.
 * `train` writes DIR/pid.RANK (atomically, by rename) once every rank has
 * restored or initialised its state and is about to run its first step:
 * a test waits for that file before it signals the rank.
 *
 * LAYOUT: rows (one row block per rank) or cyclic (blocks of 3 rows dealt
 * round-robin, columns split in two). The state: a ROWSxCOLS float32
 * matrix (CKPT_DRIVE_ROWS, default 61; COLS 40) and an int64 vector of 5. */
#include "config.h"
#include "loom.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static size_t ROWS = 61, COLS = 40;
static int rank, size;

static float val(size_t i, size_t j, long long step)
{
	return (float)(step * 1000003 % 7919) + (float)i * 0.5f + (float)j * 0.03125f;
}

typedef struct {
	size_t off[2], ext[2];
	float *buf;
} blk_t;

static blk_t blks[4096];
static int nb;
static int64_t vec[5];

static int reg(loom_ckpt_t *ck, const char *layout)
{
	size_t sh[2] = { ROWS, COLS }, vsh[1] = { 5 }, vo[1] = { 0 };
	nb = 0;
	if (!strcmp(layout, "rows")) {
		size_t r0 = ROWS * (size_t)rank / (size_t)size, r1 = ROWS * (size_t)(rank + 1) / (size_t)size;
		blks[nb++] = (blk_t){ { r0, 0 }, { r1 - r0, COLS }, NULL };
	} else {
		int k = 0;
		for (size_t r0 = 0; r0 < ROWS; r0 += 3)
			for (int cb = 0; cb < 2; cb++, k++)
				if (k % size == rank && nb < 4096)
					blks[nb++] = (blk_t){ { r0, cb ? COLS / 2 : 0 },
							     { r0 + 3 <= ROWS ? 3 : ROWS - r0, cb ? COLS - COLS / 2 : COLS / 2 },
							     NULL };
	}
	for (int b = 0; b < nb; b++) {
		blks[b].buf = calloc(blks[b].ext[0] * blks[b].ext[1] + 1, sizeof(float));
		int rc = loom_ckpt_tensor(ck, "matrix", LOOM_FLOAT32, 2, sh, blks[b].off, blks[b].ext,
					  blks[b].buf);
		if (rc)
			return rc;
	}
	if (nb == 0)
		loom_ckpt_tensor(ck, "matrix", LOOM_FLOAT32, 2, sh, NULL, NULL, NULL);
	/* the vector lives on rank 0 only */
	if (rank == 0)
		return loom_ckpt_tensor(ck, "vec", LOOM_INT64, 1, vsh, vo, vsh, vec);
	return loom_ckpt_tensor(ck, "vec", LOOM_INT64, 1, vsh, NULL, NULL, NULL);
}

static void fill(long long step)
{
	for (int b = 0; b < nb; b++)
		for (size_t i = 0; i < blks[b].ext[0]; i++)
			for (size_t j = 0; j < blks[b].ext[1]; j++)
				blks[b].buf[i * blks[b].ext[1] + j] = val(blks[b].off[0] + i, blks[b].off[1] + j, step);
	for (int k = 0; k < 5; k++)
		vec[k] = step * 10 + k;
}

static long bad_values(long long step)
{
	long bad = 0;
	for (int b = 0; b < nb; b++)
		for (size_t i = 0; i < blks[b].ext[0]; i++)
			for (size_t j = 0; j < blks[b].ext[1]; j++)
				bad += blks[b].buf[i * blks[b].ext[1] + j] !=
				       val(blks[b].off[0] + i, blks[b].off[1] + j, step);
	if (rank == 0)
		for (int k = 0; k < 5; k++)
			bad += vec[k] != step * 10 + k;
	return bad;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CKPT_DRIVE_LINGER=R:S: after a stop save, rank R stays S seconds more
 * after loom_finalize, before it exits, so that loom.so's requeue (as the
 * first task on the first node exits) kills it first: what it wrote
 * before it returned from the save is all that is left of it (t4006: its
 * metrics, which are otherwise written at exit) */
static void linger(int rank)
{
	const char *v = getenv("CKPT_DRIVE_LINGER");
	int r;
	double s, until;
	if (!v || sscanf(v, "%d:%lf", &r, &s) != 2 || r != rank)
		return;
	printf("rank %d lingers %.0f s after its stop save\n", rank, s);
	fflush(stdout);
	until = now_s() + s;
	while (now_s() < until)
		usleep(100000);
	printf("rank %d lingered to the end\n", rank);
	fflush(stdout);
}

/* DIR/pid.RANK, whole (by rename) */
static int write_pid(const char *dir)
{
	char p[4200], q[4300];
	FILE *f;
	snprintf(p, sizeof p, "%s/pid.%d", dir, rank);
	snprintf(q, sizeof q, "%s.tmp", p);
	if (!(f = fopen(q, "w")) || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0 ||
	    rename(q, p) != 0) {
		fprintf(stderr, "rank %d: cannot write %s\n", rank, p);
		return 1;
	}
	return 0;
}

/* CKPT_DRIVE_KILL=STEP:R,R...: this rank dies before the save of step */
static int healed; /* only the first world's ranks die */

static void heal_maybe_die(long long step, int wrank)
{
	const char *e = getenv("CKPT_DRIVE_KILL"), *c;
	if (healed || !e || atoll(e) != step || !(c = strchr(e, ':')))
		return;
	for (c++; *c; c = strchr(c, ',') ? strchr(c, ',') + 1 : c + strlen(c))
		if (atoi(c) == wrank) {
			fprintf(stderr, "rank %d: SIGKILL before the save of step %lld\n", wrank, step);
			kill(getpid(), SIGKILL);
		}
}

/* CKPT_DRIVE_HIDE_SHARED: every DIR/step-N/t*.bin renamed FROM -> TO */
static void hide_shared(const char *dir, const char *from, const char *to)
{
	char cmd[9000];
	snprintf(cmd, sizeof cmd, "for f in '%s'/step-*/t*.bin%s; do [ -e \"$f\" ] && "
		 "mv \"$f\" \"${f%%.bin%s}.bin%s\"; done; ls '%s'/step-*/ >&2", dir, from, from, to, dir);
	if (system(cmd) != 0)
		fprintf(stderr, "rank 0: hiding the shared data failed\n");
}

/* revoke, shrink, reopen on the survivors and restore; 0 or a status */
static int heal_recover(loom_comm_t **w, loom_ckpt_t **ck, const char *dir, const char *layout,
			long long *step, int why)
{
	loom_comm_t *s = NULL;
	int failed[64], nf = 0, rc, hide = getenv("CKPT_DRIVE_HIDE_SHARED") != NULL;
	double t0 = now_s();
	char list[300] = "";
	loom_comm_revoke(*w);
	if ((rc = loom_comm_shrink(*w, &s)))
		return rc;
	loom_comm_failed(*w, failed, 64, &nf);
	for (int k = 0; k < nf && k < 64; k++)
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", k ? "," : "", failed[k]);
	rc = loom_ckpt_close(*ck);
	*ck = NULL;
	healed = 1;
	printf("rank %d: %s at step %lld; ranks %s lost; old close: %s\n", rank,
	       loom_strerror(why), *step, list, loom_strerror(rc));
	*w = s;
	rank = loom_comm_rank(s);
	size = loom_comm_size(s);
	if (hide && rank == 0)
		hide_shared(dir, "", ".hidden");
	for (int b = 0; b < nb; b++)
		free(blks[b].buf);
	if ((rc = loom_barrier(s)) || (rc = loom_ckpt_open(s, dir, ck)) || (rc = reg(*ck, layout)))
		return rc;
	fill(-12345);
	rc = loom_ckpt_restore(*ck, step);
	long bad = rc ? -1 : bad_values(*step);
	int64_t b64 = bad, a64 = 0;
	loom_allreduce(&b64, &a64, 1, LOOM_INT64, LOOM_SUM, s);
	if (rank == 0)
		printf("heal: %d ranks restored: %s step %lld wrong %lld (%.3f s)\n", size,
		       loom_strerror(rc), *step, (long long)a64, now_s() - t0);
	fflush(stdout);
	if (hide && rank == 0)
		hide_shared(dir, ".hidden", "");
	if (!rc && a64)
		rc = LOOM_ERR_MISMATCH;
	return rc ? rc : loom_barrier(s);
}

/* saves of steps 1..steps; heals on a lost rank (once per failure) */
static int heal_cmd(loom_comm_t **w, loom_ckpt_t **ck, const char *dir, const char *layout,
		    long long steps)
{
	int wrank = rank, rc;
	long long step = 1, got;
	if ((rc = reg(*ck, layout)) || write_pid(dir) || (rc = loom_barrier(*w)))
		return rc ? rc : 1;
	while (step <= steps) {
		heal_maybe_die(step, wrank);
		fill(step);
		rc = loom_ckpt_save(*ck, step);
		if (!rc && step == steps)
			rc = loom_ckpt_wait(*ck); /* the last flush */
		if (rc == LOOM_ERR_PEER_LOST || rc == LOOM_ERR_REVOKED) {
			got = step;
			if ((rc = heal_recover(w, ck, dir, layout, &got, rc)))
				return rc;
			step = got + 1;
			continue;
		}
		if (rc)
			return rc;
		if (rank == 0)
			printf("heal: save step %lld ranks %d: success\n", step, size);
		step++;
	}
	if (rank == 0)
		printf("heal: done, %lld steps, %d ranks\n", steps, size);
	return 0;
}

int main(int argc, char **argv)
{
	loom_comm_t *w;
	loom_ckpt_t *ck;
	int rc, stopped = 0;
	long long step = -1;
	if (argc < 4) {
		fprintf(stderr, "usage: ckpt-drive save|restore|train DIR ...\n");
		return 2;
	}
	if (getenv("CKPT_DRIVE_ROWS"))
		ROWS = (size_t)atol(getenv("CKPT_DRIVE_ROWS"));
	if ((rc = loom_init(&w))) {
		fprintf(stderr, "loom_init: %s\n", loom_strerror(rc));
		return 1;
	}
	rank = loom_comm_rank(w);
	size = loom_comm_size(w);
	const char *cmd = argv[1], *dir = argv[2];
	if ((rc = loom_ckpt_open(w, dir, &ck))) {
		fprintf(stderr, "open: %s\n", loom_strerror(rc));
		return 1;
	}
	if (!strcmp(cmd, "save")) {
		if (argc < 5)
			return 2;
		int n = argc > 5 ? atoi(argv[5]) : 1;
		step = atoll(argv[3]);
		if ((rc = reg(ck, argv[4])))
			return 1;
		for (int i = 0; i < n && !rc; i++, step++) {
			fill(step);
			rc = loom_ckpt_save(ck, step);
			if (rank == 0)
				printf("save step %lld ranks %d: %s\n", step, size, loom_strerror(rc));
		}
		if (!rc)
			rc = loom_ckpt_wait(ck); /* a flush still running in the background */
	} else if (!strcmp(cmd, "asave")) {
		int n = argc > 5 ? atoi(argv[5]) : 1, rc2;
		loom_ckpt_stats_t st;
		if (argc < 5)
			return 2;
		step = atoll(argv[3]);
		if ((rc = reg(ck, argv[4])) || (rc = loom_ckpt_set_async(ck, 1)))
			return 1;
		for (int i = 0; i < n && !rc; i++, step++) {
			fill(step);
			rc = loom_ckpt_save(ck, step);
			loom_ckpt_stats(ck, &st);
			/* the checkpoint must hold the values at the call */
			fill(step + 100000);
			/* the last rank: the tests kill aggregators (0 and 2), whose
			 * writer may die before their own line is out */
			if (rank == size - 1) {
				printf("asave: save step %lld ranks %d: %s\n", step, size,
				       loom_strerror(rc));
				fflush(stdout);
			}
			/* the caller's own collectives while the writer runs */
			for (int k = 0; k < 20 && !rc; k++) {
				int64_t one = 1, sum = 0;
				rc = loom_allreduce(&one, &sum, 1, LOOM_INT64, LOOM_SUM, w);
				if (!rc && sum != size)
					rc = LOOM_ERR_MISMATCH;
			}
		}
		rc2 = loom_ckpt_wait(ck);
		loom_ckpt_stats(ck, &st);
		if (rank == 0)
			printf("asave: wait: %s (blocked %.6f s, total %.6f s)\n", loom_strerror(rc2),
			       st.blocked_s, st.total_s);
		if (!rc)
			rc = rc2;
	} else if (!strcmp(cmd, "restore")) {
		if ((rc = reg(ck, argv[3])))
			return 1;
		fill(-12345);
		rc = loom_ckpt_restore(ck, &step);
		long bad = rc ? -1 : bad_values(step), all = 0;
		int64_t b64 = bad, a64 = 0;
		loom_allreduce(&b64, &a64, 1, LOOM_INT64, LOOM_SUM, w);
		all = (long)a64;
		if (rank == 0)
			printf("restore ranks %d: %s step %lld wrong %ld\n", size, loom_strerror(rc), step, all);
		if (!rc && all)
			rc = 1;
	} else if (!strcmp(cmd, "heal")) {
		loom_comm_t *w0 = w;
		rc = heal_cmd(&w, &ck, dir, argv[3], argc > 4 ? atoll(argv[4]) : 10);
		printf("rank %d: heal: %s\n", rank, rc == 1 ? "failure" : loom_strerror(rc));
		fflush(stdout);
		if (w != w0) {
			if (ck)
				loom_ckpt_close(ck);
			loom_comm_free(w);
			loom_finalize(w0);
			return rc ? 1 : 0;
		}
	} else if (!strcmp(cmd, "train")) {
		long long steps = argc > 4 ? atoll(argv[4]) : 100, first;
		long every = getenv("CKPT_DRIVE_SAVE_EVERY") ? atol(getenv("CKPT_DRIVE_SAVE_EVERY")) : 0;
		int stop = 0;
		double tstop = 0;
		long nstop = 0;
		if ((rc = reg(ck, argv[3])))
			return 1;
		loom_ckpt_resume_step(ck, &first);
		if (first >= 0) {
			rc = loom_ckpt_restore(ck, &first);
			if (rc)
				return 1;
			/* the state of that step, bit for bit, on every rank */
			printf("rank %d resumed at step %lld wrong %ld\n", rank, first, bad_values(first));
			fflush(stdout);
		} else {
			fill(0);
		}
		loom_barrier(w);
		/* ready: the pid file appears whole (rename) */
		if (write_pid(dir))
			return 1;
		for (step = first + 1; step < steps; step++) {
			/* "training": the values of this step */
			fill(step);
			usleep(100000);
			double t0 = now_s();
			if ((rc = loom_ckpt_should_stop(ck, step, &stop)))
				break;
			tstop += now_s() - t0;
			nstop++;
			if (stop) {
				printf("rank %d stop at step %lld\n", rank, step);
				fflush(stdout);
				rc = loom_ckpt_save(ck, step);
				stopped = 1;
				break;
			}
			/* periodic saves (async under LOOM_CKPT_ASYNC=1) */
			if (every > 0 && step % every == 0 && (rc = loom_ckpt_save(ck, step)))
				break;
		}
		if (rank == 0)
			printf("should_stop: %.1f us per call over %ld calls, %d ranks\n",
			       nstop ? 1e6 * tstop / (double)nstop : 0.0, nstop, size);
	} else {
		return 2;
	}
	fflush(stdout);
	loom_ckpt_close(ck);
	for (int b = 0; b < nb; b++)
		free(blks[b].buf);
	loom_finalize(w);
	if (stopped)
		linger(rank);
	return rc ? 1 : 0;
}
