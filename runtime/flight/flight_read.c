/* runtime/flight/flight_read.c: read record files (a copy, never a
 * mapping: a file truncated under the reader cannot fault it) and check
 * every size and field before anything trusts it. */
#include "flight/flight.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* more than any record the writer makes (32 slots of 65536 ops) */
#define MAX_FILE ((size_t)256 << 20)

static const char *const kind_names[LOOM_FLIGHT_NKINDS] = {
	"?", "allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall",
	"barrier", "send", "recv",
};

const char *loom_flight_kind_name(int kind)
{
	return kind > 0 && kind < LOOM_FLIGHT_NKINDS ? kind_names[kind] : "?";
}

void loom_flight_clean(char *dst, size_t n, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t j = 0;
	if (!n)
		return;
	for (; *src; src++) {
		unsigned char c = (unsigned char)*src;
		if (c >= 0x20 && c < 0x7f) {
			if (j + 1 >= n)
				break;
			dst[j++] = (char)c;
		} else {
			if (j + 4 >= n)
				break;
			dst[j++] = '\\';
			dst[j++] = 'x';
			dst[j++] = hex[c >> 4];
			dst[j++] = hex[c & 15];
		}
	}
	dst[j] = 0;
}

/* a fixed-size string field of a record, terminated and cleaned in place */
static void clean_field(char *f, size_t n)
{
	char tmp[64];
	f[n - 1] = 0;
	loom_flight_clean(tmp, sizeof tmp < n ? sizeof tmp : n, f);
	memcpy(f, tmp, strlen(tmp) + 1);
}

void loom_flight_rec_clear(struct loom_flight_rec *r)
{
	free(r->slots);
	r->slots = NULL;
}

#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); goto fail; } while (0)

static int header_ok(const struct loom_flight_hdr *h, size_t got, const char *path, char *err,
		     size_t errlen)
{
	uint64_t want;
	if (memcmp(h->magic, LOOM_FLIGHT_MAGIC, sizeof h->magic))
		BAD("%s: not a loom flight record (bad magic)", path);
	if (h->version != LOOM_FLIGHT_VERSION)
		BAD("%s: flight record version %u; this loom reads version %d", path, h->version,
		    LOOM_FLIGHT_VERSION);
	if (h->hdr_size != sizeof *h || h->slot_size != sizeof(struct loom_flight_slot) ||
	    h->op_size != sizeof(struct loom_flight_op))
		BAD("%s: corrupt flight record: header, slot or op size %u/%u/%u, expected %zu/%zu/%zu",
		    path, h->hdr_size, h->slot_size, h->op_size, sizeof *h,
		    sizeof(struct loom_flight_slot), sizeof(struct loom_flight_op));
	if (h->nslots != LOOM_FLIGHT_SLOTS || !h->nops || h->nops > LOOM_FLIGHT_MAX_OPS ||
	    (h->nops & (h->nops - 1)))
		BAD("%s: corrupt flight record: %u slots of %u ops (the writer makes %d slots, and a "
		    "power of two up to %d ops)", path, h->nslots, h->nops, LOOM_FLIGHT_SLOTS,
		    LOOM_FLIGHT_MAX_OPS);
	want = sizeof *h + (uint64_t)h->nslots * (h->slot_size + (uint64_t)h->nops * h->op_size);
	if (h->file_size != want)
		BAD("%s: corrupt flight record: header says %llu bytes, its sizes make %llu", path,
		    (unsigned long long)h->file_size, (unsigned long long)want);
	if (got < want)
		BAD("%s: truncated flight record: %zu bytes of %llu", path, got,
		    (unsigned long long)want);
	if (h->size < 1 || h->size > LOOM_FLIGHT_MAX_RANKS || h->rank < 0 || h->rank >= h->size)
		BAD("%s: corrupt flight record: rank %d of %d", path, h->rank, h->size);
	return 0;
fail:
	return -1;
}

static int slot_ok(const struct loom_flight_rec *r, uint32_t i, struct loom_flight_slot *s,
		   const char *path, char *err, size_t errlen)
{
	if (!s->used)
		return 0;
	clean_field(s->name, sizeof s->name);
	if (s->used != 1 || s->size < 1 || s->size > r->h.size || s->rank < 0 ||
	    s->rank >= s->size || s->first_wrank < 0 || s->first_wrank >= r->h.size ||
	    s->done > s->posted)
		BAD("%s: corrupt flight record: communicator slot %u (rank %d of %d, done %llu "
		    "of %llu posted)", path, i, s->rank, s->size, (unsigned long long)s->done,
		    (unsigned long long)s->posted);
	return 0;
fail:
	return -1;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t got = 0;
	ssize_t n;
	while (got < len) {
		n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

/* slot i's newest r->nops operations, from the file's ring of h.nops:
 * file index f holds seq with f = seq & (h.nops - 1), kept at
 * f & (r->nops - 1) (both powers of two), so one run of the file ring
 * lands as at most three runs here */
static int read_ring(int fd, const struct loom_flight_rec *r, const struct loom_flight_slot *s,
		     uint64_t off)
{
	struct loom_flight_op *ops = (struct loom_flight_op *)(uintptr_t)loom_flight_ops(r, s);
	uint32_t fmask = r->h.nops - 1, keep = r->nops, t = 0;
	uint64_t first = s->posted - keep + 1;   /* wraps harmlessly before seq keep */
	while (t < keep) {
		uint32_t f = (uint32_t)((first + t) & fmask), m = f & (keep - 1);
		uint32_t len = keep - t;
		if (len > r->h.nops - f)
			len = r->h.nops - f;
		if (len > keep - m)
			len = keep - m;
		if (pread_all(fd, ops + m, (size_t)len * sizeof *ops,
			      off + (uint64_t)f * sizeof *ops))
			return -1;
		t += len;
	}
	return 0;
}

int loom_flight_read(const char *path, struct loom_flight_rec *r, char *err, size_t errlen)
{
	struct stat st;
	uint64_t file_slot;
	uint32_t i;
	char host[64] = "";
	int fd;
	memset(r, 0, sizeof *r);
	snprintf(r->path, sizeof r->path, "%s", path);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		BAD("%s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		BAD("%s: not a regular file", path);
	if ((size_t)st.st_size < sizeof r->h)
		BAD("%s: truncated flight record: %lld bytes, less than its %zu-byte header", path,
		    (long long)st.st_size, sizeof r->h);
	if ((size_t)st.st_size > MAX_FILE)
		BAD("%s: not a loom flight record: %lld bytes is more than any record (%zu)", path,
		    (long long)st.st_size, MAX_FILE);
	if (pread_all(fd, &r->h, sizeof r->h, 0))
		BAD("%s: short read of the header", path);
	if (header_ok(&r->h, (size_t)st.st_size, path, err, errlen))
		goto fail;
	clean_field(r->h.node, sizeof r->h.node);
	clean_field(r->h.host, sizeof r->h.host);
	clean_field(r->h.job, sizeof r->h.job);
	clean_field(r->h.step, sizeof r->h.step);
	/* only the slots in use (taken in order), only the newest operations */
	r->nslots = r->h.nslots_used < r->h.nslots ? r->h.nslots_used : r->h.nslots;
	r->nops = r->h.nops < LOOM_FLIGHT_KEEP_OPS ? r->h.nops : LOOM_FLIGHT_KEEP_OPS;
	r->slot_bytes = r->h.slot_size + (size_t)r->nops * r->h.op_size;
	file_slot = r->h.slot_size + (uint64_t)r->h.nops * r->h.op_size;
	if (r->nslots && !(r->slots = calloc(r->nslots, r->slot_bytes)))
		BAD("%s: out of memory for %zu bytes", path, r->nslots * r->slot_bytes);
	for (i = 0; i < r->nslots; i++) {
		struct loom_flight_slot *s = (void *)((char *)r->slots + i * r->slot_bytes);
		uint64_t off = sizeof r->h + i * file_slot;
		if (pread_all(fd, s, sizeof *s, off))
			BAD("%s: truncated flight record at slot %u", path, i);
		if (slot_ok(r, i, s, path, err, errlen))
			goto fail;
		if (s->used && read_ring(fd, r, s, off + sizeof *s))
			BAD("%s: truncated flight record in slot %u", path, i);
	}
	close(fd);
	/* a pid is only worth asking about on the host that ran it */
	if (!gethostname(host, sizeof host - 1) && !strcmp(host, r->h.host) && !r->h.finalized &&
	    kill(r->h.pid, 0) && errno == ESRCH)
		r->gone = 1;
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	loom_flight_rec_clear(r);
	return -1;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct loom_flight_rec *)a)->path,
		      ((const struct loom_flight_rec *)b)->path);
}

int loom_flight_read_dir(const char *d, struct loom_flight_rec **recs, char *err, size_t errlen,
			 void (*bad)(const char *msg, void *arg), void *arg,
			 struct loom_flight_budget *budget)
{
	struct loom_flight_budget mine = { 0, 0, 0, 0, 0, 0 }, *b = budget ? budget : &mine;
	size_t max_files = b->max_files ? b->max_files : LOOM_FLIGHT_READ_FILES;
	size_t max_bytes = b->max_bytes ? b->max_bytes : LOOM_FLIGHT_READ_BYTES, took;
	DIR *dp = opendir(d);
	struct dirent *e;
	struct loom_flight_rec *v = NULL, *nv;
	int n = 0, cap = 0;
	char path[512], msg[700];
	*recs = NULL;
	if (!dp) {
		snprintf(err, errlen, "%s: %s", d, strerror(errno));
		return -1;
	}
	while ((e = readdir(dp))) {
		size_t l = strlen(e->d_name);
		if (l < 8 || strcmp(e->d_name + l - 7, ".flight"))
			continue;
		/* past the limit a file is only counted: not opened, not said */
		if (b->files >= max_files) {
			b->skipped_files++;
			continue;
		}
		b->files++;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			if (!(nv = realloc(v, (size_t)cap * sizeof *v))) {
				b->skipped_files++;
				break;
			}
			v = nv;
		}
		snprintf(path, sizeof path, "%s/%s", d, e->d_name);
		if (loom_flight_read(path, &v[n], msg, sizeof msg)) {
			if (bad)
				bad(msg, arg);
			continue;
		}
		took = (size_t)v[n].nslots * v[n].slot_bytes;
		if (b->bytes + took > max_bytes) {
			loom_flight_rec_clear(&v[n]);
			b->skipped_bytes++;
			continue;
		}
		b->bytes += took;
		n++;
	}
	closedir(dp);
	if (n)
		qsort(v, (size_t)n, sizeof *v, by_name);
	*recs = v;
	return n;
}
