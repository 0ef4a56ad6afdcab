/* spank/affinity.h: which GPUs, CPUs and NIC each local task gets. */
#ifndef LOOM_SPANK_AFFINITY_H
#define LOOM_SPANK_AFFINITY_H

#include <stddef.h>

#include "options.h"
#include "topology.h"

#define LOOM_GRANT_MAX LOOM_TOPO_MAX_GPU
#define LOOM_TASK_GPUS_MAX 16

/* The GPUs Slurm granted to the step on this node: physical[i] is the GPU
 * number in the topology, visible[i] what the task must put into
 * CUDA_VISIBLE_DEVICES to name it (the same number, or the renumbered one
 * when Slurm constrains devices). */
struct loom_gpu_grant {
	int n;
	int physical[LOOM_GRANT_MAX];
	char visible[LOOM_GRANT_MAX][48];
};

/* From SLURM_STEP_GPUS (physical numbers) and CUDA_VISIBLE_DEVICES (what
 * the task sees); either may be NULL. Neither: all NGPU GPUs. 0, or -1. */
int loom_gpu_grant_parse(const char *step_gpus, const char *cuda_visible, int ngpu,
			 struct loom_gpu_grant *g, char *err, size_t errlen);

/* CUDA_VISIBLE_DEVICES and the task's device in it. One GPU per task, no
 * two tasks sharing one: every task of the node gets the same list, the
 * node's granted GPUs with local task i's GPU at position i (so that
 * set_device(LOCAL_RANK) is right and NCCL still sees its peers' GPUs),
 * device = the local task number. Else (several GPUs per task, or more
 * tasks than GPUs): the task's own GPUs only, device 0. */
struct loom_task_plan {
	int ngpu;
	int gpu[LOOM_TASK_GPUS_MAX];    /* physical GPU numbers */
	char cuda_visible[LOOM_GRANT_MAX * 48]; /* CUDA_VISIBLE_DEVICES value, "" none */
	int device;                     /* index of its (first) GPU in it, -1 none */
	loom_cpuset_t cpus;             /* CPUs to bind to */
	char numa[64];                  /* NUMA node(s) of those CPUs: "0", "0,1", "-" */
	char nccl_ib_hca[256];          /* "=mlx5_0[,mlx5_1]", "" none */
	char nic[128];                  /* nearest NIC(s) for the report, "-" none */
};

/* Plan NTASKS local tasks with SPEC (closest or map) among the granted GPUs
 * and the ALLOWED CPUs. GPUS_PER_TASK 0: split evenly. 0, or -1 with a
 * message (a map entry naming a GPU the step does not have, too few GPUs). */
int loom_affinity_plan(const struct loom_topo *t, const struct loom_gpu_grant *g,
		       const loom_cpuset_t *allowed, int ntasks,
		       const struct loom_affinity_spec *spec, int gpus_per_task,
		       struct loom_task_plan *out, char *err, size_t errlen);

#endif
