/* runtime/ckpt/ckpt_cache.c: the node-local tier (LOOM_CKPT_CACHE): the
 * cache's path and checks, and the save (ckpt_cache_restore.c reads it),
 * which goes to the shared directory when the caches cannot take it.
 *
 * A save writes the virtual byte space of the checkpoint two-phase into
 * the caches: each node's aggregators write their domains into full-size
 * (sparse) files in their node's cache. With partner redundancy every
 * aggregator then sends its domain to the leader of the next node, which
 * writes it into its own cache at the same offsets. Each node commits its
 * copy alone: the temporary directory becomes step-N once MANIFEST (the
 * same on every node) and PIECES (the byte ranges this copy holds: its
 * own, and whose partner copies) are written.
 *
 * A restore takes a census of what the node leaders hold, picks the
 * newest step whose pieces cover the whole space (own copies first, a
 * partner copy where a node's own is gone), reads each piece on the node
 * that holds it (the plan's aggregators and domains given) and verifies
 * every chunk against the manifest, as from the shared directory. */
#include "config.h"
#include "comm/comm_query.h"
#include "util/util.h"
#include "ckpt/ckpt_internal.h"
#include "metrics/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* opening                                                             */

/* the characters of a node name or job id that may go into a path */
void loom_ck_path_safe(char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      *s == '_' || *s == '-' || *s == '.'))
			*s = '_';
}

/* %n: the node name (SLURMD_NODENAME, else the short host name); %j: the
 * job id; %%: %. 0, or -1 with the reason in why. */
static int cache_expand(const char *pat, char *out, size_t len, char *why, size_t whylen)
{
	char node[256], job[64];
	const char *e = getenv("SLURMD_NODENAME");
	size_t o = 0;
	if (e && *e) {
		snprintf(node, sizeof node, "%s", e);
	} else if (gethostname(node, sizeof node) != 0) {
		snprintf(node, sizeof node, "localhost");
	}
	node[sizeof node - 1] = 0;
	if (!(e && *e))
		node[strcspn(node, ".")] = 0;
	e = getenv("SLURM_JOB_ID");
	snprintf(job, sizeof job, "%s", e && *e ? e : "nojob");
	loom_ck_path_safe(node);
	loom_ck_path_safe(job);
	for (const char *p = pat; *p; p++) {
		const char *add = NULL;
		char one[2] = { *p, 0 };
		if (*p == '%') {
			p++;
			add = *p == 'n' ? node : *p == 'j' ? job : *p == '%' ? "%" : NULL;
			if (!add) {
				snprintf(why, whylen, "'%%%.1s' is not understood (only %%n, the node name; "
					 "%%j, the job id; %%%%)", *p ? p : "");
				return -1;
			}
		} else {
			add = one;
		}
		size_t n = strlen(add);
		if (o + n >= len) {
			snprintf(why, whylen, "longer than %zu characters once expanded", len - 1);
			return -1;
		}
		memcpy(out + o, add, n);
		o += n;
	}
	out[o] = 0;
	return 0;
}

int loom_ck_cache_open(loom_ckpt_t *ck)
{
	const char *pat = getenv("LOOM_CKPT_CACHE"), *red = getenv("LOOM_CKPT_REDUNDANCY");
	char path[4096], why[300];
	struct stat st;
	ck->flush_every = (int)loom_env_long("ckpt", "LOOM_CKPT_FLUSH", 1, 1, 1000000);
	if (!pat || !*pat)
		return LOOM_SUCCESS;
	if (pat[0] != '/') {
		LOOM_ERR("ckpt: LOOM_CKPT_CACHE=%.300s is not an absolute path: give a node-local "
			 "directory such as /tmp/ckpt-cache-%%j (--loom-ckpt-cache=DIR)", pat);
		return LOOM_ERR_INVALID;
	}
	if (cache_expand(pat, path, sizeof path, why, sizeof why) != 0) {
		LOOM_ERR("ckpt: LOOM_CKPT_CACHE=%.300s: %s", pat, why);
		return LOOM_ERR_INVALID;
	}
	/* the last component is made here, for this user only; anything
	 * already there must be a real directory of ours. A name in a shared
	 * directory (/tmp/ckpt-%j) can be squatted by another user: refused,
	 * naming the squatter, never taken nor silently done without */
	if (mkdir(path, 0700) != 0 && errno != EEXIST) {
		LOOM_ERR("ckpt: node cache %s (LOOM_CKPT_CACHE=%.300s): cannot create it: %s%s", path, pat,
			 strerror(errno), errno == ENOENT ? " (its parent directory does not exist)" : "");
		return LOOM_ERR_IO;
	}
	if (lstat(path, &st) != 0) {
		LOOM_ERR("ckpt: node cache %s: %s", path, strerror(errno));
		return LOOM_ERR_IO;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		char who[160];
		struct passwd pw, *pp = NULL;
		char pwbuf[1024];
		if (getpwuid_r(st.st_uid, &pw, pwbuf, sizeof pwbuf, &pp) || !pp)
			snprintf(who, sizeof who, "uid %u", (unsigned)st.st_uid);
		else
			snprintf(who, sizeof who, "uid %u (%.64s)", (unsigned)st.st_uid, pp->pw_name);
		LOOM_ERR("ckpt: node cache %s (LOOM_CKPT_CACHE=%.300s) is %s: refusing it (%s of %s; "
			 "give a directory of this job's user, uid %u: in a shared directory such as "
			 "/tmp, another user's entry at the name is a squatter's)", path, pat,
			 S_ISLNK(st.st_mode) ? "a symbolic link" : !S_ISDIR(st.st_mode) ?
			 "not a directory" : "owned by another user",
			 S_ISLNK(st.st_mode) ? "a link" : S_ISFIFO(st.st_mode) ? "a FIFO" :
			 S_ISDIR(st.st_mode) ? "a directory" : "a file", who, (unsigned)geteuid());
		return LOOM_ERR_IO;
	}
	if (access(path, W_OK | X_OK) != 0) {
		LOOM_ERR("ckpt: node cache %s is not writable: %s", path, strerror(errno));
		return LOOM_ERR_IO;
	}
	if (!(ck->cache = strdup(path)))
		return LOOM_ERR_NOMEM;
	ck->partner = loom_comm_nnodes(ck->comm) >= 2;
	if (red && *red && strcmp(red, "partner") && strcmp(red, "none"))
		LOOM_WARN("ckpt: LOOM_CKPT_REDUNDANCY=%s not understood (partner|none); using %s", red,
			  ck->partner ? "partner" : "none");
	else if (red && !strcmp(red, "none"))
		ck->partner = 0;
	else if (red && !strcmp(red, "partner") && !ck->partner && ck->rank == 0)
		LOOM_WARN("ckpt: LOOM_CKPT_REDUNDANCY=partner: the job runs on one node, there is no "
			  "partner node; the cache holds one copy");
	return LOOM_SUCCESS;
}

/* ------------------------------------------------------------------ */
/* saving                                                              */

int loom_ck_is_leader(const loom_ckpt_t *ck)
{
	const loom_comm_t *c = ck->comm;
	return loom_comm_node_leader(c, loom_comm_node_of(c, ck->rank)) == ck->rank;
}

const char *loom_ck_node_name(const loom_ckpt_t *ck, int rank)
{
	const loom_comm_t *c = ck->comm;
	return loom_comm_node_name(c, rank);
}

/* DIR/.loom-node-NAME, NAME made safe for a file name */
static void node_mark(const loom_ckpt_t *ck, const char *node, char *p, size_t len)
{
	char safe[64];
	snprintf(safe, sizeof safe, "%s", node);
	loom_ck_path_safe(safe);
	snprintf(p, len, "%s/.loom-node-%s", ck->cache, safe);
}

/* Each node's leader leaves a mark naming its node in its cache, then
 * looks for the marks of this job's other nodes: one there means two
 * nodes share the directory (a path on a shared file system without
 * %n), where their copies would overwrite each other. */
int loom_ck_cache_check(loom_ckpt_t *ck)
{
	const loom_comm_t *c = ck->comm;
	char p[4400], other[300] = "";
	int rc = LOOM_SUCCESS, fd;
	if (!ck->cache || loom_comm_nnodes(c) < 2)
		return LOOM_SUCCESS;
	if (loom_ck_is_leader(ck)) {
		node_mark(ck, loom_ck_node_name(ck, ck->rank), p, sizeof p);
		fd = open(p, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			LOOM_ERR("ckpt: node cache %s: cannot create %s: %s", ck->cache, p, strerror(errno));
			rc = LOOM_ERR_IO;
		} else {
			close(fd);
		}
	}
	if ((rc = loom_ck_agree(ck, rc)))
		return rc;
	for (int n = 0; loom_ck_is_leader(ck) && n < loom_comm_nnodes(c); n++) {
		struct stat st;
		const char *name = loom_ck_node_name(ck, loom_comm_node_leader(c, n));
		if (loom_comm_node_leader(c, n) == ck->rank)
			continue;
		node_mark(ck, name, p, sizeof p);
		if (lstat(p, &st) == 0 && !other[0])
			snprintf(other, sizeof other, "%s", name);
	}
	if (other[0]) {
		LOOM_ERR("ckpt: node cache %s is the same directory on %s and %s: give every node "
			 "its own (a node-local path, or %%n in LOOM_CKPT_CACHE / --loom-ckpt-cache)",
			 ck->cache, loom_ck_node_name(ck, ck->rank), other);
		rc = LOOM_ERR_INVALID;
	}
	return loom_ck_agree(ck, rc);
}

/* Every aggregator's domain to the leader of the next node, window by
 * window, read back from its own cache files; the leader writes what it
 * receives into its own at the same offsets. Sizes come from the plan
 * both ends share, never from the wire. */
static int partner_copy(loom_ckpt_t *ck, ck_op_t *op, long long step)
{
	loom_comm_t *c = ck->comm;
	const ckpt_plan_t *p = &op->p;
	int nn = loom_comm_nnodes(c), pos = loom_comm_node_of(c, ck->rank), to = loom_comm_node_leader(c, (pos + 1) % nn);
	int from = (pos + nn - 1) % nn, nin = 0, *in = NULL, rc = LOOM_SUCCESS;
	char *obuf = NULL, **ibuf = NULL;
	loom_request_t **q = NULL;
	if (loom_ck_is_leader(ck) && !(in = calloc((size_t)p->naggr + 1, sizeof *in)))
		rc = LOOM_ERR_NOMEM;
	for (int j = 0; in && j < p->naggr; j++)
		if (loom_comm_node_of(c, p->aggr[j]) == from)
			in[nin++] = j;
	if (!rc && p->my_aggr >= 0 && !(obuf = malloc(p->window)))
		rc = LOOM_ERR_NOMEM;
	if (!rc && !(ibuf = calloc((size_t)nin + 1, sizeof *ibuf)))
		rc = LOOM_ERR_NOMEM;
	for (int i = 0; !rc && i < nin; i++)
		if (!(ibuf[i] = malloc(p->window)))
			rc = LOOM_ERR_NOMEM;
	if (!rc && !(q = calloc((size_t)nin + 2, sizeof *q)))
		rc = LOOM_ERR_NOMEM;
	if ((rc = loom_ck_agree(ck, rc)))
		goto out;
	for (int k = 0; k < p->rounds && !rc; k++) {
		uint64_t lo, hi;
		int nq = 0;
		if (p->my_aggr >= 0) {
			loom_ck_plan_window(p, p->my_aggr, k, &lo, &hi);
			if (hi > lo) {
				if (!op->io_rc)
					op->io_rc = loom_ck_window_io(op, obuf, lo, hi, 0, op->why, sizeof op->why);
				rc = loom_isend(obuf, hi - lo, LOOM_INT8, to, c, &q[nq]);
				nq += !rc;
			}
		}
		for (int i = 0; i < nin && !rc; i++) {
			loom_ck_plan_window(p, in[i], k, &lo, &hi);
			if (hi > lo) {
				rc = loom_irecv(ibuf[i], hi - lo, LOOM_INT8, p->aggr[in[i]], c, &q[nq]);
				nq += !rc;
			}
		}
		for (int i = 0; i < nq; i++) { /* all of them, also after a failure */
			int w = loom_wait(q[i]);
			if (w && !rc)
				rc = w;
		}
		for (int i = 0; i < nin && !rc && !op->io_rc; i++) {
			loom_ck_plan_window(p, in[i], k, &lo, &hi);
			if (hi > lo)
				op->io_rc = loom_ck_window_io(op, ibuf[i], lo, hi, 1, op->why, sizeof op->why);
		}
	}
	for (int i = 0; i < ck->nt && !rc && !op->io_rc && nin; i++)
		if (op->fds[i] >= 0 && fsync(op->fds[i]) != 0) {
			snprintf(op->why, sizeof op->why, "fsync %s: %s", op->fnames[i], strerror(errno));
			op->io_rc = LOOM_ERR_IO;
		}
	if (!rc) {
		if (op->io_rc)
			LOOM_ERR("ckpt: step %lld: partner copy in %s: %s", step, ck->cache, op->why);
		rc = loom_ck_agree(ck, op->io_rc);
	}
out:
	for (int i = 0; ibuf && i < nin; i++)
		free(ibuf[i]);
	free(ibuf);
	free(obuf);
	free(in);
	free(q);
	return rc;
}

/* the leader's PIECES: its node's domains, and those it keeps for the
 * node before it */
static int write_pieces(loom_ckpt_t *ck, const ck_op_t *op, long long step, const char *tmp)
{
	const loom_comm_t *c = ck->comm;
	const ckpt_plan_t *p = &op->p;
	int nn = loom_comm_nnodes(c), pos = loom_comm_node_of(c, ck->rank), from = (pos + nn - 1) % nn, rc;
	size_t cap = 256 + (size_t)p->naggr * 160, at;
	char *text = malloc(cap);
	if (!text)
		return LOOM_ERR_NOMEM;
	at = (size_t)snprintf(text, cap, "%s\nstep %lld\nnode %s\ntotal %" PRIu64 "\n", CKPT_PIECES_HEADER,
			      step, loom_ck_node_name(ck, ck->rank), p->base[ck->nt]);
	for (int j = 0; j < p->naggr; j++) {
		int np = loom_comm_node_of(c, p->aggr[j]);
		if (p->dom[j + 1] == p->dom[j] || (np != pos && (!ck->partner || np != from)))
			continue;
		if (np == pos)
			at += (size_t)snprintf(text + at, cap - at, "own %" PRIu64 " %" PRIu64 "\n",
					       p->dom[j], p->dom[j + 1]);
		else
			at += (size_t)snprintf(text + at, cap - at, "partner %s %" PRIu64 " %" PRIu64 "\n",
					       loom_ck_node_name(ck, p->aggr[j]), p->dom[j], p->dom[j + 1]);
	}
	rc = loom_ck_write_small(tmp, CKPT_PIECES_FILE, text);
	if (rc)
		LOOM_ERR("ckpt: write %s/%s: %s", tmp, CKPT_PIECES_FILE, strerror(errno));
	free(text);
	return rc;
}

/* a node leader: PIECES, MANIFEST, then tmp becomes step-N in the cache
 * (a step-N already there is an older copy of that step: replaced) */
static int cache_commit(loom_ckpt_t *ck, const ck_op_t *op, long long step, const char *tmp)
{
	char fin[4200], name[64];
	int rc;
	if ((rc = write_pieces(ck, op, step, tmp)) ||
	    (rc = loom_ck_write_manifest(ck, op, step, tmp)))
		return rc;
	snprintf(name, sizeof name, "step-%lld", step);
	snprintf(fin, sizeof fin, "%s/%s", ck->cache, name);
	loom_ck_rmtree(ck->cache, name);
	if (rename(tmp, fin) != 0 || loom_ck_fsync_path(ck->cache) != 0) {
		LOOM_ERR("ckpt: rename %s to %s: %s", tmp, fin, strerror(errno));
		return LOOM_ERR_IO;
	}
	loom_ck_prune(ck->cache, ck->keep, step);
	return LOOM_SUCCESS;
}

int loom_ck_cache_save(loom_ckpt_t *ck, long long step)
{
	char tmp[4200] = "", tmpname[128];
	int leader = loom_ck_is_leader(ck), rc;
	double t0 = loom_now(), t1;
	ck_op_t op;
	if ((rc = loom_ck_table_check(ck)))
		return rc;
	if ((rc = loom_ck_save_plan(ck, &op)))
		goto out;
	op.independent = 0; /* a node's cache holds its aggregators' domains */
	loom_ck_tmp_name(ck, step, tmpname, sizeof tmpname);
	snprintf(tmp, sizeof tmp, "%s/%s", ck->cache, tmpname);
	/* the leader opens every file: partner pieces may land in any */
	if ((rc = loom_ck_save_files(ck, &op, ck->cache, tmpname, leader, leader && ck->partner)) ||
	    (rc = loom_ck_save_data(ck, &op, step)))
		goto out;
	if (ck->partner && (rc = partner_copy(ck, &op, step)))
		goto out;
	t1 = loom_now();
	ck->st.data_s = t1 - t0;
	rc = loom_ck_agree(ck, leader ? cache_commit(ck, &op, step, tmp) : LOOM_SUCCESS);
	ck->st.commit_s = loom_now() - t1;
out:
	ck->st.total_s = loom_now() - t0;
	loom_ck_op_stats(ck, &op);
	ck->st.mode = LOOM_CKPT_TWO_PHASE;
	if (rc == LOOM_SUCCESS)
		loom_metrics_checkpoint(loom_comm_metrics(ck->comm), ck->st.total_s, ck->st.bytes);
	if (rc && leader && tmp[0])
		loom_ck_rmtree(ck->cache, tmpname);
	loom_ck_op_free(ck, &op);
	if (rc && ck->rank == 0)
		LOOM_ERR("ckpt: step %lld: the save into the node caches failed: %s", step,
			 loom_strerror(rc));
	return rc;
}

int loom_ck_save_cached(loom_ckpt_t *ck, long long step, int *shared)
{
	int rc = loom_ck_cache_save(ck, step);
	*shared = 0;
	if (rc == LOOM_SUCCESS || loom_ck_comm_error(rc))
		return rc;
	/* agreed: every rank is here. The step is not lost for a full or
	 * broken cache: it goes where it would have been flushed */
	if (ck->rank == 0)
		LOOM_WARN("ckpt: step %lld: the node caches could not take it (%s); saving it to the "
			  "shared directory %s instead", step, loom_strerror(rc), ck->dir);
	*shared = 1;
	return loom_ck_save_now(ck, step);
}
