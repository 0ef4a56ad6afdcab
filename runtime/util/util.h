/* runtime/util/util.h: logging, time and environment, futex bells, the
 * reduction kernels. Below everything else; knows no communicator. */
#ifndef LOOM_UTIL_UTIL_H
#define LOOM_UTIL_UTIL_H

#include "config.h"
#include "loom.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

/* ---- log.c ---- */
enum { LOOM_LOG_ERROR = 0, LOOM_LOG_WARN, LOOM_LOG_INFO, LOOM_LOG_TRACE };
extern int loom_log_level_v;
void loom_log_init(void);
void loom_log_identity(int rank, int size, const char *node);
void loom_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define LOOM_ERR(...) loom_log(LOOM_LOG_ERROR, __VA_ARGS__)
#define LOOM_WARN(...) loom_log(LOOM_LOG_WARN, __VA_ARGS__)
#define LOOM_INFO(...) do { if (loom_log_level_v >= LOOM_LOG_INFO) loom_log(LOOM_LOG_INFO, __VA_ARGS__); } while (0)
#define LOOM_TRACE(...) do { if (loom_log_level_v >= LOOM_LOG_TRACE) loom_log(LOOM_LOG_TRACE, __VA_ARGS__); } while (0)

/* ---- sync.c: time, environment, futex bells ---- */
double loom_now(void);         /* monotonic seconds */
double loom_now_coarse(void);  /* the same clock to the last tick (ms), cheaper: deadlines */
double loom_env_double(const char *name, double dflt);
/* name's setting as a decimal in lo..hi, else dflt (a bad one warned
 * about as who's: "ckpt: NAME=... ignored") */
long loom_env_long(const char *who, const char *name, long dflt, long lo, long hi);
/* name's setting as a flag, read once into *cache (-1 until then): set
 * and not empty, or, with equals, equal to it */
int loom_env_flag(_Atomic int *cache, const char *name, const char *equals);
uint64_t loom_mix64(uint64_t a, uint64_t b);

/* secret.c: the job key (LOOM_JOB_SECRET), random bytes, HMAC-SHA256 */
#define LOOM_KEY_LEN 32
#define LOOM_MAC_LEN 32
int loom_job_key(uint8_t key[LOOM_KEY_LEN], int *have_secret);
int loom_random_bytes(void *buf, size_t n);
void loom_hmac(const uint8_t key[LOOM_KEY_LEN], const void *msg, size_t len,
	       uint8_t out[LOOM_MAC_LEN]);
int loom_mac_equal(const uint8_t a[LOOM_MAC_LEN], const uint8_t b[LOOM_MAC_LEN]);
void loom_sha256(const void *msg, size_t len, uint8_t out[32]);
/* AES-256-GCM (libcrypto) under a 32-byte key and a 12-byte IV that is
 * never used twice with a key for different bytes: seal len bytes of in
 * to out (in == out allowed) and a 16-byte tag; open checks the tag and
 * returns 0, else -1 (out then holds nothing to use) */
#define LOOM_AEAD_TAG 16
int loom_aead_seal(const uint8_t key[32], const uint8_t iv[12], const void *in, size_t len, void *out,
		   uint8_t tag[LOOM_AEAD_TAG]);
int loom_aead_open(const uint8_t key[32], const uint8_t iv[12], const void *in, size_t len, void *out,
		   const uint8_t tag[LOOM_AEAD_TAG]);
/* n bytes as 2n lower-case hex digits and a NUL; and back: (size_t)-1
 * when in holds 2n hex digits, else the index of the first that is not */
void loom_hex_encode(const uint8_t *in, size_t n, char *out);
size_t loom_hex_decode(const char *in, uint8_t *out, size_t n);

/* ---- files.c: files in directories other users may write ---- */
/* The directory of path opened O_DIRECTORY|O_NOFOLLOW (a descriptor, or
 * -errno; *bad_name set when path ends in no usable file name), and the
 * file's name in it. */
int loom_open_parent(const char *path, const char **basep, int *bad_name);
/* A new file BASE.tmp.<16 random hex> in dfd, made with O_CREAT|O_EXCL|
 * O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC and flags, checked to be a regular file
 * of this user: its descriptor (its name in tmp), or -errno. The caller
 * renameat()s it into place, or unlinkat()s it. */
int loom_create_unique(int dfd, const char *base, int flags, unsigned mode, char *tmp,
		       size_t len);

/* A futex on a 32-bit word (shared across processes when the word is in
 * shared memory): sleep while it still reads seen, up to timeout_s; wake
 * every sleeper. */
void loom_futex_wait(_Atomic uint32_t *word, uint32_t seen, double timeout_s);
void loom_futex_wake_all(_Atomic uint32_t *word);

/* A bell: a counter a waiter sleeps on (futex, also across processes when
 * it lives in shared memory). Ring it after changing what a waiter checks. */
struct loom_bell {
	_Atomic uint32_t seq;
	_Atomic uint32_t waiters;
};
void loom_bell_ring(struct loom_bell *b);
/* Sleep until the bell's seq differs from seen or timeout_s passes. */
void loom_bell_wait(struct loom_bell *b, uint32_t seen, double timeout_s);

/* How a waiter that saw nothing move spends the next moment (sync.c):
 * pause-spin for the first LOOM_SPIN_S, then sched_yield() (a peer that
 * shares this core gets it) until yield_s, then sleep. Start with
 * loom_backoff_init, loom_backoff_reset after any progress;
 * loom_backoff_step returns 1 when the caller should sleep on its bell
 * now. */
#define LOOM_SPIN_S 20e-6
#define LOOM_YIELD_S 200e-6
#define LOOM_YIELD_FROM (1u << 30)  /* n from which it yields */
struct loom_backoff {
	unsigned n;
	double t0;
	double yield_s;  /* sleep from then on (LOOM_YIELD_S unless the caller says less) */
};
static inline void loom_backoff_reset(struct loom_backoff *b) { b->n = 0; }
static inline void loom_backoff_init(struct loom_backoff *b, double yield_s)
{
	b->n = 0;
	b->yield_s = yield_s;
}
int loom_backoff_step(struct loom_backoff *b);

/* ---- reduce_ops.c ---- */
float loom_half_to_float(uint16_t h);
uint16_t loom_float_to_half(float f);
float loom_bf16_to_float(uint16_t h);
uint16_t loom_float_to_bf16(float f);
int loom_dtype_ok(int dtype);
int loom_op_ok(int op);
/* inout[i] = inout[i] op in[i]; AVG reduces as SUM; 16-bit floats via fp32
 * per element (one rounding per call). */
void loom_reduce_local(void *inout, const void *in, size_t count, loom_dtype_t dtype, loom_op_t op);
/* out = a op b, element by element (out may be a): a reduction and a copy in one pass */
void loom_reduce_into(void *out, const void *a, const void *b, size_t count, loom_dtype_t dtype,
		      loom_op_t op);
/* ---- copy_stream.c ---- */
/* memcpy whose stores bypass the caches (x86-64: streaming stores, then
 * a store fence; elsewhere memcpy): for a destination too large to stay
 * in cache, it saves the read of each line before it is overwritten */
void loom_copy_stream(void *dst, const void *src, size_t n);

/* ---- resolve.c ---- */
/* host's first IPv4 address (network order) into *ip: 0, or -1 */
int loom_resolve4(const char *host, uint32_t *ip);

/* AVG's last step: divide by n (integers truncate). */
void loom_avg_finish(void *buf, size_t count, loom_dtype_t dtype, int n);
void loom_to_f32(float *dst, const void *src, size_t count, loom_dtype_t dtype);
void loom_from_f32(void *dst, const float *src, size_t count, loom_dtype_t dtype);
static inline int loom_dtype_is16(loom_dtype_t d) { return d == LOOM_FLOAT16 || d == LOOM_BFLOAT16; }

#endif
