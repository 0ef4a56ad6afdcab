/* runtime/ckpt/ckpt_api.c: the public entry points that choose where a
 * save or load goes: the node cache or the shared directory, blocking or
 * in the background (ckpt_async.c); finding the step to load (latest,
 * restore: the newest usable one, resume_step); the async switch, the
 * staging reserve and wait. The top of checkpoint/restart: nothing else here calls it. */
#include "config.h"
#include "util/util.h"
#include "ckpt/ckpt_internal.h"

#include <stdlib.h>

/* With a node cache: the save goes to the cache (in the background
 * when async), and every flush_every-th one on to the shared directory
 * in the background (from the staging copy; blocking when it does not
 * fit). */
static int save_cached(loom_ckpt_t *ck, long long step)
{
	int flush = ++ck->cached % ck->flush_every == 0, rc, shared;
	if (ck->async) {
		rc = loom_ck_bg_start(ck, step, CK_BG_CACHE | (flush ? CK_BG_SHARED : 0));
		if (rc <= 0)
			return rc;
	}
	if ((rc = loom_ck_save_cached(ck, step, &shared)) || !flush || shared)
		return rc;
	rc = loom_ck_bg_start(ck, step, CK_BG_SHARED);
	if (rc <= 0)
		return rc;
	ck->flush_only = 1;
	rc = loom_ck_save_now(ck, step);
	ck->flush_only = 0;
	return rc;
}

int loom_ckpt_save(loom_ckpt_t *ck, long long step)
{
	double t0 = loom_now();
	int rc;
	if (!ck || step < 0)
		return LOOM_ERR_INVALID;
	/* one save at a time; a failure of the one in flight is reported here */
	if ((rc = loom_ck_bg_settle(ck)))
		return rc;
	/* a stop save goes to the shared directory, blocking: a requeued job
	 * may start on other nodes */
	if (ck->cache && !ck->stopped) {
		rc = save_cached(ck, step);
		ck->st.blocked_s = loom_now() - t0;
		return rc;
	}
	if (ck->async && !ck->stopped) {
		rc = loom_ck_bg_start(ck, step, CK_BG_SHARED);
		if (rc <= 0) {
			ck->st.blocked_s = loom_now() - t0;
			return rc;
		}
	}
	rc = loom_ck_save_now(ck, step);
	ck->st.blocked_s = loom_now() - t0;
	return rc;
}

/* step from the shared directory */
static int load_shared(loom_ckpt_t *ck, long long step)
{
	char sdir[4096];
	ck_src_t src = { sdir, -1, NULL };
	snprintf(sdir, sizeof sdir, "%s/step-%lld", ck->dir, step);
	return loom_ck_load_from(ck, step, &src);
}

int loom_ckpt_load(loom_ckpt_t *ck, long long step)
{
	long long got;
	int rc;
	if (!ck || step < 0)
		return LOOM_ERR_INVALID;
	if ((rc = loom_ck_bg_settle(ck)))
		return rc;
	/* the node caches first, when they hold it */
	if (ck->cache) {
		rc = loom_ck_cache_restore(ck, step, step, &got);
		if (rc != LOOM_ERR_NOT_FOUND)
			return rc;
	}
	return load_shared(ck, step);
}

/* rank 0's list of committed steps (descending), on every rank */
static int steps_everywhere(loom_ckpt_t *ck, long long **steps, int *n)
{
	int64_t cnt = 0;
	long long *v = NULL;
	int c = 0, rc = LOOM_SUCCESS;
	if (ck->rank == 0) {
		rc = loom_ck_list_steps(ck->dir, &v, &c);
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
	if ((rc = loom_ck_agree(ck, rc)))
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
	if ((rc = loom_ck_bg_settle(ck)))
		return rc;
	if (ck->rank == 0) {
		long long *v = NULL;
		int n = 0;
		loom_ck_list_steps(ck->dir, &v, &n);
		for (int i = 0; i < n && s < 0; i++) {
			char sdir[4096], why[512];
			ckpt_manifest_t m;
			snprintf(sdir, sizeof sdir, "%s/step-%lld", ck->dir, v[i]);
			if (loom_ck_manifest_load(sdir, &m, why, sizeof why) == LOOM_SUCCESS && m.step == v[i])
				s = v[i];
			else
				LOOM_WARN("ckpt: skipping step-%lld: %s", v[i], why);
			loom_ck_manifest_free(&m);
		}
		free(v);
	}
	if ((rc = loom_broadcast(&s, &s, 1, LOOM_INT64, 0, ck->comm)))
		return rc;
	if (ck->cache) { /* a newer step may be in the node caches only */
		long long c = -1;
		if ((rc = loom_ck_cache_latest(ck, &c)))
			return rc;
		if (c > s)
			s = c;
	}
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
	if ((rc = loom_ck_bg_settle(ck)) || (rc = steps_everywhere(ck, &v, &n)))
		return rc;
	/* the node caches first, when they hold a step as new as the shared
	 * directory's newest (they are faster to read) */
	if (ck->cache) {
		rc = loom_ck_cache_restore(ck, n > 0 ? v[0] : -1, -1, step);
		if (rc != LOOM_ERR_NOT_FOUND) {
			free(v);
			return rc;
		}
	}
	rc = LOOM_ERR_NOT_FOUND;
	for (int i = 0; i < n; i++) {
		rc = load_shared(ck, v[i]);
		if (rc == LOOM_SUCCESS) {
			*step = v[i];
			if (i > 0 && ck->rank == 0)
				LOOM_WARN("ckpt: restored step-%lld (the newest usable checkpoint in %s)",
					  v[i], ck->dir);
			else if (ck->cache && ck->rank == 0)
				LOOM_INFO("ckpt: restored step-%lld from the shared directory %s", v[i],
					  ck->dir);
			break;
		}
		if (loom_ck_comm_error(rc))
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

int loom_ckpt_set_async(loom_ckpt_t *ck, int on)
{
	if (!ck || (on != 0 && on != 1))
		return LOOM_ERR_INVALID;
	ck->async = on;
	loom_ck_bg_prepare(ck); /* the first save then finds its staging faulted in */
	return LOOM_SUCCESS;
}

int loom_ckpt_reserve(loom_ckpt_t *ck, size_t bytes)
{
	if (!ck)
		return LOOM_ERR_INVALID;
	loom_ck_bg_reserve(ck, bytes); /* nothing when already held or over the limit */
	return LOOM_SUCCESS;
}

int loom_ckpt_wait(loom_ckpt_t *ck)
{
	if (!ck)
		return LOOM_ERR_INVALID;
	return loom_ck_bg_settle(ck);
}
