/* unit test: the affinity planner on the topology fixtures in t/fixtures */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../affinity.h"
#include "../../t/tap.h"

static struct loom_topo topo;
static char err[512];

#ifdef HAVE_HWLOC
static struct loom_task_plan tp[64];

static int load(const char *name, const char *nvml)
{
	char path[1024];
	snprintf(path, sizeof path, "%s/%s", LOOM_FIXTURES, name);
	int rc = loom_topo_load(&topo, path, nvml ? nvml : "none", err, sizeof err);
	if (rc < 0)
		diag("%s", err);
	return rc;
}

static int run(const char *step_gpus, const char *cuda, int ntasks, const char *aff, int gpt)
{
	struct loom_gpu_grant g;
	struct loom_affinity_spec spec;
	if (loom_gpu_grant_parse(step_gpus, cuda, topo.ngpu, &g, err, sizeof err) < 0)
		return -2;
	if (loom_parse_affinity(aff, &spec, "--loom-affinity", err, sizeof err) < 0)
		return -3;
	return loom_affinity_plan(&topo, &g, &topo.cpus, ntasks, &spec, gpt, tp, err, sizeof err);
}

static const char *cpus(int t)
{
	static char b[8][4096];
	loom_cpuset_format(&tp[t].cpus, b[t % 8], sizeof b[0]);
	return b[t % 8];
}

/* what a program indexing the list by its local rank gets, as
 * torch.cuda.set_device(int(os.environ["LOCAL_RANK"])) does: entry
 * LOOM_LOCAL_DEVICE (= LOCAL_RANK when the node's list is shared) */
static const char *entry(const char *list, int i)
{
	static char e[64];
	const char *p = list;
	for (; i > 0 && p; i--)
		if ((p = strchr(p, ',')))
			p++;
	if (!p || i < 0)
		return "(none)";
	snprintf(e, sizeof e, "%.*s", (int)strcspn(p, ","), p);
	return e;
}

/* tasks 0..N-1 each see LIST, and entry LOCAL_RANK of it is WANT[t] */
static int list_ok(int n, const char *list, const char *const *want)
{
	int good = 1;
	for (int t = 0; t < n; t++)
		if (tp[t].ngpu != 1 || strcmp(tp[t].cuda_visible, list) || tp[t].device != t ||
		    strcmp(entry(tp[t].cuda_visible, t), want[t]))
			good = 0, diag("task %d: CUDA_VISIBLE_DEVICES=%s device %d, entry %d is %s, want %s",
				       t, tp[t].cuda_visible, tp[t].device, t, entry(tp[t].cuda_visible, t), want[t]);
	return good;
}

static int disjoint(int n)
{
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (loom_cpuset_intersects(&tp[i].cpus, &tp[j].cpus))
				return 0;
	return 1;
}
#endif

/* the list format needs no topology: checked with or without hwloc */
static void cpu_lists(void)
{
	loom_cpuset_t s;
	is_int(loom_cpuset_parse("0-3,8,10-11", &s), 0, "cpu list parses");
	char b[64];
	loom_cpuset_format(&s, b, sizeof b);
	is_str(b, "0-3,8,10-11", "and formats back");
	is_int(loom_cpuset_parse("3-1", &s), -1, "reversed range rejected");
	is_int(loom_cpuset_parse("-0", &s), -1, "'-0' rejected (no number before the dash)");
	is_int(loom_cpuset_parse("0--1", &s), -1, "'0--1' rejected");
	is_int(loom_cpuset_parse(" 1", &s), -1, "a leading space rejected");
	is_int(loom_cpuset_parse("+1", &s), -1, "a sign rejected");
	is_int(loom_cpuset_parse("1-+3", &s), -1, "a sign after the dash rejected");
}

int main(void)
{
	plan(NO_PLAN);
#ifndef HAVE_HWLOC
	/* config.h says no hwloc: no topology, the planner is not built in */
	is_int(loom_topo_load(&topo, LOOM_FIXTURES "/dgx-h100.xml", "none", err, sizeof err), -1,
	       "without hwloc the fixture does not load");
	like(err, "built without hwloc", "and the message says why");
	cpu_lists();
	skip(1, "the planner on the topology fixtures needs hwloc (config.h: no HAVE_HWLOC)");
	done_testing();
	return exit_status();
#else
	/* built with hwloc: a fixture that does not load is a failure */
	if (!ok(load("dgx-h100.xml", NULL) == 0, "dgx-h100.xml loads")) {
		done_testing();
		return exit_status();
	}

	/* the DGX-H100-like node */
	is_int(topo.nnuma, 2, "dgx: 2 NUMA nodes");
	is_int(topo.ngpu, 8, "dgx: 8 GPUs");
	is_int(topo.nnic, 9, "dgx: 8 HCAs and one Ethernet NIC");
	is_int(loom_cpuset_count(&topo.cpus), 224, "dgx: 224 PUs");
	ok(topo.gpu[0].numa == 0 && topo.gpu[3].numa == 0 && topo.gpu[4].numa == 1 && topo.gpu[7].numa == 1,
	   "dgx: GPUs 0-3 on NUMA 0, 4-7 on NUMA 1");

	is_int(run(NULL, NULL, 8, "closest", 0), 0, "dgx: 8 tasks planned");
	int on0 = 0, on1 = 0, ok_gpu = 1, ok_nic = 1;
	for (int t = 0; t < 8; t++) {
		on0 += strcmp(tp[t].numa, "0") == 0;
		on1 += strcmp(tp[t].numa, "1") == 0;
		char want[32];
		if (tp[t].ngpu != 1 || tp[t].gpu[0] != t)
			ok_gpu = 0;
		snprintf(want, sizeof want, "=mlx5_%d", t);
		if (strcmp(tp[t].nccl_ib_hca, want))
			ok_nic = 0, diag("task %d hca %s", t, tp[t].nccl_ib_hca);
	}
	ok(on0 == 4 && on1 == 4, "dgx: 4 tasks per NUMA node (%d, %d)", on0, on1);
	ok(ok_gpu, "dgx: task i gets GPU i");
	{
		static const char *const w[] = { "0", "1", "2", "3", "4", "5", "6", "7" };
		ok(list_ok(8, "0,1,2,3,4,5,6,7", w),
		   "dgx: every task sees the node's 8 GPUs, its own at position LOCAL_RANK (LOOM_LOCAL_DEVICE)");
	}
	ok(ok_nic, "dgx: each task gets the HCA behind its GPU's switch, exact match (=mlx5_i)");
	ok(disjoint(8), "dgx: CPU sets are disjoint");
	is_str(cpus(0), "0-13,112-125", "dgx: task 0 gets 14 whole cores (both SMT siblings) of package 0");
	is_str(cpus(4), "56-69,168-181", "dgx: task 4 starts package 1");
	is_int(loom_cpuset_count(&tp[7].cpus), 28, "dgx: task 7 has 28 PUs");

	is_int(run(NULL, NULL, 4, "closest", 0), 0, "dgx: 4 tasks");
	ok(tp[0].ngpu == 2 && !strcmp(tp[0].cuda_visible, "0,1") && !strcmp(tp[3].cuda_visible, "6,7"),
	   "dgx: 4 tasks get 2 GPUs each (%s, %s)", tp[0].cuda_visible, tp[3].cuda_visible);
	ok(tp[0].device == 0 && tp[3].device == 0,
	   "dgx: several GPUs per task: only its own are visible, the first is device 0");
	is_str(tp[0].nccl_ib_hca, "=mlx5_0,mlx5_1", "dgx: both nearest HCAs");
	ok(disjoint(4), "dgx 4 tasks: disjoint");

	is_int(run(NULL, NULL, 2, "closest", 1), 0, "dgx: gpus-per-task=1 with 2 tasks");
	ok(tp[0].ngpu == 1 && tp[1].ngpu == 1, "one GPU each");
	{
		static const char *const w[] = { "0", "1" };
		ok(list_ok(2, "0,1,2,3,4,5,6,7", w),
		   "dgx: 2 tasks with one GPU each: the tasks' GPUs first, then the step's others");
	}
	is_int(run(NULL, NULL, 4, "closest", 3), -1, "dgx: 3 GPUs x 4 tasks > 8");
	like(err, "needs 12 GPUs, the step has 8 here", "message gives the numbers");

	is_int(run(NULL, NULL, 2, "map:7,0+1", 0), 0, "dgx: map");
	ok(!strcmp(tp[0].cuda_visible, "7") && !strcmp(tp[1].cuda_visible, "0,1"), "map entries per task");
	ok(tp[0].device == 0 && tp[1].device == 0, "map with 2 GPUs for a task: own GPUs only, device 0");
	is_int(run(NULL, NULL, 3, "map:5,2,7", 0), 0, "dgx: map, one GPU each");
	{
		static const char *const w[] = { "5", "2", "7" };
		ok(list_ok(3, "5,2,7,0,1,3,4,6", w), "map, one GPU each: entry LOCAL_RANK is the task's map entry");
	}
	is_int(run(NULL, NULL, 4, "map:5,2", 0), 0, "dgx: map entries repeated");
	ok(!strcmp(tp[0].cuda_visible, "5") && !strcmp(tp[2].cuda_visible, "5") && tp[2].device == 0,
	   "tasks sharing a GPU: own GPU only, device 0");
	is_str(tp[0].numa, "1", "map: task on GPU 7 sits on NUMA 1");
	is_int(run(NULL, NULL, 1, "map:8", 0), -1, "map names a GPU the step lacks");
	like(err, "entry 1 names GPU 8, but the step has 8 GPUs on this node (0-7)", "map message");

	/* gres granted only GPUs 2 and 5: unconstrained devices, then cgroup-renumbered */
	is_int(run("2,5", "2,5", 2, "closest", 0), 0, "gres 2,5: planned");
	ok(tp[0].gpu[0] == 2 && tp[1].gpu[0] == 5, "gres 2,5: physical GPUs 2 and 5 only");
	{
		static const char *const w[] = { "2", "5" };
		ok(list_ok(2, "2,5", w), "gres 2,5 unconstrained: CUDA_VISIBLE_DEVICES=2,5, task i at position i");
	}
	is_str(tp[0].numa, "0", "GPU 2 is on NUMA 0");
	is_str(tp[1].numa, "1", "GPU 5 is on NUMA 1");
	is_str(tp[0].nccl_ib_hca, "=mlx5_2", "GPU 2's HCA");
	is_str(tp[1].nccl_ib_hca, "=mlx5_5", "GPU 5's HCA");
	is_int(run("2,5", "0,1", 2, "closest", 0), 0, "gres 2,5 with ConstrainDevices");
	ok(!strcmp(tp[0].cuda_visible, "0,1") && !strcmp(tp[1].cuda_visible, "0,1") && tp[1].gpu[0] == 5 &&
	   tp[1].device == 1, "renumbered: 0 and 1 name physical 2 and 5");
	is_int(run("2,5", "0,1", 1, "map:1", 0), 0, "map among granted");
	ok(tp[0].gpu[0] == 5 && !strcmp(tp[0].cuda_visible, "1,0") && tp[0].device == 0,
	   "map:1 is the second granted GPU (5), first in the list");
	is_int(run("2,5", NULL, 4, "closest", 0), 0, "4 tasks on 2 granted GPUs");
	ok(tp[0].gpu[0] == 2 && tp[1].gpu[0] == 2 && tp[2].gpu[0] == 5 && tp[3].gpu[0] == 5,
	   "neighbours share a GPU");
	ok(disjoint(4), "and still get disjoint CPUs");
	ok(!strcmp(tp[1].cuda_visible, "2") && !strcmp(tp[3].cuda_visible, "5") && tp[3].device == 0,
	   "more tasks than GPUs: each sees its own GPU only, device 0");
	is_int(run("2,9", NULL, 1, "closest", 0), -2, "a granted GPU the node lacks");
	like(err, "granted GPU 9 but this node's topology has 8 GPUs", "message");
	is_int(run(NULL, "GPU-1234", 1, "closest", 0), -2, "UUIDs without SLURM_STEP_GPUS");

	/* NVML order (fake libnvidia-ml, dlopen()ed) */
	const char *lib = LOOM_FAKE_NVML_PATH;
	/* libfakenvml is a check library built with this test: missing, it fails */
	if (ok(access(lib, R_OK) == 0, "the fake NVML is there (%s)", lib)) {
		setenv("LOOM_FAKE_NVML_BUSES", "0:dd,0:cf,0:c1,0:9b,0:5f,0:51,0:41,0:19", 1);
		is_int(load("dgx-h100.xml", lib), 0, "dgx-h100.xml loads with the fake NVML");
		is_str(topo.gpu_order, "nvml", "fake NVML was used");
		is_int(topo.nvml_ngpu, 8, "and the count NVML gave is kept (8)");
		ok(topo.gpu[0].bus == 0xdd && topo.gpu[0].numa == 1 && topo.gpu[7].bus == 0x19,
		   "GPU 0 is NVML's index 0 (bus dd, NUMA 1)");
		run(NULL, NULL, 8, "closest", 0);
		{
			static const char *const w[] = { "4", "5", "6", "7", "0", "1", "2", "3" };
			ok(list_ok(8, "4,5,6,7,0,1,2,3", w),
			   "closest: first task on NUMA 0 gets NVML GPU 4 (bus 5f), at position 0 of the node's list");
		}
		is_str(tp[0].nccl_ib_hca, "=mlx5_3", "and the HCA beside bus 5f");
		setenv("LOOM_FAKE_NVML_BUSES", "0:19", 1);
		is_int(load("dgx-h100.xml", lib), 0, "dgx-h100.xml loads when NVML disagrees");
		is_str(topo.gpu_order, "pci", "NVML sees another GPU count than hwloc: PCI order kept");
		is_int(topo.nvml_ngpu, 1, "and NVML's count (1) is kept to say why");
	}
	is_int(load("dgx-h100.xml", "/nonexistent/libnvidia-ml.so.1"), 0, "dgx-h100.xml loads without NVML");
	is_str(topo.gpu_order, "pci", "no NVML: PCI order");
	is_int(topo.nvml_ngpu, -1, "no NVML: nvml_ngpu -1");
	is_int(load("dgx-h100.xml", "none"), 0, "dgx-h100.xml loads with nvml_library none");
	is_int(topo.nvml_ngpu, -2, "NVML not asked: nvml_ngpu -2");

	/* 4 GPUs, one NUMA node */
	if (ok(load("gpu4-1numa.xml", NULL) == 0, "gpu4-1numa.xml loads")) {
		is_int(topo.ngpu, 4, "gpu4: 4 GPUs");
		is_int(run(NULL, NULL, 4, "closest", 0), 0, "gpu4: 4 tasks");
		ok(disjoint(4), "gpu4: disjoint CPUs on the single NUMA node");
		is_str(cpus(0), "0-7,32-39", "gpu4: 8 whole cores each");
		ok(!strcmp(tp[0].nccl_ib_hca, "=mlx5_0") && !strcmp(tp[1].nccl_ib_hca, "=mlx5_0") &&
		   !strcmp(tp[2].nccl_ib_hca, "=mlx5_1") && !strcmp(tp[3].nccl_ib_hca, "=mlx5_1"),
		   "gpu4: GPUs 0-1 use mlx5_0, 2-3 mlx5_1");
		{
			static const char *const w[] = { "0", "1", "2", "3" };
			ok(list_ok(4, "0,1,2,3", w), "gpu4: 4 tasks: the node's list, task i's GPU at position i");
		}
		is_int(run(NULL, NULL, 3, "closest", 0), 0, "gpu4: 3 tasks on 4 GPUs");
		{
			static const char *const w[] = { "0", "1", "2" };
			ok(list_ok(3, "0,1,2,3", w), "gpu4: 3 tasks: one GPU each, the fourth listed last");
		}
		is_int(run(NULL, NULL, 64, "closest", 0), 0, "gpu4: 64 tasks on 64 PUs");
		ok(disjoint(64), "gpu4: one PU each");
	}

	/* no GPU */
	if (ok(load("nogpu-2numa.xml", NULL) == 0, "nogpu-2numa.xml loads")) {
		is_int(topo.ngpu, 0, "nogpu: no GPUs");
		is_int(run(NULL, NULL, 4, "closest", 0), 0, "nogpu: 4 tasks");
		ok(!strcmp(tp[0].numa, "0") && !strcmp(tp[1].numa, "0") && !strcmp(tp[2].numa, "1") &&
		   !strcmp(tp[3].numa, "1"), "nogpu: 2 tasks per NUMA node");
		ok(tp[0].cuda_visible[0] == '\0' && tp[0].nccl_ib_hca[0] == '\0' && tp[0].device == -1,
		   "nogpu: no CUDA_VISIBLE_DEVICES, no device, no HCA");
		is_str(tp[0].nic, "eno1", "nogpu: NUMA 0 task reports eno1");
		is_str(tp[2].nic, "eno1", "nogpu: NUMA 1 tasks report the only NIC (on NUMA 0)");
		is_str(cpus(1), "4-7", "nogpu: task 1 gets the second half of NUMA 0");
		ok(disjoint(4), "nogpu: disjoint");
		is_int(run(NULL, NULL, 1, "map:0", 0), -1, "nogpu: map with no GPUs fails");
	}

	/* string builders: a value that does not fit is an error, never cut
	 * and never written past its field */
	if (ok(load("numa40-1gpu.xml", NULL) == 0, "numa40-1gpu.xml loads")) {
		is_int(topo.nnuma, 40, "numa40: 40 NUMA nodes");
		memset(tp, 0x5a, sizeof tp);
		is_int(run(NULL, NULL, 1, "closest", 0), -1,
		       "numa40: a task spanning 40 NUMA nodes: its NUMA list does not fit, refused");
		like(err, "the NUMA node list of local task 0 does not fit in 63 characters",
		     "the message names what did not fit and where");
		ok(memchr(tp[0].numa, 0, sizeof tp[0].numa) != NULL && tp[0].numa[0] != 0x5a,
		   "the field stays terminated within its size");
		is_int(run(NULL, NULL, 4, "closest", 0), 0,
		       "numa40: 4 tasks sharing the GPU: each spans 10 NUMA nodes, which fits");
		is_str(tp[1].numa, "10,11,12,13,14,15,16,17,18,19", "task 1: NUMA 10-19");
	}
	if (ok(load("dgx-h100.xml", NULL) == 0, "dgx-h100.xml loads again")) {
		char uuids[8 * 48] = "";
		for (int i = 0; i < 8; i++)
			snprintf(uuids + strlen(uuids), sizeof uuids - strlen(uuids),
				 "%sGPU-%08x-1111-2222-3333-44444444444%d", i ? "," : "", 0xabc00000u + i, i);
		is_int(run("0-7", uuids, 1, "closest", 0), 0,
		       "dgx: 8 GPU UUIDs for one task: the field holds every granted GPU");
		is_str(tp[0].cuda_visible, uuids, "... all 8, whole");
		is_int(run("0-7", uuids, 8, "closest", 0), 0, "dgx: 8 tasks, one UUID each");
		ok(!strcmp(tp[7].cuda_visible, uuids) && tp[7].device == 7 &&
		   !strcmp(entry(tp[7].cuda_visible, 7), "GPU-abc00007-1111-2222-3333-444444444447"),
		   "... each sees all 8 UUIDs, its own at position LOCAL_RANK");
		is_int(run("0-7", uuids, 2, "closest", 0), 0, "dgx: 4 UUIDs per task fit");
		ok(strlen(tp[0].cuda_visible) == 4 * 40 + 3 && !strncmp(tp[0].cuda_visible, "GPU-abc00000-", 13),
		   "... whole (%zu characters)", strlen(tp[0].cuda_visible));
	}

	cpu_lists();
	done_testing();
	return exit_status();
#endif
}
