/* spank/topology.c: fill struct loom_topo from hwloc (and NVML's GPU order
 * when libnvidia-ml is there at run time; it is never linked). */
#include "config.h"
#include "topology.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_HWLOC
#include <hwloc.h>
#include <hwloc/export.h>
#endif

int loom_cpuset_count(const loom_cpuset_t *s)
{
	int n = 0;
	for (int i = 0; i < LOOM_MAX_CPUS / 64; i++)
		n += __builtin_popcountll(s->w[i]);
	return n;
}

void loom_cpuset_and(loom_cpuset_t *d, const loom_cpuset_t *a, const loom_cpuset_t *b)
{
	for (int i = 0; i < LOOM_MAX_CPUS / 64; i++)
		d->w[i] = a->w[i] & b->w[i];
}

void loom_cpuset_or(loom_cpuset_t *d, const loom_cpuset_t *a)
{
	for (int i = 0; i < LOOM_MAX_CPUS / 64; i++)
		d->w[i] |= a->w[i];
}

int loom_cpuset_equal(const loom_cpuset_t *a, const loom_cpuset_t *b)
{
	return memcmp(a, b, sizeof *a) == 0;
}

int loom_cpuset_intersects(const loom_cpuset_t *a, const loom_cpuset_t *b)
{
	for (int i = 0; i < LOOM_MAX_CPUS / 64; i++)
		if (a->w[i] & b->w[i])
			return 1;
	return 0;
}

int loom_cpuset_format(const loom_cpuset_t *s, char *buf, size_t len)
{
	size_t pos = 0;
	if (len == 0)
		return -1;
	buf[0] = '\0';
	for (int c = 0; c < LOOM_MAX_CPUS; c++) {
		if (!loom_cpuset_isset(s, c))
			continue;
		int e = c;
		while (e + 1 < LOOM_MAX_CPUS && loom_cpuset_isset(s, e + 1))
			e++;
		int n = e == c ? snprintf(buf + pos, len - pos, "%s%d", pos ? "," : "", c)
			       : snprintf(buf + pos, len - pos, "%s%d-%d", pos ? "," : "", c, e);
		if (n < 0 || (size_t)n >= len - pos)
			return -1;
		pos += (size_t)n;
		c = e;
	}
	return (int)pos;
}

int loom_cpuset_parse(const char *list, loom_cpuset_t *s)
{
	const char *p = list;
	loom_cpuset_zero(s);
	if (!p)
		return -1;
	while (*p) {
		char *end;
		long a, b;
		if (*p < '0' || *p > '9')       /* strtol would take "-0", " 1", "+1" */
			return -1;
		a = strtol(p, &end, 10);
		if (a >= LOOM_MAX_CPUS)
			return -1;
		b = a;
		if (*end == '-') {
			p = end + 1;
			if (*p < '0' || *p > '9')
				return -1;
			b = strtol(p, &end, 10);
			if (b < a || b >= LOOM_MAX_CPUS)
				return -1;
		}
		for (long c = a; c <= b; c++)
			loom_cpuset_set(s, (int)c);
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		p = end;
	}
	return 0;
}

void loom_topo_order_gpus(struct loom_topo *t, int n, const unsigned (*pci)[4])
{
	struct loom_topo_gpu *sorted = calloc((size_t)t->ngpu, sizeof *sorted);
	int used[LOOM_TOPO_MAX_GPU] = { 0 }, k = 0;
	if (!sorted)
		return;
	for (int i = 0; i < n; i++)
		for (int g = 0; g < t->ngpu; g++)
			if (!used[g] && t->gpu[g].domain == pci[i][0] && t->gpu[g].bus == pci[i][1] &&
			    t->gpu[g].dev == pci[i][2] && t->gpu[g].func == pci[i][3]) {
				sorted[k++] = t->gpu[g];
				used[g] = 1;
			}
	for (int g = 0; g < t->ngpu; g++)
		if (!used[g])
			sorted[k++] = t->gpu[g];
	memcpy(t->gpu, sorted, (size_t)t->ngpu * sizeof *sorted);
	free(sorted);
}

/* NVML, only as far as loom needs it; the layout of nvmlPciInfo_t (v3)
 * is NVML's public ABI. */
struct loom_nvml_pci {
	char bus_id_legacy[16];
	unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

static void nvml_order(struct loom_topo *t, const char *lib)
{
	void *h;
	int (*init)(void), (*shutdown)(void), (*count)(unsigned *);
	int (*by_index)(unsigned, void **), (*pci_info)(void *, struct loom_nvml_pci *);
	unsigned n = 0, (*pci)[4];

	if (!lib || !*lib || strcmp(lib, "none") == 0 || t->ngpu == 0)
		return;
	t->nvml_ngpu = -1;
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
	*(void **)&init = dlsym(h, "nvmlInit_v2");
	*(void **)&shutdown = dlsym(h, "nvmlShutdown");
	*(void **)&count = dlsym(h, "nvmlDeviceGetCount_v2");
	*(void **)&by_index = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&pci_info = dlsym(h, "nvmlDeviceGetPciInfo_v3");
	if (init && shutdown && count && by_index && pci_info && init() == 0) {
		if (count(&n) == 0)
			t->nvml_ngpu = (int)n;
		if (t->nvml_ngpu > 0 && (int)n == t->ngpu &&
		    (pci = calloc(n, sizeof *pci)) != NULL) {
			unsigned k = 0;
			for (unsigned i = 0; i < n; i++) {
				void *dev;
				struct loom_nvml_pci info;
				memset(&info, 0, sizeof info);
				if (by_index(i, &dev) != 0 || pci_info(dev, &info) != 0)
					break;
				pci[k][0] = info.domain;
				pci[k][1] = info.bus;
				pci[k][2] = info.device;
				pci[k][3] = 0;
				k++;
			}
			if (k == n) {
				loom_topo_order_gpus(t, (int)n, (const unsigned (*)[4])pci);
				strcpy(t->gpu_order, "nvml");
			}
			free(pci);
		}
		shutdown();
	}
	dlclose(h);
}

#ifdef HAVE_HWLOC
static void to_cpuset(hwloc_const_bitmap_t b, loom_cpuset_t *s)
{
	int c;
	loom_cpuset_zero(s);
	if (!b)
		return;
	hwloc_bitmap_foreach_begin(c, b) {
		loom_cpuset_set(s, c);
	} hwloc_bitmap_foreach_end();
}

static int numa_of(const struct loom_topo *t, hwloc_obj_t anc)
{
	if (!anc || !anc->nodeset || hwloc_bitmap_weight(anc->nodeset) != 1)
		return -1;
	int os = hwloc_bitmap_first(anc->nodeset);
	for (int i = 0; i < t->nnuma; i++)
		if (t->numa[i].os_index == os)
			return i;
	return -1;
}

static int pci_hops(hwloc_obj_t a, hwloc_obj_t b)
{
	int da = 0;
	for (hwloc_obj_t x = a; x; x = x->parent, da++) {
		int db = 0;
		for (hwloc_obj_t y = b; y; y = y->parent, db++)
			if (x == y)
				return hwloc_obj_type_is_io(x->type) ? da + db : 1000 + da + db;
	}
	return LOOM_DIST_FAR;
}
#endif

static void topo_reset(struct loom_topo *t)
{
	memset(t, 0, sizeof *t);
	for (int i = 0; i < LOOM_MAX_CPUS; i++)
		t->core_of[i] = -1;
	strcpy(t->gpu_order, "pci");
	t->nvml_ngpu = -2;  /* NVML not asked */
}

#ifdef HAVE_HWLOC
/* t from a loaded hwloc topology */
static void topo_fill(struct loom_topo *t, hwloc_topology_t topo)
{
	hwloc_obj_t gpu_obj[LOOM_TOPO_MAX_GPU], nic_obj[LOOM_TOPO_MAX_NIC], o;

	to_cpuset(hwloc_topology_get_topology_cpuset(topo), &t->cpus);
	for (o = NULL; (o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, o)) && t->nnuma < LOOM_TOPO_MAX_NUMA;) {
		t->numa[t->nnuma].os_index = (int)o->os_index;
		to_cpuset(o->cpuset, &t->numa[t->nnuma].cpus);
		t->nnuma++;
	}
	for (o = NULL; (o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, o));) {
		hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, o);
		if (o->os_index < LOOM_MAX_CPUS)
			t->core_of[o->os_index] = core ? (int)core->logical_index : (int)o->os_index + LOOM_MAX_CPUS;
	}
	/* GPUs: NVIDIA display/3D controllers, in PCI bus order (hwloc's order) */
	for (o = NULL; (o = hwloc_get_next_pcidev(topo, o)) && t->ngpu < LOOM_TOPO_MAX_GPU;) {
		if (o->attr->pcidev.vendor_id != 0x10de || (o->attr->pcidev.class_id >> 8) != 0x03)
			continue;
		struct loom_topo_gpu *g = &t->gpu[t->ngpu];
		hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, o);
		g->domain = o->attr->pcidev.domain;
		g->bus = o->attr->pcidev.bus;
		g->dev = o->attr->pcidev.dev;
		g->func = o->attr->pcidev.func;
		g->numa = numa_of(t, anc);
		to_cpuset(anc ? anc->cpuset : NULL, &g->cpus);
		gpu_obj[t->ngpu++] = o;
	}
	/* NICs: RDMA HCAs first, then netdevs of PCI devices without an HCA */
	for (int pass = 0; pass < 2; pass++)
		for (o = NULL; (o = hwloc_get_next_osdev(topo, o)) && t->nnic < LOOM_TOPO_MAX_NIC;) {
			int want = pass == 0 ? HWLOC_OBJ_OSDEV_OPENFABRICS : HWLOC_OBJ_OSDEV_NETWORK;
			if ((int)o->attr->osdev.type != want || !o->name || !o->parent ||
			    o->parent->type != HWLOC_OBJ_PCI_DEVICE)
				continue;
			int dup = 0;
			for (int i = 0; i < t->nnic; i++)
				if (nic_obj[i]->parent == o->parent)
					dup = 1;
			if (dup)
				continue;
			struct loom_topo_nic *n = &t->nic[t->nnic];
			snprintf(n->name, sizeof n->name, "%s", o->name);
			n->ib = pass == 0;
			n->numa = numa_of(t, hwloc_get_non_io_ancestor_obj(topo, o));
			nic_obj[t->nnic++] = o;
		}
	for (int g = 0; g < t->ngpu; g++)
		for (int n = 0; n < t->nnic; n++) {
			int d = pci_hops(gpu_obj[g], nic_obj[n]->parent);
			if (d >= 1000 && (t->gpu[g].numa < 0 || t->gpu[g].numa != t->nic[n].numa))
				d = LOOM_DIST_FAR;
			t->gpu[g].nic_dist[n] = d;
		}
}
#endif

#ifdef HAVE_HWLOC
/* a topology object to load, with the I/O devices the planner needs.
 * no_plugins: hwloc's plugins (PCI, OpenCL, GL: X11 and GL libraries) are
 * loaded by hwloc_topology_init and add nothing to an XML import, but cost
 * ~2.5 ms of the ~3 ms: none while this one starts (its built-in XML
 * parser reads hwloc's own export) */
static int topo_begin(hwloc_topology_t *topo, int no_plugins, char *err, size_t errlen)
{
	const char *plugins = no_plugins ? getenv("HWLOC_PLUGINS_PATH") : NULL;
	char *saved = plugins ? strdup(plugins) : NULL;
	int irc;
	if (no_plugins)
		setenv("HWLOC_PLUGINS_PATH", "/nonexistent/loom-xml-needs-no-plugins", 1);
	irc = hwloc_topology_init(topo);
	if (no_plugins) {
		if (saved)
			setenv("HWLOC_PLUGINS_PATH", saved, 1);
		else
			unsetenv("HWLOC_PLUGINS_PATH");
	}
	free(saved);
	if (irc < 0) {
		snprintf(err, errlen, "hwloc_topology_init failed");
		return -1;
	}
	hwloc_topology_set_io_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	return 0;
}
#else
#define NO_HWLOC "this loom.so was built without hwloc: no topology, no binding"
#endif

int loom_topo_load(struct loom_topo *t, const char *root, const char *nvml_lib,
		   char *err, size_t errlen)
{
	topo_reset(t);
#ifndef HAVE_HWLOC
	(void)root;
	(void)nvml_lib;
	snprintf(err, errlen, NO_HWLOC);
	return -1;
#else
	hwloc_topology_t topo;
	size_t rl = root ? strlen(root) : 0;
	int fsroot = 0;

	if (topo_begin(&topo, 0, err, errlen) < 0)
		return -1;
	if (rl > 4 && strcmp(root + rl - 4, ".xml") == 0) {
		if (hwloc_topology_set_xml(topo, root) < 0) {
			snprintf(err, errlen, "topology_root=%s: cannot read this hwloc XML file", root);
			hwloc_topology_destroy(topo);
			return -1;
		}
	} else if (root && strcmp(root, "/") != 0) {
		setenv("HWLOC_FSROOT", root, 1);
		fsroot = 1;
	}
	int lrc = hwloc_topology_load(topo);
	if (fsroot)
		unsetenv("HWLOC_FSROOT");
	if (lrc < 0) {
		snprintf(err, errlen, "topology_root=%s: hwloc cannot load the topology", root ? root : "/");
		hwloc_topology_destroy(topo);
		return -1;
	}
	topo_fill(t, topo);
	hwloc_topology_destroy(topo);
	nvml_order(t, nvml_lib);
	return 0;
#endif
}

void loom_topo_hwloc_version(char *buf, size_t len)
{
#ifdef HAVE_HWLOC
	unsigned v = hwloc_get_api_version();
	snprintf(buf, len, "%u.%u.%u", v >> 16, (v >> 8) & 0xff, v & 0xff);
#else
	snprintf(buf, len, "none");
#endif
}

#ifdef HAVE_HWLOC
#define CACHE_KEY_INFO "LoomTopologyCacheKey"
#endif

int loom_topo_load_live_xml(struct loom_topo *t, const char *key, const char *nvml_lib,
			    char **xml, size_t *len, char *err, size_t errlen)
{
	topo_reset(t);
	*xml = NULL;
	*len = 0;
#ifndef HAVE_HWLOC
	(void)key;
	(void)nvml_lib;
	snprintf(err, errlen, NO_HWLOC);
	return -1;
#else
	hwloc_topology_t topo;
	char *buf = NULL;
	int blen = 0;

	if (topo_begin(&topo, 0, err, errlen) < 0)
		return -1;
	/* the whole node, not the cgroup of the step that happens to write
	 * the cache: the planner intersects with each step's own CPUs */
	hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	if (hwloc_topology_load(topo) < 0) {
		snprintf(err, errlen, "hwloc cannot load the topology of this node");
		hwloc_topology_destroy(topo);
		return -1;
	}
	topo_fill(t, topo);
	if (hwloc_obj_add_info(hwloc_get_root_obj(topo), CACHE_KEY_INFO, key) < 0 ||
	    hwloc_topology_export_xmlbuffer(topo, &buf, &blen, 0) < 0 || blen < 1 ||
	    !(*xml = malloc((size_t)blen))) {
		snprintf(err, errlen, "hwloc cannot export the topology as XML");
		if (buf)
			hwloc_free_xmlbuffer(topo, buf);
		hwloc_topology_destroy(topo);
		nvml_order(t, nvml_lib);
		return 1;       /* t is good, only the XML is missing */
	}
	memcpy(*xml, buf, (size_t)blen);
	*len = (size_t)blen - 1;        /* without hwloc's ending \0 */
	hwloc_free_xmlbuffer(topo, buf);
	hwloc_topology_destroy(topo);
	nvml_order(t, nvml_lib);
	return 0;
#endif
}

int loom_topo_load_xml_buffer(struct loom_topo *t, const char *xml, size_t len, const char *key,
			      const char *nvml_lib, char *err, size_t errlen)
{
	topo_reset(t);
#ifndef HAVE_HWLOC
	(void)xml;
	(void)len;
	(void)key;
	(void)nvml_lib;
	snprintf(err, errlen, NO_HWLOC);
	return -1;
#else
	hwloc_topology_t topo;
	const char *have;

	if (len == 0 || len > (size_t)1 << 30 || xml[len] != '\0') {
		snprintf(err, errlen, "not an XML document");
		return -1;
	}
	if (topo_begin(&topo, 1, err, errlen) < 0)
		return -1;
	hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	if (hwloc_topology_set_xmlbuffer(topo, xml, (int)len + 1) < 0 || hwloc_topology_load(topo) < 0) {
		snprintf(err, errlen, "hwloc cannot read it as a topology");
		hwloc_topology_destroy(topo);
		return -1;
	}
	have = hwloc_obj_get_info_by_name(hwloc_get_root_obj(topo), CACHE_KEY_INFO);
	if (!have || strcmp(have, key) != 0) {
		snprintf(err, errlen, "made for %.300s, this node is now %.300s", have ? have : "(no key)", key);
		hwloc_topology_destroy(topo);
		return 1;
	}
	topo_fill(t, topo);
	hwloc_topology_destroy(topo);
	nvml_order(t, nvml_lib);
	return 0;
#endif
}
