/* t/gpu/loom-topo-probe [--tasks N] [--nvml LIB] [--root DIR|FILE.xml]:
 * the plugin's affinity planner (spank/topology.c, spank/affinity.c, the
 * same sources as loom.so; never libloom) on this machine's live topology
 * and NVML (dlopen()ed, as loom.so does), printing what it would bind for
 * N local tasks (default: one per GPU) with --loom-affinity=closest, all
 * GPUs granted and the CPUs this process may use allowed (with --root,
 * all the CPUs of that topology, as loom.so does).
 * Last line: "loom-topo-probe: PASS ..." (exit 0), "... FAIL ..." (1), or
 * "... NOT RUN: why" (77: built without hwloc, no NVIDIA GPU in the
 * topology, or no NVML to ask: what the planner then does is shown, but
 * the live-NVML path was not taken). */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "affinity.h"
#include "options.h"
#include "topology.h"

#define NOT_RUN 77

static int not_run(const char *why, const char *detail)
{
	printf("loom-topo-probe: NOT RUN: %s%s%s\n", why, detail ? ": " : "", detail ? detail : "");
	return NOT_RUN;
}

static void show_topology(const struct loom_topo *t)
{
	char cpus[1024];
	loom_cpuset_format(&t->cpus, cpus, sizeof cpus);
	printf("topology: %d NUMA node(s), %d PU(s) (%s), %d NVIDIA GPU(s), %d NIC(s); GPU order %s\n",
	       t->nnuma, loom_cpuset_count(&t->cpus), cpus, t->ngpu, t->nnic, t->gpu_order);
	for (int i = 0; i < t->nnuma; i++) {
		loom_cpuset_format(&t->numa[i].cpus, cpus, sizeof cpus);
		printf("numa %d: cpus %s\n", t->numa[i].os_index, cpus);
	}
	for (int g = 0; g < t->ngpu; g++) {
		const struct loom_topo_gpu *u = &t->gpu[g];
		int best = -1;
		for (int n = 0; n < t->nnic; n++)
			if (best < 0 || u->nic_dist[n] < u->nic_dist[best])
				best = n;
		loom_cpuset_format(&u->cpus, cpus, sizeof cpus);
		printf("gpu %d: pci %04x:%02x:%02x.%x numa %d cpus %s nearest nic %s", g, u->domain, u->bus,
		       u->dev, u->func, u->numa >= 0 ? t->numa[u->numa].os_index : -1, cpus,
		       best >= 0 ? t->nic[best].name : "-");
		if (best >= 0)
			printf(" (%s)", u->nic_dist[best] >= LOOM_DIST_FAR ? "other NUMA node" :
			       u->nic_dist[best] >= 1000 ? "other PCI tree" : "same PCI tree");
		printf("\n");
	}
	for (int n = 0; n < t->nnic; n++)
		printf("nic %s: %s numa %d\n", t->nic[n].name, t->nic[n].ib ? "RDMA HCA" : "netdev",
		       t->nic[n].numa >= 0 ? t->numa[t->nic[n].numa].os_index : -1);
}

int main(int argc, char **argv)
{
	const char *nvml = "libnvidia-ml.so.1", *root = "/";
	int ntasks = 0;
	static struct loom_topo topo;
	struct loom_gpu_grant grant;
	struct loom_affinity_spec spec;
	struct loom_task_plan *plan;
	loom_cpuset_t allowed;
	cpu_set_t cs;
	char err[512], cpus[1024];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--tasks") && i + 1 < argc)
			ntasks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--nvml") && i + 1 < argc)
			nvml = argv[++i];
		else if (!strcmp(argv[i], "--root") && i + 1 < argc)
			root = argv[++i];
		else {
			fprintf(stderr, "usage: loom-topo-probe [--tasks N] [--nvml LIB] [--root DIR|FILE.xml]\n");
			return 2;
		}
	}
	if (loom_topo_load(&topo, root, nvml, err, sizeof err) < 0) {
#ifndef HAVE_HWLOC
		return not_run("built without hwloc, the planner's only topology loader", err);
#else
		printf("loom-topo-probe: FAIL: %s\n", err);
		return 1;
#endif
	}
	show_topology(&topo);
	if (topo.ngpu == 0)
		return not_run("no NVIDIA GPU in the topology", NULL);
	if (topo.nvml_ngpu == -1) {
		void *h = dlopen(nvml, RTLD_NOW | RTLD_LOCAL);
		const char *why = h ? "it loads, but nvmlInit_v2 or a symbol failed" : dlerror();
		printf("nvml: %s not usable: %s\n", nvml, why);
	} else if (topo.nvml_ngpu >= 0) {
		printf("nvml: %s lists %d GPU(s)%s\n", nvml, topo.nvml_ngpu,
		       topo.nvml_ngpu == topo.ngpu ? ", GPUs numbered in NVML's order" :
		       ", not the topology's count: PCI bus order kept (as loom.so does)");
	}
	if (ntasks <= 0)
		ntasks = topo.ngpu;
	if (loom_gpu_grant_parse(NULL, NULL, topo.ngpu, &grant, err, sizeof err) < 0) {
		printf("loom-topo-probe: FAIL: grant: %s\n", err);
		return 1;
	}
	loom_cpuset_zero(&allowed);
	if (strcmp(root, "/")) {        /* another machine's topology: all its CPUs (as loom.so) */
		allowed = topo.cpus;
	} else if (sched_getaffinity(0, sizeof cs, &cs) == 0) {
		for (int c = 0; c < CPU_SETSIZE && c < LOOM_MAX_CPUS; c++)
			if (CPU_ISSET(c, &cs))
				loom_cpuset_set(&allowed, c);
	} else {
		allowed = topo.cpus;
	}
	memset(&spec, 0, sizeof spec);
	spec.mode = LOOM_AFF_CLOSEST;
	plan = calloc((size_t)ntasks, sizeof *plan);
	if (!plan)
		return 1;
	if (loom_affinity_plan(&topo, &grant, &allowed, ntasks, &spec, 0, plan, err, sizeof err) < 0) {
		printf("loom-topo-probe: FAIL: the planner: %s\n", err);
		return 1;
	}
	loom_cpuset_format(&allowed, cpus, sizeof cpus);
	printf("plan: %d local task(s), --loom-affinity=closest, all %d GPU(s) granted, allowed cpus %s\n",
	       ntasks, grant.n, cpus);
	for (int k = 0; k < ntasks; k++) {
		loom_cpuset_format(&plan[k].cpus, cpus, sizeof cpus);
		printf("task %d: CUDA_VISIBLE_DEVICES=%s LOOM_LOCAL_DEVICE=%d cpus %s numa %s nic %s NCCL_IB_HCA=%s\n", k,
		       plan[k].cuda_visible[0] ? plan[k].cuda_visible : "-", plan[k].device, cpus, plan[k].numa,
		       plan[k].nic, plan[k].nccl_ib_hca[0] ? plan[k].nccl_ib_hca : "-");
	}
	free(plan);
	if (topo.nvml_ngpu < 0)
		return not_run("no NVML to ask", nvml);
	printf("loom-topo-probe: PASS planned %d task(s) on %d GPU(s), GPU order %s (NVML lists %d)\n",
	       ntasks, topo.ngpu, topo.gpu_order, topo.nvml_ngpu);
	return 0;
}
