/* runtime/ckpt/ckpt_window.c: an aggregator's window of the virtual byte
 * space and the tensor files under it: positioned reads and writes,
 * streaming chunk sums, and the thread that hashes and writes one window
 * while the next is exchanged. */
#include "config.h"
#include "ckpt/ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* bounded calls: Linux moves at most about 2 GiB per call anyway */
#define IO_MAX (1u << 30)

int loom_ck_pwrite_all(int fd, const char *buf, uint64_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, buf, len > IO_MAX ? IO_MAX : (size_t)len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static int64_t pread_all(int fd, char *buf, uint64_t len, uint64_t off)
{
	uint64_t got = 0;
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got > IO_MAX ? IO_MAX : (size_t)(len - got),
				  (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (uint64_t)n;
	}
	return (int64_t)got;
}

void loom_ck_sums_feed(const ckpt_plan_t *p, ck_sums_t *s, const char *buf, uint64_t lo, uint64_t len)
{
	uint64_t v = lo, end = lo + len;
	while (v < end) {
		int t = loom_ck_plan_tensor_of(p, v);
		uint64_t in = v - p->base[t];
		uint64_t cend = (in / p->chunk + 1) * p->chunk;
		uint64_t tb = p->base[t + 1] - p->base[t];
		if (cend > tb)
			cend = tb;
		uint64_t n = cend - in;
		if (n > end - v)
			n = end - v;
		if (!s->open) {
			loom_ck_hash_init(&s->h, s->algo);
			s->open = 1;
		}
		loom_ck_hash_update(&s->h, buf + (v - lo), (size_t)n);
		v += n;
		if (in + n == cend) {
			s->sums[p->cbase[t] + in / p->chunk] = loom_ck_hash_final(&s->h);
			s->open = 0;
		}
	}
}

int loom_ck_window_io(const ck_op_t *op, char *buf, uint64_t lo, uint64_t hi, int writing,
		 char *why, size_t whylen)
{
	const ckpt_plan_t *p = &op->p;
	uint64_t v = lo;
	while (v < hi) {
		int t = loom_ck_plan_tensor_of(p, v);
		uint64_t in = v - p->base[t], n = p->base[t + 1] - v;
		if (n > hi - v)
			n = hi - v;
		if (n == 0) {
			v++;
			continue;
		}
		if (writing) {
			if (loom_ck_pwrite_all(op->fds[t], buf + (v - lo), n, in) != 0) {
				snprintf(why, whylen, "write %s: %s", op->fnames[t], strerror(errno));
				return LOOM_ERR_IO;
			}
#ifdef SYNC_FILE_RANGE_WRITE
			/* start the write-back now, so that the disk works while the
			 * next window is exchanged and the final fsync finds little
			 * left to do (a hint: errors surface at fsync) */
			(void)sync_file_range(op->fds[t], (off_t)in, (off_t)n, SYNC_FILE_RANGE_WRITE);
#endif
		} else {
			int64_t got = pread_all(op->fds[t], buf + (v - lo), n, in);
			if (got < 0) {
				snprintf(why, whylen, "read %s: %s", op->fnames[t], strerror(errno));
				return LOOM_ERR_IO;
			}
			if ((uint64_t)got < n) {
				snprintf(why, whylen, "file %s is short: %" PRIu64 " bytes, expected %" PRIu64,
					 op->fnames[t], in + (uint64_t)got, p->base[t + 1] - p->base[t]);
				memset(buf + (v - lo) + got, 0, n - (uint64_t)got);
				return LOOM_ERR_CORRUPT;
			}
		}
		v += n;
	}
	return LOOM_SUCCESS;
}

void loom_ck_write_own(loom_ckpt_t *ck, ck_op_t *op)
{
	const ckpt_plan_t *p = &op->p;
	for (long i = 0; i < p->nruns[ck->rank] && !op->io_rc; i++) {
		const ckpt_vrun_t *r = &p->runs[ck->rank][i];
		int t = r->tensor;
		/* a chunk at a time: one this rank owns is hashed while its
		 * bytes are still in the cache from the write, not read again */
		for (uint64_t v = r->v; v < r->v + r->len && !op->io_rc;) {
			uint64_t k = (v - p->base[t]) / p->chunk, lo = p->base[t] + k * p->chunk;
			uint64_t hi = lo + p->chunk < p->base[t + 1] ? lo + p->chunk : p->base[t + 1];
			uint64_t end = hi < r->v + r->len ? hi : r->v + r->len;
			if (loom_ck_pwrite_all(op->fds[t], loom_ck_run_src(ck, r, v, end - v), end - v,
					       v - p->base[t]) != 0) {
				snprintf(op->why, sizeof op->why, "write %s: %s", op->fnames[t],
					 strerror(errno));
				op->io_rc = LOOM_ERR_IO;
			} else if (op->owner[p->cbase[t] + k] == ck->rank && v == lo && end == hi) {
				loom_ck_sums_feed(p, &op->sums, loom_ck_run_src(ck, r, lo, hi - lo), lo,
						  hi - lo);
			}
			v = end;
		}
	}
}

/* the chunk holding virtual offset v < total, and where it ends (> v:
 * loom_ck_plan_tensor_of never names an empty file there) */
static uint64_t chunk_at(const ckpt_plan_t *p, uint64_t v, uint64_t *end)
{
	int t = loom_ck_plan_tensor_of(p, v);
	uint64_t k = (v - p->base[t]) / p->chunk;
	*end = p->base[t] + (k + 1) * p->chunk;
	if (*end > p->base[t + 1])
		*end = p->base[t + 1];
	return p->cbase[t] + k;
}

int loom_ck_readback_sums(ck_op_t *op)
{
	const ckpt_plan_t *p = &op->p;
	uint64_t d0, d1, end;
	char *buf;
	int rc = LOOM_SUCCESS;
	if (p->my_aggr < 0)
		return LOOM_SUCCESS;
	d0 = p->dom[p->my_aggr];
	d1 = p->dom[p->my_aggr + 1];
	if (!(buf = malloc(p->window)))
		return LOOM_ERR_NOMEM;
	/* stretches of chunks no rank summed from memory, a window at most */
	for (uint64_t lo = d0; lo < d1 && !rc;) {
		uint64_t c = chunk_at(p, lo, &end), hi = lo;
		if (op->owner && op->owner[c] >= 0) {
			lo = end;
			continue;
		}
		while (hi < d1 && hi - lo < p->window) {
			c = chunk_at(p, hi, &end);
			if (op->owner && op->owner[c] >= 0)
				break;
			hi = end - lo > p->window ? lo + p->window : end;
		}
		rc = loom_ck_window_io(op, buf, lo, hi, 0, op->why, sizeof op->why);
		if (!rc)
			loom_ck_sums_feed(p, &op->sums, buf, lo, hi - lo);
		lo = hi;
	}
	free(buf);
	return rc;
}

static void *writer_main(void *arg)
{
	ck_writer_t *w = arg;
	loom_ck_sums_feed(&w->op->p, w->sums, w->buf, w->lo, w->hi - w->lo);
	if (!w->skip_io)
		w->rc = loom_ck_window_io(w->op, w->buf, w->lo, w->hi, 1, w->why, sizeof w->why);
	return NULL;
}

/* the job's failure becomes the operation's, unless one came first */
static void writer_result(ck_writer_t *w, ck_op_t *op)
{
	if (w->rc && !op->io_rc) {
		op->io_rc = w->rc;
		snprintf(op->why, sizeof op->why, "%s", w->why);
	}
}

void loom_ck_writer_join(ck_writer_t *w, ck_op_t *op)
{
	if (!w->active)
		return;
	pthread_join(w->th, NULL);
	w->active = 0;
	writer_result(w, op);
}

int loom_ck_writer_start(ck_writer_t *w, ck_op_t *op, char *buf, uint64_t lo, uint64_t hi)
{
	loom_ck_writer_join(w, op);
	w->op = op;
	w->sums = &op->sums;
	w->buf = buf;
	w->lo = lo;
	w->hi = hi;
	w->skip_io = op->io_rc != 0;
	w->rc = 0;
	if (pthread_create(&w->th, NULL, writer_main, w) == 0) {
		w->active = 1;
		return 1;
	}
	writer_main(w);
	writer_result(w, op);
	return 0;
}
