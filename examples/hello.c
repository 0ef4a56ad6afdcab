/* examples/hello.c: the smallest loom program: print what this task is.
 * Run: srun -N2 -n4 loom-hello */
#include <loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	char host[256] = "?";
	const char *rank = getenv("RANK"), *size = getenv("WORLD_SIZE");
	gethostname(host, sizeof host);
	printf("loom %s: task %s of %s on %s (node %s)\n", loom_version(),
	       rank ? rank : "0", size ? size : "1", host,
	       getenv("SLURMD_NODENAME") ? getenv("SLURMD_NODENAME") : host);
	return 0;
}
