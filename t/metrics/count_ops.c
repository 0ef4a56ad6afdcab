/* t/metrics/count_ops.c: a known number of operations, for t0006 to
 * compare with what LOOM_METRICS_FILE says. */
#include <loom.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	loom_comm_t *world;
	float buf[1024] = { 0 };
	int rc = loom_init(&world);
	if (rc != LOOM_SUCCESS) {
		fprintf(stderr, "loom_init: %s\n", loom_strerror(rc));
		return 1;
	}
	for (int i = 0; i < 7 && rc == LOOM_SUCCESS; i++)
		rc = loom_allreduce(buf, buf, 1024, LOOM_FLOAT32, LOOM_SUM, world);
	for (int i = 0; i < 3 && rc == LOOM_SUCCESS; i++)
		rc = loom_broadcast(buf, buf, 256, LOOM_FLOAT32, 0, world);
	if (rc == LOOM_SUCCESS)
		rc = loom_barrier(world);
	/* non-blocking ones count as well, when they complete: 2 more
	 * allreduces (one finished by loom_wait, one by loom_test), then the
	 * bucket of loom_dp below: 10 in all */
	for (int i = 0; i < 2 && rc == LOOM_SUCCESS; i++) {
		loom_request_t *q;
		int done = 0;
		rc = loom_iallreduce(buf, buf, 1024, LOOM_FLOAT32, LOOM_SUM, world, &q);
		if (rc == LOOM_SUCCESS && i == 0)
			rc = loom_wait(q);
		while (rc == LOOM_SUCCESS && i == 1 && !done)
			rc = loom_test(q, &done);
	}
	/* and a loom_dp bucket: one gradient of 1024 floats, one bucket, one
	 * more allreduce of 4096 bytes */
	if (rc == LOOM_SUCCESS) {
		loom_dp_t *dp;
		int idx;
		rc = loom_dp_create(world, 0, 0, &dp);
		if (rc == LOOM_SUCCESS) {
			if ((rc = loom_dp_add(dp, buf, 1024, &idx)) == LOOM_SUCCESS &&
			    (rc = loom_dp_ready(dp, idx)) == LOOM_SUCCESS)
				rc = loom_dp_finish(dp);
			loom_dp_free(dp);
		}
	}
	if (rc != LOOM_SUCCESS)
		fprintf(stderr, "collective: %s\n", loom_strerror(rc));
	/* with LOOM_CKPT_DIR: one checkpoint of a [size x 256] float tensor,
	 * one row per rank */
	if (rc == LOOM_SUCCESS && getenv("LOOM_CKPT_DIR")) {
		loom_ckpt_t *ck;
		size_t shape[2] = { (size_t)loom_comm_size(world), 256 };
		size_t off[2] = { (size_t)loom_comm_rank(world), 0 }, ext[2] = { 1, 256 };
		rc = loom_ckpt_open(world, NULL, &ck);
		if (rc == LOOM_SUCCESS) {
			rc = loom_ckpt_tensor(ck, "w", LOOM_FLOAT32, 2, shape, off, ext, buf);
			if (rc == LOOM_SUCCESS)
				rc = loom_ckpt_save(ck, 1);
			loom_ckpt_close(ck);
		}
		if (rc != LOOM_SUCCESS)
			fprintf(stderr, "checkpoint: %s\n", loom_strerror(rc));
	}
	loom_finalize(world);
	return rc != LOOM_SUCCESS;
}
