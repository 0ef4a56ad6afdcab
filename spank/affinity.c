/* spank/affinity.c: the planner. Pure computation on struct loom_topo. */
#include "config.h"
#include "affinity.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "strbuf.h"

static int parse_int_list(const char *s, int *out, int max, int *n)
{
	*n = 0;
	while (*s) {
		char *end;
		long v;
		if (*s < '0' || *s > '9')       /* strtol would take " 1", "+1", "-0" */
			return -1;
		v = strtol(s, &end, 10);
		if (v > 1023)
			return -1;
		if (*end == '-') {      /* SLURM_STEP_GPUS may say 0-3 */
			const char *p = end + 1;
			long w;
			if (*p < '0' || *p > '9')
				return -1;
			w = strtol(p, &end, 10);
			if (w < v || w > 1023)
				return -1;
			for (long i = v; i <= w; i++) {
				if (*n >= max)
					return -1;
				out[(*n)++] = (int)i;
			}
		} else {
			if (*n >= max)
				return -1;
			out[(*n)++] = (int)v;
		}
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		s = end;
	}
	return 0;
}

int loom_gpu_grant_parse(const char *step_gpus, const char *cuda_visible, int ngpu,
			 struct loom_gpu_grant *g, char *err, size_t errlen)
{
	int nvis = 0;
	char vis[LOOM_GRANT_MAX][48];

	memset(g, 0, sizeof *g);
	if (cuda_visible && strcmp(cuda_visible, "NoDevFiles") == 0)
		cuda_visible = "";
	if (cuda_visible) {     /* split into entries; they may be UUIDs */
		const char *p = cuda_visible;
		while (*p) {
			const char *e = strchr(p, ',');
			size_t len = e ? (size_t)(e - p) : strlen(p);
			if (nvis >= LOOM_GRANT_MAX || len == 0 || len >= sizeof vis[0]) {
				snprintf(err, errlen, "CUDA_VISIBLE_DEVICES='%.100s' is not a list of devices", cuda_visible);
				return -1;
			}
			memcpy(vis[nvis], p, len);
			vis[nvis++][len] = '\0';
			p = e ? e + 1 : p + len;
		}
	}
	if (step_gpus && *step_gpus) {
		if (parse_int_list(step_gpus, g->physical, LOOM_GRANT_MAX, &g->n) < 0) {
			snprintf(err, errlen, "SLURM_STEP_GPUS='%.100s' is not a list of GPU numbers", step_gpus);
			return -1;
		}
	} else if (cuda_visible) {
		if (parse_int_list(cuda_visible, g->physical, LOOM_GRANT_MAX, &g->n) < 0) {
			snprintf(err, errlen,
				 "CUDA_VISIBLE_DEVICES='%.100s' is not a list of GPU numbers and SLURM_STEP_GPUS is not set: cannot place the GPUs",
				 cuda_visible);
			return -1;
		}
	} else {
		g->n = ngpu < LOOM_GRANT_MAX ? ngpu : LOOM_GRANT_MAX;
		for (int i = 0; i < g->n; i++)
			g->physical[i] = i;
	}
	for (int i = 0; i < g->n; i++) {
		if (g->physical[i] >= ngpu) {
			snprintf(err, errlen, "the step was granted GPU %d but this node's topology has %d GPU%s",
				 g->physical[i], ngpu, ngpu == 1 ? "" : "s");
			return -1;
		}
		if (cuda_visible && nvis == g->n)
			strcpy(g->visible[i], vis[i]);
		else
			snprintf(g->visible[i], sizeof g->visible[i], "%d", g->physical[i]);
	}
	return 0;
}

/* Split POOL among K tasks: whole cores when there are enough, else PUs. */
static void split_pool(const struct loom_topo *t, const loom_cpuset_t *pool, int k, int j,
		       loom_cpuset_t *out)
{
	int ncore = 0, npu = 0;
	static int cores[LOOM_MAX_CPUS];
	int pus[LOOM_MAX_CPUS];

	loom_cpuset_zero(out);
	for (int c = 0; c < LOOM_MAX_CPUS; c++) {
		if (!loom_cpuset_isset(pool, c))
			continue;
		pus[npu++] = c;
		int core = t->core_of[c], seen = 0;
		for (int i = 0; i < ncore && !seen; i++)
			seen = cores[i] == core;
		if (!seen)
			cores[ncore++] = core;
	}
	if (npu == 0)
		return;
	if (ncore >= k) {
		for (int i = (int)((long)j * ncore / k); i < (int)((long)(j + 1) * ncore / k); i++)
			for (int p = 0; p < npu; p++)
				if (t->core_of[pus[p]] == cores[i])
					loom_cpuset_set(out, pus[p]);
	} else if (npu >= k) {
		for (int p = (int)((long)j * npu / k); p < (int)((long)(j + 1) * npu / k); p++)
			loom_cpuset_set(out, pus[p]);
	} else {
		loom_cpuset_set(out, pus[j % npu]);
	}
}

/* a value of task TK's plan does not fit its field: -1, and say which */
static int too_long(char *err, size_t errlen, int tk, const char *what, size_t cap)
{
	snprintf(err, errlen, "--loom-affinity: the %s of local task %d does not fit in %zu "
		 "characters; nothing was bound (use --loom-affinity=none, or fewer GPUs or NUMA "
		 "nodes per task)", what, tk, cap - 1);
	return -1;
}

/* grant positions ordered by NUMA node (unknown last), then GPU number */
static void order_grant(const struct loom_topo *t, const struct loom_gpu_grant *g, int *order)
{
	for (int i = 0; i < g->n; i++)
		order[i] = i;
	for (int i = 1; i < g->n; i++)
		for (int j = i; j > 0; j--) {
			int a = t->gpu[g->physical[order[j - 1]]].numa, b = t->gpu[g->physical[order[j]]].numa;
			if (a < 0) a = 1 << 20;
			if (b < 0) b = 1 << 20;
			if (a > b || (a == b && g->physical[order[j - 1]] > g->physical[order[j]])) {
				int x = order[j];
				order[j] = order[j - 1];
				order[j - 1] = x;
			}
		}
}

/* map:...: task TK takes map entry TK % nmap, whose GPUs are grant positions */
static int map_gpus(const struct loom_affinity_spec *spec, int G, int ntasks,
		    struct loom_task_plan *out, char *err, size_t errlen)
{
	for (int tk = 0; tk < ntasks; tk++) {
		int e = tk % spec->nmap;
		for (int i = 0; i < spec->map_ngpu[e]; i++) {
			int pos = spec->map_gpu[e][i];
			if (pos >= G) {
				snprintf(err, errlen,
					 "--loom-affinity=map:...: entry %d names GPU %d, but the step has %d GPU%s on this node (0-%d)",
					 e + 1, pos, G, G == 1 ? "" : "s", G - 1);
				return -1;
			}
			out[tk].gpu[out[tk].ngpu++] = pos;
		}
	}
	return 0;
}

/* closest: GPUS_PER_TASK each (0: the G GPUs split evenly) in ORDER, so
 * that a task's GPUs share a NUMA node where they can */
static int split_gpus(const int *order, int G, int ntasks, int gpus_per_task,
		      struct loom_task_plan *out, char *err, size_t errlen)
{
	int gpt = gpus_per_task;
	if (gpt > 0 && (long)gpt * ntasks > G) {
		snprintf(err, errlen,
			 "--loom-gpus-per-task=%d with %d tasks on this node needs %d GPUs, the step has %d here",
			 gpt, ntasks, gpt * ntasks, G);
		return -1;
	}
	if (gpt == 0)
		gpt = G >= ntasks ? G / ntasks : 0;
	if (gpt > LOOM_TASK_GPUS_MAX)
		gpt = LOOM_TASK_GPUS_MAX;
	for (int tk = 0; tk < ntasks; tk++) {
		if (gpt == 0)   /* more tasks than GPUs: neighbours share one */
			out[tk].gpu[out[tk].ngpu++] = order[(int)((long)tk * G / ntasks)];
		else
			for (int i = 0; i < gpt; i++)
				out[tk].gpu[out[tk].ngpu++] = order[tk * gpt + i];
	}
	return 0;
}

/* The CPUs of each task: its pool (its GPUs' local CPUs, or a NUMA node
 * without GPUs, within USABLE), split among the tasks with the same pool
 * into disjoint pieces. */
static int assign_cpus(const struct loom_topo *t, const struct loom_gpu_grant *g,
		       const loom_cpuset_t *usable, int ntasks, struct loom_task_plan *out,
		       char *err, size_t errlen)
{
	loom_cpuset_t *pool = calloc((size_t)ntasks, sizeof *pool);
	int nn = 0, numa_ok[LOOM_TOPO_MAX_NUMA];

	if (!pool) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < t->nnuma; i++)
		if (loom_cpuset_intersects(&t->numa[i].cpus, usable))
			numa_ok[nn++] = i;
	for (int tk = 0; tk < ntasks; tk++) {
		struct loom_task_plan *p = &out[tk];
		loom_cpuset_zero(&pool[tk]);
		for (int i = 0; i < p->ngpu; i++)
			loom_cpuset_or(&pool[tk], &t->gpu[g->physical[p->gpu[i]]].cpus);
		if (p->ngpu == 0 && nn > 0)
			pool[tk] = t->numa[numa_ok[(int)((long)tk * nn / ntasks)]].cpus;
		loom_cpuset_and(&pool[tk], &pool[tk], usable);
		if (loom_cpuset_count(&pool[tk]) == 0)
			pool[tk] = *usable;
	}
	for (int tk = 0; tk < ntasks; tk++) {
		int k = 0, j = 0;       /* K tasks share this pool; this one is the Jth */
		for (int o = 0; o < ntasks; o++)
			if (loom_cpuset_equal(&pool[o], &pool[tk])) {
				if (o < tk)
					j++;
				k++;
			}
		split_pool(t, &pool[tk], k, j, &out[tk].cpus);
	}
	free(pool);
	return 0;
}

/* P->numa: the NUMA nodes of the task's CPUs, "-" none */
static int numa_list(const struct loom_topo *t, int tk, struct loom_task_plan *p,
		     char *err, size_t errlen)
{
	struct loom_sb sb;
	loom_sb_init(&sb, p->numa, sizeof p->numa);
	for (int i = 0; i < t->nnuma; i++)
		if (loom_cpuset_intersects(&t->numa[i].cpus, &p->cpus) &&
		    loom_sb_add(&sb, "%s%d", sb.len ? "," : "", t->numa[i].os_index) < 0)
			return too_long(err, errlen, tk, "NUMA node list", sizeof p->numa);
	if (!p->numa[0])
		strcpy(p->numa, "-");
	return 0;
}

/* The nearest NIC of each of P's GPUs (an HCA first, then the fewest
 * users so far, NIC_USE, on a tie), NUMA-local without GPUs; into PICKED
 * without repeats, counted in NIC_USE. Returns how many. */
static int nearest_nics(const struct loom_topo *t, const struct loom_gpu_grant *g,
			const struct loom_task_plan *p, int *nic_use, int *picked)
{
	int np = 0;
	for (int i = 0; i < (p->ngpu ? p->ngpu : 1); i++) {
		int best = -1;
		long bestd = 0;
		for (int n = 0; n < t->nnic; n++) {
			long d;
			if (p->ngpu)
				d = t->gpu[g->physical[p->gpu[i]]].nic_dist[n];
			else
				d = (t->nic[n].numa >= 0 &&
				     loom_cpuset_intersects(&t->numa[t->nic[n].numa].cpus, &p->cpus)) ? 0 : LOOM_DIST_FAR;
			if (!t->nic[n].ib)
				d += 2 * (long)LOOM_DIST_FAR;   /* an HCA first */
			d = d * 64 + nic_use[n];
			if (best < 0 || d < bestd) {
				best = n;
				bestd = d;
			}
		}
		if (best < 0)
			break;
		int dup = 0;
		for (int q = 0; q < np; q++)
			dup |= picked[q] == best;
		if (!dup) {
			picked[np++] = best;
			nic_use[best]++;
		}
	}
	return np;
}

/* P->nic and P->nccl_ib_hca from the NP NICs in PICKED */
static int nic_lists(const struct loom_topo *t, int tk, struct loom_task_plan *p,
		     const int *picked, int np, char *err, size_t errlen)
{
	struct loom_sb nic, hca;
	loom_sb_init(&nic, p->nic, sizeof p->nic);
	loom_sb_init(&hca, p->nccl_ib_hca, sizeof p->nccl_ib_hca);
	if (!np)
		loom_sb_add(&nic, "-");
	for (int q = 0; q < np; q++) {
		const struct loom_topo_nic *n = &t->nic[picked[q]];
		if (loom_sb_add(&nic, "%s%s", q ? "," : "", n->name) < 0)
			return too_long(err, errlen, tk, "list of nearest NICs", sizeof p->nic);
		if (n->ib && loom_sb_add(&hca, "%s%s", hca.len ? "," : "=", n->name) < 0)
			return too_long(err, errlen, tk, "NCCL_IB_HCA", sizeof p->nccl_ib_hca);
	}
	return 0;
}

/* 1 when each of the NTASKS tasks has one GPU of its own (grant
 * positions in OUT, none shared): then they all see the node's list */
static int one_each(const struct loom_task_plan *out, int ntasks)
{
	for (int tk = 0; tk < ntasks; tk++) {
		if (out[tk].ngpu != 1)
			return 0;
		for (int o = 0; o < tk; o++)
			if (out[o].gpu[0] == out[tk].gpu[0])
				return 0;
	}
	return 1;
}

/* LIST: the granted GPUs, local task i's at position i, then the
 * GPUs no task has in grant order. Fits: the field holds every grant. */
static void node_list(const struct loom_gpu_grant *g, const struct loom_task_plan *out,
		      int ntasks, char *list, size_t cap)
{
	struct loom_sb sb;
	int taken[LOOM_GRANT_MAX] = { 0 };
	loom_sb_init(&sb, list, cap);
	for (int tk = 0; tk < ntasks; tk++) {
		loom_sb_add(&sb, "%s%s", tk ? "," : "", g->visible[out[tk].gpu[0]]);
		taken[out[tk].gpu[0]] = 1;
	}
	for (int pos = 0; pos < g->n; pos++)
		if (!taken[pos])
			loom_sb_add(&sb, ",%s", g->visible[pos]);
}

/* P->cuda_visible (LIST when the tasks share the node's list) and
 * P->device, and P's GPUs from grant positions to physical numbers */
static int gpu_names(const struct loom_gpu_grant *g, int tk, const char *list,
		     struct loom_task_plan *p, char *err, size_t errlen)
{
	struct loom_sb cuda;
	loom_sb_init(&cuda, p->cuda_visible, sizeof p->cuda_visible);
	p->device = p->ngpu ? 0 : -1;
	if (list && p->ngpu) {
		loom_sb_add(&cuda, "%s", list);
		p->device = tk;
	}
	for (int i = 0; i < p->ngpu; i++) {
		int pos = p->gpu[i];
		if (!list && loom_sb_add(&cuda, "%s%s", i ? "," : "", g->visible[pos]) < 0)
			return too_long(err, errlen, tk, "CUDA_VISIBLE_DEVICES", sizeof p->cuda_visible);
		p->gpu[i] = g->physical[pos];
	}
	return 0;
}

int loom_affinity_plan(const struct loom_topo *t, const struct loom_gpu_grant *g,
		       const loom_cpuset_t *allowed, int ntasks,
		       const struct loom_affinity_spec *spec, int gpus_per_task,
		       struct loom_task_plan *out, char *err, size_t errlen)
{
	int order[LOOM_GRANT_MAX], nic_use[LOOM_TOPO_MAX_NIC] = { 0 };
	loom_cpuset_t usable;
	char list[sizeof out->cuda_visible];
	int shared_list;

	if (ntasks <= 0)
		return 0;
	memset(out, 0, (size_t)ntasks * sizeof *out);
	loom_cpuset_and(&usable, &t->cpus, allowed);
	if (loom_cpuset_count(&usable) == 0)
		usable = *allowed;

	/* which grant positions each task gets */
	order_grant(t, g, order);
	if (spec->mode == LOOM_AFF_MAP) {
		if (map_gpus(spec, g->n, ntasks, out, err, errlen) < 0)
			return -1;
	} else if (g->n > 0) {
		if (split_gpus(order, g->n, ntasks, gpus_per_task, out, err, errlen) < 0)
			return -1;
	}
	if (assign_cpus(t, g, &usable, ntasks, out, err, errlen) < 0)
		return -1;
	shared_list = g->n > 0 && one_each(out, ntasks);
	if (shared_list)
		node_list(g, out, ntasks, list, sizeof list);
	/* what each task's report and environment say (NICs in task order:
	 * a task's pick counts against the later ones) */
	for (int tk = 0; tk < ntasks; tk++) {
		struct loom_task_plan *p = &out[tk];
		int picked[LOOM_TASK_GPUS_MAX + 1], np;
		if (numa_list(t, tk, p, err, errlen) < 0)
			return -1;
		np = nearest_nics(t, g, p, nic_use, picked);
		if (nic_lists(t, tk, p, picked, np, err, errlen) < 0 ||
		    gpu_names(g, tk, shared_list ? list : NULL, p, err, errlen) < 0)
			return -1;
	}
	return 0;
}
