/* t/runtime/rank-list.h: whether rank r is in a comma-separated list of
 * ranks given on a test program's command line ("4,5"). */
#ifndef LOOM_T_RANK_LIST_H
#define LOOM_T_RANK_LIST_H

#include <stdlib.h>
#include <string.h>

static inline int in_list(const char *list, int r)
{
	const char *p = list;
	while (p && *p) {
		if (atoi(p) == r)
			return 1;
		p = strchr(p, ',');
		p = p ? p + 1 : NULL;
	}
	return 0;
}

#endif
