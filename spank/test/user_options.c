/* unit test: the step's option state and its two sources, the --loom-*
 * callbacks and SLURM_SPANK_LOOM_*: what is set, what is marked as given
 * by the user, and the exact refusal for a locked option or a bad value.
 * Slurm's slurm_error and spank_option_register are stubs here. */
#include "config.h"
#include <signal.h>
#include <stdarg.h>
#include "../user_options.h"
#include "../../t/tap.h"

#define BIT(id) (1u << (id))

/* stubs of what srun / slurmstepd give loom.so */
static char logged[2048];
static int nlogged;
void slurm_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(logged, sizeof logged, fmt, ap);
	va_end(ap);
	nlogged++;
}

static struct spank_option *reg[16];
static int nreg;
spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	if (nreg < 16)
		reg[nreg++] = opt;
	return ESPANK_SUCCESS;
}

/* the user's --NAME=VALUE, through the registered callback */
static int opt(const char *name, const char *value)
{
	for (int i = 0; i < nreg; i++)
		if (strcmp(reg[i]->name, name) == 0)
			return reg[i]->cb(reg[i]->val, value, 0);
	diag("--%s not registered", name);
	return -2;
}

/* an environment of NAME=VALUE strings, NULL-terminated */
static int get_env(void *ctx, const char *name, char *buf, int len)
{
	size_t n = strlen(name);
	for (const char **e = ctx; *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') {
			snprintf(buf, (size_t)len, "%s", *e + n + 1);
			return 1;
		}
	return 0;
}

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int init(const char *a, const char *b)
{
	char *argv[2] = { (char *)a, (char *)b };
	nreg = 0;
	nlogged = 0;
	logged[0] = '\0';
	return loom_user_options_init(NULL, a ? (b ? 2 : 1) : 0, argv);
}

int main(void)
{
	plan(NO_PLAN);

	/* start: site defaults, nothing given, the seven options registered */
	is_int(init("affinity=closest", NULL), 0, "plugstack arguments accepted");
	ok(loom_active, "active once initialised");
	is_int(nreg, 7, "seven --loom-* options registered");
	is_int(loom_eff.affinity.mode, LOOM_AFF_CLOSEST, "effective affinity starts at the site default");
	is_int((int)loom_user_set, 0, "no option given by the user yet");

	/* the command line */
	is_int(opt("loom-env", "mpi"), 0, "--loom-env=mpi accepted");
	is_int(loom_eff.env, LOOM_ENV_MPI, "env is mpi");
	is_int((int)loom_user_set, (int)BIT(LOOM_OPT_ENV), "the env bit, and only it, is set");
	is_int(opt("loom-gpus-per-task", "x"), -1, "--loom-gpus-per-task=x refused");
	is_str(logged, "loom: --loom-gpus-per-task='x' is not a whole number from 1 to 64",
	       "the refusal names the option and the value");
	ok(!(loom_user_set & BIT(LOOM_OPT_GPUS_PER_TASK)), "a refused option is not marked as given");

	/* the environment fills only the options not given */
	const char *env1[] = { "SLURM_SPANK_LOOM_ENV=none", "SLURM_SPANK_LOOM_GPUS_PER_TASK=2",
			       "SLURM_SPANK_LOOM_CKPT=/tmp/ck", "SLURM_SPANK_LOOM_CKPT_SIGNAL=USR1@90",
			       "LOOM_AFFINITY=none", NULL };
	nlogged = 0;
	is_int(loom_env_options(get_env, env1), 0, "environment fallback accepted");
	is_int(nlogged, 0, "nothing logged");
	is_int(loom_eff.env, LOOM_ENV_MPI, "SLURM_SPANK_LOOM_ENV does not override --loom-env");
	is_int(loom_eff.gpus_per_task, 2, "SLURM_SPANK_LOOM_GPUS_PER_TASK=2 sets gpus per task");
	is_str(loom_eff.ckpt_dir, "/tmp/ck", "SLURM_SPANK_LOOM_CKPT sets the directory");
	ok(loom_eff.ckpt_signal == SIGUSR1 && loom_eff.ckpt_signal_seconds == 90,
	   "SLURM_SPANK_LOOM_CKPT_SIGNAL=USR1@90 sets signal and seconds");
	is_int(loom_eff.affinity.mode, LOOM_AFF_CLOSEST, "a variable without the SLURM_SPANK_ prefix is ignored");
	is_int((int)loom_user_set,
	       (int)(BIT(LOOM_OPT_ENV) | BIT(LOOM_OPT_GPUS_PER_TASK) | BIT(LOOM_OPT_CKPT) | BIT(LOOM_OPT_CKPT_SIGNAL)),
	       "user_set: the command line's bit and one per variable used");
	is_int(opt("loom-ckpt-cache", "/tmp/x-%n-%j"), 0, "--loom-ckpt-cache=/tmp/x-%%n-%%j accepted");
	is_str(loom_eff.ckpt_cache, "/tmp/x-%n-%j", "kept as given");
	ok(loom_user_set & BIT(LOOM_OPT_CKPT_CACHE), "and marked as given");
	is_int(opt("loom-ckpt-cache", "tmp"), -1, "--loom-ckpt-cache=tmp refused");
	is_str(logged, "loom: --loom-ckpt-cache='tmp' is not an absolute path: give /path/to/dir "
	       "(e.g. --loom-ckpt-cache=/tmp/ckpt-%j)", "the refusal names the option and what to give");
	const char *env2[] = { "SLURM_SPANK_LOOM_GPUS_PER_TASK=9", NULL };
	is_int(loom_env_options(get_env, env2), 0, "a second pass");
	is_int(loom_eff.gpus_per_task, 2, "an option set from the environment is not set again");

	is_int(init(NULL, NULL), 0, "again from the defaults");
	const char *env_cache[] = { "SLURM_SPANK_LOOM_CKPT_CACHE=/local/%n", NULL };
	is_int(loom_env_options(get_env, env_cache), 0, "SLURM_SPANK_LOOM_CKPT_CACHE accepted");
	is_str(loom_eff.ckpt_cache, "/local/%n", "it sets the cache");
	is_int((int)loom_user_set, (int)BIT(LOOM_OPT_CKPT_CACHE), "as given by the user");

	/* a bad value from the environment is refused naming the variable */
	is_int(init(NULL, NULL), 0, "no plugstack arguments");
	is_int((int)loom_user_set, 0, "init forgets what the user gave");
	is_int(loom_eff.affinity.mode, LOOM_AFF_NONE, "and starts again from the defaults");
	const char *env3[] = { "SLURM_SPANK_LOOM_AFFINITY=bogus", NULL };
	is_int(loom_env_options(get_env, env3), -1, "SLURM_SPANK_LOOM_AFFINITY=bogus refused");
	is_int(nlogged, 1, "one line logged");
	ok(starts(logged, "loom: SLURM_SPANK_LOOM_AFFINITY='bogus': 'bogus' is not one of closest, none,"),
	   "it names the variable and the value");
	diag("%s", logged);
	is_int((int)loom_user_set, 0, "nothing marked as given");

	/* a locked option: refused from either source, with the exact message */
	is_int(init("lock=affinity,ckpt", "affinity=closest"), 0, "site locks affinity and ckpt");
	is_int(opt("loom-affinity", "none"), -1, "--loom-affinity=none refused");
	is_str(logged, "loom: --loom-affinity is locked by the site (plugstack.conf lock=affinity): remove it",
	       "the command line refusal");
	is_int(loom_eff.affinity.mode, LOOM_AFF_CLOSEST, "the site's value stays");
	is_int(opt("loom-env", "none"), 0, "an option that is not locked is still accepted");
	const char *env4[] = { "SLURM_SPANK_LOOM_CKPT=/tmp/ck", NULL };
	is_int(loom_env_options(get_env, env4), -1, "SLURM_SPANK_LOOM_CKPT refused");
	is_str(logged, "loom: SLURM_SPANK_LOOM_CKPT: --loom-ckpt is locked by the site "
	       "(plugstack.conf lock=ckpt): unset SLURM_SPANK_LOOM_CKPT", "the environment refusal");
	is_str(loom_eff.ckpt_dir, "", "no directory set");
	is_int((int)loom_user_set, (int)BIT(LOOM_OPT_ENV), "user_set: only the accepted option");
	const char *env5[] = { "SLURM_SPANK_LOOM_ENV=torch", NULL };
	nlogged = 0;
	is_int(loom_env_options(get_env, env5), 0, "locked options whose variables are unset: no refusal");
	is_int(nlogged, 0, "nothing logged");
	is_int(loom_eff.env, LOOM_ENV_NONE, "and --loom-env=none stays");

	/* the site's cache, locked: the user can neither change nor drop it */
	is_int(init("lock=ckpt_cache", "ckpt_cache=/local/ck-%j"), 0, "site locks ckpt_cache");
	is_int(opt("loom-ckpt-cache", "/tmp/mine"), -1, "--loom-ckpt-cache refused");
	is_str(logged, "loom: --loom-ckpt-cache is locked by the site (plugstack.conf lock=ckpt_cache): "
	       "remove it", "the command line refusal");
	const char *env6[] = { "SLURM_SPANK_LOOM_CKPT_CACHE=/tmp/mine", NULL };
	is_int(loom_env_options(get_env, env6), -1, "SLURM_SPANK_LOOM_CKPT_CACHE refused");
	is_str(logged, "loom: SLURM_SPANK_LOOM_CKPT_CACHE: --loom-ckpt-cache is locked by the site "
	       "(plugstack.conf lock=ckpt_cache): unset SLURM_SPANK_LOOM_CKPT_CACHE",
	       "the environment refusal");
	is_str(loom_eff.ckpt_cache, "/local/ck-%j", "the site's cache stays");
	is_int(opt("loom-ckpt", "/tmp/ck"), 0, "--loom-ckpt is still the user's");

	/* a bad plugstack argument: not active, nothing registered */
	loom_active = 0;
	is_int(init("bogus=1", NULL), -1, "a bad plugstack argument fails init");
	ok(!loom_active && nreg == 0, "not active, no option registered");
	ok(starts(logged, "loom: unknown plugstack argument 'bogus' (known: "), "and the reason is logged");
	diag("%s", logged);
	done_testing();
	return exit_status();
}
