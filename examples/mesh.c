/* examples/mesh.c: data x tensor x pipeline parallel groups from loom_mesh.
 *
 * For each shape dp x tp x pp (default on 4 ranks: 2x2x1 and 1x2x2) every
 * rank builds the mesh, then checks against the layout formula of loom.h,
 *     rank = (pp_index * dp + dp_index) * tp + tp_index,
 * its coordinates, the size of each of its groups and its rank in them,
 * the world ranks of every member of each group, in order (allgather over
 * the group), and an allreduce over each group. Rank 0 prints each
 * distinct group once.
 *
 *   srun --mpi=pmix -N2 -n4 loom-mesh
 *   srun --mpi=pmix -N2 -n4 loom-mesh --shape 4x1x1 --shape 1x1x4
 */
#include "common.h"

#include <getopt.h>

#define MAX_SHAPES 16

struct shape {
	int dp, tp, pp;
};

static void usage(void)
{
	printf("Usage: %s [--shape DPxTPxPP]... [--help]\n"
	       "Build loom_mesh(world, dp, tp, pp) for each shape, print every data-,\n"
	       "tensor- and pipeline-parallel group and check its members against\n"
	       "rank = (pp_index * dp + dp_index) * tp + tp_index.\n\n"
	       "  --shape DPxTPxPP  a shape to check, dp * tp * pp = number of ranks;\n"
	       "                    repeatable. Default with 4 ranks: 2x2x1 and 1x2x2;\n"
	       "                    otherwise Nx1x1, 1xNx1 and 1x1xN\n"
	       "  --help            this text\n\n"
	       "Prints PASS and exits 0 when every group matches, FAIL and exits 1 otherwise.\n"
	       "Example: srun --mpi=pmix -N2 -n4 %s\n",
	       ex_prog, ex_prog);
}

static int layout_rank(const struct shape *s, int pp_i, int dp_i, int tp_i)
{
	return (pp_i * s->dp + dp_i) * s->tp + tp_i;
}

static struct shape parse_shape(const char *arg)
{
	struct shape s;
	char tail;
	if (sscanf(arg, "%dx%dx%d%c", &s.dp, &s.tp, &s.pp, &tail) != 3 || s.dp < 1 || s.tp < 1 ||
	    s.pp < 1)
		ex_usage_error("--shape: expected DPxTPxPP with positive sizes, e.g. 2x2x1, got '%s'",
			       arg);
	return s;
}

static const char *gname[3] = { "dp", "tp", "pp" };

/* expected world ranks of this rank's group g, in group rank order */
static void expected_members(const struct shape *s, int g, int dp_i, int tp_i, int pp_i, int *out)
{
	int n = g == 0 ? s->dp : g == 1 ? s->tp : s->pp;
	for (int k = 0; k < n; k++)
		out[k] = g == 0 ? layout_rank(s, pp_i, k, tp_i)
		       : g == 1 ? layout_rank(s, pp_i, dp_i, k)
				: layout_rank(s, k, dp_i, tp_i);
}

static int check_shape(const struct shape *s)
{
	loom_mesh_t m;
	int rank = loom_comm_rank(ex_world), size = loom_comm_size(ex_world);
	int tp_i = rank % s->tp, dp_i = (rank / s->tp) % s->dp, pp_i = rank / (s->tp * s->dp);
	int gsize[3] = { s->dp, s->tp, s->pp }, gidx[3] = { dp_i, tp_i, pp_i };
	int rec_len = s->dp + s->tp + s->pp, pass = 1;
	int *rec = ex_alloc((size_t)rec_len, sizeof(int));
	int *all = ex_alloc((size_t)rec_len * size, sizeof(int));
	int *want = ex_alloc((size_t)size, sizeof(int));
	char errs[512] = "";
	size_t el = 0;

	ex_check(loom_mesh(ex_world, s->dp, s->tp, s->pp, &m), "loom_mesh");
	if (layout_rank(s, pp_i, dp_i, tp_i) != rank)
		pass = 0;  /* the decomposition itself; cannot happen */
	if (m.dp_index != dp_i || m.tp_index != tp_i || m.pp_index != pp_i) {
		el += (size_t)snprintf(errs + el, sizeof errs - el,
				       " coordinates (dp %d, tp %d, pp %d) != formula (%d, %d, %d);",
				       m.dp_index, m.tp_index, m.pp_index, dp_i, tp_i, pp_i);
		pass = 0;
	}
	if (m.dp_size != s->dp || m.tp_size != s->tp || m.pp_size != s->pp) {
		el += (size_t)snprintf(errs + el, sizeof errs - el, " sizes in loom_mesh_t wrong;");
		pass = 0;
	}
	{
		loom_comm_t *gc[3] = { m.dp, m.tp, m.pp };
		int off = 0;
		for (int g = 0; g < 3; g++) {
			long long me = rank, sum = 0, wsum = 0;
			if (loom_comm_size(gc[g]) != gsize[g] || loom_comm_rank(gc[g]) != gidx[g]) {
				if (el < sizeof errs)
					el += (size_t)snprintf(errs + el, sizeof errs - el,
						" %s group: size %d rank %d, formula says %d and %d;",
						gname[g], loom_comm_size(gc[g]), loom_comm_rank(gc[g]),
						gsize[g], gidx[g]);
				pass = 0;
				for (int k = 0; k < gsize[g]; k++)
					rec[off + k] = -1;
				off += gsize[g];
				continue;
			}
			ex_check(loom_allgather(&rank, rec + off, 1, LOOM_INT32, gc[g]), "loom_allgather");
			expected_members(s, g, dp_i, tp_i, pp_i, want);
			for (int k = 0; k < gsize[g]; k++) {
				wsum += want[k];
				if (rec[off + k] != want[k]) {
					if (el < sizeof errs)
						el += (size_t)snprintf(errs + el, sizeof errs - el,
							" %s group member %d is world rank %d, formula says %d;",
							gname[g], k, rec[off + k], want[k]);
					pass = 0;
				}
			}
			ex_check(loom_allreduce(&me, &sum, 1, LOOM_INT64, LOOM_SUM, gc[g]), "loom_allreduce");
			if (sum != wsum) {
				if (el < sizeof errs)
					el += (size_t)snprintf(errs + el, sizeof errs - el,
						" allreduce over the %s group gave %lld, not %lld;",
						gname[g], sum, wsum);
				pass = 0;
			}
			off += gsize[g];
		}
	}
	if (!pass)
		fprintf(stderr, "%s: rank %d, shape %dx%dx%d:%s\n", ex_prog, rank, s->dp, s->tp, s->pp,
			errs);

	/* rank 0 prints every distinct group once, from what each rank saw */
	ex_check(loom_allgather(rec, all, (size_t)rec_len, LOOM_INT32, ex_world), "loom_allgather");
	if (rank == 0) {
		int off = 0;
		printf("%s: dp x tp x pp = %dx%dx%d\n", ex_prog, s->dp, s->tp, s->pp);
		for (int g = 0; g < 3; g++) {
			char line[4096];
			size_t l = 0;
			l += (size_t)snprintf(line + l, sizeof line - l, "%s groups:", gname[g]);
			for (int r = 0; r < size; r++) {
				const int *mem = all + (size_t)r * rec_len + off;
				if (mem[0] != r && !(mem[0] == -1 && r == 0))
					continue;  /* printed by its first member */
				for (int k = 0; k < gsize[g] && l < sizeof line; k++)
					l += (size_t)snprintf(line + l, sizeof line - l, "%s%d",
							      k ? "," : " {", mem[k]);
				if (l < sizeof line)
					l += (size_t)snprintf(line + l, sizeof line - l, "}");
			}
			printf("%s:   %s\n", ex_prog, line);
			off += gsize[g];
		}
		fflush(stdout);
	}
	ex_check(loom_mesh_free(&m), "loom_mesh_free");
	free(rec);
	free(all);
	free(want);
	pass = ex_all_pass(pass);
	ex_say("%s: %dx%dx%d: every rank's coordinates, group sizes, group ranks and "
	       "members match rank = (pp_index*dp + dp_index)*tp + tp_index",
	       pass ? "PASS" : "FAIL", s->dp, s->tp, s->pp);
	return pass;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "shape", required_argument, 0, 's' },
					    { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
	struct shape shapes[MAX_SHAPES];
	int nshapes = 0, o, size, pass = 1;

	ex_prog = "loom-mesh";
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 's':
			if (nshapes == MAX_SHAPES)
				ex_usage_error("at most %d --shape options", MAX_SHAPES);
			shapes[nshapes++] = parse_shape(optarg);
			break;
		case 'h': if (ex_first_task()) usage(); exit(0);
		default: ex_getopt_error(lo, argv);
		}
	}
	if (optind < argc)
		ex_usage_error("unexpected argument '%s'", argv[optind]);

	ex_init(ex_prog);
	size = loom_comm_size(ex_world);
	for (int i = 0; i < nshapes; i++)
		if ((long long)shapes[i].dp * shapes[i].tp * shapes[i].pp != size) {
			if (loom_comm_rank(ex_world) == 0)
				fprintf(stderr, "%s: --shape %dx%dx%d needs %lld ranks, the world has %d\n",
					ex_prog, shapes[i].dp, shapes[i].tp, shapes[i].pp,
					(long long)shapes[i].dp * shapes[i].tp * shapes[i].pp, size);
			loom_finalize(ex_world);
			return 2;
		}
	if (nshapes == 0) {
		if (size == 4) {
			shapes[nshapes++] = (struct shape){ 2, 2, 1 };
			shapes[nshapes++] = (struct shape){ 1, 2, 2 };
		} else {
			shapes[nshapes++] = (struct shape){ size, 1, 1 };
			if (size > 1) {
				shapes[nshapes++] = (struct shape){ 1, size, 1 };
				shapes[nshapes++] = (struct shape){ 1, 1, size };
			}
		}
	}
	ex_say("%d ranks, %d shapes", size, nshapes);
	for (int i = 0; i < nshapes; i++)
		pass &= check_shape(&shapes[i]);
	ex_say("%s: %d of %d shapes checked", pass ? "PASS" : "FAIL", nshapes, nshapes);
	loom_finalize(ex_world);
	return pass ? 0 : 1;
}
