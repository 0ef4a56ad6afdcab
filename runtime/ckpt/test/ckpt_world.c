/* unit test: checkpoint/restart on a world of size 1: commit layout,
 * manifest, keep/prune, corruption and partial checkpoints detected with
 * fallback, resharding between block layouts, both write modes, stop
 * signals (chained to the program's handler), async saves of a handle
 * whose tensors are cleared and registered again, the node cache tier,
 * restart detection. */
#include "config.h"
#include "loom.h"
#include "../../../t/tap.h"
#include "capture.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static loom_comm_t *w;
static char base[256];

/* capture stderr (the library's log lines) */
static void cap_begin(void)
{
	cap_begin_in(base);
}

static int exists(const char *fmt, const char *a, long long b)
{
	char p[600];
	struct stat st;
	snprintf(p, sizeof p, fmt, a, b);
	return stat(p, &st) == 0;
}

static int count_steps(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, "step-", 5);
	if (d)
		closedir(d);
	return n;
}

enum { R = 37, C = 23 };
static float A[R][C];      /* the "model": one matrix */
static int64_t counter[3]; /* and a small int tensor */

static void fill(int seed)
{
	for (int i = 0; i < R; i++)
		for (int j = 0; j < C; j++)
			A[i][j] = (float)(seed * 10000 + i * 100 + j);
	counter[0] = seed;
	counter[1] = -seed;
	counter[2] = (int64_t)seed << 40;
}

static int check(int seed)
{
	for (int i = 0; i < R; i++)
		for (int j = 0; j < C; j++)
			if (A[i][j] != (float)(seed * 10000 + i * 100 + j))
				return 0;
	return counter[0] == seed && counter[1] == -seed && counter[2] == (int64_t)seed << 40;
}

static int register_whole(loom_ckpt_t *ck)
{
	size_t sh[2] = { R, C }, off[2] = { 0, 0 }, sh1[1] = { 3 }, o1[1] = { 0 };
	return loom_ckpt_tensor(ck, "model.A", LOOM_FLOAT32, 2, sh, off, sh, A) ||
	       loom_ckpt_tensor(ck, "counter", LOOM_INT64, 1, sh1, o1, sh1, counter);
}

/* the same tensors as several blocks: block-cyclic rows of 5, columns
 * split 0..9 and 9..23; each block in a buffer of its own */
static float *blk[64];
static size_t blk_off[64][2], blk_ext[64][2];
static int nblk;

static int register_cyclic(loom_ckpt_t *ck)
{
	size_t sh[2] = { R, C }, sh1[1] = { 3 }, o1[1] = { 0 }, e1[1] = { 2 }, o2[1] = { 2 }, e2[1] = { 1 };
	int rc = 0;
	nblk = 0;
	for (size_t r0 = 0; r0 < R; r0 += 5)
		for (int cb = 0; cb < 2; cb++) {
			blk_off[nblk][0] = r0;
			blk_ext[nblk][0] = r0 + 5 <= R ? 5 : R - r0;
			blk_off[nblk][1] = cb ? 9 : 0;
			blk_ext[nblk][1] = cb ? C - 9 : 9;
			blk[nblk] = calloc(blk_ext[nblk][0] * blk_ext[nblk][1], sizeof(float));
			rc |= loom_ckpt_tensor(ck, "model.A", LOOM_FLOAT32, 2, sh, blk_off[nblk],
					       blk_ext[nblk], blk[nblk]);
			nblk++;
		}
	/* counter in two pieces, registered in reverse order */
	rc |= loom_ckpt_tensor(ck, "counter", LOOM_INT64, 1, sh1, o2, e2, &counter[2]);
	rc |= loom_ckpt_tensor(ck, "counter", LOOM_INT64, 1, sh1, o1, e1, &counter[0]);
	return rc;
}

static void cyclic_to_A(void)
{
	for (int b = 0; b < nblk; b++)
		for (size_t i = 0; i < blk_ext[b][0]; i++)
			for (size_t j = 0; j < blk_ext[b][1]; j++)
				A[blk_off[b][0] + i][blk_off[b][1] + j] = blk[b][i * blk_ext[b][1] + j];
}

static void A_to_cyclic(void)
{
	for (int b = 0; b < nblk; b++)
		for (size_t i = 0; i < blk_ext[b][0]; i++)
			for (size_t j = 0; j < blk_ext[b][1]; j++)
				blk[b][i * blk_ext[b][1] + j] = A[blk_off[b][0] + i][blk_off[b][1] + j];
}

static void free_cyclic(void)
{
	for (int b = 0; b < nblk; b++)
		free(blk[b]);
	nblk = 0;
}

static void flip_byte(const char *dir, long long step, const char *file, long off)
{
	char p[600];
	snprintf(p, sizeof p, "%s/step-%lld/%s", dir, step, file);
	int fd = open(p, O_RDWR);
	unsigned char c;
	if (pread(fd, &c, 1, off) == 1) {
		c ^= 0x10;
		if (pwrite(fd, &c, 1, off) != 1)
			diag("pwrite failed");
	}
	close(fd);
}

static volatile sig_atomic_t prog_handler_calls;
static void prog_handler(int sig)
{
	(void)sig;
	prog_handler_calls++;
}

static void t_open_errors(void)
{
	loom_ckpt_t *ck = (loom_ckpt_t *)1;
	char p[400];
	unsetenv("LOOM_CKPT_DIR");
	cap_begin();
	int rc = loom_ckpt_open(w, NULL, &ck);
	const char *e = cap_end();
	is_int(rc, LOOM_ERR_INVALID, "no directory at all: LOOM_ERR_INVALID");
	ok(ck == NULL, "... and no handle");
	like(e, "LOOM_CKPT_DIR", "... the message names LOOM_CKPT_DIR");
	snprintf(p, sizeof p, "%s/does-not-exist", base);
	cap_begin();
	rc = loom_ckpt_open(w, p, &ck);
	e = cap_end();
	is_int(rc, LOOM_ERR_IO, "a missing directory: LOOM_ERR_IO");
	like(e, p, "... the message names the directory");
}

/* An unwritable directory, opened by a user that is not root (root may
 * write anywhere): a child process, dropped to nobody when this runs as
 * root, opens a 0555 directory of the test's with a world of its own and
 * reports loom_ckpt_open's code, its log lines and its uid on a pipe.
 * Runs before the parent's loom_init (the child's world is its own). */
static void t_unwritable(void)
{
	char p[400], want[500], out[8192];
	int fd[2], status = -1, rc = 1, uid = -1;
	size_t n = 0;
	ssize_t got;
	pid_t pid;
	snprintf(p, sizeof p, "%s/ro", base);
	snprintf(want, sizeof want, "checkpoint directory %s is not writable: Permission denied", p);
	if (chmod(base, 0755) != 0 || mkdir(p, 0555) != 0 || chmod(p, 0555) != 0 || pipe(fd) != 0) {
		ok(0, "set up %s: %s", p, strerror(errno));
		return;
	}
	fflush(NULL);
	if ((pid = fork()) == 0) {
		loom_comm_t *cw;
		loom_ckpt_t *ck = NULL;
		close(fd[0]);
		dup2(fd[1], 2);
		if (geteuid() == 0) {
			struct passwd *pw = getpwnam("nobody");
			uid_t u = pw ? pw->pw_uid : 65534;
			gid_t g = pw ? pw->pw_gid : 65534;
			if (setgroups(0, NULL) != 0 || setgid(g) != 0 || setuid(u) != 0) {
				dprintf(fd[1], "cannot become uid %d: %s\n", (int)u, strerror(errno));
				_exit(3);
			}
		}
		if (loom_init(&cw) != LOOM_SUCCESS)
			_exit(4);
		int r = loom_ckpt_open(cw, p, &ck);
		fflush(stderr);
		dprintf(fd[1], "\nrc=%d uid=%d handle=%s\n", r, (int)geteuid(), ck ? "yes" : "no");
		if (ck)
			loom_ckpt_close(ck);
		loom_finalize(cw);
		_exit(0);
	}
	close(fd[1]);
	while (pid > 0 && n < sizeof out - 1 && (got = read(fd[0], out + n, sizeof out - 1 - n)) > 0)
		n += (size_t)got;
	out[n] = 0;
	close(fd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	is_int(status, 0, "unwritable directory: the child ran and exited 0");
	const char *r = strstr(out, "\nrc=");
	if (!r || sscanf(r, "\nrc=%d uid=%d", &rc, &uid) != 2)
		diag("child said: %s", out);
	ok(uid > 0, "... as a user that is not root (uid %d)", uid);
	is_int(rc, LOOM_ERR_IO, "an unwritable directory: LOOM_ERR_IO");
	like(out, "handle=no", "... and no handle");
	like(out, want, "... saying so, naming the directory");
}

static void t_commit_and_keep(const char *mode)
{
	char dir[400];
	loom_ckpt_t *ck;
	long long step = -7;
	snprintf(dir, sizeof dir, "%s/ck-%s", base, mode);
	mkdir(dir, 0755);
	setenv("LOOM_CKPT_MODE", mode, 1);
	setenv("LOOM_CKPT_DIR", dir, 1);
	is_int(loom_ckpt_open(w, NULL, &ck), LOOM_SUCCESS, "%s: open with LOOM_CKPT_DIR", mode);
	is_str(loom_ckpt_dir(ck), dir, "%s: the directory from the environment", mode);
	is_int(register_whole(ck), LOOM_SUCCESS, "%s: tensors registered", mode);
	is_int(loom_ckpt_latest(ck, &step), LOOM_ERR_NOT_FOUND, "%s: empty dir: latest is NOT_FOUND", mode);
	is_int(step, -1, "%s: ... step -1", mode);
	is_int(loom_ckpt_resume_step(ck, &step), LOOM_SUCCESS, "%s: resume_step on a fresh start", mode);
	is_int(step, -1, "%s: ... says -1 (start from scratch)", mode);
	for (int s = 1; s <= 4; s++) {
		fill(s);
		if (loom_ckpt_save(ck, s * 10) != LOOM_SUCCESS)
			break;
	}
	loom_ckpt_stats_t st;
	loom_ckpt_stats(ck, &st);
	ok(st.bytes == R * C * 4 + 24 && st.rounds > 1, "%s: stats: %zu bytes in %d rounds", mode,
	   st.bytes, st.rounds);
	is_int(count_steps(dir), 2, "%s: keep 2 (the default): two step directories remain", mode);
	ok(exists("%s/step-%lld/MANIFEST", dir, 40) && exists("%s/step-%lld/MANIFEST", dir, 30) &&
	   !exists("%s/step-%lld", dir, 20), "%s: the newest two are kept", mode);
	ok(!exists("%s/.tmp-step-%lld-nojob", dir, 40), "%s: no temporary directory left", mode);
	is_int(loom_ckpt_latest(ck, &step), LOOM_SUCCESS, "%s: latest found", mode);
	is_int(step, 40, "%s: latest is step 40", mode);
	{
		char p[500], line[64] = "";
		snprintf(p, sizeof p, "%s/latest", dir);
		FILE *f = fopen(p, "r");
		if (f) {
			if (!fgets(line, sizeof line, f))
				line[0] = 0;
			fclose(f);
		}
		is_str(line, "step-40\n", "%s: DIR/latest names step-40", mode);
	}
	fill(0);
	is_int(loom_ckpt_load(ck, 30), LOOM_SUCCESS, "%s: load step 30", mode);
	ok(check(3), "%s: step 30's values are back", mode);
	is_int(loom_ckpt_restore(ck, &step), LOOM_SUCCESS, "%s: restore", mode);
	ok(step == 40 && check(4), "%s: restore loads the newest (40)", mode);
	is_int(loom_ckpt_load(ck, 20), LOOM_ERR_NOT_FOUND,
	       "%s: a pruned step is NOT_FOUND", mode);
	loom_ckpt_set_keep(ck, 3);
	fill(5);
	loom_ckpt_save(ck, 50);
	is_int(count_steps(dir), 3, "%s: keep 3 after set_keep", mode);
	loom_ckpt_close(ck);
	ok(!exists("%s/.prune-step-%lld", dir, 10) && !exists("%s/.prune-step-%lld", dir, 20),
	   "%s: the pruned steps are removed by close at the latest (the sweep joined)", mode);
	unsetenv("LOOM_CKPT_MODE");
}

static void t_damage(void)
{
	char dir[400], p[600];
	loom_ckpt_t *ck;
	long long step;
	const char *e;
	snprintf(dir, sizeof dir, "%s/damage", base);
	mkdir(dir, 0755);
	setenv("LOOM_CKPT_KEEP", "5", 1);
	loom_ckpt_open(w, dir, &ck);
	unsetenv("LOOM_CKPT_KEEP");
	register_whole(ck);
	for (int s = 1; s <= 4; s++) {
		fill(s);
		loom_ckpt_save(ck, s);
	}
	is_int(count_steps(dir), 4, "LOOM_CKPT_KEEP=5: all four kept");
	/* newest: one flipped byte in the matrix file */
	flip_byte(dir, 4, "t0.bin", 1234);
	fill(0);
	cap_begin();
	int rc = loom_ckpt_load(ck, 4);
	e = cap_end();
	is_int(rc, LOOM_ERR_CORRUPT, "a flipped byte: load of that step is LOOM_ERR_CORRUPT");
	like(e, "step-4/t0.bin", "... the warning names the file");
	like(e, "expected", "... with expected and found sums");
	cap_begin();
	rc = loom_ckpt_restore(ck, &step);
	e = cap_end();
	is_int(rc, LOOM_SUCCESS, "restore falls back");
	is_int(step, 3, "... to step 3");
	ok(check(3), "... with step 3's values");
	like(e, "falling back", "... and says it fell back");
	/* step 3: truncated file; step 2: a damaged manifest */
	snprintf(p, sizeof p, "%s/step-3/t1.bin", dir);
	if (truncate(p, 10) != 0)
		diag("truncate failed");
	flip_byte(dir, 2, "MANIFEST", 30);
	cap_begin();
	rc = loom_ckpt_restore(ck, &step);
	e = cap_end();
	ok(rc == LOOM_SUCCESS && step == 1 && check(1), "truncated and bad-manifest steps skipped: step 1 loaded");
	like(e, "t1.bin: size 10 bytes, manifest says 24", "the short file is named with its size");
	like(e, "step-2/MANIFEST", "the damaged manifest is named");
	/* a partial checkpoint (a crash during commit) is never taken */
	snprintf(p, sizeof p, "%s/.tmp-step-9-123", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/step-8", dir); /* no MANIFEST: not committed */
	mkdir(p, 0755);
	is_int(loom_ckpt_latest(ck, &step), LOOM_SUCCESS, "latest with partial directories around");
	is_int(step, 4, "... is the newest with a manifest (4; its data is checked by load)");
	loom_ckpt_restore(ck, &step);
	is_int(step, 1, "restore ignores partial directories and still lands on step 1");
	/* saving the same step again replaces it; an older committed one survives */
	fill(7);
	is_int(loom_ckpt_save(ck, 4), LOOM_SUCCESS, "saving step 4 again");
	fill(0);
	ok(loom_ckpt_restore(ck, &step) == LOOM_SUCCESS && step == 4 && check(7),
	   "the re-saved step 4 is intact and loaded");
	ok(!exists("%s/.tmp-step-%lld-123", dir, 9), "prune cleared the stale temporary directory");
	ok(exists("%s/step-%lld/MANIFEST", dir, 1), "step 1 untouched by all this");
	loom_ckpt_close(ck);
}

static void t_reshard(void)
{
	char dir[400];
	loom_ckpt_t *ck;
	long long step;
	snprintf(dir, sizeof dir, "%s/reshard", base);
	mkdir(dir, 0755);
	/* save from 46 blocks, load into one; then the reverse, both modes */
	loom_ckpt_open(w, dir, &ck);
	register_cyclic(ck);
	fill(11);
	A_to_cyclic();
	is_int(loom_ckpt_save(ck, 1), LOOM_SUCCESS, "save from a block-cyclic layout (%d blocks)", nblk);
	loom_ckpt_close(ck);
	free_cyclic();
	loom_ckpt_open(w, dir, &ck);
	register_whole(ck);
	fill(0);
	ok(loom_ckpt_restore(ck, &step) == LOOM_SUCCESS && check(11), "load into one block: equal");
	loom_ckpt_set_mode(ck, LOOM_CKPT_INDEPENDENT);
	fill(12);
	is_int(loom_ckpt_save(ck, 2), LOOM_SUCCESS, "save from one block (independent)");
	loom_ckpt_close(ck);
	loom_ckpt_open(w, dir, &ck);
	register_cyclic(ck);
	fill(0);
	ok(loom_ckpt_restore(ck, &step) == LOOM_SUCCESS && step == 2, "restore into block-cyclic");
	cyclic_to_A();
	ok(check(12), "block-cyclic buffers hold the tensor");
	free_cyclic();
	loom_ckpt_close(ck);
	/* mismatches */
	loom_ckpt_open(w, dir, &ck);
	{
		size_t sh[2] = { R, C + 1 }, off[2] = { 0, 0 };
		static float other[R * (C + 1)];
		loom_ckpt_tensor(ck, "model.A", LOOM_FLOAT32, 2, sh, off, sh, other);
		cap_begin();
		int rc = loom_ckpt_load(ck, 2);
		cap_end();
		is_int(rc, LOOM_ERR_MISMATCH, "another shape: LOOM_ERR_MISMATCH");
		like(cap_text, "model.A", "... naming the tensor");
	}
	loom_ckpt_close(ck);
	loom_ckpt_open(w, dir, &ck);
	{
		size_t sh[1] = { 4 }, off[1] = { 0 };
		static int32_t x[4];
		loom_ckpt_tensor(ck, "not.there", LOOM_INT32, 1, sh, off, sh, x);
		cap_begin();
		int rc = loom_ckpt_load(ck, 2);
		cap_end();
		is_int(rc, LOOM_ERR_NOT_FOUND, "a tensor the checkpoint lacks: LOOM_ERR_NOT_FOUND");
		size_t bad[1] = { 3 }, ext[1] = { 2 };
		is_int(loom_ckpt_tensor(ck, "y", LOOM_INT32, 1, sh, bad, ext, x), LOOM_ERR_INVALID,
		       "a block past the shape is refused");
		is_int(loom_ckpt_tensor(ck, "bad name", LOOM_INT32, 1, sh, off, sh, x), LOOM_ERR_INVALID,
		       "a name with a space is refused");
	}
	loom_ckpt_close(ck);
}

static void t_signals(void)
{
	char dir[400];
	loom_ckpt_t *ck;
	int stop = -1;
	struct sigaction sa, cur;
	snprintf(dir, sizeof dir, "%s/sig", base);
	mkdir(dir, 0755);
	/* the program's own SIGTERM handler */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = prog_handler;
	sigaction(SIGTERM, &sa, NULL);
	setenv("LOOM_CKPT_SIGNAL", "USR1@60", 1);
	loom_ckpt_open(w, dir, &ck);
	is_int(loom_ckpt_should_stop(ck, 0, &stop), LOOM_SUCCESS, "should_stop");
	is_int(stop, 0, "... no signal: 0");
	raise(SIGTERM);
	is_int(prog_handler_calls, 1, "SIGTERM: the program's handler still ran");
	loom_ckpt_should_stop(ck, 1, &stop);
	is_int(stop, 1, "... and should_stop says 1");
	loom_ckpt_should_stop(ck, 2, &stop);
	is_int(stop, 1, "... and keeps saying so");
	loom_ckpt_close(ck);
	sigaction(SIGTERM, NULL, &cur);
	ok(!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == prog_handler,
	   "after close the program's SIGTERM handler is back");
	sigaction(SIGUSR1, NULL, &cur);
	ok(!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN,
	   "and SIGUSR1 (LOOM_CKPT_SIGNAL, default before) is ignored, not deadly");
	raise(SIGUSR1);
	ok(1, "a late SIGUSR1 after close does not kill the finishing program");
	/* USR1 with the default disposition: caught, the process lives */
	setenv("SLURM_JOB_ID", "77", 1);
	loom_ckpt_open(w, dir, &ck);
	raise(SIGUSR1);
	loom_ckpt_should_stop(ck, 3, &stop);
	is_int(stop, 1, "LOOM_CKPT_SIGNAL=USR1@60: SIGUSR1 caught, should_stop 1");
	{
		/* the checkpoint it asked for leaves the requeue request for loom.so */
		char rq[500], text[256] = "";
		float x[4] = { 1, 2, 3, 4 };
		size_t shape = 4, off = 0, ext = 4;
		FILE *f;
		setenv("SLURM_RESTART_COUNT", "3", 1);
		setenv("SLURM_STEP_ID", "2", 1);
		snprintf(rq, sizeof rq, "%s/.loom-requeue", dir);
		loom_ckpt_tensor(ck, "x", LOOM_FLOAT32, 1, &shape, &off, &ext, x);
		is_int(loom_ckpt_save(ck, 3), LOOM_SUCCESS, "save after the stop");
		if ((f = fopen(rq, "r"))) {
			size_t n = fread(text, 1, sizeof text - 1, f);
			text[n] = 0;
			fclose(f);
		}
		is_str(text, "job=77\nrestart=3\nslurm_step=2\nstep=3\nsignal=USR1\nreason=timelimit\n",
		       "it leaves .loom-requeue naming job, restart, Slurm step, step, signal and "
		       "reason (the LOOM_CKPT_SIGNAL: timelimit)");
		loom_ckpt_close(ck);
		loom_ckpt_open(w, dir, &ck);
		ok(access(rq, F_OK) != 0, "the next open removes it (the request has been acted on)");
		loom_ckpt_should_stop(ck, 4, &stop);
		is_int(stop, 0, "a new handle does not inherit the earlier stop");
		raise(SIGUSR1);
		loom_ckpt_should_stop(ck, 4, &stop);
		is_int(stop, 1, "the parked SIGUSR1 is caught again by the next handle");
		loom_ckpt_close(ck);
		loom_ckpt_open(w, dir, &ck);
		loom_ckpt_tensor(ck, "x", LOOM_FLOAT32, 1, &shape, &off, &ext, x);
		is_int(loom_ckpt_save(ck, 4), LOOM_SUCCESS, "a save without a stop");
		ok(access(rq, F_OK) != 0, "leaves no requeue request (a normal checkpoint)");
		unsetenv("SLURM_JOB_ID");
		unsetenv("SLURM_RESTART_COUNT");
		unsetenv("SLURM_STEP_ID");
	}
	loom_ckpt_close(ck);
	/* an ignored signal stays ignored */
	signal(SIGUSR2, SIG_IGN);
	setenv("LOOM_CKPT_SIGNAL", "SIGUSR2", 1);
	loom_ckpt_open(w, dir, &ck);
	sigaction(SIGUSR2, NULL, &cur);
	ok(cur.sa_handler == SIG_IGN, "a signal the program ignores is left ignored");
	loom_ckpt_close(ck);
	unsetenv("LOOM_CKPT_SIGNAL");
	signal(SIGTERM, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
}

/* Bytes no rank holds are saved as zeros, also in windows the aggregator
 * reuses (several 1 MiB rounds of a 3 MiB tensor with holes) */
static void t_holes(void)
{
	enum { N = 3 * 262144 + 1000 };  /* floats: 3 MiB and a bit */
	char dir[400];
	loom_ckpt_t *ck;
	size_t shape = N, off1 = 0, ext1 = 100000, off2 = 400000, ext2 = 200000, off3 = 700000,
	       ext3 = N - 700000, zero = 0, all = N;
	float *a = malloc(N * sizeof *a), *back = malloc(N * sizeof *back);
	long long step;
	int bad = 0;
	for (size_t i = 0; i < N; i++)
		a[i] = (float)i + 1.0f;
	snprintf(dir, sizeof dir, "%s/holes", base);
	mkdir(dir, 0755);
	setenv("LOOM_CKPT_BUFFER_MB", "1", 1);
	loom_ckpt_open(w, dir, &ck);
	loom_ckpt_tensor(ck, "h", LOOM_FLOAT32, 1, &shape, &off1, &ext1, a + off1);
	loom_ckpt_tensor(ck, "h", LOOM_FLOAT32, 1, &shape, &off2, &ext2, a + off2);
	loom_ckpt_tensor(ck, "h", LOOM_FLOAT32, 1, &shape, &off3, &ext3, a + off3);
	is_int(loom_ckpt_save(ck, 1), LOOM_SUCCESS, "holes: saved over several rounds");
	loom_ckpt_close(ck);
	loom_ckpt_open(w, dir, &ck);
	memset(back, 0xff, N * sizeof *back);
	loom_ckpt_tensor(ck, "h", LOOM_FLOAT32, 1, &shape, &zero, &all, back);
	is_int(loom_ckpt_restore(ck, &step), LOOM_SUCCESS, "holes: loaded whole");
	for (size_t i = 0; i < N; i++) {
		int held = i < off1 + ext1 || (i >= off2 && i < off2 + ext2) || i >= off3;
		if (held ? back[i] != a[i] : back[i] != 0.0f)
			bad++;
	}
	is_int(bad, 0, "holes: held bytes come back, the rest are zeros");
	loom_ckpt_close(ck);
	unsetenv("LOOM_CKPT_BUFFER_MB");
	free(a);
	free(back);
}

/* async: buffers changed right after the save returns; the copy is saved */
static void t_async(void)
{
	char dir[400];
	loom_ckpt_t *ck;
	loom_ckpt_stats_t st;
	long long step = -1;
	snprintf(dir, sizeof dir, "%s/ck-async", base);
	mkdir(dir, 0755);
	setenv("LOOM_CKPT_ASYNC", "1", 1);
	is_int(loom_ckpt_open(w, dir, &ck), LOOM_SUCCESS, "async: open with LOOM_CKPT_ASYNC=1");
	unsetenv("LOOM_CKPT_ASYNC");
	register_whole(ck);
	is_int(loom_ckpt_set_async(ck, 2), LOOM_ERR_INVALID, "async: set_async(2) is INVALID");
	is_int(loom_ckpt_set_async(NULL, 1), LOOM_ERR_INVALID, "async: set_async(NULL) is INVALID");
	is_int(loom_ckpt_wait(ck), LOOM_SUCCESS, "async: wait with nothing in flight");
	fill(6);
	is_int(loom_ckpt_save(ck, 60), LOOM_SUCCESS, "async: save 60 returns");
	fill(7); /* what a training step does next */
	is_int(loom_ckpt_save(ck, 70), LOOM_SUCCESS, "async: save 70 waits for 60, returns");
	fill(8);
	is_int(loom_ckpt_wait(ck), LOOM_SUCCESS, "async: wait: committed");
	loom_ckpt_stats(ck, &st);
	ok(st.bytes == R * C * 4 + 24 && st.total_s > 0 && st.blocked_s > 0,
	   "async: stats of the background save: %zu bytes, total %.6f s, blocked %.6f s",
	   st.bytes, st.total_s, st.blocked_s);
	is_int(loom_ckpt_latest(ck, &step), LOOM_SUCCESS, "async: latest found");
	is_int(step, 70, "async: latest is step 70");
	is_int(loom_ckpt_load(ck, 60), LOOM_SUCCESS, "async: load step 60");
	ok(check(6), "async: step 60 holds the values at its call, not the later ones");
	fill(9);
	loom_ckpt_save(ck, 90);
	is_int(loom_ckpt_close(ck), LOOM_SUCCESS, "async: close waits for the save in flight");
	loom_ckpt_open(w, dir, &ck);
	register_whole(ck);
	is_int(loom_ckpt_restore(ck, &step), LOOM_SUCCESS, "async: restore after close");
	ok(step == 90 && check(9), "async: step 90, committed before close returned");
	loom_ckpt_close(ck);
}

/* async, overlapped: a state of many staging pieces in three blocks of
 * odd sizes, whose background save writes while the caller still copies
 * it (LOOM_CKPT_TEST_HOLD: the copy holds after its first piece until
 * the writer has had to wait for the next); the buffers are overwritten
 * as soon as the save returns, in both write modes: each step holds the
 * values at its call, byte for byte (the second save's staging holds the
 * first's values until the copy passes) */
enum { BIG_ROWS = 1031, BIG_COLS = 4099 }; /* int32: about 16 MiB, 4 staging pieces */
static uint32_t big_val(int seed, size_t i)
{
	return (uint32_t)(i * 2654435761u) ^ (uint32_t)seed;
}

static void big_fill(uint32_t *b, int seed)
{
	for (size_t i = 0; i < (size_t)BIG_ROWS * BIG_COLS; i++)
		b[i] = big_val(seed, i);
}

static int big_register(loom_ckpt_t *ck, uint32_t *b)
{
	size_t sh[2] = { BIG_ROWS, BIG_COLS }, rows[4] = { 0, 517, 518, BIG_ROWS };
	for (int k = 0; k < 3; k++) {
		size_t off[2] = { rows[k], 0 }, ext[2] = { rows[k + 1] - rows[k], BIG_COLS };
		if (loom_ckpt_tensor(ck, "big", LOOM_INT32, 2, sh, off, ext, b + rows[k] * BIG_COLS))
			return -1;
	}
	return register_whole(ck);
}

static void t_async_pieces(const char *mode)
{
	char dir[400];
	loom_ckpt_t *ck;
	size_t n = (size_t)BIG_ROWS * BIG_COLS, bad;
	uint32_t *b = malloc(n * sizeof *b);
	snprintf(dir, sizeof dir, "%s/ck-pieces-%s", base, mode);
	mkdir(dir, 0755);
	setenv("LOOM_CKPT_MODE", mode, 1);
	setenv("LOOM_CKPT_CHUNK", "1048576", 1);
	setenv("LOOM_CKPT_BUFFER_BYTES", "3000000", 1);
	setenv("LOOM_CKPT_TEST_HOLD", "1", 1);
	ok(b && loom_ckpt_open(w, dir, &ck) == LOOM_SUCCESS && big_register(ck, b) == 0 &&
	   loom_ckpt_set_async(ck, 1) == LOOM_SUCCESS, "pieces %s: open, 16 MiB in 3 blocks", mode);
	for (int s = 1; s <= 2; s++) {
		big_fill(b, s);
		fill(s);
		is_int(loom_ckpt_save(ck, s), LOOM_SUCCESS, "pieces %s: async save %d returns", mode, s);
		big_fill(b, 100 + s); /* while its save writes */
		fill(100 + s);
	}
	is_int(loom_ckpt_wait(ck), LOOM_SUCCESS, "pieces %s: wait: committed", mode);
	for (int s = 1; s <= 2; s++) {
		is_int(loom_ckpt_load(ck, s), LOOM_SUCCESS, "pieces %s: load step %d", mode, s);
		bad = 0;
		for (size_t i = 0; i < n; i++)
			bad += b[i] != big_val(s, i);
		ok(bad == 0 && check(s), "pieces %s: step %d holds the values at its call "
		   "(%zu values differ)", mode, s, bad);
	}
	is_int(loom_ckpt_close(ck), LOOM_SUCCESS, "pieces %s: close", mode);
	setenv("LOOM_CKPT_CHUNK", "4096", 1);
	setenv("LOOM_CKPT_BUFFER_BYTES", "1000", 1);
	unsetenv("LOOM_CKPT_MODE");
	unsetenv("LOOM_CKPT_TEST_HOLD");
	free(b);
}

/* clear and reserve: one async handle saves a state registered afresh
 * for each save (other buffers, then one more tensor), as the DCP
 * writer does, with staging reserved before anything is registered */
static int register_extra(loom_ckpt_t *ck, int64_t *extra)
{
	size_t sh[1] = { 5 }, off[1] = { 0 };
	return register_whole(ck) ||
	       loom_ckpt_tensor(ck, "extra", LOOM_INT64, 1, sh, off, sh, extra);
}

static void t_clear(void)
{
	char dir[400];
	loom_ckpt_t *ck;
	long long step = -1;
	int64_t extra[5] = { 1, 2, 3, 4, 5 }, got[5] = { 0 };
	snprintf(dir, sizeof dir, "%s/ck-clear", base);
	mkdir(dir, 0755);
	is_int(loom_ckpt_clear(NULL), LOOM_ERR_INVALID, "clear(NULL) is INVALID");
	is_int(loom_ckpt_reserve(NULL, 1), LOOM_ERR_INVALID, "reserve(NULL) is INVALID");
	is_int(loom_ckpt_open(w, dir, &ck), LOOM_SUCCESS, "clear: open");
	is_int(loom_ckpt_reserve(ck, sizeof A + sizeof counter + sizeof extra), LOOM_SUCCESS,
	       "clear: reserve staging before any registration");
	is_int(loom_ckpt_set_async(ck, 1), LOOM_SUCCESS, "clear: async on");
	is_int(loom_ckpt_clear(ck), LOOM_SUCCESS, "clear: with nothing registered");
	ok(register_cyclic(ck) == 0, "clear: first state registered in blocks");
	fill(1);
	A_to_cyclic();
	is_int(loom_ckpt_save(ck, 10), LOOM_SUCCESS, "clear: async save 10 returns");
	is_int(loom_ckpt_clear(ck), LOOM_SUCCESS, "clear: while save 10 is in flight");
	free_cyclic(); /* its buffers gone: save 10 holds its staging copy */
	ok(register_extra(ck, extra) == 0, "clear: a new table, one tensor more, registered");
	fill(2);
	is_int(loom_ckpt_save(ck, 20), LOOM_SUCCESS, "clear: save 20 (waits for 10) returns");
	fill(3);
	extra[0] = -1;
	is_int(loom_ckpt_wait(ck), LOOM_SUCCESS, "clear: wait: committed");
	is_int(loom_ckpt_latest(ck, &step), LOOM_SUCCESS, "clear: latest found");
	is_int(step, 20, "clear: latest is step 20");
	loom_ckpt_clear(ck);
	register_whole(ck);
	is_int(loom_ckpt_load(ck, 10), LOOM_SUCCESS, "clear: step 10 loads into the whole layout");
	ok(check(1), "clear: step 10 holds the values of the blocks freed after its save");
	loom_ckpt_clear(ck);
	register_extra(ck, got);
	is_int(loom_ckpt_load(ck, 20), LOOM_SUCCESS, "clear: step 20 loads with its extra tensor");
	ok(check(2) && got[0] == 1 && got[4] == 5, "clear: step 20 holds the values at its call");
	setenv("LOOM_CKPT_STAGING_MB", "1", 1);
	is_int(loom_ckpt_reserve(ck, (size_t)4 << 20), LOOM_SUCCESS,
	       "clear: reserve over LOOM_CKPT_STAGING_MB does nothing, successfully");
	unsetenv("LOOM_CKPT_STAGING_MB");
	is_int(loom_ckpt_close(ck), LOOM_SUCCESS, "clear: close");
}

/* the node cache on one node: %n/%j expanded, no partner (one node),
 * every 2nd save flushed, restore from the cache when it is newer, a
 * damaged or hostile cached step skipped with a warning */
static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		diag("cannot write %s", path);
}

static void t_cache(void)
{
	char dir[400], cdir[500], pat[500], p[700];
	loom_ckpt_t *ck;
	long long step = -1;
	const char *e;
	snprintf(dir, sizeof dir, "%s/ck-cache", base);
	mkdir(dir, 0755);
	snprintf(pat, sizeof pat, "%s/cache-%%n-%%j-%%%%", base);
	snprintf(cdir, sizeof cdir, "%s/cache-nodeA-77-%%", base);
	setenv("LOOM_CKPT_CACHE", pat, 1);
	setenv("SLURMD_NODENAME", "nodeA", 1);
	setenv("SLURM_JOB_ID", "77", 1);
	setenv("LOOM_CKPT_FLUSH", "2", 1);
	setenv("LOOM_CKPT_REDUNDANCY", "partner", 1);
	cap_begin();
	int rc = loom_ckpt_open(w, dir, &ck);
	e = cap_end();
	is_int(rc, LOOM_SUCCESS, "cache: open with LOOM_CKPT_CACHE=%s", pat);
	like(e, "runs on one node, there is no partner node", "cache: partner asked on one node: said");
	register_whole(ck);
	for (int s = 1; s <= 3; s++) {
		fill(20 + s);
		is_int(loom_ckpt_save(ck, s), LOOM_SUCCESS, "cache: save %d", s);
	}
	is_int(loom_ckpt_wait(ck), LOOM_SUCCESS, "cache: the background flush committed");
	ok(exists("%s/step-%lld/PIECES", cdir, 3) && exists("%s/step-%lld/t0.bin", cdir, 3),
	   "cache: %s/step-3 holds PIECES and the data", cdir);
	ok(exists("%s/step-%lld", dir, 2) && !exists("%s/step-%lld", dir, 3) &&
	   !exists("%s/step-%lld", dir, 1), "cache: the shared directory holds step 2 only (flush every 2nd)");
	is_int(loom_ckpt_latest(ck, &step), LOOM_SUCCESS, "cache: latest");
	is_int(step, 3, "cache: latest sees step 3 in the cache");
	fill(0);
	is_int(loom_ckpt_restore(ck, &step), LOOM_SUCCESS, "cache: restore");
	ok(step == 3 && check(23), "cache: step 3 from the cache, values right");
	fill(0);
	is_int(loom_ckpt_load(ck, 2), LOOM_SUCCESS, "cache: load step 2 (in both tiers)");
	ok(check(22), "cache: step 2 values right");
	/* a damaged cached step: the shared directory's step 2 */
	flip_byte(cdir, 3, "t0.bin", 5);
	fill(0);
	cap_begin();
	rc = loom_ckpt_restore(ck, &step);
	e = cap_end();
	ok(rc == LOOM_SUCCESS && step == 2 && check(22), "cache: damaged step 3 in the cache: step 2 restored");
	like(e, "step-3 in the node caches is unusable", "cache: ... said why");
	/* hostile PIECES: a range past the end, then garbage: skipped */
	snprintf(p, sizeof p, "%s/step-3/PIECES", cdir);
	write_text(p, "loom-cache-pieces 1\nstep 3\nnode x\ntotal 100\nown 0 18446744073709551615\n");
	cap_begin();
	rc = loom_ckpt_restore(ck, &step);
	e = cap_end();
	ok(rc == LOOM_SUCCESS && step == 2, "cache: PIECES with a range past the end: skipped");
	like(e, "step-3 skipped: line 5: a range outside the checkpoint", "cache: ... named");
	write_text(p, "loom-cache-pieces 1\nstep 3\nrm -rf /\n");
	cap_begin();
	rc = loom_ckpt_restore(ck, &step);
	e = cap_end();
	ok(rc == LOOM_SUCCESS && step == 2, "cache: PIECES with a line not understood: skipped");
	like(e, "step-3 skipped: line 3 not understood", "cache: ... named");
	/* a cache that cannot take a save (its temporary directory's name is
	 * a file): the step goes to the shared directory, said so */
	snprintf(p, sizeof p, "%s/.tmp-step-4-77", cdir);
	write_text(p, "in the way\n");
	fill(24);
	cap_begin();
	rc = loom_ckpt_save(ck, 4);
	e = cap_end();
	is_int(rc, LOOM_SUCCESS, "cache: a save the cache cannot take still succeeds");
	like(e, "step 4: the node caches could not take it (I/O error); saving it to the shared directory",
	     "cache: ... said so");
	ok(exists("%s/step-%lld", dir, 4) && !exists("%s/step-%lld", cdir, 4),
	   "cache: ... step 4 is in the shared directory, not in the cache");
	fill(0);
	ok(loom_ckpt_restore(ck, &step) == LOOM_SUCCESS && step == 4 && check(24),
	   "cache: ... and restores from there");
	loom_ckpt_close(ck);
	/* a cache path that expands too long */
	char longpat[5000];
	memset(longpat, 'x', sizeof longpat);
	longpat[0] = '/';
	longpat[sizeof longpat - 1] = 0;
	setenv("LOOM_CKPT_CACHE", longpat, 1);
	cap_begin();
	rc = loom_ckpt_open(w, dir, &ck);
	e = cap_end();
	ok(rc != LOOM_SUCCESS && strstr(e, "longer than"), "cache: a pattern too long once expanded is refused");
	unsetenv("LOOM_CKPT_CACHE");
	unsetenv("SLURMD_NODENAME");
	unsetenv("SLURM_JOB_ID");
	unsetenv("LOOM_CKPT_FLUSH");
	unsetenv("LOOM_CKPT_REDUNDANCY");
}

static void t_restart(void)
{
	char dir[400];
	loom_ckpt_t *ck;
	long long step;
	snprintf(dir, sizeof dir, "%s/ck-two-phase", base);
	setenv("SLURM_RESTART_COUNT", "2", 1);
	loom_ckpt_open(w, dir, &ck);
	cap_begin();
	int rc = loom_ckpt_resume_step(ck, &step);
	const char *e = cap_end();
	ok(rc == LOOM_SUCCESS && step == 50, "requeued job: resume_step finds step 50");
	like(e, "restart 2", "... and logs the restart count");
	loom_ckpt_close(ck);
	unsetenv("SLURM_RESTART_COUNT");
}

int main(void)
{
	char cmd[700];
	plan(NO_PLAN);
	snprintf(base, sizeof base, "/tmp/loom-ckpt-test.XXXXXX");
	if (!mkdtemp(base))
		bail_out("mkdtemp %s failed", base);
	t_unwritable();
	if (loom_init(&w) != LOOM_SUCCESS || loom_comm_size(w) != 1)
		bail_out("loom_init did not give a world of one (run it without srun)");
	/* small chunks and windows: many rounds and chunk boundaries */
	setenv("LOOM_CKPT_CHUNK", "4096", 1);
	setenv("LOOM_CKPT_BUFFER_BYTES", "1000", 1);
	t_open_errors();
	t_commit_and_keep("two-phase");
	t_commit_and_keep("independent");
	t_damage();
	t_reshard();
	t_signals();
	t_holes();
	t_async();
	t_async_pieces("two-phase");
	t_async_pieces("independent");
	t_clear();
	t_cache();
	t_restart();
	loom_finalize(w);
	snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", base, base);
	if (system(cmd) != 0)
		diag("cleanup of %s failed", base);
	done_testing();
	return exit_status();
}
