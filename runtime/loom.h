/* loom.h: the public interface of libloom.
 *
 * Every call returns a loom status (LOOM_SUCCESS == 0, negative on error);
 * loom_strerror() turns one into text. Handles are opaque.
 */
#ifndef LOOM_H
#define LOOM_H

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_VERSION_MAJOR 0
#define LOOM_VERSION_MINOR 1
#define LOOM_VERSION_PATCH 0

typedef enum {
	LOOM_SUCCESS = 0,
	LOOM_ERR_INVALID = -1,      /* a bad argument (null handle, bad dtype...) */
	LOOM_ERR_NOMEM = -2,
	LOOM_ERR_SYSTEM = -3,       /* a system call failed; see the log line */
	LOOM_ERR_TIMEOUT = -4,      /* the operation passed its deadline */
	LOOM_ERR_PEER_LOST = -5,    /* a peer process died or closed its link */
	LOOM_ERR_MISMATCH = -6,     /* ranks called different collectives (LOOM_CHECK=1) */
	LOOM_ERR_BOOTSTRAP = -7,    /* could not form the world (PMIx / rendezvous) */
	LOOM_ERR_UNSUPPORTED = -8,  /* not available in this build or backend */
	LOOM_ERR_ABORTED = -9,      /* the communicator was aborted */
	LOOM_ERR_IO = -10,          /* file I/O failed (checkpoint) */
	LOOM_ERR_CORRUPT = -11,     /* data failed its checksum or manifest check */
	LOOM_ERR_NOT_FOUND = -12,   /* nothing to load (no committed checkpoint) */
} loom_status_t;

/* Text for a status code; never NULL. */
const char *loom_strerror(int status);

/* The library's version as "MAJOR.MINOR.PATCH". */
const char *loom_version(void);

#ifdef __cplusplus
}
#endif
#endif
