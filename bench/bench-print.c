/* bench/bench-print.c: loom-bench's output in three forms. The table is
 * nccl-tests' (size count type redop root, then the out-of-place time,
 * algbw, busbw, #wrong, with "best" beside the time), comments after '#'.
 * CSV: one header line, then one line a row, no comments. JSON: JSON
 * Lines, built with jansson (bench-json.c), so a long run's rows can be
 * read as they come. */
#include "bench-print.h"

static void text_head(FILE *f, const struct bench_head *h)
{
	fprintf(f, "# loom-bench %s: %s, %d ranks, backend %s, dtype %s", h->version, h->coll,
		h->nranks, h->backend, h->dtype);
	if (h->op)
		fprintf(f, ", op %s", h->op);
	if (h->rooted && h->root_all)
		fprintf(f, ", root all");
	else if (h->rooted)
		fprintf(f, ", root %d", h->root);
	fprintf(f, ", iters %d, warmup %d", h->iters, h->warmup);
	if (h->check == 1)
		fprintf(f, ", check");
	else if (h->check > 1)
		fprintf(f, ", check %d", h->check);
	fprintf(f, "\n");
	/* how srun placed the ranks: a "2 nodes" row means little without it */
	if (h->tasks_per_node)
		fprintf(f, "# tasks per node: %s\n", h->tasks_per_node);
	/* bound or not: ranks left to the scheduler can end up sharing a core */
	if (h->cpus >= 0)
		fprintf(f, "# cpus rank 0 may run on: %d\n", h->cpus);
	fprintf(f, "# busbw = algbw * %s\n", h->busbw_factor);
	fprintf(f, "#%11s %12s %9s %6s %5s %11s %11s %9s %9s %7s", "size", "count", "type",
		"redop", "root", "time", "best", "algbw", "busbw", "#wrong");
	if (h->peer_mpi)
		fprintf(f, " %11s %9s%s", "mpi_time", "mpi_busbw", h->check ? " mpi_wrong" : "");
	if (h->memcpy_col)
		fprintf(f, " %9s %10s", "memcpy", "memcpy_all");
	fprintf(f, "\n#%11s %12s %9s %6s %5s %11s %11s %9s %9s %7s", "(B)", "(elements)", "", "",
		"", "(us)", "(us)", "(GB/s)", "(GB/s)", "");
	if (h->peer_mpi)
		fprintf(f, " %11s %9s%s", "(us)", "(GB/s)", h->check ? "          " : "");
	if (h->memcpy_col)
		fprintf(f, " %9s %10s", "(GB/s)", "(GB/s)");
	fprintf(f, "\n");
}

/* CSV and JSON share the column names, units in the documentation:
 * time and best in us, bandwidths in GB/s */
static void csv_head(FILE *f, const struct bench_head *h)
{
	fprintf(f, "size,count,type,redop,root,time,best,algbw,busbw,wrong");
	if (h->peer_mpi)
		fprintf(f, ",mpi_time,mpi_busbw%s", h->check ? ",mpi_wrong" : "");
	if (h->memcpy_col)
		fprintf(f, ",memcpy,memcpy_all");
	fprintf(f, "\n");
}

void bench_print_head(FILE *f, enum fmt fmt, const struct bench_head *h)
{
	switch (fmt) {
	case F_CSV: csv_head(f, h); break;
	case F_JSON: bench_json_head(f, h); break;
	default: text_head(f, h); break;
	}
	fflush(f);
}

static void text_row(FILE *f, const struct bench_head *h, const struct bench_row *r)
{
	char wr[32];
	if (r->wrong < 0)
		snprintf(wr, sizeof wr, "N/A");
	else
		snprintf(wr, sizeof wr, "%lld", r->wrong);
	fprintf(f, "%12zu %12zu %9s %6s %5d %11.2f %11.2f %9.3f %9.3f %7s", r->bytes, r->count,
		r->type, r->redop, r->root, r->time_us, r->best_us, r->algbw, r->busbw, wr);
	if (h->peer_mpi) {
		fprintf(f, " %11.2f %9.3f", r->mpi_time_us, r->mpi_busbw);
		if (h->check)
			fprintf(f, " %9lld", r->mpi_wrong);
	}
	if (h->memcpy_col)
		fprintf(f, " %9.3f %10.3f", r->memcpy, r->memcpy_all);
	fprintf(f, "\n");
}

/* the count of wrong elements: empty when unchecked */
static void wrong_field(FILE *f, long long v)
{
	if (v >= 0)
		fprintf(f, "%lld", v);
}

static void csv_row(FILE *f, const struct bench_head *h, const struct bench_row *r)
{
	fprintf(f, "%zu,%zu,%s,%s,%d,%.2f,%.2f,%.3f,%.3f,", r->bytes, r->count, r->type, r->redop,
		r->root, r->time_us, r->best_us, r->algbw, r->busbw);
	wrong_field(f, r->wrong);
	if (h->peer_mpi) {
		fprintf(f, ",%.2f,%.3f", r->mpi_time_us, r->mpi_busbw);
		if (h->check) {
			fputc(',', f);
			wrong_field(f, r->mpi_wrong);
		}
	}
	if (h->memcpy_col)
		fprintf(f, ",%.3f,%.3f", r->memcpy, r->memcpy_all);
	fprintf(f, "\n");
}

void bench_print_row(FILE *f, enum fmt fmt, const struct bench_head *h,
		     const struct bench_row *r)
{
	switch (fmt) {
	case F_CSV: csv_row(f, h, r); break;
	case F_JSON: bench_json_row(f, h, r); break;
	default: text_row(f, h, r); break;
	}
	fflush(f);
}

void bench_print_tail(FILE *f, enum fmt fmt, const struct bench_head *h,
		      const struct bench_tail *t)
{
	switch (fmt) {
	case F_CSV:
		break;	/* the totals follow from the rows */
	case F_JSON:
		bench_json_tail(f, h, t);
		break;
	default:
		if (h->check)
			fprintf(f, "# Wrong elements       : %lld %s\n", t->wrong,
				t->wrong ? "FAILED" : "OK");
		if (h->check && h->peer_mpi)
			fprintf(f, "# Wrong elements (mpi) : %lld %s\n", t->mpi_wrong,
				t->mpi_wrong ? "FAILED" : "OK");
		fprintf(f, "# Avg bus bandwidth    : %.3f GB/s\n", t->avg_busbw);
		if (h->peer_mpi)
			fprintf(f, "# Avg bus bandwidth (mpi): %.3f GB/s\n", t->mpi_avg_busbw);
		break;
	}
	fflush(f);
}
