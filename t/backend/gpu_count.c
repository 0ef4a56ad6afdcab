/* t/backend/gpu_count: prints the number of CUDA devices ("0" on error,
 * with the reason on stderr), so tests can skip without a GPU. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess) {
		fprintf(stderr, "cudaGetDeviceCount: %s\n", cudaGetErrorString(e));
		n = 0;
	}
	printf("%d\n", n);
	return 0;
}
