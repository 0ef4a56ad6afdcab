/* runtime/metrics/metrics.h: per-communicator counters, written for Prometheus.
 *
 * When LOOM_METRICS_FILE is set, every few seconds (LOOM_METRICS_INTERVAL,
 * default 5) and at exit the process rewrites that file atomically in the
 * Prometheus text exposition format, for node_exporter's textfile
 * collector. Labels: slurm_job_id, slurm_step_id, rank, host, comm (and
 * op); not job, which Prometheus sets to its scrape job. Base units:
 * bytes, seconds, bytes per second.
 * Without LOOM_METRICS_FILE the counters are kept (cheap) but not written.
 */
#ifndef LOOM_RUNTIME_METRICS_H
#define LOOM_RUNTIME_METRICS_H

#include <stddef.h>

enum loom_metric_op {
	LOOM_METRIC_ALLREDUCE,
	LOOM_METRIC_BROADCAST,
	LOOM_METRIC_REDUCE,
	LOOM_METRIC_ALLGATHER,
	LOOM_METRIC_REDUCE_SCATTER,
	LOOM_METRIC_ALLTOALL,
	LOOM_METRIC_BARRIER,
	LOOM_METRIC_SEND,
	LOOM_METRIC_RECV,
	LOOM_METRIC_OP_COUNT
};

struct loom_metrics;

/* 1 when LOOM_METRICS_FILE names a file (read once, at the first call):
 * without one nothing reads the counters, and the operations skip them
 * and the clock reads they need (core/progress.c, loom_op_clock) */
int loom_metrics_enabled(void);
/* One set of counters per communicator; name, rank and size label it.
 * NULL on allocation failure (callers then record nothing). */
struct loom_metrics *loom_metrics_new(const char *comm_name, int rank, int size);
/* The owner is done with m. Its counters stay in the file until exit
 * (folded into other freed ones of the same name and rank). */
void loom_metrics_free(struct loom_metrics *m);
void loom_metrics_rename(struct loom_metrics *m, const char *comm_name);

/* A completed operation of `bytes` per rank (the size nccl-tests calls
 * "size") that took `seconds`. busbw uses nccl-tests' factors. */
void loom_metrics_op(struct loom_metrics *m, enum loom_metric_op op, size_t bytes,
		     double seconds);
/* the communicator's last finished collective (loom_last_finished_seq) */
void loom_metrics_seq(struct loom_metrics *m, unsigned long long seq);
void loom_metrics_timeout(struct loom_metrics *m);
void loom_metrics_peer_lost(struct loom_metrics *m);
void loom_metrics_checkpoint(struct loom_metrics *m, double seconds, size_t bytes);
/* why a committed checkpoint was a stop checkpoint, as the task can tell
 * from its signal (a scancel is the same SIGTERM as a preemption: only
 * loom.so's slurmd log line tells it apart) */
enum loom_metric_stop { LOOM_METRIC_STOP_PREEMPT, LOOM_METRIC_STOP_TIMELIMIT,
			LOOM_METRIC_STOP_COUNT };
/* "preempt", "timelimit" */
const char *loom_metrics_stop_name(enum loom_metric_stop why);
/* a stop checkpoint committed (loom_checkpoint_stops_total{reason=...}) */
void loom_metrics_checkpoint_stop(struct loom_metrics *m, enum loom_metric_stop why);

/* Write LOOM_METRICS_FILE now (no-op when unset). 0 or -errno. */
int loom_metrics_flush(void);
/* The program is done (loom_finalize): remove the file this process
 * wrote and write it no more (until a new communicator), so that an
 * ended job leaves no stale series; with LOOM_METRICS_KEEP=1 write it a
 * last time and leave it. 0 or -errno. */
int loom_metrics_finish(void);

/* Render every registered communicator's counters into buf (for tests
 * and for the file writer). Returns the length it needs (like snprintf). */
size_t loom_metrics_render(char *buf, size_t len);

/* nccl-tests bus bandwidth factor for op on n ranks */
double loom_metrics_busbw_factor(enum loom_metric_op op, int n);

#endif
