/* runtime/backend/backend_mpi_ops.c: what the MPI backend translates: MPI error
 * codes into loom statuses, loom dtypes and ops into MPI's, and the
 * user-defined ops that reduce 16-bit floats in fp32 (one rounding to 16
 * bits per combining step). */
#include "backend/backend.h"

#include <stdint.h>

static int g_ops_made;
static MPI_Op g_op16[2][4];  /* [bf16?][SUM, PROD, MIN, MAX] */

/* ---- statuses ---- */
int loom_mpi_class_status(int cls)
{
	switch (cls) {
	case MPI_SUCCESS:
		return LOOM_SUCCESS;
	case MPI_ERR_BUFFER: case MPI_ERR_COUNT: case MPI_ERR_TYPE: case MPI_ERR_TAG:
	case MPI_ERR_COMM: case MPI_ERR_RANK: case MPI_ERR_ROOT: case MPI_ERR_GROUP:
	case MPI_ERR_OP: case MPI_ERR_TOPOLOGY: case MPI_ERR_DIMS: case MPI_ERR_ARG:
	case MPI_ERR_REQUEST: case MPI_ERR_KEYVAL: case MPI_ERR_INFO: case MPI_ERR_INFO_KEY:
	case MPI_ERR_INFO_VALUE: case MPI_ERR_INFO_NOKEY: case MPI_ERR_NAME: case MPI_ERR_PORT:
	case MPI_ERR_SERVICE: case MPI_ERR_WIN: case MPI_ERR_BASE: case MPI_ERR_DISP:
	case MPI_ERR_SIZE: case MPI_ERR_LOCKTYPE: case MPI_ERR_ASSERT:
		return LOOM_ERR_INVALID;
	case MPI_ERR_TRUNCATE:
		return LOOM_ERR_MISMATCH;  /* the ranks disagree on a message's size */
	case MPI_ERR_NO_MEM:
		return LOOM_ERR_NOMEM;
	case MPI_ERR_UNSUPPORTED_OPERATION: case MPI_ERR_UNSUPPORTED_DATAREP:
		return LOOM_ERR_UNSUPPORTED;
	case MPI_ERR_IO: case MPI_ERR_FILE: case MPI_ERR_NO_SPACE: case MPI_ERR_ACCESS:
	case MPI_ERR_QUOTA: case MPI_ERR_READ_ONLY: case MPI_ERR_NO_SUCH_FILE:
	case MPI_ERR_FILE_EXISTS: case MPI_ERR_FILE_IN_USE: case MPI_ERR_BAD_FILE:
	case MPI_ERR_AMODE: case MPI_ERR_CONVERSION: case MPI_ERR_DUP_DATAREP:
	case MPI_ERR_NOT_SAME:
		return LOOM_ERR_IO;
#ifdef MPIX_ERR_PROC_FAILED
	case MPIX_ERR_PROC_FAILED:
		return LOOM_ERR_PEER_LOST;
#endif
#ifdef MPIX_ERR_PROC_FAILED_PENDING
	case MPIX_ERR_PROC_FAILED_PENDING:
		return LOOM_ERR_PEER_LOST;
#endif
#ifdef MPIX_ERR_REVOKED
	case MPIX_ERR_REVOKED:
		return LOOM_ERR_ABORTED;
#endif
	default:  /* MPI_ERR_INTERN, MPI_ERR_OTHER, MPI_ERR_UNKNOWN, ... */
		return LOOM_ERR_SYSTEM;
	}
}

/* an MPI return code as a loom status, with one log line naming it */
int loom_mpi_status(const struct loom_comm *c, const char *what, int code)
{
	char text[MPI_MAX_ERROR_STRING + 1];
	int cls = MPI_ERR_UNKNOWN, len = 0, st;
	if (code == MPI_SUCCESS)
		return LOOM_SUCCESS;
	MPI_Error_class(code, &cls);
	st = loom_mpi_class_status(cls);
	if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
		len = 0;
	text[len] = 0;
	LOOM_ERR("mpi backend: comm %s: %s: %s (%s)", c ? c->name : "-", what,
		 len ? text : "unknown MPI error", loom_strerror(st));
	return st;
}

/* ---- 16-bit floats: fp32 arithmetic, one rounding per combining step ---- */
#define DEF16(NAME, TOF, FROMF, EXPR)                                            \
	static void NAME(void *in, void *inout, int *len, MPI_Datatype *t)        \
	{                                                                         \
		const uint16_t *a = in;                                           \
		uint16_t *b = inout;                                              \
		int i;                                                            \
		(void)t;                                                          \
		for (i = 0; i < *len; i++) {                                      \
			float x = TOF(a[i]), y = TOF(b[i]);                       \
			b[i] = FROMF(EXPR);                                       \
		}                                                                 \
	}
DEF16(h_sum, loom_half_to_float, loom_float_to_half, x + y)
DEF16(h_prod, loom_half_to_float, loom_float_to_half, x * y)
DEF16(h_min, loom_half_to_float, loom_float_to_half, y < x ? y : x)
DEF16(h_max, loom_half_to_float, loom_float_to_half, y > x ? y : x)
DEF16(b_sum, loom_bf16_to_float, loom_float_to_bf16, x + y)
DEF16(b_prod, loom_bf16_to_float, loom_float_to_bf16, x * y)
DEF16(b_min, loom_bf16_to_float, loom_float_to_bf16, y < x ? y : x)
DEF16(b_max, loom_bf16_to_float, loom_float_to_bf16, y > x ? y : x)

static MPI_User_function *const fn16[2][4] = {
	{ h_sum, h_prod, h_min, h_max },
	{ b_sum, b_prod, b_min, b_max },
};

static int op_index(loom_op_t op)
{
	switch (op) {
	case LOOM_SUM: case LOOM_AVG: return 0;
	case LOOM_PROD: return 1;
	case LOOM_MIN: return 2;
	case LOOM_MAX: return 3;
	default: return -1;
	}
}

MPI_User_function *loom_mpi_user_fn(loom_dtype_t dt, loom_op_t op)
{
	int i = op_index(op);
	if (i < 0 || !loom_dtype_is16(dt))
		return NULL;
	return fn16[dt == LOOM_BFLOAT16][i];
}

MPI_Datatype loom_mpi_type(loom_dtype_t dt)
{
	switch (dt) {
	case LOOM_INT8: return MPI_INT8_T;
	case LOOM_INT32: return MPI_INT32_T;
	case LOOM_INT64: return MPI_INT64_T;
	case LOOM_FLOAT16: case LOOM_BFLOAT16: return MPI_UINT16_T;
	case LOOM_FLOAT32: return MPI_FLOAT;
	case LOOM_FLOAT64: return MPI_DOUBLE;
	default: return MPI_DATATYPE_NULL;
	}
}

MPI_Op loom_mpi_op(loom_dtype_t dt, loom_op_t op)
{
	int i = op_index(op);
	if (i < 0)
		return MPI_OP_NULL;
	if (loom_dtype_is16(dt))
		return g_op16[dt == LOOM_BFLOAT16][i];
	switch (i) {
	case 0: return MPI_SUM;
	case 1: return MPI_PROD;
	case 2: return MPI_MIN;
	default: return MPI_MAX;
	}
}

int loom_mpi_ops_create(void)
{
	int i, j, rc = MPI_SUCCESS;
	if (g_ops_made)
		return MPI_SUCCESS;
	for (i = 0; i < 2 && rc == MPI_SUCCESS; i++)
		for (j = 0; j < 4 && rc == MPI_SUCCESS; j++)
			rc = MPI_Op_create(fn16[i][j], 1, &g_op16[i][j]);
	if (rc == MPI_SUCCESS)
		g_ops_made = 1;
	return rc;
}

void loom_mpi_ops_free(void)
{
	int i, j;
	if (!g_ops_made)
		return;
	for (i = 0; i < 2; i++)
		for (j = 0; j < 4; j++)
			MPI_Op_free(&g_op16[i][j]);
	g_ops_made = 0;
}

