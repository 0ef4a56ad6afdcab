/* runtime/util/error.c: status codes to text */
#include "config.h"
#include "loom.h"

const char *loom_strerror(int status)
{
	switch (status) {
	case LOOM_SUCCESS: return "success";
	case LOOM_ERR_INVALID: return "invalid argument";
	case LOOM_ERR_NOMEM: return "out of memory";
	case LOOM_ERR_SYSTEM: return "system call failed";
	case LOOM_ERR_TIMEOUT: return "operation timed out (LOOM_TIMEOUT)";
	case LOOM_ERR_PEER_LOST: return "a peer rank was lost";
	case LOOM_ERR_MISMATCH: return "ranks called mismatched collectives";
	case LOOM_ERR_BOOTSTRAP: return "bootstrap failed";
	case LOOM_ERR_UNSUPPORTED: return "not supported by this build or backend";
	case LOOM_ERR_ABORTED: return "communicator aborted";
	case LOOM_ERR_IO: return "I/O error";
	case LOOM_ERR_CORRUPT: return "data is corrupt (checksum or manifest mismatch)";
	case LOOM_ERR_NOT_FOUND: return "not found";
	case LOOM_ERR_REVOKED: return "communicator revoked (loom_comm_revoke)";
	}
	return "unknown loom status";
}

const char *loom_version(void)
{
	return PACKAGE_VERSION;
}
