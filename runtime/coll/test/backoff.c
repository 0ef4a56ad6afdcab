/* unit test: how a waiter spends its time (util/sync.c loom_backoff_step)
 * and how a communicator's waits choose between yielding and sleeping
 * (coll/xfer.c loom_x_yield_window). Times are lower bounds the code
 * guarantees (it cannot say "sleep" before the window has passed), never
 * speeds. */
#include "config.h"
#include "coll/coll.h"
#include "../../../t/tap.h"

#include <stdlib.h>

/* steps until loom_backoff_step says "sleep now"; the time that took */
static double until_sleep(struct loom_backoff *b)
{
	double t0 = loom_now();
	while (!loom_backoff_step(b))
		;
	return loom_now() - t0;
}

int main(void)
{
	struct loom_backoff b;
	struct loom_comm *c = calloc(1, sizeof *c);
	double t;
	int i;
	plan(NO_PLAN);

	loom_backoff_init(&b, LOOM_YIELD_S);
	t = until_sleep(&b);
	ok(t >= LOOM_YIELD_S, "the full window: sleep only after LOOM_YIELD_S (%.0f us)", t * 1e6);
	ok(b.n > LOOM_YIELD_FROM, "and after yielding at least once");

	loom_backoff_init(&b, 0);
	t = until_sleep(&b);
	ok(t >= LOOM_SPIN_S, "no yield window: still the spin first (%.0f us)", t * 1e6);
	is_int((long)(b.n - LOOM_YIELD_FROM), 0, "then sleep at once, without a single yield");

	loom_backoff_reset(&b);
	ok(b.yield_s == 0, "a reset after progress keeps the window");

	ok(c != NULL, "a communicator to keep the record");
	if (!c) {
		done_testing();
		return exit_status();
	}
	ok(loom_x_yield_window(c) == LOOM_YIELD_S, "a new communicator yields for LOOM_YIELD_S");
	for (i = 0; i < LOOM_SLEEPY_RUN - 1; i++)
		loom_x_wait_ended(c, 1);
	ok(loom_x_yield_window(c) == LOOM_YIELD_S, "%d waits that slept in a row: still yields", LOOM_SLEEPY_RUN - 1);
	loom_x_wait_ended(c, 1);
	ok(loom_x_yield_window(c) == 0, "%d in a row: sleeps after the spin", LOOM_SLEEPY_RUN);
	for (i = 0; i < 100; i++)
		loom_x_wait_ended(c, 1);
	ok(loom_x_yield_window(c) == 0, "and stays so while every wait sleeps");
	loom_x_wait_ended(c, 0);
	ok(loom_x_yield_window(c) == LOOM_YIELD_S, "one wait that ended awake: the full window again");
	loom_x_wait_ended(c, 1);
	ok(loom_x_yield_window(c) == LOOM_YIELD_S, "a single sleep after it does not shorten it");
	if (c->coll)  /* the record, made at the first wait */
		c->coll_free(c->coll);
	free(c);
	done_testing();
	return exit_status();
}
