/* runtime/dp/test/dp_plan.c: how loom_dp groups gradients into buckets:
 * backward order, the cap, a tensor bigger than the cap, bf16 wire bytes,
 * LOOM_BUCKET_MB. Needs only a world of size 1. */
#include "config.h"
#include "loom.h"
#include "../../../t/tap.h"

#include <stdlib.h>

/* forward order; with a 100-byte fp32 cap (25 floats) the backward walk
 * e | d (over the cap: alone) | c b | a gives 4 buckets */
static const size_t counts[] = { 10, 10, 10, 40, 5 };
#define NT 5
static float grads[NT][40];

static loom_dp_t *make(loom_comm_t *w, size_t cap, unsigned flags, int *idx)
{
	loom_dp_t *dp = NULL;
	int rc = loom_dp_create(w, cap, flags, &dp);
	if (rc != LOOM_SUCCESS)
		return NULL;
	for (int i = 0; i < NT; i++)
		loom_dp_add(dp, grads[i], counts[i], &idx[i]);
	return dp;
}

int main(void)
{
	loom_comm_t *w = NULL;
	loom_dp_t *dp;
	int idx[NT], rc;
	plan(NO_PLAN);
	if (loom_init(&w) != LOOM_SUCCESS)
		bail_out("loom_init failed (a world of one needs no cluster)");
	unsetenv("LOOM_BUCKET_MB");

	dp = make(w, 100, 0, idx);
	ok(dp != NULL, "create with a 100-byte cap");
	is_int(idx[0], 0, "first tensor gets index 0");
	is_int(idx[4], 4, "indices follow registration");
	is_int(loom_dp_bucket_count(dp), 4, "e | d | c b | a: 4 buckets");
	is_int(loom_dp_bucket_of(dp, 4), 0, "last registered tensor is in bucket 0 (backward order)");
	is_int(loom_dp_bucket_of(dp, 3), 1, "tensor bigger than the cap has a bucket of its own");
	is_int(loom_dp_bucket_bytes(dp, 1), 160, "... holding all 160 bytes of it");
	is_int(loom_dp_bucket_of(dp, 2), 2, "c starts a bucket after the big one");
	is_int(loom_dp_bucket_of(dp, 1), 2, "b fits with c (80 bytes <= 100)");
	is_int(loom_dp_bucket_of(dp, 0), 3, "a would overflow c+b: next bucket");
	{
		int mono = 1;
		for (int i = 1; i < NT; i++)
			mono &= loom_dp_bucket_of(dp, i) <= loom_dp_bucket_of(dp, i - 1);
		ok(mono, "bucket index never grows along registration order");
	}
	{
		int over = 0;
		for (int b = 0; b < loom_dp_bucket_count(dp); b++)
			if (loom_dp_bucket_bytes(dp, b) > 100 && b != 1)
				over++;
		is_int(over, 0, "only the single oversized tensor's bucket passes the cap");
	}
	is_int(loom_dp_bucket_bytes(dp, 99), 0, "bytes of a bucket that does not exist: 0");
	is_int(loom_dp_add(dp, grads[0], 1, NULL), LOOM_ERR_INVALID, "add after the plan is fixed fails");
	is_int(loom_dp_bucket_of(dp, NT), LOOM_ERR_INVALID, "bucket_of a bad index fails");
	loom_dp_free(dp);

	dp = make(w, 100, LOOM_DP_BF16_WIRE, idx);
	is_int(loom_dp_bucket_count(dp), 2, "bf16 wire: 2 bytes per element, e+d | c+b+a");
	is_int(loom_dp_bucket_bytes(dp, 0), 90, "bf16 bucket 0 is 45 elements, 90 bytes");
	loom_dp_free(dp);

	dp = make(w, 1, 0, idx);
	is_int(loom_dp_bucket_count(dp), NT, "a 1-byte cap: one bucket per tensor");
	loom_dp_free(dp);

	dp = make(w, 0, 0, idx);
	is_int(loom_dp_bucket_count(dp), 1, "default cap (25 MiB): everything in one bucket");
	loom_dp_free(dp);

	setenv("LOOM_BUCKET_MB", "0.0001", 1);  /* 104 bytes */
	dp = make(w, 0, 0, idx);
	is_int(loom_dp_bucket_count(dp), 4, "LOOM_BUCKET_MB=0.0001 (104 bytes) is read");
	loom_dp_free(dp);
	dp = make(w, 1 << 20, 0, idx);
	is_int(loom_dp_bucket_count(dp), 1, "an explicit cap wins over LOOM_BUCKET_MB");
	loom_dp_free(dp);

	setenv("LOOM_BUCKET_MB", "lots", 1);
	dp = (loom_dp_t *)1;
	rc = loom_dp_create(w, 0, 0, &dp);
	is_int(rc, LOOM_ERR_INVALID, "LOOM_BUCKET_MB=lots is refused");
	ok(dp == NULL, "... and no helper is returned");
	setenv("LOOM_BUCKET_MB", "-3", 1);
	is_int(loom_dp_create(w, 0, 0, &dp), LOOM_ERR_INVALID, "LOOM_BUCKET_MB=-3 is refused");
	unsetenv("LOOM_BUCKET_MB");

	is_int(loom_dp_create(w, 0, 0x80, &dp), LOOM_ERR_INVALID, "unknown flag refused");
	is_int(loom_dp_create(NULL, 0, 0, &dp), LOOM_ERR_INVALID, "NULL communicator refused");
	loom_dp_create(w, 0, 0, &dp);
	is_int(loom_dp_add(dp, grads[0], 0, NULL), LOOM_ERR_INVALID, "empty tensor refused");
	is_int(loom_dp_add(dp, NULL, 3, NULL), LOOM_ERR_INVALID, "NULL gradient refused");
	is_int(loom_dp_finish(dp), LOOM_ERR_INVALID, "finish with nothing registered fails");
	loom_dp_free(dp);

	loom_finalize(w);
	done_testing();
	return exit_status();
}
