/* runtime/ckpt/ckpt_format.c: checksums and the MANIFEST text (the files of a
 * checkpoint directory: ckpt_dir.c; docs/checkpoint-format.md). No communication. */
#include "config.h"
#include "ckpt/ckpt_nocomm.h"
#include "loom.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_XXHASH
#include <xxhash.h>
#endif

/* ---- CRC32C (Castagnoli, reflected 0x82F63B78), slicing by 8 ---- */
static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
}

uint32_t loom_ck_crc32c(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;
	pthread_once(&crc_once, crc_init);
	crc = ~crc;
	while (n >= 8) {
		uint32_t lo = crc ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
				     (uint32_t)b[3] << 24);
		crc = crc_tab[7][lo & 0xff] ^ crc_tab[6][(lo >> 8) & 0xff] ^
		      crc_tab[5][(lo >> 16) & 0xff] ^ crc_tab[4][lo >> 24] ^ crc_tab[3][b[4]] ^
		      crc_tab[2][b[5]] ^ crc_tab[1][b[6]] ^ crc_tab[0][b[7]];
		b += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *b++) & 0xff];
	return ~crc;
}

int loom_ck_sum_default(void)
{
	const char *e = getenv("LOOM_CKPT_CHECKSUM");
	if (e && loom_ck_sum_parse(e) && loom_ck_sum_supported(loom_ck_sum_parse(e)))
		return loom_ck_sum_parse(e);
#ifdef HAVE_XXHASH
	return CKPT_SUM_XXH3;
#else
	return CKPT_SUM_CRC32C;
#endif
}

const char *loom_ck_sum_name(int algo)
{
	return algo == CKPT_SUM_XXH3 ? "xxh3-64" : algo == CKPT_SUM_CRC32C ? "crc32c" : "?";
}

int loom_ck_sum_parse(const char *name)
{
	if (!strcmp(name, "xxh3-64"))
		return CKPT_SUM_XXH3;
	if (!strcmp(name, "crc32c"))
		return CKPT_SUM_CRC32C;
	return 0;
}

int loom_ck_sum_supported(int algo)
{
#ifdef HAVE_XXHASH
	return algo == CKPT_SUM_XXH3 || algo == CKPT_SUM_CRC32C;
#else
	return algo == CKPT_SUM_CRC32C;
#endif
}

int loom_ck_hash_init(ckpt_hash_t *h, int algo)
{
	h->algo = algo;
	h->crc = 0;
	h->xx = NULL;
	if (!loom_ck_sum_supported(algo))
		return LOOM_ERR_UNSUPPORTED;
#ifdef HAVE_XXHASH
	if (algo == CKPT_SUM_XXH3) {
		h->xx = XXH3_createState();
		if (!h->xx)
			return LOOM_ERR_NOMEM;
		XXH3_64bits_reset(h->xx);
	}
#endif
	return LOOM_SUCCESS;
}

void loom_ck_hash_update(ckpt_hash_t *h, const void *p, size_t n)
{
#ifdef HAVE_XXHASH
	if (h->algo == CKPT_SUM_XXH3) {
		XXH3_64bits_update(h->xx, p, n);
		return;
	}
#endif
	h->crc = loom_ck_crc32c(h->crc, p, n);
}

uint64_t loom_ck_hash_final(ckpt_hash_t *h)
{
	uint64_t v = h->crc;
#ifdef HAVE_XXHASH
	if (h->algo == CKPT_SUM_XXH3) {
		v = XXH3_64bits_digest(h->xx);
		XXH3_freeState(h->xx);
		h->xx = NULL;
	}
#endif
	return v;
}

uint64_t loom_ck_hash_buf(int algo, const void *p, size_t n)
{
	ckpt_hash_t h;
	if (loom_ck_hash_init(&h, algo) != LOOM_SUCCESS)
		return 0;
	loom_ck_hash_update(&h, p, n);
	return loom_ck_hash_final(&h);
}

uint64_t loom_ck_file_sum(int algo, const uint64_t *chunk_sums, size_t n)
{
	ckpt_hash_t h;
	if (loom_ck_hash_init(&h, algo) != LOOM_SUCCESS)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char le[8];
		for (int k = 0; k < 8; k++)
			le[k] = (unsigned char)(chunk_sums[i] >> (8 * k));
		loom_ck_hash_update(&h, le, 8);
	}
	return loom_ck_hash_final(&h);
}

/* ---- manifest ---- */
int loom_ck_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > CKPT_NAME_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (name[i] <= ' ' || name[i] > '~')
			return 0;
	return 1;
}

int loom_ck_shape_bytes(int ndim, const uint64_t *shape, uint64_t esize, uint64_t *bytes)
{
	uint64_t b = esize;
	if (ndim < 1 || ndim > CKPT_MAX_NDIM || esize == 0)
		return 0;
	for (int d = 0; d < ndim; d++)
		if (__builtin_mul_overflow(b, shape[d], &b) || b >= CKPT_BYTES_MAX)
			return 0;
	*bytes = b;
	return 1;
}

static int dtype_parse(const char *s)
{
	for (int d = 0; d < LOOM_DTYPE_COUNT; d++)
		if (!strcmp(s, loom_dtype_name((loom_dtype_t)d)))
			return d;
	return -1;
}

/* the text up to and including "end\n" */
static char *manifest_body(const ckpt_manifest_t *m, size_t *len)
{
	char *buf = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&buf, &sz);
	if (!f)
		return NULL;
	fprintf(f, "loom-checkpoint 1\nstep %lld\nchecksum %s\nchunk %" PRIu64 "\n", m->step,
		loom_ck_sum_name(m->algo), m->chunk);
	fprintf(f, "writer %s\ntensors %d\n", m->writer[0] ? m->writer : "-", m->ntensors);
	for (int i = 0; i < m->ntensors; i++) {
		const ckpt_mtensor_t *t = &m->t[i];
		fprintf(f, "tensor %s dtype %s shape ", t->name, loom_dtype_name((loom_dtype_t)t->dtype));
		for (int d = 0; d < t->ndim; d++)
			fprintf(f, "%s%" PRIu64, d ? "," : "", t->shape[d]);
		fprintf(f, " bytes %" PRIu64 " file %s sum %016" PRIx64 "\n", t->bytes, t->file, t->sum);
	}
	fputs("end\n", f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	*len = sz;
	return buf;
}

int loom_ck_manifest_write(FILE *f, const ckpt_manifest_t *m)
{
	size_t len;
	char *body = manifest_body(m, &len);
	if (!body)
		return LOOM_ERR_NOMEM;
	int ok = fwrite(body, 1, len, f) == len &&
		 fprintf(f, "manifest-sum %016" PRIx64 "\n", loom_ck_hash_buf(m->algo, body, len)) > 0;
	free(body);
	return ok ? LOOM_SUCCESS : LOOM_ERR_IO;
}

void loom_ck_manifest_free(ckpt_manifest_t *m)
{
	free(m->t);
	m->t = NULL;
	m->ntensors = 0;
}

/* in the helpers of the parse: the reason, and -1 */
#define BAD(...) do { snprintf(why, whylen, __VA_ARGS__); return -1; } while (0)

/* what the parse has read so far */
typedef struct {
	const char *buf;  /* the copy of the text whose lines are parsed */
	size_t len;
	int ntens, seen, done, lineno;
	size_t bodylen;   /* the text up to and with "end\n": what manifest-sum sums */
} mstate_t;

/* the line after "end": the manifest's own sum over the text before it */
static int parse_sum_line(const char *line, const mstate_t *st, const ckpt_manifest_t *m,
			  const char *text, char *why, size_t whylen)
{
	uint64_t got, want;
	if (sscanf(line, "manifest-sum %" SCNx64, &want) != 1)
		BAD("line %d: expected manifest-sum", st->lineno);
	if (!loom_ck_sum_supported(m->algo))
		BAD("checksum %s not supported by this build", loom_ck_sum_name(m->algo));
	got = loom_ck_hash_buf(m->algo, text, st->bodylen);
	if (got != want)
		BAD("manifest checksum mismatch: expected %016" PRIx64 ", got %016" PRIx64, want, got);
	return 0;
}

/* "D0,D1,...": t's dimensions */
static int parse_shape(char *shape, int lineno, ckpt_mtensor_t *t, char *why, size_t whylen)
{
	char *endp;
	for (char *s = shape; *s;) {
		if (t->ndim >= CKPT_MAX_NDIM)
			BAD("line %d: too many dimensions", lineno);
		errno = 0;
		t->shape[t->ndim] = strtoull(s, &endp, 10);
		if (*s < '0' || *s > '9' || errno || (*endp && *endp != ','))
			BAD("line %d: bad shape", lineno);
		t->ndim++;
		s = *endp ? endp + 1 : endp;
	}
	return 0;
}

/* "tensor NAME dtype DT shape D0,D1 bytes N file F sum X" into t, its
 * bytes checked against its shape */
static int parse_tensor(const char *line, int lineno, ckpt_mtensor_t *t, char *why,
			size_t whylen)
{
	char name[CKPT_NAME_MAX + 2], dt[32], shape[256], file[40];
	uint64_t want;
	if (sscanf(line, "tensor %201s dtype %31s shape %255s bytes %" SCNu64
			 " file %39s sum %" SCNx64,
		   name, dt, shape, &t->bytes, file, &t->sum) != 6)
		BAD("line %d: bad tensor line", lineno);
	if (!loom_ck_name_ok(name))
		BAD("line %d: bad tensor name", lineno);
	strcpy(t->name, name);
	if ((t->dtype = dtype_parse(dt)) < 0)
		BAD("line %d: unknown dtype '%s'", lineno, dt);
	if (strlen(file) >= sizeof t->file || strchr(file, '/') || file[0] == '.')
		BAD("line %d: bad file name", lineno);
	strcpy(t->file, file);
	if (parse_shape(shape, lineno, t, why, whylen))
		return -1;
	if (!loom_ck_shape_bytes(t->ndim, t->shape, loom_dtype_size((loom_dtype_t)t->dtype), &want))
		BAD("line %d: tensor %s: the shape has no dimension or is too large "
		    "(%" PRIu64 " bytes or more)", lineno, t->name, CKPT_BYTES_MAX);
	if (want != t->bytes)
		BAD("line %d: tensor %s: bytes %" PRIu64 " do not match its shape", lineno, t->name,
		    t->bytes);
	return 0;
}

/* one line before "end" (or "end" itself) into m and st */
static int parse_line(const char *line, mstate_t *st, ckpt_manifest_t *m, char *why, size_t whylen)
{
	char w1[64];
	int lineno = st->lineno;
	if (lineno == 1) {
		if (strcmp(line, "loom-checkpoint 1"))
			BAD("not a loom checkpoint manifest (format line '%.40s')", line);
	} else if (sscanf(line, "step %lld", &m->step) == 1) {
	} else if (sscanf(line, "checksum %63s", w1) == 1) {
		if (!(m->algo = loom_ck_sum_parse(w1)))
			BAD("unknown checksum '%s'", w1);
	} else if (sscanf(line, "chunk %" SCNu64, &m->chunk) == 1) {
		if (m->chunk < CKPT_CHUNK_MIN || m->chunk > CKPT_CHUNK_MAX)
			BAD("line %d: chunk %" PRIu64 " outside %" PRIu64 "..%" PRIu64 " bytes", lineno,
			    m->chunk, CKPT_CHUNK_MIN, CKPT_CHUNK_MAX);
	} else if (!strncmp(line, "writer ", 7)) {
		snprintf(m->writer, sizeof m->writer, "%s", line + 7);
	} else if (sscanf(line, "tensors %d", &st->ntens) == 1) {
		/* each tensor line takes more than 32 bytes of the text */
		if (st->ntens < 0 || (size_t)st->ntens > st->len / 32 || m->t)
			BAD("line %d: bad tensor count", lineno);
		m->t = calloc((size_t)st->ntens + 1, sizeof *m->t);
		if (!m->t)
			BAD("out of memory");
	} else if (!strncmp(line, "tensor ", 7)) {
		if (!m->t || st->seen >= st->ntens)
			BAD("line %d: more tensors than declared", lineno);
		if (parse_tensor(line, lineno, &m->t[st->seen], why, whylen))
			return -1;
		st->seen++;
	} else if (!strcmp(line, "end")) {
		st->done = 1;
		st->bodylen = (size_t)(line - st->buf) + 4;
	} else {
		BAD("line %d: not understood: '%.40s'", lineno, line);
	}
	return 0;
}

#define WHY(...) do { snprintf(why, whylen, __VA_ARGS__); goto bad; } while (0)

int loom_ck_manifest_parse(const char *text, size_t len, ckpt_manifest_t *m, char *why,
			   size_t whylen)
{
	char *buf = malloc(len + 1), *save = NULL, *line;
	mstate_t st = { .len = len, .ntens = -1 };
	memset(m, 0, sizeof *m);
	if (!buf)
		return LOOM_ERR_NOMEM;
	memcpy(buf, text, len);
	buf[len] = 0;
	st.buf = buf;
	if (strlen(buf) != len)
		WHY("NUL byte in manifest");
	if (len == 0 || buf[len - 1] != '\n')
		WHY("manifest truncated (no final newline)");
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		st.lineno++;
		if (st.done) {
			if (parse_sum_line(line, &st, m, text, why, whylen))
				goto bad;
			st.done = 2;
			break;
		}
		if (parse_line(line, &st, m, why, whylen))
			goto bad;
	}
	if (st.done != 2)
		WHY("manifest incomplete (no %s line)", st.done ? "manifest-sum" : "end");
	if (st.ntens < 0 || st.seen != st.ntens)
		WHY("manifest lists %d tensors, declares %d", st.seen, st.ntens);
	if (!m->algo || !m->chunk)
		WHY("manifest lacks checksum or chunk");
	m->ntensors = st.ntens;
	free(buf);
	return LOOM_SUCCESS;
bad:
	free(buf);
	loom_ck_manifest_free(m);
	return LOOM_ERR_CORRUPT;
}

int loom_ck_read_small(const char *stepdir, const char *name, size_t max, char **text,
		    size_t *len, char *why, size_t whylen)
{
	struct stat st;
	int sfd, fd;
	ssize_t got = 0, n;
	*text = NULL;
	*len = 0;
	/* neither the step directory nor the file is followed if a link */
	sfd = open(stepdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	fd = sfd < 0 ? -1 : openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		snprintf(why, whylen, "%.400s/%s: %s", stepdir, name,
			 e == ELOOP || e == ENOTDIR ? "a symbolic link (not followed)" : strerror(e));
		if (sfd >= 0)
			close(sfd);
		return e == ENOENT ? LOOM_ERR_NOT_FOUND : LOOM_ERR_IO;
	}
	close(sfd);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		close(fd);
		snprintf(why, whylen, "%.400s/%s: not a regular file of at most %zu bytes", stepdir,
			 name, max);
		return LOOM_ERR_CORRUPT;
	}
	if (!(*text = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return LOOM_ERR_NOMEM;
	}
	while (got < st.st_size && (n = read(fd, *text + got, (size_t)(st.st_size - got))) > 0)
		got += n;
	close(fd);
	(*text)[got] = 0;
	*len = (size_t)got;
	return LOOM_SUCCESS;
}

int loom_ck_manifest_load(const char *stepdir, ckpt_manifest_t *m, char *why, size_t whylen)
{
	char *text;
	size_t len;
	int rc;
	memset(m, 0, sizeof *m);
	rc = loom_ck_read_small(stepdir, "MANIFEST", CKPT_MANIFEST_MAX, &text, &len, why, whylen);
	if (rc != LOOM_SUCCESS)
		return rc;
	rc = loom_ck_manifest_parse(text, len, m, why, whylen);
	free(text);
	if (rc != LOOM_SUCCESS) {
		char tmp[512];
		snprintf(tmp, sizeof tmp, "%.300s/MANIFEST: %.200s", stepdir, why);
		snprintf(why, whylen, "%s", tmp);
	}
	return rc;
}
