/* A fake libnvidia-ml for the planner test: NVML's index order is taken
 * from LOOM_FAKE_NVML_BUSES ("domain:bus,..." in hex, e.g. "0:dd,0:19"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pci_v3 {
	char bus_id_legacy[16];
	unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
	char bus_id[32];
};

static unsigned dom[64], bus[64], n;

int nvmlInit_v2(void)
{
	const char *s = getenv("LOOM_FAKE_NVML_BUSES");
	n = 0;
	if (!s)
		return 1;       /* NVML_ERROR_UNINITIALIZED */
	while (*s && n < 64) {
		char *e;
		dom[n] = (unsigned)strtoul(s, &e, 16);
		if (*e != ':')
			return 1;
		bus[n++] = (unsigned)strtoul(e + 1, &e, 16);
		s = *e == ',' ? e + 1 : e;
	}
	return 0;
}
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned *c) { *c = n; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **dev)
{
	if (i >= n)
		return 2;
	*dev = (void *)(unsigned long)(i + 1);
	return 0;
}
int nvmlDeviceGetPciInfo_v3(void *dev, struct pci_v3 *p)
{
	unsigned i = (unsigned)(unsigned long)dev - 1;
	memset(p, 0, sizeof *p);
	p->domain = dom[i];
	p->bus = bus[i];
	snprintf(p->bus_id, sizeof p->bus_id, "%08X:%02X:00.0", dom[i], bus[i]);
	return 0;
}
