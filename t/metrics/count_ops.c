/* t/metrics/count_ops.c: a known number of operations, for t0006 to
 * compare with what LOOM_METRICS_FILE says. */
#include <loom.h>
#include <stdio.h>

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
	if (rc != LOOM_SUCCESS)
		fprintf(stderr, "collective: %s\n", loom_strerror(rc));
	loom_finalize(world);
	return rc != LOOM_SUCCESS;
}
