/* spank/port.c: deterministic rendezvous port. */
#include "port.h"

static uint32_t mix32(uint32_t x)
{
	/* an integer finaliser: every input bit affects every output bit */
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

int loom_master_port(uint32_t job_id, uint32_t step_id, int base, int range)
{
	if (range <= 0)
		return base;
	uint64_t r = (uint64_t)range;
	uint64_t off = ((uint64_t)mix32(job_id) % r + (uint64_t)step_id % r) % r;
	return base + (int)off;
}
