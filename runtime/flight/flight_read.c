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
	if (!h->nslots || h->nslots > 1024 || !h->nops || h->nops > LOOM_FLIGHT_MAX_OPS ||
	    (h->nops & (h->nops - 1)))
		BAD("%s: corrupt flight record: %u slots of %u ops (at most 1024 slots, and a power "
		    "of two up to %d ops)", path, h->nslots, h->nops, LOOM_FLIGHT_MAX_OPS);
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

static int slots_ok(const struct loom_flight_rec *r, const char *path, char *err, size_t errlen)
{
	uint32_t i;
	for (i = 0; i < r->h.nslots; i++) {
		struct loom_flight_slot *s = (void *)((char *)r->slots + i * r->slot_bytes);
		if (!s->used)
			continue;
		s->name[sizeof s->name - 1] = 0;
		if (s->used != 1 || s->size < 1 || s->size > r->h.size || s->rank < 0 ||
		    s->rank >= s->size || s->first_wrank < 0 || s->first_wrank >= r->h.size ||
		    s->done > s->posted)
			BAD("%s: corrupt flight record: communicator slot %u (rank %d of %d, done %llu "
			    "of %llu posted)", path, i, s->rank, s->size, (unsigned long long)s->done,
			    (unsigned long long)s->posted);
	}
	return 0;
fail:
	return -1;
}

int loom_flight_read(const char *path, struct loom_flight_rec *r, char *err, size_t errlen)
{
	struct stat st;
	size_t want, got = 0;
	ssize_t n;
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
	if (read(fd, &r->h, sizeof r->h) != (ssize_t)sizeof r->h)
		BAD("%s: short read of the header", path);
	if (header_ok(&r->h, (size_t)st.st_size, path, err, errlen))
		goto fail;
	r->h.node[sizeof r->h.node - 1] = r->h.host[sizeof r->h.host - 1] = 0;
	r->h.job[sizeof r->h.job - 1] = r->h.step[sizeof r->h.step - 1] = 0;
	r->slot_bytes = r->h.slot_size + (size_t)r->h.nops * r->h.op_size;
	want = (size_t)r->h.file_size - sizeof r->h;
	if (!(r->slots = malloc(want)))
		BAD("%s: out of memory for %zu bytes", path, want);
	while (got < want && (n = read(fd, (char *)r->slots + got, want - got)) > 0)
		got += (size_t)n;
	if (got < want)
		BAD("%s: truncated flight record: %zu bytes of %llu", path, got + sizeof r->h,
		    (unsigned long long)r->h.file_size);
	if (slots_ok(r, path, err, errlen))
		goto fail;
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
			 void (*bad)(const char *msg, void *arg), void *arg)
{
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
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			if (cap > LOOM_FLIGHT_MAX_RANKS || !(nv = realloc(v, (size_t)cap * sizeof *v)))
				break;
			v = nv;
		}
		snprintf(path, sizeof path, "%s/%s", d, e->d_name);
		if (loom_flight_read(path, &v[n], msg, sizeof msg)) {
			if (bad)
				bad(msg, arg);
			continue;
		}
		n++;
	}
	closedir(dp);
	if (n)
		qsort(v, (size_t)n, sizeof *v, by_name);
	*recs = v;
	return n;
}
