/* bench/bench-print.h: loom-bench's output, one run's settings, rows and
 * totals, as nccl-tests' table (text), CSV or JSON Lines. Rank 0 alone calls
 * these; they know nothing of libloom. */
#ifndef LOOM_BENCH_PRINT_H
#define LOOM_BENCH_PRINT_H

#include <stdio.h>

enum fmt { F_TEXT, F_CSV, F_JSON };

struct bench_head {
	const char *version, *coll, *backend;
	const char *dtype;		/* a name, or "all" */
	const char *op;			/* NULL: not a reduction; or "all" */
	const char *busbw_factor;	/* "2(n-1)/n", "(n-1)/n" or "1" */
	const char *tasks_per_node;	/* SLURM_STEP_TASKS_PER_NODE, or NULL */
	int nranks, rooted, root_all, root, iters, warmup, check;
	int cpus;			/* rank 0 may run on; < 0: unknown */
	int peer_mpi, memcpy_col;
};

/* one size of one datatype, op and root; wrong < 0: not checked */
struct bench_row {
	size_t bytes, count;
	const char *type, *redop;	/* redop "none" outside reductions */
	int root;			/* -1 outside broadcast and reduce */
	double time_us, best_us, algbw, busbw;
	long long wrong, mpi_wrong;
	double mpi_time_us, mpi_busbw, memcpy, memcpy_all;
};

struct bench_tail {
	long long wrong, mpi_wrong;
	double avg_busbw, mpi_avg_busbw;
};

void bench_print_head(FILE *f, enum fmt fmt, const struct bench_head *h);
void bench_print_row(FILE *f, enum fmt fmt, const struct bench_head *h,
		     const struct bench_row *r);
void bench_print_tail(FILE *f, enum fmt fmt, const struct bench_head *h,
		      const struct bench_tail *t);

/* F_JSON's three kinds of line (bench-json.c) */
void bench_json_head(FILE *f, const struct bench_head *h);
void bench_json_row(FILE *f, const struct bench_head *h, const struct bench_row *r);
void bench_json_tail(FILE *f, const struct bench_head *h, const struct bench_tail *t);

#endif
