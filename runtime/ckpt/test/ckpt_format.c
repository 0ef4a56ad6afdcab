/* unit test: checkpoint internals without a communicator: checksums,
 * MANIFEST round trip and damage detection, block runs, aggregator
 * domains, and resharding as pure functions on layouts. */
#include "config.h"
#include "ckpt/ckpt_nocomm.h"
#include "loom.h"
#include "../../../t/tap.h"

#include <inttypes.h>
#include <stdint.h>

static void t_checksums(void)
{
	const char *v = "123456789";
	char big[10000];
	ckpt_hash_t h;
	is_int(loom_ck_crc32c(0, v, 9), 0xE3069283u, "crc32c of 123456789 is the standard check value");
	is_int(loom_ck_crc32c(loom_ck_crc32c(0, v, 4), v + 4, 5), 0xE3069283u, "crc32c streams");
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (char)(i * 131 + (i >> 7));
	for (int algo = CKPT_SUM_CRC32C; algo <= CKPT_SUM_XXH3; algo++) {
		if (!loom_ck_sum_supported(algo)) {
			skip(2, "xxHash not built");
			continue;
		}
		uint64_t one = loom_ck_hash_buf(algo, big, sizeof big);
		loom_ck_hash_init(&h, algo);
		loom_ck_hash_update(&h, big, 1);
		loom_ck_hash_update(&h, big + 1, 4999);
		loom_ck_hash_update(&h, big + 5000, 5000);
		ok(loom_ck_hash_final(&h) == one, "%s: streaming equals one shot", loom_ck_sum_name(algo));
		big[777] ^= 1;
		ok(loom_ck_hash_buf(algo, big, sizeof big) != one, "%s: a flipped bit changes the sum",
		   loom_ck_sum_name(algo));
		big[777] ^= 1;
	}
#ifdef HAVE_XXHASH
	is_int(loom_ck_sum_default(), CKPT_SUM_XXH3, "xxh3-64 is the default with xxHash");
#else
	is_int(loom_ck_sum_default(), CKPT_SUM_CRC32C, "crc32c is the default without xxHash");
#endif
}

static void mk_manifest(ckpt_manifest_t *m, ckpt_mtensor_t *t)
{
	memset(m, 0, sizeof *m);
	memset(t, 0, 2 * sizeof *t);
	m->step = 42;
	m->algo = CKPT_SUM_CRC32C;
	m->chunk = 4096;
	m->ntensors = 2;
	m->t = t;
	snprintf(m->writer, sizeof m->writer, "job=7 ranks=4");
	strcpy(t[0].name, "layer0.weight");
	t[0].dtype = LOOM_FLOAT32;
	t[0].ndim = 2;
	t[0].shape[0] = 3;
	t[0].shape[1] = 5;
	t[0].bytes = 60;
	strcpy(t[0].file, "t0.bin");
	t[0].sum = 0xdeadbeef01234567ull;
	strcpy(t[1].name, "opt/step");
	t[1].dtype = LOOM_INT64;
	t[1].ndim = 1;
	t[1].shape[0] = 1;
	t[1].bytes = 8;
	strcpy(t[1].file, "t1.bin");
	t[1].sum = 1;
}

static void t_manifest(void)
{
	ckpt_manifest_t m, r;
	ckpt_mtensor_t t[2];
	char *buf = NULL, why[256];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	mk_manifest(&m, t);
	is_int(loom_ck_manifest_write(f, &m), LOOM_SUCCESS, "manifest written");
	fclose(f);
	is_int(loom_ck_manifest_parse(buf, len, &r, why, sizeof why), LOOM_SUCCESS, "manifest parses back");
	ok(r.step == 42 && r.algo == CKPT_SUM_CRC32C && r.chunk == 4096 && r.ntensors == 2,
	   "step, checksum, chunk and count survive");
	ok(r.ntensors == 2 && !strcmp(r.t[0].name, "layer0.weight") && r.t[0].dtype == LOOM_FLOAT32 &&
	   r.t[0].ndim == 2 && r.t[0].shape[1] == 5 && r.t[0].sum == 0xdeadbeef01234567ull &&
	   !strcmp(r.t[1].file, "t1.bin") && r.t[1].dtype == LOOM_INT64,
	   "tensor names, dtypes, shapes, files, sums survive");
	loom_ck_manifest_free(&r);
	/* every single-byte change of the text is caught */
	int caught = 0;
	for (size_t i = 0; i < len; i++) {
		buf[i] ^= 0x04;
		if (loom_ck_manifest_parse(buf, len, &r, why, sizeof why) != LOOM_SUCCESS)
			caught++;
		else
			loom_ck_manifest_free(&r);
		buf[i] ^= 0x04;
	}
	is_int(caught, len, "every flipped byte of the manifest is rejected");
	is_int(loom_ck_manifest_parse(buf, len / 2, &r, why, sizeof why), LOOM_ERR_CORRUPT,
	       "a truncated manifest is rejected");
	diag("truncated: %s", why);
	/* a wrong bytes field (consistent checksum) is still caught */
	t[0].bytes = 61;
	free(buf);
	f = open_memstream(&buf, &len);
	loom_ck_manifest_write(f, &m);
	fclose(f);
	is_int(loom_ck_manifest_parse(buf, len, &r, why, sizeof why), LOOM_ERR_CORRUPT,
	       "bytes that do not match the shape are rejected");
	like(why, "do not match", "... saying so");
	free(buf);
	ok(loom_ck_name_ok("a.b/c-1") && !loom_ck_name_ok("has space") && !loom_ck_name_ok("") &&
	   !loom_ck_name_ok("tab\tx"), "tensor names: printable, no spaces");
}

/* ---- layouts ---- */
typedef struct {
	unsigned char *cover;
	uint64_t total;
	int bad, n;
	uint64_t last_end;
} cov_t;

static void cov_cb(void *arg, const ckpt_run_t *r)
{
	cov_t *c = arg;
	if (r->foff + r->len > c->total || r->foff < c->last_end)
		c->bad++;
	for (uint64_t i = 0; i < r->len && r->foff + i < c->total; i++)
		c->cover[r->foff + i]++;
	c->last_end = r->foff + r->len;
	c->n++;
}

static void t_runs(void)
{
	uint64_t shape[3] = { 6, 4, 10 }, off[3], ext[3];
	unsigned char cover[6 * 4 * 10 * 2];
	cov_t c = { cover, sizeof cover, 0, 0, 0 };
	memset(cover, 0, sizeof cover);
	/* a 2x2x2 grid of blocks, uneven */
	uint64_t cut[3][3] = { { 0, 4, 6 }, { 0, 1, 4 }, { 0, 3, 10 } };
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++)
			for (int d = 0; d < 2; d++) {
				off[0] = cut[0][a]; ext[0] = cut[0][a + 1] - cut[0][a];
				off[1] = cut[1][b]; ext[1] = cut[1][b + 1] - cut[1][b];
				off[2] = cut[2][d]; ext[2] = cut[2][d + 1] - cut[2][d];
				c.last_end = 0;
				loom_ck_block_runs(3, shape, off, ext, 2, cov_cb, &c);
			}
	int once = 1;
	for (size_t i = 0; i < sizeof cover; i++)
		once &= cover[i] == 1;
	ok(once && !c.bad, "8 blocks of a 3-d tensor cover every byte exactly once, runs in order");
	/* full rows merge into one run */
	off[0] = 2; ext[0] = 3; off[1] = 0; ext[1] = 4; off[2] = 0; ext[2] = 10;
	is_int(loom_ck_block_runs(3, shape, off, ext, 4, NULL, NULL), 1, "a row block is one run");
	off[1] = 1; ext[1] = 2;
	is_int(loom_ck_block_runs(3, shape, off, ext, 4, NULL, NULL), 3, "a partial middle dim: one run per outer index");
	off[0] = 5; ext[0] = 2;
	is_int(loom_ck_block_runs(3, shape, off, ext, 4, NULL, NULL), -1, "a block past the shape is refused");
	ext[0] = 0;
	is_int(loom_ck_block_runs(3, shape, off, ext, 4, NULL, NULL), 0, "an empty block has no runs");
}

static void t_domains(void)
{
	uint64_t bytes[4] = { 1000, 0, 10, 5000 }, st[5];
	loom_ck_domains(4, bytes, 64, 4, st);
	int mono = st[0] == 0 && st[4] == 6010, aligned = 1, bal = 1;
	for (int j = 1; j <= 4; j++)
		mono &= st[j] >= st[j - 1];
	for (int j = 1; j < 4; j++) {
		uint64_t v = st[j];
		/* a chunk start: offset within its file is a multiple of 64 */
		uint64_t in = v < 1000 ? v : v < 1010 ? v - 1000 : v - 1010;
		aligned &= in % 64 == 0;
		bal &= st[j + 1] - st[j] <= 6010 / 4 + 64 && st[j + 1] - st[j] + 64 >= 6010 / 4;
	}
	ok(mono, "domains are contiguous and cover the space");
	ok(aligned, "domain boundaries are chunk starts");
	ok(bal, "domains balanced within a chunk (%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 ")",
	   st[1] - st[0], st[2] - st[1], st[3] - st[2], st[4] - st[3]);
	loom_ck_domains(4, bytes, 1 << 20, 3, st);
	ok(st[0] == 0 && st[3] == 6010 && st[1] <= st[2], "chunks larger than files: still a partition");
}

/* resharding, as pure functions: a 4-rank row-block layout writes the
 * file image; a 2-rank block-cyclic (rows and columns) layout reads it */
typedef struct {
	unsigned char *file;
	unsigned char *local;
	int writing;
} img_t;

static void img_cb(void *arg, const ckpt_run_t *r)
{
	img_t *m = arg;
	if (m->writing)
		memcpy(m->file + r->foff, m->local + r->loff, r->len);
	else
		memcpy(m->local + r->loff, m->file + r->foff, r->len);
}

static void t_reshard(void)
{
	enum { R = 12, C = 10 };
	uint64_t shape[2] = { R, C };
	float global[R][C], file[R][C], back[R][C];
	int good = 1;
	for (int i = 0; i < R; i++)
		for (int j = 0; j < C; j++)
			global[i][j] = (float)(i * 100 + j);
	memset(file, 0, sizeof file);
	for (int r = 0; r < 4; r++) { /* rows 3r..3r+2 */
		float local[3][C];
		uint64_t off[2] = { (uint64_t)r * 3, 0 }, ext[2] = { 3, C };
		memcpy(local, global[r * 3], sizeof local);
		img_t m = { (unsigned char *)file, (unsigned char *)local, 1 };
		loom_ck_block_runs(2, shape, off, ext, sizeof(float), img_cb, &m);
	}
	ok(!memcmp(file, global, sizeof file), "4-rank row blocks produce the row-major file");
	memset(back, 0xff, sizeof back);
	/* 2 ranks, 2x2-row blocks cyclic over rows, columns split 0..6 / 6..10 */
	for (int r = 0; r < 2; r++)
		for (int rb = r; rb < R / 2; rb += 2)
			for (int cb = 0; cb < 2; cb++) {
				uint64_t off[2] = { (uint64_t)rb * 2, cb ? 6u : 0u };
				uint64_t ext[2] = { 2, cb ? 4u : 6u };
				float local[2 * 6];
				img_t m = { (unsigned char *)file, (unsigned char *)local, 0 };
				loom_ck_block_runs(2, shape, off, ext, sizeof(float), img_cb, &m);
				for (uint64_t i = 0; i < ext[0]; i++)
					for (uint64_t j = 0; j < ext[1]; j++) {
						back[off[0] + i][off[1] + j] = local[i * ext[1] + j];
						good &= local[i * ext[1] + j] == global[off[0] + i][off[1] + j];
					}
			}
	ok(good && !memcmp(back, global, sizeof back),
	   "2-rank block-cyclic blocks read back exactly the tensor");
}

int main(void)
{
	plan(NO_PLAN);
	t_checksums();
	t_manifest();
	t_runs();
	t_domains();
	t_reshard();
	done_testing();
	return exit_status();
}
