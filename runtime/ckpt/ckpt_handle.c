/* runtime/ckpt/ckpt_handle.c: the checkpoint handle: open/close, settings,
 * the registered tensors, the agreed stop. */
#include "config.h"
#include "util/util.h"
#include "ckpt/ckpt_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	ck->keep = (int)loom_env_long("ckpt", "LOOM_CKPT_KEEP", 2, 1, 1000000);
	ck->mode = LOOM_CKPT_AUTO;
	if ((e = getenv("LOOM_CKPT_MODE")) && *e) {
		if (!strcmp(e, "independent"))
			ck->mode = LOOM_CKPT_INDEPENDENT;
		else if (!strcmp(e, "two-phase"))
			ck->mode = LOOM_CKPT_TWO_PHASE;
		else if (strcmp(e, "auto"))
			LOOM_WARN("ckpt: LOOM_CKPT_MODE=%s not understood (auto|two-phase|independent); "
				  "using auto", e);
	}
	ck->async = (int)loom_env_long("ckpt", "LOOM_CKPT_ASYNC", 0, 0, 1);
	e = getenv("SLURM_JOB_ID");
	snprintf(ck->job, sizeof ck->job, "%s", e && *e ? e : "nojob");
	for (char *c = ck->job; *c; c++) /* it becomes part of file names */
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') ||
		      (*c >= 'A' && *c <= 'Z') || *c == '_' || *c == '-'))
			*c = '_';
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
	} else if ((rc = loom_ck_bg_new(ck)) == LOOM_SUCCESS) {
		rc = loom_ck_cache_open(ck);
	}
	rc = loom_ck_agree(ck, rc);
	if (rc == LOOM_SUCCESS)
		rc = loom_ck_cache_check(ck);
	if (rc != LOOM_SUCCESS) {
		loom_ck_bg_free(ck);
		free(ck->cache);
		free(ck->dir);
		free(ck);
		return rc;
	}
	/* rank 0's sweep of pruned steps; without it they are removed inline */
	if (ck->rank == 0)
		ck->sweep = calloc(1, sizeof *ck->sweep);
	/* a request of an earlier run of this job has been acted on */
	if (ck->rank == 0) {
		char p[4200];
		snprintf(p, sizeof p, "%s/%s", ck->dir, LOOM_REQUEUE_FILE);
		unlink(p);
	}
	loom_ck_signals_install();
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
	if (!ck || (mode != LOOM_CKPT_TWO_PHASE && mode != LOOM_CKPT_INDEPENDENT &&
		    mode != LOOM_CKPT_AUTO))
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
	int rc;
	if (!ck)
		return LOOM_ERR_INVALID;
	rc = loom_ck_bg_free(ck); /* the save in flight ends first */
	loom_ck_sweep_join(ck);
	free(ck->sweep);
	loom_ck_signals_remove();
	for (int i = 0; i < ck->nt; i++)
		free(ck->t[i].b);
	free(ck->t);
	free(ck->cache);
	free(ck->dir);
	free(ck);
	return rc;
}

int loom_ckpt_clear(loom_ckpt_t *ck)
{
	if (!ck)
		return LOOM_ERR_INVALID;
	for (int i = 0; i < ck->nt; i++)
		free(ck->t[i].b);
	ck->nt = 0; /* the table's array stays, for the next registrations */
	return LOOM_SUCCESS;
}

int loom_ckpt_tensor(loom_ckpt_t *ck, const char *name, loom_dtype_t dtype, int ndim,
		     const size_t *shape, const size_t *offset, const size_t *extent, void *data)
{
	ckpt_tensor_t *t = NULL;
	uint64_t sh[CKPT_MAX_NDIM], off[CKPT_MAX_NDIM], ext[CKPT_MAX_NDIM], bytes = 0;
	int declare = !offset && !extent && !data;
	if (!ck || !loom_ck_name_ok(name) || loom_dtype_size(dtype) == 0 || ndim < 1 ||
	    ndim > CKPT_MAX_NDIM || !shape || (!declare && (!offset || !extent || !data))) {
		LOOM_ERR("ckpt: loom_ckpt_tensor(%s): bad argument", name && loom_ck_name_ok(name) ? name : "?");
		return LOOM_ERR_INVALID;
	}
	for (int d = 0; d < ndim; d++) {
		sh[d] = shape[d];
		off[d] = declare ? 0 : offset[d];
		ext[d] = declare ? 0 : extent[d];
	}
	if (!loom_ck_shape_bytes(ndim, sh, loom_dtype_size(dtype), &bytes)) {
		LOOM_ERR("ckpt: tensor %s: shape too large (%d dimensions whose product times %zu "
			 "bytes reaches 2^60 bytes or overflows)", name, ndim, loom_dtype_size(dtype));
		return LOOM_ERR_INVALID;
	}
	if (!declare && loom_ck_block_runs(ndim, sh, off, ext, 1, NULL, NULL) < 0) {
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
		uint64_t total = bytes;
		for (int i = 0; i < ck->nt; i++)
			total += ck->t[i].bytes; /* the sum so far and bytes: each < 2^60 */
		if (total >= CKPT_BYTES_MAX || ck->nt >= 1000000) {
			LOOM_ERR("ckpt: tensor %s: the registered tensors would exceed 2^60 bytes "
				 "or a million tensors", name);
			return LOOM_ERR_INVALID;
		}
		if (ck->nt == ck->cap) {
			int nc = ck->cap ? 2 * ck->cap : 8;
			ckpt_tensor_t *nt = realloc(ck->t, sizeof *nt * (size_t)nc);
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
		t->bytes = bytes;
		memcpy(t->shape, sh, sizeof(uint64_t) * (size_t)ndim);
	}
	if (declare)
		return LOOM_SUCCESS;
	if (t->nb == t->cap) {
		int nc = t->cap ? 2 * t->cap : 4;
		ckpt_block_t *nb = realloc(t->b, sizeof *nb * (size_t)nc);
		if (!nb)
			return LOOM_ERR_NOMEM;
		t->b = nb;
		t->cap = nc;
	}
	ckpt_block_t *b = &t->b[t->nb++];
	memset(b, 0, sizeof *b);
	memcpy(b->off, off, sizeof(uint64_t) * (size_t)ndim);
	memcpy(b->ext, ext, sizeof(uint64_t) * (size_t)ndim);
	b->data = data;
	loom_ck_bg_prepare(ck); /* while async is on: staging for the grown state */
	return LOOM_SUCCESS;
}

int loom_ckpt_should_stop(loom_ckpt_t *ck, long long step, int *stop)
{
	int64_t v[3], r[3];
	int rc;
	if (!ck || !stop)
		return LOOM_ERR_INVALID;
	v[0] = ck->stopped ? ck->stopped : loom_ck_signal_seen();
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
				  loom_ck_sig_name((int)r[0]));
	}
	*stop = r[0] ? 1 : 0;
	/* stopping: the save in flight is committed before the stop save */
	return *stop ? loom_ck_bg_settle(ck) : LOOM_SUCCESS;
}
