/* runtime/api/mesh.c: data/tensor/pipeline-parallel communicators from the
 * world, rank = (pp_index * dp + dp_index) * tp + tp_index (see loom.h). */
#include "backend/backend.h"

#include <string.h>

int loom_mesh(loom_comm_t *world, int dp, int tp, int pp, loom_mesh_t *m)
{
	int r, rc;
	if (!world || !m || dp < 1 || tp < 1 || pp < 1 ||
	    (long long)dp * tp * pp != (long long)world->size)
		return LOOM_ERR_INVALID;
	memset(m, 0, sizeof *m);
	r = world->rank;
	m->tp_size = tp;
	m->dp_size = dp;
	m->pp_size = pp;
	m->tp_index = r % tp;
	m->dp_index = (r / tp) % dp;
	m->pp_index = r / (tp * dp);
	/* each split is collective over the world, in the same order everywhere */
	rc = loom_comm_split(world, m->pp_index * dp + m->dp_index, r, &m->tp);
	if (!rc)
		rc = loom_comm_split(world, m->pp_index * tp + m->tp_index, r, &m->dp);
	if (!rc)
		rc = loom_comm_split(world, m->dp_index * tp + m->tp_index, r, &m->pp);
	if (rc) {
		loom_mesh_free(m);
		return rc;
	}
	loom_comm_set_name(m->tp, "tp");
	loom_comm_set_name(m->dp, "dp");
	loom_comm_set_name(m->pp, "pp");
	return LOOM_SUCCESS;
}

int loom_mesh_free(loom_mesh_t *m)
{
	if (!m)
		return LOOM_ERR_INVALID;
	if (m->tp)
		loom_comm_free(m->tp);
	if (m->dp)
		loom_comm_free(m->dp);
	if (m->pp)
		loom_comm_free(m->pp);
	m->tp = m->dp = m->pp = NULL;
	return LOOM_SUCCESS;
}
