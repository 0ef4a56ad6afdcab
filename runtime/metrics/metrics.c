/* runtime/metrics/metrics.c: counters per communicator and the Prometheus writer */
#include "config.h"
#include "metrics/metrics.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct op_counters {
	unsigned long long count;
	unsigned long long bytes;
	double seconds;
	double busbw_last;   /* bytes/s: Prometheus wants base units */
	double busbw_sum;    /* for the mean, over operations that moved bytes */
	unsigned long long busbw_n;
};

struct loom_metrics {
	struct loom_metrics *next;
	char comm[64];
	int rank, size;
	int retired;   /* freed by its owner; kept for its counters */
	struct op_counters ops[LOOM_METRIC_OP_COUNT];
	unsigned long long timeouts, peer_lost;
	_Atomic unsigned long long last_seq;  /* last collective finished */
	unsigned long long ckpt_count, ckpt_bytes_last, ckpt_bytes_total;
	double ckpt_seconds_last, ckpt_seconds_total;
	unsigned long long ckpt_stops[LOOM_METRIC_STOP_COUNT];
};

static const char *const op_names[LOOM_METRIC_OP_COUNT] = {
	"allreduce", "broadcast", "reduce", "allgather", "reduce_scatter",
	"alltoall", "barrier", "send", "recv",
};

/* The registry is process-wide on purpose: one file per process, one
 * writer thread, whatever number of communicators the program makes. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct loom_metrics *registry;
static pthread_t writer_thread;
static int writer_started;
static pthread_once_t atexit_once = PTHREAD_ONCE_INIT;
static int process_rank = -1;   /* rank of the first communicator: the world */

/* The file: one writer at a time (the thread, a checkpoint, exit), and
 * the inode last renamed into place, so that loom_metrics_finish removes
 * that file and no other. finished: removed, not to be written again. */
static pthread_mutex_t file_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int finished;
static int written;
static dev_t written_dev;
static ino_t written_ino;

double loom_metrics_busbw_factor(enum loom_metric_op op, int n)
{
	if (n <= 1)
		return op == LOOM_METRIC_BROADCAST || op == LOOM_METRIC_REDUCE ||
		       op == LOOM_METRIC_SEND || op == LOOM_METRIC_RECV ? 1.0 : 0.0;
	switch (op) {
	case LOOM_METRIC_ALLREDUCE: return 2.0 * (n - 1) / n;
	case LOOM_METRIC_ALLGATHER:
	case LOOM_METRIC_REDUCE_SCATTER:
	case LOOM_METRIC_ALLTOALL: return (double)(n - 1) / n;
	case LOOM_METRIC_BARRIER: return 0.0;
	default: return 1.0;
	}
}

static void *writer_main(void *arg)
{
	const char *iv = getenv("LOOM_METRICS_INTERVAL");
	double interval = iv ? atof(iv) : 5.0;
	if (interval < 0.1)
		interval = 0.1;
	struct timespec ts = { (time_t)interval, (long)((interval - (time_t)interval) * 1e9) };
	for (;;) {
		nanosleep(&ts, NULL);
		loom_metrics_flush();
	}
	return arg;
}

static void flush_at_exit(void)
{
	loom_metrics_flush();
	/* what the program freed is ours to release now */
	pthread_mutex_lock(&registry_lock);
	for (struct loom_metrics **p = &registry; *p;) {
		struct loom_metrics *m = *p;
		if (m->retired) {
			*p = m->next;
			free(m);
		} else {
			p = &m->next;
		}
	}
	pthread_mutex_unlock(&registry_lock);
}

static void register_atexit(void)
{
	atexit(flush_at_exit);
}

int loom_metrics_enabled(void)
{
	static _Atomic int on = -1;
	return loom_env_flag(&on, "LOOM_METRICS_FILE", NULL);
}

struct loom_metrics *loom_metrics_new(const char *comm_name, int rank, int size)
{
	struct loom_metrics *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	snprintf(m->comm, sizeof m->comm, "%s", comm_name ? comm_name : "comm");
	m->rank = rank;
	m->size = size;
	pthread_once(&atexit_once, register_atexit);
	pthread_mutex_lock(&registry_lock);
	m->next = registry;
	registry = m;
	if (process_rank < 0)
		process_rank = rank;
	atomic_store(&finished, 0);   /* a new world after loom_finalize */
	if (!writer_started && getenv("LOOM_METRICS_FILE")) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&writer_thread, &attr, writer_main, NULL) == 0)
			writer_started = 1;
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_unlock(&registry_lock);
	return m;
}

static void add_counters(struct loom_metrics *dst, const struct loom_metrics *src)
{
	for (int op = 0; op < LOOM_METRIC_OP_COUNT; op++) {
		struct op_counters *d = &dst->ops[op];
		const struct op_counters *c = &src->ops[op];
		d->count += c->count;
		d->bytes += c->bytes;
		d->seconds += c->seconds;
		if (c->busbw_n)
			d->busbw_last = c->busbw_last;
		d->busbw_sum += c->busbw_sum;
		d->busbw_n += c->busbw_n;
	}
	dst->timeouts += src->timeouts;
	dst->peer_lost += src->peer_lost;
	if (atomic_load(&src->last_seq) > atomic_load(&dst->last_seq))
		atomic_store(&dst->last_seq, atomic_load(&src->last_seq));
	dst->ckpt_count += src->ckpt_count;
	dst->ckpt_bytes_total += src->ckpt_bytes_total;
	dst->ckpt_seconds_total += src->ckpt_seconds_total;
	for (int r = 0; r < LOOM_METRIC_STOP_COUNT; r++)
		dst->ckpt_stops[r] += src->ckpt_stops[r];
	if (src->ckpt_count) {
		dst->ckpt_bytes_last = src->ckpt_bytes_last;
		dst->ckpt_seconds_last = src->ckpt_seconds_last;
	}
}

/* A freed communicator's counters stay in the file (counters must not go
 * backwards while the process lives): they are folded into a retired entry
 * of the same name and rank, so repeated split/free stays bounded. */
void loom_metrics_free(struct loom_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&registry_lock);
	struct loom_metrics *into = NULL;
	for (struct loom_metrics **p = &registry; *p;) {
		if (*p == m) {
			*p = m->next;
			continue;
		}
		if ((*p)->retired && (*p)->rank == m->rank && strcmp((*p)->comm, m->comm) == 0)
			into = *p;
		p = &(*p)->next;
	}
	if (into) {
		add_counters(into, m);
		free(m);
	} else {
		m->retired = 1;
		m->next = registry;
		registry = m;
	}
	pthread_mutex_unlock(&registry_lock);
}

void loom_metrics_rename(struct loom_metrics *m, const char *comm_name)
{
	if (!m || !comm_name)
		return;
	pthread_mutex_lock(&registry_lock);
	snprintf(m->comm, sizeof m->comm, "%s", comm_name);
	pthread_mutex_unlock(&registry_lock);
}

void loom_metrics_op(struct loom_metrics *m, enum loom_metric_op op, size_t bytes,
		     double seconds)
{
	if (!m || (unsigned)op >= LOOM_METRIC_OP_COUNT)
		return;
	pthread_mutex_lock(&registry_lock);
	struct op_counters *c = &m->ops[op];
	c->count++;
	c->bytes += bytes;
	c->seconds += seconds;
	if (bytes > 0 && seconds > 0) {
		double bw = (double)bytes / seconds * loom_metrics_busbw_factor(op, m->size);
		c->busbw_last = bw;
		c->busbw_sum += bw;
		c->busbw_n++;
	}
	pthread_mutex_unlock(&registry_lock);
}

/* plain loads and stores, no lock: it runs at every collective (a
 * non-blocking one finished late does not take the gauge back) */
void loom_metrics_seq(struct loom_metrics *m, unsigned long long seq)
{
	if (m && seq > atomic_load_explicit(&m->last_seq, memory_order_relaxed))
		atomic_store_explicit(&m->last_seq, seq, memory_order_relaxed);
}

void loom_metrics_timeout(struct loom_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&registry_lock);
	m->timeouts++;
	pthread_mutex_unlock(&registry_lock);
}

void loom_metrics_peer_lost(struct loom_metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&registry_lock);
	m->peer_lost++;
	pthread_mutex_unlock(&registry_lock);
}

void loom_metrics_checkpoint(struct loom_metrics *m, double seconds, size_t bytes)
{
	if (!m)
		return;
	pthread_mutex_lock(&registry_lock);
	m->ckpt_count++;
	m->ckpt_seconds_last = seconds;
	m->ckpt_seconds_total += seconds;
	m->ckpt_bytes_last = bytes;
	m->ckpt_bytes_total += bytes;
	pthread_mutex_unlock(&registry_lock);
}

const char *loom_metrics_stop_name(enum loom_metric_stop why)
{
	return why == LOOM_METRIC_STOP_TIMELIMIT ? "timelimit" : "preempt";
}

void loom_metrics_checkpoint_stop(struct loom_metrics *m, enum loom_metric_stop why)
{
	if (!m || why < 0 || why >= LOOM_METRIC_STOP_COUNT)
		return;
	pthread_mutex_lock(&registry_lock);
	m->ckpt_stops[why]++;
	pthread_mutex_unlock(&registry_lock);
}

/* ---- rendering ---------------------------------------------------- */

struct out {
	char *buf;
	size_t len, need;
};

static void emit(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = o->need < o->len ? o->len - o->need : 0;
	int n = vsnprintf(room ? o->buf + o->need : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->need += (size_t)n;
}

/* label values: escape backslash, quote and newline as the format says */
static void label_value(char *dst, size_t n, const char *src)
{
	size_t j = 0;
	for (; *src && j + 2 < n; src++) {
		if (*src == '\\' || *src == '"') {
			dst[j++] = '\\';
			dst[j++] = *src;
		} else if (*src == '\n') {
			dst[j++] = '\\';
			dst[j++] = 'n';
		} else {
			dst[j++] = *src;
		}
	}
	dst[j] = '\0';
}

static void make_labels(const struct loom_metrics *m, char *dst, size_t n)
{
	char job[64], step[64], host[128], comm[140];
	const char *e;
	/* not job: Prometheus owns that label (its scrape job) and would
	 * rename ours to exported_job */
	label_value(job, sizeof job, (e = getenv("SLURM_JOB_ID")) ? e : "none");
	label_value(step, sizeof step, (e = getenv("SLURM_STEP_ID")) ? e : "none");
	if ((e = getenv("SLURMD_NODENAME")))
		label_value(host, sizeof host, e);
	else {
		char h[128] = "unknown";
		gethostname(h, sizeof h - 1);
		h[sizeof h - 1] = '\0';
		label_value(host, sizeof host, h);
	}
	label_value(comm, sizeof comm, m->comm);
	snprintf(dst, n, "slurm_job_id=\"%s\",slurm_step_id=\"%s\",rank=\"%d\",host=\"%s\",comm=\"%s\"",
		 job, step, m->rank, host, comm);
}

struct family {
	const char *name, *type, *help;
};

/* This rank's waiting: its time inside the collectives that need every
 * rank's part, most of it spent waiting for the last rank to arrive. From
 * the counters kept anyway, so it costs the operations nothing; what a
 * rank's lateness cost the others is a query over every rank's series
 * (contrib/monitoring/README.md, docs/flight-format.md). */
static void render_wait(struct out *o)
{
	static const int sym[] = { LOOM_METRIC_ALLREDUCE, LOOM_METRIC_ALLGATHER,
				   LOOM_METRIC_REDUCE_SCATTER, LOOM_METRIC_ALLTOALL,
				   LOOM_METRIC_BARRIER };
	static const struct family f = { "loom_wait_seconds_total", "counter",
		"Time in collectives that need every rank's part (allreduce, allgather, "
		"reduce_scatter, alltoall, barrier), from post to end: mostly waiting for the "
		"last rank." };
	char lab[512];
	emit(o, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.type);
	for (const struct loom_metrics *m = registry; m; m = m->next) {
		double w = 0;
		for (size_t k = 0; k < sizeof sym / sizeof sym[0]; k++)
			w += m->ops[sym[k]].seconds;
		make_labels(m, lab, sizeof lab);
		emit(o, "%s{%s} %.9g\n", f.name, lab, w);
	}
}

/* Families are written one after another, each with HELP and TYPE once,
 * then a sample per communicator (and op): what the format requires. */
static void render_locked(struct out *o)
{
	static const struct family op_families[] = {
		{ "loom_operations_total", "counter", "Completed operations by type." },
		{ "loom_bytes_total", "counter", "Bytes per rank moved by completed operations." },
		{ "loom_operation_seconds_total", "counter", "Time spent in completed operations." },
		{ "loom_busbw_last_bytes_per_second", "gauge", "Bus bandwidth of the last operation (nccl-tests definition)." },
		{ "loom_busbw_mean_bytes_per_second", "gauge", "Mean bus bandwidth over operations that moved data." },
	};
	char lab[512];

	for (size_t f = 0; f < sizeof op_families / sizeof op_families[0]; f++) {
		emit(o, "# HELP %s %s\n# TYPE %s %s\n", op_families[f].name, op_families[f].help,
		     op_families[f].name, op_families[f].type);
		for (const struct loom_metrics *m = registry; m; m = m->next) {
			make_labels(m, lab, sizeof lab);
			for (int op = 0; op < LOOM_METRIC_OP_COUNT; op++) {
				const struct op_counters *c = &m->ops[op];
				if (f >= 3 && c->busbw_n == 0)
					continue;
				if (f < 3 && c->count == 0)
					continue;
				emit(o, "%s{%s,op=\"%s\"} ", op_families[f].name, lab, op_names[op]);
				switch (f) {
				case 0: emit(o, "%llu\n", c->count); break;
				case 1: emit(o, "%llu\n", c->bytes); break;
				case 2: emit(o, "%.9g\n", c->seconds); break;
				case 3: emit(o, "%.6g\n", c->busbw_last); break;
				default: emit(o, "%.6g\n", c->busbw_sum / (double)c->busbw_n); break;
				}
			}
		}
	}

	static const struct family comm_families[] = {
		{ "loom_timeouts_total", "counter", "Operations that passed their deadline." },
		{ "loom_peer_lost_total", "counter", "Operations failed because a peer was lost." },
		{ "loom_checkpoints_total", "counter", "Committed checkpoints." },
		{ "loom_checkpoint_seconds_total", "counter", "Time spent writing committed checkpoints." },
		{ "loom_checkpoint_bytes_total", "counter", "Bytes of committed checkpoints written by this rank." },
		{ "loom_checkpoint_last_seconds", "gauge", "Duration of the last checkpoint." },
		{ "loom_checkpoint_last_bytes", "gauge", "Size of the last checkpoint written by this rank." },
		{ "loom_last_finished_seq", "gauge", "Sequence number of the last collective this rank finished on the communicator (its flight record number)." },
	};
	for (size_t f = 0; f < sizeof comm_families / sizeof comm_families[0]; f++) {
		emit(o, "# HELP %s %s\n# TYPE %s %s\n", comm_families[f].name, comm_families[f].help,
		     comm_families[f].name, comm_families[f].type);
		for (const struct loom_metrics *m = registry; m; m = m->next) {
			make_labels(m, lab, sizeof lab);
			emit(o, "%s{%s} ", comm_families[f].name, lab);
			switch (f) {
			case 0: emit(o, "%llu\n", m->timeouts); break;
			case 1: emit(o, "%llu\n", m->peer_lost); break;
			case 2: emit(o, "%llu\n", m->ckpt_count); break;
			case 3: emit(o, "%.9g\n", m->ckpt_seconds_total); break;
			case 4: emit(o, "%llu\n", m->ckpt_bytes_total); break;
			case 5: emit(o, "%.9g\n", m->ckpt_seconds_last); break;
			case 6: emit(o, "%llu\n", m->ckpt_bytes_last); break;
			default: emit(o, "%llu\n", atomic_load(&m->last_seq)); break;
			}
		}
	}
	emit(o, "# HELP loom_checkpoint_stops_total Committed checkpoints that a stop signal asked "
		"for, by reason (preempt: SIGTERM, also a scancel; timelimit: LOOM_CKPT_SIGNAL).\n"
		"# TYPE loom_checkpoint_stops_total counter\n");
	for (const struct loom_metrics *m = registry; m; m = m->next) {
		make_labels(m, lab, sizeof lab);
		for (int r = 0; r < LOOM_METRIC_STOP_COUNT; r++)
			emit(o, "loom_checkpoint_stops_total{%s,reason=\"%s\"} %llu\n", lab,
			     loom_metrics_stop_name((enum loom_metric_stop)r), m->ckpt_stops[r]);
	}
	render_wait(o);
}

size_t loom_metrics_render(char *buf, size_t len)
{
	struct out o = { buf, len, 0 };
	if (buf && len)
		buf[0] = '\0';
	pthread_mutex_lock(&registry_lock);
	render_locked(&o);
	pthread_mutex_unlock(&registry_lock);
	return o.need;
}

/* LOOM_METRICS_FILE with %r (world rank) and %j (job id) expanded, so
 * that the ranks of one node can share a textfile-collector directory. */
static int metrics_path(char *dst, size_t n)
{
	const char *tmpl = getenv("LOOM_METRICS_FILE");
	const char *job = getenv("SLURM_JOB_ID");
	size_t j = 0;
	if (!tmpl || !*tmpl)
		return 0;
	for (const char *s = tmpl; *s && j + 1 < n; s++) {
		int w = 0;
		if (s[0] == '%' && s[1] == 'r') {
			pthread_mutex_lock(&registry_lock);
			w = snprintf(dst + j, n - j, "%d", process_rank < 0 ? 0 : process_rank);
			pthread_mutex_unlock(&registry_lock);
			s++;
		} else if (s[0] == '%' && s[1] == 'j') {
			w = snprintf(dst + j, n - j, "%s", job ? job : "nojob");
			s++;
		} else {
			dst[j] = *s;
			w = 1;
		}
		if (w < 0 || (size_t)w >= n - j)
			return -ENAMETOOLONG;
		j += (size_t)w;
	}
	dst[j] = '\0';
	return 1;
}

/* A failed write is said once per process: the writer thread retries
 * every interval, and a log line each time would drown the job's own. */
static void flush_failed(const char *path, const char *what, int err)
{
	static _Atomic int said;
	if (!atomic_exchange(&said, 1))
		LOOM_WARN("metrics: %s: %s: %s; not written (said once)", path, what, strerror(err));
}

/* Write n bytes into a new file beside path, then rename it over path:
 * readers never see half a file. The directory may be shared with other
 * users (a textfile-collector directory, even /tmp), so nothing in it is
 * trusted: loom_open_parent and loom_create_unique (util/files.c) make
 * the temporary, and renameat replaces whatever entry has the final name
 * without following it. */
/* The directory of path, opened without following a link (a file
 * descriptor, or -errno said once), and the file's name in it. */
static int open_parent(const char *path, const char **basep)
{
	int bad_name, dfd = loom_open_parent(path, basep, &bad_name);
	if (dfd < 0)
		flush_failed(path, bad_name ? "not a file name" : "the directory", -dfd);
	return dfd;
}

static int write_beside(const char *path, const char *buf, size_t n)
{
	char tmp[300];
	const char *base = NULL;
	struct stat st;
	size_t off = 0;
	int dfd, fd, rc = 0;
	dfd = open_parent(path, &base);
	if (dfd < 0)
		return dfd;
	fd = loom_create_unique(dfd, base, O_WRONLY, 0644, tmp, sizeof tmp);
	if (fd < 0) {
		rc = fd;
		flush_failed(path, rc == -EPERM ? "the temporary is not a regular file of ours" :
			     "creating a temporary beside it", -rc);
		close(dfd);
		return rc;
	}
	if (fstat(fd, &st)) {
		rc = -errno;
		flush_failed(path, "fstat", errno);
	}
	while (rc == 0 && off < n) {
		ssize_t w = write(fd, buf + off, n - off);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			flush_failed(path, "write", errno);
			break;
		}
		off += (size_t)w;
	}
	if (close(fd) < 0 && rc == 0) {
		rc = -errno;
		flush_failed(path, "close", errno);
	}
	if (rc == 0 && renameat(dfd, tmp, dfd, base) < 0) {
		rc = -errno;
		flush_failed(path, "rename", errno);
	}
	if (rc == 0) {
		written = 1;
		written_dev = st.st_dev;
		written_ino = st.st_ino;
	}
	if (rc != 0)
		unlinkat(dfd, tmp, 0);
	close(dfd);
	return rc;
}

int loom_metrics_flush(void)
{
	char path[4096];
	int have = metrics_path(path, sizeof path), rc;
	if (have <= 0)
		return have;
	size_t need = loom_metrics_render(NULL, 0) + 1;
	char *buf = malloc(need);
	if (!buf)
		return -ENOMEM;
	size_t n = loom_metrics_render(buf, need);
	if (n >= need)
		n = need - 1;
	pthread_mutex_lock(&file_lock);
	rc = atomic_load(&finished) ? 0 : write_beside(path, buf, n);
	pthread_mutex_unlock(&file_lock);
	free(buf);
	return rc;
}

/* Removes the file this process wrote, only if the name is still that
 * inode (in a sticky directory no other user can swap it; root running
 * a job must not remove another's file either), then writes no more:
 * a finished job's series leave the textfile collector with it. */
int loom_metrics_finish(void)
{
	char path[4096];
	const char *keep = getenv("LOOM_METRICS_KEEP"), *base = NULL;
	struct stat st;
	int have = metrics_path(path, sizeof path), dfd, rc = 0;
	if (have <= 0)
		return have;
	if (keep && *keep && strcmp(keep, "0")) {
		/* kept: the last counters, written now, stay for the reader */
		return loom_metrics_flush();
	}
	pthread_mutex_lock(&file_lock);
	atomic_store(&finished, 1);
	if (written && (dfd = open_parent(path, &base)) >= 0) {
		if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
		    st.st_dev == written_dev && st.st_ino == written_ino &&
		    unlinkat(dfd, base, 0) < 0)
			rc = -errno;
		close(dfd);
		written = 0;
	}
	pthread_mutex_unlock(&file_lock);
	if (rc)
		LOOM_WARN("metrics: %s: removing it at finalize: %s", path, strerror(-rc));
	return rc;
}
