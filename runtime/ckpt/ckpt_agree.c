/* runtime/ckpt/ckpt_agree.c: the agreements every collective step of a
 * save or load ends in (the worst status on every rank, the same tensor
 * table everywhere), and which failures are the communicator's rather
 * than a step's. The bottom of the collective files: it calls only the
 * public API and the checksums. */
#include "config.h"
#include "util/util.h"
#include "ckpt/ckpt_internal.h"

#include <string.h>

int loom_ck_agree(loom_ckpt_t *ck, int rc)
{
	int32_t v = rc, out = 0;
	int c = loom_allreduce(&v, &out, 1, LOOM_INT32, LOOM_MIN, ck->comm);
	return c != LOOM_SUCCESS ? c : out;
}

int loom_ck_table_check(loom_ckpt_t *ck)
{
	uint32_t h = 0;
	int64_t v[2], r[2];
	int rc;
	for (int i = 0; i < ck->nt; i++) {
		h = loom_ck_crc32c(h, ck->t[i].name, strlen(ck->t[i].name) + 1);
		h = loom_ck_crc32c(h, &ck->t[i].dtype, sizeof ck->t[i].dtype);
		h = loom_ck_crc32c(h, ck->t[i].shape, sizeof(uint64_t) * (size_t)ck->t[i].ndim);
	}
	v[0] = (int64_t)h;
	v[1] = -(int64_t)h;
	if ((rc = loom_allreduce(v, r, 2, LOOM_INT64, LOOM_MAX, ck->comm)))
		return rc;
	if (r[0] != -r[1]) {
		if (ck->rank == 0)
			LOOM_ERR("ckpt: ranks registered different tensors (names, dtypes, shapes or "
				 "order differ)");
		return LOOM_ERR_MISMATCH;
	}
	return LOOM_SUCCESS;
}

int loom_ck_comm_error(int rc)
{
	return rc == LOOM_ERR_PEER_LOST || rc == LOOM_ERR_TIMEOUT || rc == LOOM_ERR_ABORTED ||
	       rc == LOOM_ERR_BOOTSTRAP || rc == LOOM_ERR_NOMEM;
}
