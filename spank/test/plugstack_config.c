/* unit test: plugstack.conf argument parsing */
#include "config.h"
#include <stdarg.h>
#include "../plugstack_config.h"
#include "../../t/tap.h"

static int parse(struct loom_config *cfg, char *err, size_t n, int argc, ...)
{
	char *argv[16];
	va_list ap;
	va_start(ap, argc);
	for (int i = 0; i < argc; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	return loom_config_parse(cfg, argc, argv, err, n);
}

int main(void)
{
	struct loom_config cfg;
	char err[256] = "";

	plan(NO_PLAN);
	is_int(parse(&cfg, err, sizeof err, 0), 0, "no arguments is fine");
	is_int(cfg.env_mode, LOOM_ENV_TORCH, "default env mode is torch");

	is_int(parse(&cfg, err, sizeof err, 1, "env=mpi"), 0, "env=mpi accepted");
	is_int(cfg.env_mode, LOOM_ENV_MPI, "env=mpi sets the default");

	is_int(parse(&cfg, err, sizeof err, 1, "env=slurm"), -1, "env=slurm rejected");
	like(err, "env='slurm' is not one of torch, mpi, none", "message names value and choices");

	is_int(parse(&cfg, err, sizeof err, 1, "bogus=1"), -1, "unknown key rejected");
	like(err, "unknown plugstack argument 'bogus'", "message names the argument");

	is_int(parse(&cfg, err, sizeof err, 1, "env"), -1, "argument without = rejected");
	like(err, "'env' is not key=value", "message says key=value");
	done_testing();
	return exit_status();
}
