/* spank/topology.h: what the affinity planner needs to know of a node:
 * NUMA nodes and their CPUs, cores, GPUs (PCI address, NUMA node, local
 * CPUs) in device-index order, NICs (InfiniBand HCAs and netdevs) and how
 * close each NIC is to each GPU. Filled from hwloc by topology.c; plain
 * data, so that the planner (affinity.c) can be tested on its own. */
#ifndef LOOM_SPANK_TOPOLOGY_H
#define LOOM_SPANK_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#define LOOM_MAX_CPUS 4096
#define LOOM_TOPO_MAX_NUMA 64
#define LOOM_TOPO_MAX_GPU 64
#define LOOM_TOPO_MAX_NIC 64

typedef struct { uint64_t w[LOOM_MAX_CPUS / 64]; } loom_cpuset_t;

static inline void loom_cpuset_zero(loom_cpuset_t *s) { for (int i = 0; i < LOOM_MAX_CPUS / 64; i++) s->w[i] = 0; }
static inline void loom_cpuset_set(loom_cpuset_t *s, int c) { if (c >= 0 && c < LOOM_MAX_CPUS) s->w[c / 64] |= 1ULL << (c % 64); }
static inline int loom_cpuset_isset(const loom_cpuset_t *s, int c) { return c >= 0 && c < LOOM_MAX_CPUS && ((s->w[c / 64] >> (c % 64)) & 1); }
int loom_cpuset_count(const loom_cpuset_t *s);
void loom_cpuset_and(loom_cpuset_t *d, const loom_cpuset_t *a, const loom_cpuset_t *b);
void loom_cpuset_or(loom_cpuset_t *d, const loom_cpuset_t *a);
int loom_cpuset_equal(const loom_cpuset_t *a, const loom_cpuset_t *b);
int loom_cpuset_intersects(const loom_cpuset_t *a, const loom_cpuset_t *b);
/* "0-3,8,10-11"; "" for the empty set. Returns the length, or -1 when truncated */
int loom_cpuset_format(const loom_cpuset_t *s, char *buf, size_t len);
/* the inverse; -1 on a malformed list */
int loom_cpuset_parse(const char *list, loom_cpuset_t *s);

#define LOOM_DIST_FAR 1000000

struct loom_topo_numa {
	int os_index;
	loom_cpuset_t cpus;
};

struct loom_topo_gpu {
	unsigned domain, bus, dev, func;
	int numa;                       /* index into numa[], -1 unknown or several */
	loom_cpuset_t cpus;             /* CPUs local to the GPU */
	int nic_dist[LOOM_TOPO_MAX_NIC];/* PCI hops to each NIC; +1000 other PCI tree, LOOM_DIST_FAR other NUMA */
};

struct loom_topo_nic {
	char name[32];                  /* mlx5_0 (HCA) or eth0 (netdev) */
	int ib;                         /* 1: RDMA HCA, usable as NCCL_IB_HCA */
	int numa;                       /* index into numa[], -1 unknown */
};

struct loom_topo {
	int nnuma, ngpu, nnic;
	struct loom_topo_numa numa[LOOM_TOPO_MAX_NUMA];
	struct loom_topo_gpu gpu[LOOM_TOPO_MAX_GPU];    /* index = GPU number */
	struct loom_topo_nic nic[LOOM_TOPO_MAX_NIC];
	loom_cpuset_t cpus;                             /* every PU */
	int core_of[LOOM_MAX_CPUS];                     /* core of each PU, -1 none */
	char gpu_order[16];                             /* "pci" or "nvml" */
	int nvml_ngpu;                                  /* GPUs NVML listed; -1 NVML not loaded
	                                                 * or not initialised, -2 not asked */
};

/* Load the topology of ROOT: "/" this machine, a path ending in .xml an
 * hwloc XML export, any other directory a fake filesystem root (sysfs and
 * /proc below it, hwloc's HWLOC_FSROOT). GPUs are numbered in PCI bus order,
 * or in NVML's order when NVML_LIB (dlopen()ed; "none" to skip) is there.
 * 0, or -1 with a message. Without hwloc this always fails. */
int loom_topo_load(struct loom_topo *t, const char *root, const char *nvml_lib,
		   char *err, size_t errlen);

/* The node topology cache (topo_cache.c) in hwloc's terms. KEY tags the
 * XML (an info attribute of the root object).
 * loom_topo_load_live_xml: this machine's live topology, every PU (also
 * those outside this process's cgroup), into t and as an XML document in
 * *xml (malloc()ed, *len bytes plus a \0). 0; 1: t filled but no XML; -1.
 * loom_topo_load_xml_buffer: t from such a document (xml[len] == \0).
 * 0; 1 when it was made for another key (stale, err says how); -1. */
int loom_topo_load_live_xml(struct loom_topo *t, const char *key, const char *nvml_lib,
			    char **xml, size_t *len, char *err, size_t errlen);
int loom_topo_load_xml_buffer(struct loom_topo *t, const char *xml, size_t len, const char *key,
			      const char *nvml_lib, char *err, size_t errlen);
/* the run-time hwloc version, "2.9.0" ("none" without hwloc) */
void loom_topo_hwloc_version(char *buf, size_t len);

/* Renumber t->gpu in the order of the given PCI addresses (NVML's index
 * order); GPUs not listed keep their relative order after the listed ones. */
void loom_topo_order_gpus(struct loom_topo *t, int n, const unsigned (*pci)[4]);

#endif
