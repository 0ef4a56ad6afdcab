/* unit test: the checkpoint directory against links and other users
 * (runtime/ckpt/ckpt_dir.c), and the bounds of the manifest parser and
 * of tensor registration. Attacks by another user run in a child that
 * really is `nobody` (needs root; without it those cases are skipped).
 *
 *   ckpt_files                run the tests
 *   ckpt_files parse FILE...  parse each file as a MANIFEST, print the
 *                             verdict (t7102 runs it under valgrind) */
#include "config.h"
#include "ckpt/ckpt_nocomm.h"
#include "loom.h"
#include "../../../t/tap.h"
#include "capture.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char base[200], dir[300];

static void cap_begin(void)
{
	cap_begin_in(base);
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		bail_out("cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

static int has(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* PARENT/NAME with a MANIFEST and a data file of the given texts */
static void mkfilled(const char *parent, const char *name, const char *manifest, const char *data)
{
	char p[1100];
	snprintf(p, sizeof p, "%s/%s", parent, name);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/%s/MANIFEST", parent, name);
	put(p, manifest);
	snprintf(p, sizeof p, "%s/%s/t0.bin", parent, name);
	put(p, data);
}

/* a committed-looking step in DIR */
static void mkstep(const char *name)
{
	mkfilled(dir, name, "x\n", "data");
}

/* an archive the job's user keeps elsewhere */
static void mkarchive(const char *name)
{
	mkfilled(base, name, "keep me\n", "precious");
}

static int archive_whole(const char *name)
{
	char p[700];
	snprintf(p, sizeof p, "%s/%s/MANIFEST", base, name);
	if (!has(p))
		return 0;
	snprintf(p, sizeof p, "%s/%s/t0.bin", base, name);
	return has(p);
}

/* run fn as nobody in a child; its exit status */
static int as_nobody(void (*fn)(void))
{
	struct passwd *pw = getpwnam("nobody");
	pid_t pid;
	int st;
	if (!pw)
		return -1;
	if ((pid = fork()) == 0) {
		if (setgid(pw->pw_gid) || setuid(pw->pw_uid))
			_exit(99);
		fn();
		_exit(0);
	}
	return waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void nobody_plants(void)
{
	char p[700], t[700];
	/* a link named like a step, to the victim's archive */
	snprintf(t, sizeof t, "%s/archive-n", base);
	snprintf(p, sizeof p, "%s/step-0", dir);
	if (symlink(t, p))
		_exit(1);
	snprintf(p, sizeof p, "%s/.tmp-step-7-99", dir);
	if (symlink(t, p))
		_exit(2);
	/* a real step of nobody's, with a manifest: never loaded, never pruned */
	snprintf(p, sizeof p, "%s/step-6", dir);
	if (mkdir(p, 0777))
		_exit(3);
	snprintf(p, sizeof p, "%s/step-6/MANIFEST", dir);
	put(p, "nobody's\n");
}

static void t_links(void)
{
	char p[700], t[700];
	long long *v = NULL;
	int n = 0, nobody_rc;
	snprintf(dir, sizeof dir, "%s/ck", base);
	mkdir(dir, 0777);
	chmod(dir, 0777); /* a shared scratch directory: anyone may add entries */
	chmod(base, 0755);
	mkarchive("archive-u");
	mkarchive("archive-t");
	mkarchive("archive-n");
	for (int s = 2; s <= 5; s++) {
		snprintf(t, sizeof t, "step-%d", s);
		mkstep(t);
	}
	/* the job's user points step-1 and a .tmp-* at its archives */
	snprintf(t, sizeof t, "%s/archive-u", base);
	snprintf(p, sizeof p, "%s/step-1", dir);
	symlink(t, p);
	snprintf(t, sizeof t, "%s/archive-t", base);
	snprintf(p, sizeof p, "%s/.tmp-step-8-42", dir);
	symlink(t, p);
	nobody_rc = geteuid() == 0 ? as_nobody(nobody_plants) : -1;
	if (nobody_rc != -1)
		is_int(nobody_rc, 0, "nobody planted step-0 -> an archive, a .tmp-step-* link and its own step-6");

	cap_begin();
	is_int(loom_ck_list_steps(dir, &v, &n), LOOM_SUCCESS, "listing works");
	const char *e = cap_end();
	ok(n == 4 && v[0] == 5 && v[3] == 2, "only the real steps of ours are listed (%d: 5..2)", n);
	free(v);
	like(e, "step-1 is a symbolic link: skipped", "a linked step is skipped with a warning");
	if (nobody_rc == 0) {
		like(e, "step-6 belongs to uid", "another user's step is skipped with a warning");
		like(e, "step-0 is a symbolic link: skipped", "nobody's link is skipped too");
	}
	cap_begin();
	is_int(loom_ck_prune(dir, 1, 5), LOOM_SUCCESS, "prune keeping 1");
	e = cap_end();
	snprintf(p, sizeof p, "%s/step-5/t0.bin", dir);
	ok(has(p), "the newest step stays");
	snprintf(p, sizeof p, "%s/step-4", dir);
	ok(!has(p), "older real steps are removed");
	snprintf(p, sizeof p, "%s/.prune-step-4", dir);
	ok(!has(p), "... completely (no .prune-step-4 left)");
	ok(archive_whole("archive-u"), "the archive behind the user's step-1 link survives with its contents");
	snprintf(p, sizeof p, "%s/step-1", dir);
	ok(has(p), "the link itself stays (nothing of the user's is deleted)");
	ok(archive_whole("archive-t"), "the archive behind a .tmp-step-* link survives");
	snprintf(p, sizeof p, "%s/.tmp-step-8-42", dir);
	ok(has(p), "... and the link too");
	like(e, ".tmp-step-8-42 is a symbolic link: skipped", "with a warning naming it");
	if (nobody_rc == 0) {
		ok(archive_whole("archive-n"), "the archive behind nobody's links survives");
		snprintf(p, sizeof p, "%s/step-6/MANIFEST", dir);
		ok(has(p), "nobody's own step is not touched");
	} else {
		skip(2, "not root: no second user to plant entries");
	}
	/* loom_ck_rmtree of a failed save never goes through a link */
	snprintf(t, sizeof t, "%s/archive-u", base);
	snprintf(p, sizeof p, "%s/.tmp-step-9-1", dir);
	symlink(t, p);
	cap_begin();
	is_int(loom_ck_rmtree(dir, ".tmp-step-9-1"), -1, "removing a failed save that is a link: refused");
	e = cap_end();
	ok(archive_whole("archive-u"), "... the archive keeps its contents");
	like(e, "is a symbolic link: not removed", "... with a warning");
}

static void t_small_files(void)
{
	char p[700], q[700], line[64];
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	/* a writer that died between write and rename */
	snprintf(p, sizeof p, "%s/.latest.tmp-%ld", dir, (long)dead);
	put(p, "step-3\n");
	snprintf(q, sizeof q, "%s/.latest.tmp-1", dir); /* pid 1 lives */
	put(q, "step-3\n");
	loom_ck_prune(dir, 1, 5);
	ok(!has(p), ".latest.tmp-PID of a dead writer is removed by the prune");
	ok(has(q), "one of a live process is kept");
	unlink(q);
	/* a link left at our own temporary name is not written through */
	snprintf(q, sizeof q, "%s/victim", base);
	put(q, "victim\n");
	snprintf(p, sizeof p, "%s/.latest.tmp-%ld", dir, (long)getpid());
	symlink(q, p);
	is_int(loom_ck_write_latest(dir, 5), LOOM_SUCCESS, "latest written with a link at its temporary name");
	FILE *f = fopen(q, "r");
	ok(f && fgets(line, sizeof line, f) && !strcmp(line, "victim\n"), "the link's target is unchanged");
	if (f)
		fclose(f);
	is_int((int)loom_ck_read_latest(dir), 5, "latest says step-5");
	snprintf(p, sizeof p, "%s/latest", dir);
	unlink(p);
	symlink(q, p);
	is_int((int)loom_ck_read_latest(dir), -1, "a latest that is a link is not read");
	unlink(p);
}

/* a manifest as the writer would make it, with a chosen chunk and shape */
static int parse_one(uint64_t chunk, int ndim, const uint64_t *shape, uint64_t bytes,
		     char *why, size_t whylen)
{
	ckpt_manifest_t m, r;
	ckpt_mtensor_t t;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;
	memset(&m, 0, sizeof m);
	memset(&t, 0, sizeof t);
	m.step = 1;
	m.algo = CKPT_SUM_CRC32C;
	m.chunk = chunk;
	m.ntensors = 1;
	m.t = &t;
	strcpy(t.name, "w");
	t.dtype = LOOM_FLOAT32;
	t.ndim = ndim;
	memcpy(t.shape, shape, sizeof(uint64_t) * (size_t)ndim);
	t.bytes = bytes;
	strcpy(t.file, "t0.bin");
	loom_ck_manifest_write(f, &m);
	fclose(f);
	rc = loom_ck_manifest_parse(buf, len, &r, why, whylen);
	if (rc == LOOM_SUCCESS)
		loom_ck_manifest_free(&r);
	free(buf);
	return rc;
}

static void t_manifest_bounds(void)
{
	char why[512];
	uint64_t s1[1] = { 1024 }, big[3] = { 1ull << 32, 1ull << 32, 16 },
		 wrap[2] = { 0xffffffffffffffffull, 2 }, wrap4[2] = { 1ull << 62, 4 };
	is_int(parse_one(4096, 1, s1, 4096, why, sizeof why), LOOM_SUCCESS, "chunk 4096 (the least) parses");
	is_int(parse_one(1, 1, s1, 4096, why, sizeof why), LOOM_ERR_CORRUPT,
	       "chunk 1 is refused (a 1 GiB tensor would need an 8 GiB table of sums)");
	like(why, "chunk 1 outside 4096..1073741824 bytes", "... naming the bounds");
	is_int(parse_one(4095, 1, s1, 4096, why, sizeof why), LOOM_ERR_CORRUPT, "chunk 4095 is refused");
	is_int(parse_one(1ull << 31, 1, s1, 4096, why, sizeof why), LOOM_ERR_CORRUPT, "chunk 2 GiB is refused");
	is_int(parse_one(4096, 3, big, 0, why, sizeof why), LOOM_ERR_CORRUPT,
	       "a shape of 2^68 float32 bytes is refused");
	like(why, "is too large", "... as too large");
	is_int(parse_one(4096, 2, wrap, 8, why, sizeof why), LOOM_ERR_CORRUPT,
	       "a shape whose product wraps 2^64 to a small number is refused");
	is_int(parse_one(4096, 2, wrap4, 0, why, sizeof why), LOOM_ERR_CORRUPT,
	       "2^62 x 4 x 4 bytes (wraps to 0, bytes 0) is refused");
	/* hand-written text: the count of tensors is bounded by the text */
	const char *huge = "loom-checkpoint 1\nstep 1\nchecksum crc32c\nchunk 4096\nwriter -\n"
			   "tensors 1000000\nend\nmanifest-sum 0\n";
	ckpt_manifest_t r;
	is_int(loom_ck_manifest_parse(huge, strlen(huge), &r, why, sizeof why), LOOM_ERR_CORRUPT,
	       "tensors 1000000 in a 90-byte manifest: refused before any allocation");
	like(why, "bad tensor count", "... as a bad tensor count");
	const char *neg = "loom-checkpoint 1\nstep 1\nchecksum crc32c\nchunk 4096\nwriter -\ntensors 1\n"
			  "tensor w dtype float32 shape -1 bytes 4 file t0.bin sum 0\nend\nmanifest-sum 0\n";
	is_int(loom_ck_manifest_parse(neg, strlen(neg), &r, why, sizeof why), LOOM_ERR_CORRUPT,
	       "a negative dimension is refused (strtoull would wrap it)");
	uint64_t b;
	ok(!loom_ck_shape_bytes(2, wrap, 1, &b), "loom_ck_shape_bytes refuses a wrapping product");
	ok(loom_ck_shape_bytes(1, s1, 4, &b) && b == 4096, "and computes a small one (4096)");
}

/* loom_ckpt_tensor: shapes whose product overflows are refused */
static void t_register(void)
{
	loom_comm_t *w = NULL;
	loom_ckpt_t *ck = NULL;
	size_t huge[2] = { (size_t)1 << 40, (size_t)1 << 40 }, wrap[2] = { SIZE_MAX, 2 }, ok1[1] = { 8 };
	if (loom_init(&w) != LOOM_SUCCESS || loom_ckpt_open(w, dir, &ck) != LOOM_SUCCESS)
		bail_out("loom_init / loom_ckpt_open failed (run it without srun)");
	cap_begin();
	int rc = loom_ckpt_tensor(ck, "huge", LOOM_FLOAT32, 2, huge, NULL, NULL, NULL);
	const char *e = cap_end();
	is_int(rc, LOOM_ERR_INVALID, "registering 2^80 elements is refused");
	like(e, "tensor huge: shape too large", "... with a message naming it");
	is_int(loom_ckpt_tensor(ck, "wrap", LOOM_INT8, 2, wrap, NULL, NULL, NULL), LOOM_ERR_INVALID,
	       "a product that wraps to a small number is refused");
	is_int(loom_ckpt_tensor(ck, "fine", LOOM_FLOAT32, 1, ok1, NULL, NULL, NULL), LOOM_SUCCESS,
	       "a small tensor still registers");
	loom_ckpt_close(ck);
	loom_finalize(w);
}

static int parse_files(int argc, char **argv)
{
	for (int i = 2; i < argc; i++) {
		char why[600];
		ckpt_manifest_t m;
		int fd = open(argv[i], O_RDONLY);
		struct stat st;
		char *text;
		ssize_t n;
		if (fd < 0 || fstat(fd, &st) || !(text = malloc((size_t)st.st_size + 1)))
			return 2;
		n = read(fd, text, (size_t)st.st_size);
		close(fd);
		int rc = loom_ck_manifest_parse(text, n > 0 ? (size_t)n : 0, &m, why, sizeof why);
		printf("%s: %s%s%s\n", argv[i], rc == LOOM_SUCCESS ? "ok" : "refused",
		       rc == LOOM_SUCCESS ? "" : ": ", rc == LOOM_SUCCESS ? "" : why);
		if (rc == LOOM_SUCCESS)
			loom_ck_manifest_free(&m);
		free(text);
	}
	return 0;
}

/* the commit's prune in two parts: renamed at once (no longer
 * checkpoints), removed by the sweep that runs in the background */
static void t_prune_sweep(void)
{
	char p[700], q[700];
	long long *v;
	int n;
	snprintf(dir, sizeof dir, "%s/sweep", base);
	mkdir(dir, 0755);
	mkstep("step-1");
	mkstep("step-2");
	mkstep("step-3");
	snprintf(p, sizeof p, "%s/.tmp-step-9-1", dir);     /* a crashed save's */
	mkdir(p, 0755);
	mkarchive("archive-s");
	snprintf(q, sizeof q, "%s/archive-s", base);
	snprintf(p, sizeof p, "%s/.prune-step-7", dir);
	symlink(q, p);
	is_int(loom_ck_prune_mark(dir, 1, 3), LOOM_SUCCESS, "mark keeping 1");
	snprintf(p, sizeof p, "%s/.prune-step-1", dir);
	ok(has(p), "step-1 renamed .prune-step-1, not yet removed");
	is_int(loom_ck_list_steps(dir, &v, &n), LOOM_SUCCESS, "listing after the mark");
	ok(n == 1 && v[0] == 3, "only step-3 is a checkpoint (%d)", n);
	free(v);
	snprintf(p, sizeof p, "%s/.tmp-step-9-1", dir);
	ok(!has(p), "a crashed save's temporary directory is removed at once");
	cap_begin();
	is_int(loom_ck_prune_sweep(dir), LOOM_SUCCESS, "the sweep");
	const char *e = cap_end();
	snprintf(p, sizeof p, "%s/.prune-step-1", dir);
	snprintf(q, sizeof q, "%s/.prune-step-2", dir);
	ok(!has(p) && !has(q), "the sweep removes the renamed steps");
	snprintf(p, sizeof p, "%s/step-3/t0.bin", dir);
	ok(has(p), "the kept step is untouched");
	snprintf(p, sizeof p, "%s/.prune-step-7", dir);
	ok(has(p) && archive_whole("archive-s"), "a .prune-step-* link stays, its target whole");
	like(e, ".prune-step-7 is a symbolic link: skipped", "with a warning naming it");
}

int main(int argc, char **argv)
{
	char cmd[700];
	if (argc > 2 && !strcmp(argv[1], "parse"))
		return parse_files(argc, argv);
	plan(NO_PLAN);
	snprintf(base, sizeof base, "/tmp/loom-ckpt-files.XXXXXX");
	if (!mkdtemp(base))
		bail_out("mkdtemp %s failed", base);
	t_links();
	t_small_files();
	t_manifest_bounds();
	t_register();
	t_prune_sweep();
	snprintf(cmd, sizeof cmd, "rm -rf %s", base);
	if (system(cmd) != 0)
		diag("cleanup of %s failed", base);
	done_testing();
	return exit_status();
}
