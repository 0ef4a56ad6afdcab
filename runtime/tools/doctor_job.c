/* runtime/tools/doctor_job.c: loom-doctor --job JOBID. squeue says how
 * many nodes the job has; srun --overlap runs loom-doctor --dump as one
 * task on each (no shell: both are run with an argument vector), with -l
 * so each line says its task; the frames (doctor.h) come apart again here
 * into record files of a private directory, which is then read as any
 * directory. The stream is checked as a file is: no size from it is
 * trusted beyond DOCTOR_REC_MAX a record, --max-files files and
 * --max-mb of data in all, and names keep to [A-Za-z0-9._-]. When a node's
 * end line is missing (srun lost a stream) the copy is made once more. */
#include "doctor.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_NODES (1 << 20)

/* argv run with its stdout into *out (stdin from /dev/null) */
static pid_t spawn(char *const argv[], FILE **out)
{
	int p[2], nul;
	pid_t pid;
	if (pipe2(p, O_CLOEXEC))
		return -1;
	if ((pid = fork()) < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (!pid) {
		nul = open("/dev/null", O_RDONLY);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(p[1], 1) < 0)
			_exit(127);
		execvp(argv[0], argv);
		fprintf(stderr, "loom-doctor: %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(p[1]);
	if (!(*out = fdopen(p[0], "r"))) {
		close(p[0]);
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

static int reap(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* the job's node count (squeue -h -o %D -j JOB), 0 when it is not running */
static int job_nodes(const char *job)
{
	char *argv[] = { "squeue", "-h", "-o", "%D", "-j", (char *)job, NULL };
	char line[64] = "", buf[256], *end;
	FILE *f;
	pid_t pid = spawn(argv, &f);
	long v = 0;
	if (pid < 0)
		return 0;
	if (fgets(line, sizeof line, f))
		v = strtol(line, &end, 10);
	while (fgets(buf, sizeof buf, f))
		;
	fclose(f);
	if (reap(pid) || v < 1 || v > MAX_NODES || (*end && *end != '\n'))
		return 0;
	return (int)v;
}

/* one srun task's stream */
struct task {
	int fd, ended;          /* fd: the record being written, or -1 */
	char name[224];
	unsigned long long size, pos;
};

struct run {
	int dfd;                /* the private directory */
	struct task *t;
	int nt, ends;
	size_t files, max_files;
	unsigned long long data, max_data;
	size_t skipped_files, skipped_bytes;
	char **bad;             /* said after the last try only */
	size_t nbad;
};

static void say(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct run *r, const char *fmt, ...)
{
	char msg[700], **nv;
	va_list ap;
	if (r->nbad > r->max_files + (size_t)r->nt)   /* no node says more */
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (!(nv = realloc(r->bad, (r->nbad + 1) * sizeof *nv)))
		return;
	r->bad = nv;
	if ((nv[r->nbad] = strdup(msg)))
		r->nbad++;
}

static void forget(struct run *r)
{
	size_t i;
	for (i = 0; i < r->nbad; i++)
		free(r->bad[i]);
	free(r->bad);
	r->bad = NULL;
	r->nbad = 0;
}

static int name_ok(const char *s)
{
	size_t l = strlen(s), i;
	if (l < 8 || l >= sizeof ((struct task *)0)->name || s[0] == '.' ||
	    strcmp(s + l - 7, ".flight"))
		return 0;
	for (i = 0; i < l; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '-' || s[i] == '_'))
			return 0;
	return 1;
}

/* the record task k was writing: kept when whole, else removed (and
 * said, with why, unless a limit dropped it) */
static void close_file(struct run *r, int k, const char *why)
{
	struct task *t = &r->t[k];
	if (t->fd < 0)
		return;
	close(t->fd);
	t->fd = -1;
	if (t->pos == t->size && !why)
		return;
	unlinkat(r->dfd, t->name, 0);
	if (why && *why)
		say(r, "task %d: %s: %s", k, t->name, why);
	else if (!why)
		say(r, "task %d: %s: the stream ended after %llu of %llu bytes", k, t->name, t->pos,
		    t->size);
}

static int unhex(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* F NAME SIZE */
static void frame_file(struct run *r, int k, char *arg)
{
	struct task *t = &r->t[k];
	char *sp = strrchr(arg, ' '), *end;
	unsigned long long size;
	close_file(r, k, NULL);
	if (!sp)
		return;
	*sp = 0;
	errno = 0;
	size = strtoull(sp + 1, &end, 10);
	if (!name_ok(arg) || errno || *end || size < sizeof(struct loom_flight_hdr) ||
	    size > DOCTOR_REC_MAX) {
		say(r, "task %d: a record that is not one (a name of [A-Za-z0-9._-] ending in "
		    ".flight, at most %zu bytes)", k, DOCTOR_REC_MAX);
		return;
	}
	if (r->files >= r->max_files) {
		r->skipped_files++;
		return;
	}
	snprintf(t->name, sizeof t->name, "%s", arg);
	t->fd = openat(r->dfd, t->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (t->fd < 0) {
		say(r, "task %d: %s: %s", k, t->name, strerror(errno));
		return;
	}
	t->size = size;
	t->pos = 0;
	r->files++;
	if (ftruncate(t->fd, (off_t)size))
		close_file(r, k, strerror(errno));
}

/* D HEX */
static void frame_data(struct run *r, int k, const char *hex)
{
	struct task *t = &r->t[k];
	unsigned char b[DOCTOR_LINE_BYTES];
	size_t l = strlen(hex), i;
	if (t->fd < 0)
		return;
	if (!l || l % 2 || l > 2 * sizeof b || t->pos + l / 2 > t->size) {
		close_file(r, k, "garbled in the stream");
		return;
	}
	for (i = 0; i < l / 2; i++) {
		int hi = unhex(hex[2 * i]), lo = unhex(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			close_file(r, k, "garbled in the stream");
			return;
		}
		b[i] = (unsigned char)(hi << 4 | lo);
	}
	if (r->data + l / 2 > r->max_data) {
		r->skipped_bytes++;
		close_file(r, k, "");
		return;
	}
	if (pwrite(t->fd, b, l / 2, (off_t)t->pos) != (ssize_t)(l / 2)) {
		close_file(r, k, strerror(errno));
		return;
	}
	t->pos += l / 2;
	r->data += l / 2;
}

/* Z COUNT */
static void frame_zeros(struct run *r, int k, const char *arg)
{
	struct task *t = &r->t[k];
	unsigned long long n;
	char *end;
	if (t->fd < 0)
		return;
	errno = 0;
	n = strtoull(arg, &end, 10);
	if (errno || *end || *arg == '-' || n > t->size - t->pos)
		close_file(r, k, "garbled in the stream");
	else
		t->pos += n;
}

/* S NF NB: what the node's limits left out */
static void frame_skipped(struct run *r, const char *arg)
{
	unsigned long long nf, nb;
	if (sscanf(arg, "%llu %llu", &nf, &nb) == 2 && nf <= MAX_NODES * 16ULL &&
	    nb <= MAX_NODES * 16ULL) {
		r->skipped_files += (size_t)nf;
		r->skipped_bytes += (size_t)nb;
	}
}

/* one line "  K: X ..." of srun -l */
static void frame(struct run *r, char *line)
{
	char *p = line, *end;
	long k;
	while (*p == ' ')
		p++;
	errno = 0;
	k = strtol(p, &end, 10);
	if (errno || end == p || k < 0 || k >= r->nt || end[0] != ':' || end[1] != ' ' ||
	    r->t[k].ended)
		return;
	p = end + 2;
	if (!strcmp(p, "E")) {
		close_file(r, (int)k, NULL);
		r->t[k].ended = 1;
		r->ends++;
		return;
	}
	if (!p[0] || p[1] != ' ')
		return;
	switch (p[0]) {
	case 'F': frame_file(r, (int)k, p + 2); break;
	case 'D': frame_data(r, (int)k, p + 2); break;
	case 'Z': frame_zeros(r, (int)k, p + 2); break;
	case 'B': say(r, "%s", p + 2); break;
	case 'S': frame_skipped(r, p + 2); break;
	}
}

/* the directory emptied, for a new try */
static void empty(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dfd, e->d_name, 0);
	closedir(d);
}

/* one srun over the nodes; its exit status */
static int one_try(struct run *r, char *const argv[])
{
	char line[512];
	FILE *f;
	pid_t pid;
	int k, longline = 0;
	empty(r->dfd);
	forget(r);
	r->ends = 0;
	r->files = 0;
	r->data = 0;
	r->skipped_files = r->skipped_bytes = 0;
	for (k = 0; k < r->nt; k++) {
		r->t[k].fd = -1;
		r->t[k].ended = 0;
	}
	if ((pid = spawn(argv, &f)) < 0)
		return -1;
	while (fgets(line, sizeof line, f)) {
		size_t l = strlen(line);
		int whole = l && line[l - 1] == '\n';
		/* a line longer than any frame is no frame (nor is its tail) */
		if (whole && !longline) {
			line[l - 1] = 0;
			frame(r, line);
		}
		longline = !whole;
	}
	fclose(f);
	for (k = 0; k < r->nt; k++)
		close_file(r, k, NULL);
	return reap(pid);
}

int doctor_collect(const char *job, struct loom_flight_budget *bu, char *dir, size_t len,
		   void (*bad)(const char *msg, void *arg), void *arg)
{
	char tmpl[] = "/tmp/loom-doctor.XXXXXX", self[4096], jobarg[64], nstr[16], files[24], mb[24];
	size_t max_files = bu->max_files ? bu->max_files : LOOM_FLIGHT_READ_FILES;
	size_t max_bytes = bu->max_bytes ? bu->max_bytes : LOOM_FLIGHT_READ_BYTES, i;
	char *argv[] = { "srun", "--overlap", jobarg, "-N", nstr, "--ntasks-per-node=1",
			 "--kill-on-bad-exit=0", "-l", self, "--dump", "--max-files", files,
			 "--max-mb", mb, NULL };
	struct run r = { .dfd = -1 };
	struct rlimit rl;
	const char *p;
	ssize_t sl;
	int rc = -1, tries, nodes;
	for (p = job; *p; p++)
		if ((*p < '0' || *p > '9') && *p != '_')
			break;
	if (*p || !*job || strlen(job) > 40) {
		fprintf(stderr, "loom-doctor: --job %s: expected a job id (digits)\n", job);
		return -1;
	}
	if (!mkdtemp(tmpl) || (r.dfd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "loom-doctor: mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	snprintf(dir, len, "%s", tmpl);
	/* the same loom-doctor on the nodes (a site installs it in one place) */
	if ((sl = readlink("/proc/self/exe", self, sizeof self - 1)) <= 0)
		snprintf(self, sizeof self, "loom-doctor");
	else
		self[sl] = 0;
	/* a record being written per node at once */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (!(nodes = job_nodes(job))) {
		fprintf(stderr, "loom-doctor: job %s is not running\n", job);
	} else if (!(r.t = calloc((size_t)nodes, sizeof *r.t))) {
		fprintf(stderr, "loom-doctor: out of memory for %d nodes\n", nodes);
	} else {
		snprintf(jobarg, sizeof jobarg, "--jobid=%s", job);
		snprintf(nstr, sizeof nstr, "%d", nodes);
		snprintf(files, sizeof files, "%zu", max_files);
		snprintf(mb, sizeof mb, "%zu", max_bytes >> 20 ? max_bytes >> 20 : 1);
		r.nt = nodes;
		r.max_files = max_files;
		/* data of records, at most: what --max-mb keeps, and their headers */
		r.max_data = max_bytes + (unsigned long long)max_files * sizeof(struct loom_flight_hdr);
		for (tries = 0; tries < 2; tries++) {
			rc = one_try(&r, argv);
			if (r.ends == nodes) {
				rc = 0;
				break;
			}
		}
	}
	if (rc)
		fprintf(stderr, "loom-doctor: --job %s: collecting with srun --overlap failed "
			"(status %d, %d of %d nodes answered, twice): the job must be running and "
			"yours (or run loom-doctor DIR on each node, or set a shared flight directory: "
			"see loom-doctor(1))\n", job, rc, r.ends, nodes);
	for (i = 0; i < r.nbad; i++)
		bad(r.bad[i], arg);
	forget(&r);
	bu->skipped_files += r.skipped_files;
	bu->skipped_bytes += r.skipped_bytes;
	free(r.t);
	close(r.dfd);
	return 0;
}

void doctor_collect_done(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd >= 0) {
		empty(dfd);
		close(dfd);
	}
	rmdir(dir);
}
