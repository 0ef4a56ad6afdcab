/* runtime/ckpt/ckpt_layout.c: row-major block runs and aggregator domains
 * (pure functions, see ckpt_nocomm.h). */
#include "ckpt/ckpt_nocomm.h"

long loom_ck_block_runs(int ndim, const uint64_t *shape, const uint64_t *offset,
		     const uint64_t *extent, size_t esize,
		     void (*cb)(void *arg, const ckpt_run_t *run), void *arg)
{
	uint64_t stride[CKPT_MAX_NDIM], idx[CKPT_MAX_NDIM], runlen, nruns = 1;
	int j, d;
	if (ndim < 1 || ndim > CKPT_MAX_NDIM || esize == 0)
		return -1;
	for (d = 0; d < ndim; d++)
		if (offset[d] > shape[d] || extent[d] > shape[d] - offset[d])
			return -1;
	stride[ndim - 1] = esize;
	for (d = ndim - 2; d >= 0; d--)
		stride[d] = stride[d + 1] * shape[d + 1];
	for (d = 0; d < ndim; d++)
		if (extent[d] == 0)
			return 0;
	/* j: the innermost dimension the block does not span fully */
	for (j = ndim - 1; j >= 0 && extent[j] == shape[j]; j--)
		;
	if (j < 0) {
		ckpt_run_t r = { 0, stride[0] * shape[0], 0 };
		if (cb)
			cb(arg, &r);
		return 1;
	}
	runlen = extent[j] * stride[j];
	for (d = 0; d < j; d++) {
		nruns *= extent[d];
		idx[d] = 0;
	}
	for (uint64_t n = 0; n < nruns; n++) {
		ckpt_run_t r;
		r.foff = offset[j] * stride[j];
		for (d = 0; d < j; d++)
			r.foff += (offset[d] + idx[d]) * stride[d];
		r.len = runlen;
		r.loff = n * runlen;
		if (cb)
			cb(arg, &r);
		for (d = j - 1; d >= 0; d--) {
			if (++idx[d] < extent[d])
				break;
			idx[d] = 0;
		}
	}
	return (long)nruns;
}

/* smallest chunk start >= x (total when none) */
static uint64_t next_chunk_start(size_t nfiles, const uint64_t *bytes, uint64_t chunk,
				 uint64_t x)
{
	uint64_t base = 0;
	for (size_t i = 0; i < nfiles; i++) {
		if (x <= base)
			return base;
		if (x < base + bytes[i]) {
			uint64_t k = (x - base + chunk - 1) / chunk;
			uint64_t s = base + k * chunk;
			return s < base + bytes[i] ? s : base + bytes[i];
		}
		base += bytes[i];
	}
	return base;
}

void loom_ck_domains(size_t nfiles, const uint64_t *bytes, uint64_t chunk, int naggr,
		  uint64_t *start)
{
	uint64_t total = 0;
	for (size_t i = 0; i < nfiles; i++)
		total += bytes[i];
	start[0] = 0;
	for (int j = 1; j < naggr; j++) {
		uint64_t t = (uint64_t)((unsigned __int128)total * (unsigned)j / (unsigned)naggr);
		uint64_t s = next_chunk_start(nfiles, bytes, chunk, t);
		start[j] = s < start[j - 1] ? start[j - 1] : s;
	}
	start[naggr] = total;
}
