/* unit test: metrics counters and the exposition text they render.
 * With LOOM_METRICS_FILE set, also writes that file for
 * t/t0004-metrics.t (promtool) to read; run alone, it also removes its
 * file at finish as loom_finalize does. */
#include "config.h"
#include "metrics/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "../../../t/tap.h"

static char text[65536];

/* loom_metrics_finish (loom_finalize) on LOOM_METRICS_FILE = path, which
 * a flush has just written */
static void finish_removes(const char *path)
{
	char other[4200];
	FILE *fp;
	is_int(loom_metrics_finish(), 0, "finish: 0");
	ok(access(path, F_OK) != 0, "finish removed the file it wrote");
	is_int(loom_metrics_flush(), 0, "a flush after finish: 0");
	ok(access(path, F_OK) != 0, "and writes nothing: the file stays away");
	loom_metrics_free(loom_metrics_new("again", 0, 1));
	is_int(loom_metrics_flush(), 0, "a new communicator: written again");
	ok(access(path, F_OK) == 0, "the file is back");
	/* another file renamed over ours is not ours to remove */
	snprintf(other, sizeof other, "%s.other", path);
	fp = fopen(other, "w");
	ok(fp && fputs("x 1\n", fp) >= 0 && fclose(fp) == 0 && rename(other, path) == 0,
	   "another file put at the name");
	is_int(loom_metrics_finish(), 0, "finish: 0");
	ok(access(path, F_OK) == 0, "finish left the other file alone");
	unlink(path);
	loom_metrics_free(loom_metrics_new("again", 0, 1));
	setenv("LOOM_METRICS_KEEP", "1", 1);
	is_int(loom_metrics_finish(), 0, "finish with LOOM_METRICS_KEEP=1: 0");
	ok(access(path, F_OK) == 0, "LOOM_METRICS_KEEP=1: written a last time and kept");
	unsetenv("LOOM_METRICS_KEEP");
}

int main(void)
{
	plan(NO_PLAN);
	is_int((int)(loom_metrics_busbw_factor(LOOM_METRIC_ALLREDUCE, 4) * 1000), 1500,
	       "allreduce busbw factor on 4 ranks is 2(n-1)/n");
	is_int((int)(loom_metrics_busbw_factor(LOOM_METRIC_ALLGATHER, 4) * 1000), 750,
	       "allgather factor is (n-1)/n");
	is_int((int)loom_metrics_busbw_factor(LOOM_METRIC_BROADCAST, 4), 1, "broadcast factor is 1");

	struct loom_metrics *w = loom_metrics_new("world", 3, 4);
	struct loom_metrics *tp = loom_metrics_new("tp \"group\"", 1, 2);
	ok(w && tp, "two communicators registered");
	for (int i = 0; i < 5; i++)
		loom_metrics_op(w, LOOM_METRIC_ALLREDUCE, 1 << 20, 0.001);
	loom_metrics_op(w, LOOM_METRIC_BARRIER, 0, 0.0001);
	loom_metrics_op(tp, LOOM_METRIC_ALLGATHER, 4096, 0.0005);
	loom_metrics_timeout(w);
	loom_metrics_peer_lost(tp);
	loom_metrics_checkpoint(w, 2.5, 1000);
	loom_metrics_checkpoint_stop(w, LOOM_METRIC_STOP_TIMELIMIT);
	loom_metrics_checkpoint_stop(w, LOOM_METRIC_STOP_TIMELIMIT);
	loom_metrics_checkpoint_stop(tp, LOOM_METRIC_STOP_PREEMPT);
	loom_metrics_seq(w, 6);
	loom_metrics_seq(tp, 1);

	size_t need = loom_metrics_render(text, sizeof text);
	ok(need < sizeof text, "rendered text fits (%zu bytes)", need);
	like(text, "loom_operations_total{slurm_job_id=\"", "operations counter written with labels");
	like(text, ",slurm_step_id=\"", "the step label");
	ok(strstr(text, "{job=") == NULL && strstr(text, ",step=") == NULL,
	   "no job or step label: Prometheus owns job");
	like(text, ",rank=\"3\",", "world rank label");
	like(text, "comm=\"world\",op=\"allreduce\"} 5\n", "5 allreduces counted");
	like(text, "loom_bytes_total{", "bytes family present");
	like(text, "op=\"allreduce\"} 5242880\n", "bytes of the allreduces summed");
	like(text, "comm=\"tp \\\"group\\\"\"", "quote in a comm name escaped");
	like(text, "loom_timeouts_total{", "timeout family present");
	like(text, "loom_checkpoint_last_seconds{", "checkpoint duration present");
	like(text, "# TYPE loom_checkpoint_stops_total counter\n", "stop checkpoints: a counter");
	like(text, "comm=\"world\",reason=\"timelimit\"} 2\n", "two time-limit stops on world");
	like(text, "comm=\"world\",reason=\"preempt\"} 0\n", "no preemption on world");
	like(text, "comm=\"tp \\\"group\\\"\",reason=\"preempt\"} 1\n", "one preemption on tp");
	ok(strstr(text, "op=\"barrier\"} 1\n") != NULL, "barrier counted");
	like(text, "# TYPE loom_last_finished_seq gauge\n", "last finished seq is a gauge");
	like(text, "comm=\"world\"} 6\n", "world's last finished collective is #6");
	like(text, "comm=\"tp \\\"group\\\"\"} 1\n", "tp's is #1");
	/* 1 MiB in 1 ms on 4 ranks: 1.048576e9 bytes/s * 1.5, in bytes/s
	 * (Prometheus's base unit) */
	like(text, "loom_busbw_last_bytes_per_second{", "busbw gauge present");
	like(text, "op=\"allreduce\"} 1.57286e+09\n", "busbw of the last allreduce, in bytes/s");
	ok(strstr(text, "gigabytes") == NULL, "no gigabytes anywhere");

	/* the file itself. Under t0004, LOOM_METRICS_FILE is its template
	 * (%j, %r) and t0004 reads the file; run alone, the test names a file
	 * of its own and reads it back. */
	if (getenv("LOOM_METRICS_FILE")) {
		is_int(loom_metrics_flush(), 0, "flush writes LOOM_METRICS_FILE");
	} else {
		char path[] = "/tmp/loom-metrics-test.XXXXXX", back[65536];
		int fd = mkstemp(path);
		if (fd < 0)
			bail_out("mkstemp failed");
		close(fd);
		setenv("LOOM_METRICS_FILE", path, 1);
		is_int(loom_metrics_flush(), 0, "flush writes LOOM_METRICS_FILE");
		FILE *fp = fopen(path, "r");
		size_t got = fp ? fread(back, 1, sizeof back - 1, fp) : 0;
		back[got] = 0;
		if (fp)
			fclose(fp);
		like(back, "comm=\"world\",op=\"allreduce\"} 5\n", "the file holds the counters");
		finish_removes(path);
		unlink(path);
		unsetenv("LOOM_METRICS_FILE");
	}
	/* counters must not go backwards when a communicator is freed */
	loom_metrics_free(w);
	loom_metrics_render(text, sizeof text);
	like(text, "comm=\"world\",op=\"allreduce\"} 5\n", "a freed communicator's counters stay");
	struct loom_metrics *w2 = loom_metrics_new("world", 3, 4);
	loom_metrics_op(w2, LOOM_METRIC_ALLREDUCE, 8, 0.001);
	loom_metrics_free(w2);
	loom_metrics_render(text, sizeof text);
	like(text, "comm=\"world\",op=\"allreduce\"} 6\n", "freed ones of the same name are summed");
	ok(strstr(text, "op=\"allreduce\"} 1\n") == NULL, "and not written twice");
	loom_metrics_free(tp);
	done_testing();
	return exit_status();
}
