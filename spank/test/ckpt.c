/* unit test: --loom-ckpt is created and checked as the job's user */
#include "config.h"
#include <pwd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../ckpt_dir.h"
#include "../../t/tap.h"

int main(void)
{
	char base[] = "/tmp/loom-ckpt-test.XXXXXX", p[512], err[1200];
	struct stat st;
	plan(NO_PLAN);
	if (!mkdtemp(base))
		bail_out("mkdtemp failed");
	snprintf(p, sizeof p, "%s/a/b/c", base);
	is_int(loom_ckpt_prepare(p, 0, err, sizeof err), 0, "missing dir accepted without create");
	ok(stat(p, &st) < 0, "and not created");
	is_int(loom_ckpt_prepare(p, 1, err, sizeof err), 0, "missing dir created");
	ok(stat(p, &st) == 0 && S_ISDIR(st.st_mode), "it is a directory");
	is_int(loom_ckpt_prepare(p, 1, err, sizeof err), 0, "existing dir fine");
	snprintf(p, sizeof p, "%s/file", base);
	FILE *f = fopen(p, "w");
	if (f)
		fclose(f);
	is_int(loom_ckpt_prepare(p, 1, err, sizeof err), -1, "a file is not a directory");
	like(err, "is not a directory", "message says so");
	is_int(loom_ckpt_prepare("rel", 1, err, sizeof err), -1, "relative rejected");

	struct passwd *pw = getpwnam("nobody");
	if (geteuid() != 0 || !pw) {
		skip(4, "needs root and user nobody");
	} else {
		/* as nobody, like slurmstepd's user_init: root's 0755 dir is not
		 * writable, and nothing may be created under it */
		chmod(base, 0755);
		int fd[2];
		if (pipe(fd) < 0)
			return 1;
		pid_t pid = fork();
		if (pid == 0) {
			int r1, r2;
			char e1[1200] = "", e2[1200] = "";
			close(fd[0]);
			if (setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0)
				_exit(3);
			r1 = loom_ckpt_prepare(base, 1, e1, sizeof e1);
			snprintf(p, sizeof p, "%s/new", base);
			r2 = loom_ckpt_prepare(p, 1, e2, sizeof e2);
			dprintf(fd[1], "%d %d\n%s\n%s\n", r1, r2, e1, e2);
			_exit(0);
		}
		close(fd[1]);
		char out[4096] = "";
		ssize_t n = read(fd[0], out, sizeof out - 1);
		out[n > 0 ? n : 0] = '\0';
		waitpid(pid, NULL, 0);
		ok(strncmp(out, "-1 -1", 5) == 0, "nobody cannot use root's directory (%.5s)", out);
		like(out, "not writable by the job's user", "message for an existing dir");
		like(out, "cannot create", "message for a missing one");
		snprintf(p, sizeof p, "%s/new", base);
		ok(stat(p, &st) < 0, "nothing was created for nobody");
	}
	snprintf(p, sizeof p, "rm -rf '%s'", base);
	if (system(p) != 0)
		diag("cleanup failed");
	{
		char out[64];
		is_int(loom_ckpt_expand("/s/ckpt/%j", 4242, 0, "--loom-ckpt", out, sizeof out, err,
					sizeof err), 0, "%%j expands");
		is_str(out, "/s/ckpt/4242", "to the job id (a requeued job keeps it: same directory)");
		is_int(loom_ckpt_expand("/s/100%%/%j-%j", 7, 0, "--loom-ckpt", out, sizeof out, err,
					sizeof err), 0, "%%%% and two %%j");
		is_str(out, "/s/100%/7-7", "expanded in place");
		is_int(loom_ckpt_expand("/s/%u", 7, 0, "--loom-ckpt", out, sizeof out, err, sizeof err),
		       -1, "%%u is refused");
		is_str(err, "--loom-ckpt=/s/%u: '%u' is not understood: only %j (the job id) and %% are "
		       "expanded (write %% for a literal %)", "naming the option and the sequence");
		is_int(loom_ckpt_expand("/s/%n", 7, 0, "--loom-ckpt", out, sizeof out, err, sizeof err),
		       -1, "%%n is refused in the shared directory");
		like(err, "'%n' is not understood: only %j (the job id)", "saying what is expanded");
		is_int(loom_ckpt_expand("/s/%", 7, 0, "--loom-ckpt", out, sizeof out, err, sizeof err),
		       -1, "a trailing %% is refused");
		is_int(loom_ckpt_expand("/a/very/long/path/that/does/not/fit/%j", 123456789, 0,
					"--loom-ckpt", out, 40, err, sizeof err), -1,
		       "too long once expanded is refused");
		like(err, "longer than 39 characters once expanded: give a shorter path", "saying so");

		/* --loom-ckpt-cache: %j here; %n, and %% with it, for libloom,
		 * which expands the value again on each node */
		is_int(loom_ckpt_expand("/tmp/x-%n-%j", 4242, LOOM_EXPAND_KEEP_NODE, "--loom-ckpt-cache",
					out, sizeof out, err, sizeof err), 0, "cache: %%n and %%j");
		is_str(out, "/tmp/x-%n-4242", "%%j is the job id, %%n stays for libloom");
		is_int(loom_ckpt_expand("/t/100%%n/%n%n", 1, LOOM_EXPAND_KEEP_NODE, "--loom-ckpt-cache",
					out, sizeof out, err, sizeof err), 0, "cache: %%%% and %%n twice");
		is_str(out, "/t/100%%n/%n%n", "%%%% stays %%%%: a %% here would make libloom read %%n");
		is_int(loom_ckpt_expand("/t/%u-%n", 1, LOOM_EXPAND_KEEP_NODE, "--loom-ckpt-cache", out,
					sizeof out, err, sizeof err), -1, "cache: %%u is refused");
		is_str(err, "--loom-ckpt-cache=/t/%u-%n: '%u' is not understood: only %n (the node name), "
		       "%j (the job id) and %% are expanded (write %% for a literal %)",
		       "naming the option and what is expanded");
		is_int(loom_ckpt_expand("/t/x%", 1, LOOM_EXPAND_KEEP_NODE, "--loom-ckpt-cache", out,
					sizeof out, err, sizeof err), -1, "cache: a trailing %% is refused");
		like(err, "--loom-ckpt-cache=/t/x%: '%' is not understood", "naming it");
		is_int(loom_ckpt_expand("/t/%n/%j", 123456789, LOOM_EXPAND_KEEP_NODE, "--loom-ckpt-cache",
					out, 13, err, sizeof err), -1, "cache: too long once expanded");
		is_str(err, "--loom-ckpt-cache=/t/%n/%j: longer than 12 characters once expanded: "
		       "give a shorter path", "saying so");
		is_int(loom_ckpt_expand("/t/%n/%j", 12345, LOOM_EXPAND_KEEP_NODE, "--loom-ckpt-cache",
					out, 13, err, sizeof err), 0, "a shorter job id fits");
		is_str(out, "/t/%n/12345", "all of it");
	}
	done_testing();
	return exit_status();
}
