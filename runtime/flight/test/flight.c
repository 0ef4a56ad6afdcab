/* unit test: the flight recorder's writer and reader on one record: a
 * ring of 4 that has wrapped, the posted and finished numbers, the ops'
 * fields and states, the reader's copy; and what one recorded operation
 * costs (post and end), printed as a diagnostic. */
#include "config.h"
#include "flight/flight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../../t/tap.h"

int main(void)
{
	char dir[] = "/tmp/loom-flight-test.XXXXXX", path[600], err[700] = "", cmd[700];
	struct loom_flight_rec r;
	struct loom_flight_slot *s;
	const struct loom_flight_slot *rs;
	const struct loom_flight_op *o;
	double t0, dt;
	uint64_t seq, i;
	int n = 1000000;
	if (!mkdtemp(dir))
		bail_out("mkdtemp failed");
	setenv("LOOM_FLIGHT_DIR", dir, 1);
	setenv("LOOM_FLIGHT_OPS", "3", 1);          /* rounded up to 4 */
	unsetenv("SLURM_STEP_ID");
	unsetenv("SLURM_JOB_ID");
	s = loom_flight_slot_new(0, 1, "world", 7, 0, 1, 0);
	ok(s != NULL, "a slot in a new record");
	is_str(loom_flight_dir(), dir, "recording into LOOM_FLIGHT_DIR");
	for (i = 1; i <= 6; i++) {
		seq = loom_flight_post(s, i == 6 ? 7 : 1, 10 * i, 4, 0, 0, (double)i);
		if (i < 6)
			loom_flight_end(s, seq, i == 5 ? -4 : 0, (double)i + 0.5);
	}
	loom_flight_p2p_post(s, 1, 3, 4, 0, 7.0);
	snprintf(path, sizeof path, "%s/step0-rank0.flight", dir);
	is_int(loom_flight_read(path, &r, err, sizeof err), 0, "the record reads back: %s", err);
	is_int((int)r.h.nops, 4, "LOOM_FLIGHT_OPS=3 is a ring of 4");
	is_int((int)r.h.nslots_used, 1, "one slot used");
	is_int(r.h.pid, (int)getpid(), "the pid");
	rs = r.slots;
	is_str(rs->name, "world", "the communicator's name");
	ok(rs->posted == 6 && rs->done == 5, "6 posted, 5 finished");
	o = loom_flight_ops(&r, rs);
	is_int((int)o[6 & 3].seq, 6, "#6 is in its ring slot");
	ok(o[6 & 3].kind == 7 && o[6 & 3].state == LOOM_FLIGHT_POSTED && o[6 & 3].count == 60,
	   "#6: a barrier, posted, count 60");
	ok(o[5 & 3].state == LOOM_FLIGHT_FAILED && o[5 & 3].status == -4 && o[5 & 3].t_end == 5.5,
	   "#5: failed with -4 at 5.5");
	ok(o[4 & 3].state == LOOM_FLIGHT_DONE && o[4 & 3].kind == 1, "#4: an allreduce, done");
	is_int((int)o[2 & 3].seq, 6, "#2 was overwritten by #6 (a ring of 4)");
	ok(rs->p2p_posted == 1 && rs->p2p_done == 0 && rs->p2p_last.kind == LOOM_FLIGHT_SEND,
	   "one send posted, not finished");
	loom_flight_rec_clear(&r);

	/* the cost of recording: post and end of one collective */
	t0 = loom_now();
	for (int k = 0; k < n; k++)
		loom_flight_end(s, loom_flight_post(s, 1, 2, 4, 0, 0, t0), 0, t0);
	dt = loom_now() - t0;
	diag("flight recorder: %.1f ns per recorded collective (post and end, %d of them)",
	     dt / n * 1e9, n);
	ok(dt / n < 1e-6, "recording costs less than a microsecond");
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd))
		diag("could not remove %s", dir);
	done_testing();
	return exit_status();
}
