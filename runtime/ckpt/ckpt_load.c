/* runtime/ckpt/ckpt_load.c: the load of one step from one source (the
 * shared directory or the node caches): the manifest checked against the
 * registered tensors, the files read through the aggregators, every
 * chunk verified. Which step and source: ckpt_api.c. */
#include "config.h"
#include "util/util.h"
#include "ckpt/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* rank mroot's MANIFEST of src->sdir, parsed on every rank (collective) */
static int manifest_from(loom_ckpt_t *ck, const ck_src_t *src, ckpt_manifest_t *m, char *why,
			 size_t whylen)
{
	char *text = NULL;
	size_t len = 0;
	int64_t n = -1;
	int rc = LOOM_SUCCESS, c;
	memset(m, 0, sizeof *m);
	if (ck->rank == src->mroot) {
		rc = loom_ck_read_small(src->sdir, "MANIFEST", CKPT_MANIFEST_MAX, &text, &len, why, whylen);
		n = rc ? -1 : (int64_t)len;
	}
	if ((c = loom_broadcast(&n, &n, 1, LOOM_INT64, src->mroot, ck->comm)))
		goto out;
	if (n < 0) {
		if (ck->rank != src->mroot)
			snprintf(why, whylen, "%.400s/MANIFEST on rank %d: unreadable", src->sdir,
				 src->mroot);
		rc = rc ? rc : LOOM_ERR_IO;
		goto out;
	}
	if (ck->rank != src->mroot && !(text = malloc((size_t)n + 1)))
		rc = LOOM_ERR_NOMEM;
	if ((c = loom_ck_agree(ck, rc)))
		goto out;
	if (n > 0 && (c = loom_broadcast(text, text, (size_t)n, LOOM_INT8, src->mroot, ck->comm)))
		goto out;
	rc = loom_ck_manifest_parse(text, (size_t)n, m, why, whylen);
out:
	free(text);
	return c ? c : rc;
}

/* the manifest of sdir, and each registered tensor's file in it: sizes
 * and names into op, expected sums into want (a loom status, not agreed;
 * the reason in op->why) */
static int load_manifest(loom_ckpt_t *ck, ck_op_t *op, const ck_src_t *src, long long step,
			 ckpt_manifest_t *m, uint64_t **want)
{
	const char *sdir = src->sdir;
	int alloc = loom_ck_op_alloc(ck, op, 0), rc;
	rc = src->mroot < 0 ? loom_ck_manifest_load(sdir, m, op->why, sizeof op->why)
			    : manifest_from(ck, src, m, op->why, sizeof op->why);
	if (rc == LOOM_SUCCESS && !loom_ck_sum_supported(m->algo)) {
		snprintf(op->why, sizeof op->why, "%.400s/MANIFEST: checksum %s not supported by this build",
			 sdir, loom_ck_sum_name(m->algo));
		rc = LOOM_ERR_UNSUPPORTED;
	}
	if (rc == LOOM_SUCCESS && m->step != step) {
		snprintf(op->why, sizeof op->why, "%.400s/MANIFEST says step %lld", sdir, m->step);
		rc = LOOM_ERR_CORRUPT;
	}
	*want = calloc((size_t)ck->nt + 1, sizeof **want);
	if (!rc && (alloc || !*want))
		rc = LOOM_ERR_NOMEM;
	for (int i = 0; i < ck->nt && !rc; i++) {
		const ckpt_mtensor_t *t = NULL;
		for (int k = 0; k < m->ntensors; k++)
			if (!strcmp(m->t[k].name, ck->t[i].name))
				t = &m->t[k];
		if (!t) {
			snprintf(op->why, sizeof op->why, "%.300s: no tensor %s", sdir, ck->t[i].name);
			rc = LOOM_ERR_NOT_FOUND;
		} else if (t->dtype != ck->t[i].dtype || t->ndim != ck->t[i].ndim ||
			   memcmp(t->shape, ck->t[i].shape, sizeof(uint64_t) * (size_t)t->ndim)) {
			snprintf(op->why, sizeof op->why,
				 "%.300s: tensor %s has another dtype or shape (%s, %d dims)", sdir, t->name,
				 loom_dtype_name((loom_dtype_t)t->dtype), t->ndim);
			rc = LOOM_ERR_MISMATCH;
		} else {
			op->bytes[i] = t->bytes;
			(*want)[i] = t->sum;
			if (!(op->fnames[i] = strdup(t->file)))
				rc = LOOM_ERR_NOMEM;
		}
	}
	return rc;
}

/* opens the files this rank reads, of the manifest's sizes; on a failure
 * (op->io_rc) none stays open: the exchange still runs, reading nothing */
static void load_files(loom_ckpt_t *ck, ck_op_t *op, const char *sdir)
{
	op->sums.sums = calloc((size_t)op->p.cbase[ck->nt] + 1, sizeof *op->sums.sums);
	if (!op->sums.sums)
		op->io_rc = LOOM_ERR_NOMEM;
	for (int i = 0; i < ck->nt && !op->io_rc; i++) {
		char f[4200];
		struct stat st;
		if (!loom_ck_plan_touches(&op->p, ck->rank, i, 0))
			continue;
		snprintf(f, sizeof f, "%s/%s", sdir, op->fnames[i]);
		if ((op->fds[i] = open(f, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
			snprintf(op->why, sizeof op->why, "%.400s: %s", f, strerror(errno));
			op->io_rc = LOOM_ERR_CORRUPT;
		} else if (fstat(op->fds[i], &st) == 0 && (uint64_t)st.st_size != op->bytes[i]) {
			snprintf(op->why, sizeof op->why, "%.400s: size %lld bytes, manifest says %" PRIu64,
				 f, (long long)st.st_size, op->bytes[i]);
			op->io_rc = LOOM_ERR_CORRUPT;
		}
	}
	if (op->io_rc)
		for (int i = 0; i < ck->nt; i++)
			if (op->fds[i] >= 0) {
				close(op->fds[i]);
				op->fds[i] = -1;
			}
}

/* every file's sum against the manifest's */
static int load_verify(loom_ckpt_t *ck, const ck_op_t *op, const char *sdir, const uint64_t *want)
{
	const ckpt_plan_t *p = &op->p;
	int rc = LOOM_SUCCESS;
	for (int i = 0; i < ck->nt; i++) {
		uint64_t got = loom_ck_file_sum(op->sums.algo, op->sums.sums + p->cbase[i],
					     p->cbase[i + 1] - p->cbase[i]);
		if (got != want[i]) {
			if (ck->rank == 0)
				LOOM_WARN("ckpt: %s/%s (tensor %s): %s checksum mismatch: expected %016" PRIx64
					  ", got %016" PRIx64, sdir, op->fnames[i], ck->t[i].name,
					  loom_ck_sum_name(op->sums.algo), want[i], got);
			rc = LOOM_ERR_CORRUPT;
		}
	}
	return rc;
}

/* Every rank read its own copy of the manifest: chunk size, algorithm,
 * sizes and sums must be the same everywhere before they shape the plan
 * (a node that sees another directory or a stale cache would otherwise
 * cut other pieces and hang the exchange). Every rank says so. */
static int agree_manifest(loom_ckpt_t *ck, const ck_op_t *op, const ckpt_manifest_t *m,
			  const uint64_t *want, long long step)
{
	int64_t v[6], r[6];
	uint32_t h = 0;
	int rc;
	for (int i = 0; i < ck->nt; i++) {
		h = loom_ck_crc32c(h, &op->bytes[i], sizeof op->bytes[i]);
		h = loom_ck_crc32c(h, &want[i], sizeof want[i]);
	}
	v[0] = (int64_t)m->chunk;
	v[1] = -(int64_t)m->chunk;
	v[2] = m->algo;
	v[3] = -(int64_t)m->algo;
	v[4] = h;
	v[5] = -(int64_t)h;
	if ((rc = loom_allreduce(v, r, 6, LOOM_INT64, LOOM_MAX, ck->comm)))
		return rc;
	if (r[0] == -r[1] && r[2] == -r[3] && r[4] == -r[5])
		return LOOM_SUCCESS;
	LOOM_ERR("ckpt: ranks read different manifests of step %lld in %s: chunk %lld..%lld "
		 "bytes, checksum %s..%s, tensor sizes or sums %s (this rank: chunk %llu, %s); is "
		 "it the same shared directory on every node?", step, ck->dir, (long long)-r[1],
		 (long long)r[0], loom_ck_sum_name((int)-r[3]), loom_ck_sum_name((int)r[2]),
		 r[4] == -r[5] ? "agree" : "differ", (unsigned long long)m->chunk,
		 loom_ck_sum_name(m->algo));
	return LOOM_ERR_MISMATCH;
}

int loom_ck_load_from(loom_ckpt_t *ck, long long step, const ck_src_t *src)
{
	const char *sdir = src->sdir;
	uint64_t *want = NULL;
	ckpt_manifest_t m;
	ck_op_t op;
	int rc;
	double t0 = loom_now();
	memset(&m, 0, sizeof m);
	if ((rc = loom_ck_table_check(ck)))
		return rc;
	rc = load_manifest(ck, &op, src, step, &m, &want);
	if (rc && (ck->rank == 0 || ck->rank == src->mroot))
		LOOM_WARN("ckpt: %s", op.why);
	if ((rc = loom_ck_agree(ck, rc)) || (rc = agree_manifest(ck, &op, &m, want, step)))
		goto out;
	op.sums.algo = m.algo;
	if ((rc = loom_ck_plan_make(ck, &op.p, op.bytes, m.chunk, src->given)))
		goto out;
	load_files(ck, &op, sdir);
	if ((rc = loom_ck_exchange(ck, &op, 0)))
		goto out;
	if (op.io_rc)
		LOOM_WARN("ckpt: step %lld: %s", step, op.why);
	if ((rc = loom_ck_agree(ck, op.io_rc)) || (rc = loom_ck_op_sum_chunks(ck, &op)))
		goto out;
	rc = load_verify(ck, &op, sdir, want);
out:
	ck->st.total_s = ck->st.data_s = loom_now() - t0;
	ck->st.commit_s = 0;
	loom_ck_op_stats(ck, &op);
	ck->st.mode = LOOM_CKPT_TWO_PHASE;
	free(want);
	loom_ck_manifest_free(&m);
	loom_ck_op_free(ck, &op);
	return rc;
}
