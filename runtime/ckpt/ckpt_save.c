/* runtime/ckpt/ckpt_save.c: the blocking save to the shared directory
 * (loom_ckpt_save's, or the background writer's of ckpt_async.c), and
 * the steps the node cache's save shares: a temporary step directory of
 * full-size files, the data written two-phase or independently, then the
 * commit on rank 0 (manifest, rename, latest, prune, requeue request).
 * Every step ends in an agreement, so all ranks fail or succeed together. */
#include "config.h"
#include "comm/comm_query.h"
#include "util/util.h"
#include "ckpt/ckpt_internal.h"
#include "metrics/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* names, sizes and plan of the files, in chunks of LOOM_CKPT_CHUNK */
int loom_ck_save_plan(loom_ckpt_t *ck, ck_op_t *op)
{
	uint64_t chunk = (uint64_t)loom_env_long("ckpt", "LOOM_CKPT_CHUNK", (long)CKPT_DEFAULT_CHUNK,
					       (long)CKPT_CHUNK_MIN, (long)CKPT_CHUNK_MAX);
	int rc = loom_ck_op_alloc(ck, op, loom_ck_sum_default());
	for (int i = 0; i < ck->nt && !rc; i++) {
		if (!(op->fnames[i] = malloc(24)))
			rc = LOOM_ERR_NOMEM;
		else
			snprintf(op->fnames[i], 24, "t%d.bin", i);
	}
	if ((rc = loom_ck_agree(ck, rc)))
		return rc;
	for (int i = 0; i < ck->nt; i++)
		op->bytes[i] = ck->t[i].bytes;
	return loom_ck_plan_make(ck, &op->p, op->bytes, chunk, NULL);
}

/* how this save writes: auto takes independent writes when the pieces
 * are large (the plan is the same on every rank, so is the answer);
 * independent saves sum from memory every chunk one run holds whole */
static int save_mode(loom_ckpt_t *ck, ck_op_t *op)
{
	int rc = LOOM_SUCCESS;
	op->independent = ck->mode == LOOM_CKPT_INDEPENDENT;
	if (ck->mode == LOOM_CKPT_AUTO) {
		uint64_t min = (uint64_t)loom_env_long("ckpt", "LOOM_CKPT_AUTO_BYTES", CKPT_AUTO_BYTES, 1,
						     1L << 40);
		op->independent = loom_ck_plan_mean_piece(&op->p) >= min;
	}
	if (op->independent) {
		if ((op->owner = malloc(sizeof *op->owner * ((size_t)op->p.cbase[ck->nt] + 1))))
			loom_ck_plan_chunk_owners(&op->p, op->owner);
		else
			rc = LOOM_ERR_NOMEM;
	}
	return loom_ck_agree(ck, rc);
}

void loom_ck_tmp_name(const loom_ckpt_t *ck, long long step, char *out, size_t len)
{
	snprintf(out, len, ".tmp-step-%lld-%s", step, ck->job);
}

/* the creator (rank 0; a node leader for the caches) makes the temporary
 * directory DIR/TMPNAME and full-size files; then every rank opens those
 * it writes, and open_all ranks every file */
int loom_ck_save_files(loom_ckpt_t *ck, ck_op_t *op, const char *dir, const char *tmpname,
		  int creator, int open_all)
{
	char tmp[4200];
	int rc;
	snprintf(tmp, sizeof tmp, "%s/%s", dir, tmpname);
	op->sums.sums = calloc((size_t)op->p.cbase[ck->nt] + 1, sizeof *op->sums.sums);
	rc = op->sums.sums ? LOOM_SUCCESS : LOOM_ERR_NOMEM;
	if (creator && !rc) {
		loom_ck_rmtree(dir, tmpname); /* a crashed attempt of this job */
		if (mkdir(tmp, 0755) != 0) {
			LOOM_ERR("ckpt: mkdir %s: %s", tmp, strerror(errno));
			rc = LOOM_ERR_IO;
		}
		for (int i = 0; i < ck->nt && !rc; i++) {
			char f[4400];
			snprintf(f, sizeof f, "%s/%s", tmp, op->fnames[i]);
			int fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (fd < 0 || ftruncate(fd, (off_t)op->bytes[i]) != 0) {
				LOOM_ERR("ckpt: create %s: %s", f, strerror(errno));
				rc = LOOM_ERR_IO;
			}
			if (fd >= 0)
				close(fd);
		}
	}
	if ((rc = loom_ck_agree(ck, rc)))
		return rc;
	for (int i = 0; i < ck->nt && !rc; i++) {
		if (!open_all && !loom_ck_plan_touches(&op->p, ck->rank, i, op->independent))
			continue;
		char f[4400];
		snprintf(f, sizeof f, "%s/%s", tmp, op->fnames[i]);
		if ((op->fds[i] = open(f, O_RDWR | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			LOOM_ERR("ckpt: open %s: %s", f, strerror(errno));
			rc = LOOM_ERR_IO;
		}
	}
	return loom_ck_agree(ck, rc);
}

/* a local I/O failure, said where it happened, becomes everyone's */
static int agree_io(loom_ckpt_t *ck, ck_op_t *op, long long step)
{
	if (op->io_rc)
		LOOM_ERR("ckpt: step %lld: %s", step, op->why);
	return loom_ck_agree(ck, op->io_rc);
}

/* the data, on disk (fsynced), and every chunk's sum on every rank */
int loom_ck_save_data(loom_ckpt_t *ck, ck_op_t *op, long long step)
{
	int rc;
	if (!op->independent) {
		if ((rc = loom_ck_exchange(ck, op, 1)))
			return rc;
	} else {
		loom_ck_write_own(ck, op);
	}
	for (int i = 0; i < ck->nt && !op->io_rc; i++)
		if (op->fds[i] >= 0 && fsync(op->fds[i]) != 0) {
			snprintf(op->why, sizeof op->why, "fsync %s: %s", op->fnames[i], strerror(errno));
			op->io_rc = LOOM_ERR_IO;
		}
	if ((rc = agree_io(ck, op, step)))
		return rc;
	if (op->independent) {
		op->io_rc = loom_ck_readback_sums(op);
		if ((rc = agree_io(ck, op, step)))
			return rc;
	}
	return loom_ck_op_sum_chunks(ck, op);
}

/* tmp/MANIFEST, fsynced (rank 0; every node leader for the caches) */
int loom_ck_write_manifest(loom_ckpt_t *ck, const ck_op_t *op, long long step, const char *tmp)
{
	ckpt_manifest_t m;
	char mf[4200];
	int rc = LOOM_SUCCESS;
	memset(&m, 0, sizeof m);
	m.step = step;
	m.algo = op->sums.algo;
	m.chunk = op->p.chunk;
	m.ntensors = ck->nt;
	snprintf(m.writer, sizeof m.writer, "job=%s ranks=%d aggregators=%d mode=%s", ck->job,
		 ck->size, op->p.naggr, op->independent ? "independent" : "two-phase");
	m.t = calloc((size_t)ck->nt + 1, sizeof *m.t);
	if (!m.t)
		rc = LOOM_ERR_NOMEM;
	for (int i = 0; i < ck->nt && !rc; i++) {
		ckpt_mtensor_t *t = &m.t[i];
		const uint64_t *s = op->sums.sums + op->p.cbase[i];
		strcpy(t->name, ck->t[i].name);
		t->dtype = ck->t[i].dtype;
		t->ndim = ck->t[i].ndim;
		memcpy(t->shape, ck->t[i].shape, sizeof t->shape);
		t->bytes = op->bytes[i];
		snprintf(t->file, sizeof t->file, "%s", op->fnames[i]);
		t->sum = loom_ck_file_sum(m.algo, s, op->p.cbase[i + 1] - op->p.cbase[i]);
	}
	snprintf(mf, sizeof mf, "%s/MANIFEST", tmp);
	FILE *f = rc ? NULL : fopen(mf, "we");
	if (!rc && (!f || loom_ck_manifest_write(f, &m) != LOOM_SUCCESS || fflush(f) != 0 ||
		    fsync(fileno(f)) != 0)) {
		LOOM_ERR("ckpt: write %s: %s", mf, strerror(errno));
		rc = LOOM_ERR_IO;
	}
	if (f && fclose(f) != 0 && !rc)
		rc = LOOM_ERR_IO;
	free(m.t);
	if (!rc && loom_ck_fsync_path(tmp) != 0) {
		LOOM_ERR("ckpt: fsync %s: %s", tmp, strerror(errno));
		rc = LOOM_ERR_IO;
	}
	return rc;
}

/* rank 0: tmp becomes step-N; a step-N already there (the same step
 * again) is moved aside first and put back if the rename fails */
static int publish(loom_ckpt_t *ck, long long step, const char *tmp)
{
	struct stat st;
	char fin[4096], aside[4200], asname[128];
	snprintf(fin, sizeof fin, "%s/step-%lld", ck->dir, step);
	snprintf(asname, sizeof asname, ".replaced-step-%lld-%s", step, ck->job);
	aside[0] = 0;
	if (lstat(fin, &st) == 0) {
		snprintf(aside, sizeof aside, "%s/%s", ck->dir, asname);
		loom_ck_rmtree(ck->dir, asname);
		if (rename(fin, aside) != 0)
			aside[0] = 0;
	}
	if (rename(tmp, fin) != 0 || loom_ck_fsync_path(ck->dir) != 0) {
		LOOM_ERR("ckpt: rename %s to %s: %s", tmp, fin, strerror(errno));
		if (aside[0])
			rename(aside, fin);
		return LOOM_ERR_IO;
	}
	if (aside[0])
		loom_ck_rmtree(ck->dir, asname); /* a link moved aside stays, with a warning */
	if (loom_ck_write_latest(ck->dir, step) != LOOM_SUCCESS) {
		LOOM_ERR("ckpt: update %s/latest: %s", ck->dir, strerror(errno));
		return LOOM_ERR_IO;
	}
	return LOOM_SUCCESS;
}

/* why a stop signal stopped the run, as the task can tell (a scancel is a
 * SIGTERM too: loom.so's log line tells it apart): the requeue request's
 * reason= and the metric's label */
static enum loom_metric_stop stop_reason(int signal)
{
	return signal == SIGTERM ? LOOM_METRIC_STOP_PREEMPT : LOOM_METRIC_STOP_TIMELIMIT;
}

/* The request of docs/environment.md ("Requeue after a checkpoint"), the
 * one place its format is written: by the save below, and by programs that
 * save with their own code (the Python package's request_requeue). */
int loom_ckpt_request_requeue(const char *dir, long long step, int signal)
{
	const char *job = getenv("SLURM_JOB_ID"), *restart = getenv("SLURM_RESTART_COUNT");
	const char *want = getenv("LOOM_CKPT_REQUEUE"), *sstep = getenv("SLURM_STEP_ID");
	char text[256];
	if (!dir)
		dir = getenv("LOOM_CKPT_DIR");
	if (step < 0 || signal <= 0 || signal >= NSIG)
		return LOOM_ERR_INVALID;
	if (!dir || !*dir) {
		LOOM_ERR("ckpt: no requeue request: LOOM_CKPT_DIR is unset (start the job with "
			 "--loom-ckpt=DIR: loom.so requeues only such jobs)");
		return LOOM_ERR_INVALID;
	}
	if (!job || !*job || strlen(job) > 20) {
		LOOM_ERR("ckpt: no requeue request: SLURM_JOB_ID is unset, not a Slurm job");
		return LOOM_ERR_INVALID;
	}
	if (want && !strcmp(want, "0")) {
		LOOM_WARN("ckpt: LOOM_CKPT_REQUEUE=0: no requeue request for step %lld", step);
		return LOOM_SUCCESS;
	}
	/* the Slurm step too: only the step that wrote it acts on it */
	snprintf(text, sizeof text, "job=%.20s\nrestart=%.8s\nslurm_step=%.12s\nstep=%lld\nsignal=%s\n"
		 "reason=%s\n", job, restart && *restart ? restart : "0",
		 sstep && *sstep ? sstep : "none", step, loom_ck_sig_name(signal),
		 loom_metrics_stop_name(stop_reason(signal)));
	if (loom_ck_write_small(dir, LOOM_REQUEUE_FILE, text) != LOOM_SUCCESS) {
		LOOM_ERR("ckpt: cannot write %s/%s (%s): the job will not be requeued",
			 dir, LOOM_REQUEUE_FILE, strerror(errno));
		return LOOM_ERR_IO;
	}
	LOOM_WARN("ckpt: checkpoint step %lld committed after SIG%s: asking for a requeue "
		  "of job %s", step, loom_ck_sig_name(signal), job);
	return LOOM_SUCCESS;
}

/* Rank 0, after committing a checkpoint that a stop signal asked for:
 * tell loom.so (which requeues the job when its tasks exit) before any
 * rank returns from the save. Only under Slurm; nothing else reads it. */
static void requeue_request(loom_ckpt_t *ck, long long step)
{
	const char *want = getenv("LOOM_CKPT_REQUEUE");
	if (!getenv("SLURM_JOB_ID") || (want && !strcmp(want, "0")))
		return;
	loom_ckpt_request_requeue(ck->dir, step, ck->stopped);
}

static void *sweep_main(void *arg)
{
	struct ck_sweep *s = arg;
	loom_ck_prune_sweep(s->dir);
	return NULL;
}

void loom_ck_sweep_join(loom_ckpt_t *ck)
{
	if (ck->sweep && ck->sweep->active) {
		pthread_join(ck->sweep->th, NULL);
		ck->sweep->active = 0;
	}
}

/* rank 0, after the commit: the sweep starts (inline when no thread) */
static void sweep_start(loom_ckpt_t *ck)
{
	struct ck_sweep *s = ck->sweep;
	if (!s) {
		loom_ck_prune_sweep(ck->dir);
		return;
	}
	loom_ck_sweep_join(ck);      /* one sweep at a time */
	s->dir = ck->dir;
	if (pthread_create(&s->th, NULL, sweep_main, s) == 0)
		s->active = 1;
	else
		sweep_main(s);
}

/* rank 0: manifest, rename, latest, prune (the old steps renamed; their
 * removal in the background after the agreement) */
static int commit(loom_ckpt_t *ck, const ck_op_t *op, long long step, const char *tmp)
{
	int rc = loom_ck_write_manifest(ck, op, step, tmp);
	if (!rc)
		rc = publish(ck, step, tmp);
	if (!rc)
		loom_ck_prune_mark(ck->dir, ck->keep, step);
	return rc;
}

/* Every rank, once the agreement says a stop checkpoint is committed:
 * count it and write LOOM_METRICS_FILE now, then agree once more, rank 0
 * writing the requeue request just before. loom.so requeues the job as
 * the first task exits, and Slurm then kills the others: a rank that
 * flushed only at exit (or every LOOM_METRICS_INTERVAL) could be killed
 * first and never show its stop (t4006 under load). No rank returns
 * before the request exists, so no task can exit before it either. */
static int stop_committed(loom_ckpt_t *ck, long long step)
{
	loom_metrics_checkpoint_stop(loom_comm_metrics(ck->comm), stop_reason(ck->stopped));
	loom_metrics_flush();
	if (ck->rank == 0)
		requeue_request(ck, step);
	return loom_ck_agree(ck, LOOM_SUCCESS);
}

int loom_ck_save_now(loom_ckpt_t *ck, long long step)
{
	char tmp[4096] = "", tmpname[128];
	ck_op_t op;
	int rc;
	double t0 = loom_now(), t1;
	if ((rc = loom_ck_table_check(ck)))
		return rc;
	if ((rc = loom_ck_save_plan(ck, &op)) || (rc = save_mode(ck, &op)))
		goto out;
	loom_ck_tmp_name(ck, step, tmpname, sizeof tmpname);
	snprintf(tmp, sizeof tmp, "%s/%s", ck->dir, tmpname);
	if ((rc = loom_ck_save_files(ck, &op, ck->dir, tmpname, ck->rank == 0, 0)) || (rc = loom_ck_save_data(ck, &op, step)))
		goto out;
	t1 = loom_now();
	ck->st.data_s = t1 - t0;
	rc = loom_ck_agree(ck, ck->rank == 0 ? commit(ck, &op, step, tmp) : LOOM_SUCCESS);
	if (rc == LOOM_SUCCESS && ck->stopped)
		rc = stop_committed(ck, step);
	ck->st.commit_s = loom_now() - t1;
	if (rc == LOOM_SUCCESS && ck->rank == 0)
		sweep_start(ck);
out:
	ck->st.total_s = loom_now() - t0;
	loom_ck_op_stats(ck, &op);
	ck->st.mode = op.independent ? LOOM_CKPT_INDEPENDENT : LOOM_CKPT_TWO_PHASE;
	if (rc == LOOM_SUCCESS && !ck->flush_only)
		loom_metrics_checkpoint(loom_comm_metrics(ck->comm), ck->st.total_s, ck->st.bytes);
	if (rc == LOOM_SUCCESS && ck->rank == 0) {
		/* for loom.so's SIG@auto; best effort (warned), the save stands */
		unsigned long long all = 0;
		for (int i = 0; i < ck->nt; i++)
			all += op.bytes[i];
		loom_ck_times_record(ck->dir, step, ck->st.total_s, all);
	}
	if (rc && ck->rank == 0 && tmp[0])
		loom_ck_rmtree(ck->dir, tmpname); /* never a committed one: tmp is ours */
	loom_ck_op_free(ck, &op);
	return rc;
}
