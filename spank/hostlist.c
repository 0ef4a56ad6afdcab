/* spank/hostlist.c: wrappers around Slurm's hostlist functions. */
#include "hostlist.h"

#include <slurm/slurm.h>
#include <stdlib.h>
#include <string.h>

int loom_hostlist_first(const char *list, char *buf, size_t len)
{
	hostlist_t hl;
	char *h;
	int rc = -1;

	if (!list || !*list || len == 0)
		return -1;
	hl = slurm_hostlist_create(list);
	if (!hl)
		return -1;
	h = slurm_hostlist_shift(hl);
	if (h && *h && strlen(h) < len) {
		strcpy(buf, h);
		rc = 0;
	}
	free(h);
	slurm_hostlist_destroy(hl);
	return rc;
}

int loom_hostlist_expand(const char *list, char *buf, size_t len)
{
	hostlist_t hl;
	char *h;
	size_t n = 0;
	int rc = 0;

	if (!list || !*list || len == 0)
		return -1;
	hl = slurm_hostlist_create(list);
	if (!hl)
		return -1;
	buf[0] = '\0';
	while (rc == 0 && (h = slurm_hostlist_shift(hl))) {
		size_t l = strlen(h);
		if (n + l + 2 > len)
			rc = -1;
		else {
			if (n)
				buf[n++] = ',';
			memcpy(buf + n, h, l + 1);
			n += l;
		}
		free(h);
	}
	slurm_hostlist_destroy(hl);
	return n ? rc : -1;
}

int loom_hostlist_count(const char *list)
{
	hostlist_t hl;
	int n;

	if (!list || !*list)
		return -1;
	hl = slurm_hostlist_create(list);
	if (!hl)
		return -1;
	n = slurm_hostlist_count(hl);
	slurm_hostlist_destroy(hl);
	return n;
}

/* "2(x3),1,4(x2)": count(xrepeat), comma separated. The whole list is
 * checked, also past the node asked for ("2,abc" is not a list). */
int loom_tasks_on_node(const char *s, unsigned nodeid)
{
	unsigned long node = 0;
	const char *p = s;
	int found = -1;

	if (!s || !*s || s[strlen(s) - 1] == ',')
		return -1;
	while (*p) {
		unsigned long count = 0, rep = 1;
		const char *q = p;
		while (*q >= '0' && *q <= '9' && count <= 1000000)
			count = count * 10 + (unsigned long)(*q++ - '0');
		if (q == p || count > 1000000)
			return -1;
		if (*q == '(') {
			const char *r;
			if (q[1] != 'x')
				return -1;
			rep = 0;
			r = q + 2;
			while (*r >= '0' && *r <= '9' && rep <= 1000000)
				rep = rep * 10 + (unsigned long)(*r++ - '0');
			if (r == q + 2 || *r != ')' || rep == 0 || rep > 1000000)
				return -1;
			q = r + 1;
		}
		if (*q && *q != ',')
			return -1;
		if (found < 0 && nodeid >= node && nodeid < node + rep)
			found = (int)count;
		if (node < 0xffffffffUL)
			node += rep;
		p = *q ? q + 1 : q;
		if (*q && !*p)
			return -1;
	}
	return found;
}
