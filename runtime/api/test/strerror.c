/* unit test: every status has its own text */
#include "config.h"
#include "loom.h"
#include "../../../t/tap.h"

int main(void)
{
	plan(NO_PLAN);
	is_str(loom_strerror(LOOM_SUCCESS), "success", "success text");
	like(loom_strerror(LOOM_ERR_TIMEOUT), "timed out", "timeout text");
	is_str(loom_strerror(12345), "unknown loom status", "unknown code has a text");
	for (int s = LOOM_ERR_INVALID; s >= LOOM_ERR_REVOKED; s--)
		ok(strcmp(loom_strerror(s), "unknown loom status") != 0, "status %d has a text", s);
	is_str(loom_version(), PACKAGE_VERSION, "version matches the package");
	done_testing();
	return exit_status();
}
