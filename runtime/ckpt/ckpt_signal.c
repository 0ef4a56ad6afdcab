/* runtime/ckpt/ckpt_signal.c: the stop signals of checkpoint handles (SIGTERM
 * and LOOM_CKPT_SIGNAL): caught while a handle is open, chained to the
 * program's own handler, read by loom_ckpt_should_stop. */
#include "config.h"
#include "util/util.h"
#include "ckpt/ckpt_internal.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t ck_flag;   /* the stop signal's number, 0: none */
static pthread_mutex_t ck_sig_lock = PTHREAD_MUTEX_INITIALIZER;
static int ck_sig_refs;
static int ck_sigs[2], ck_nsigs;
static struct sigaction ck_old[2];
/* LOOM_CKPT_SIGNAL left ignored by the last close (see loom_ck_signals_remove);
 * a later open treats that as the default disposition it replaced */
static int ck_parked_sig;

static void ck_handler(int sig, siginfo_t *si, void *uc)
{
	ck_flag = sig;
	for (int i = 0; i < ck_nsigs; i++) {
		if (ck_sigs[i] != sig)
			continue;
		if (ck_old[i].sa_flags & SA_SIGINFO) {
			if (ck_old[i].sa_sigaction)
				ck_old[i].sa_sigaction(sig, si, uc);
		} else if (ck_old[i].sa_handler != SIG_DFL && ck_old[i].sa_handler != SIG_IGN) {
			ck_old[i].sa_handler(sig);
		}
	}
}

static int ck_parse_signal(const char *s)
{
	static const struct { const char *n; int v; } tab[] = {
		{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "USR1", SIGUSR1 },
		{ "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "ALRM", SIGALRM }, { "CONT", SIGCONT },
		{ "URG", SIGURG }, { "XCPU", SIGXCPU }, { "PWR", SIGPWR },
	};
	char buf[32];
	size_t n = strcspn(s, "@");
	if (n == 0 || n >= sizeof buf)
		return -1;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (buf[0] >= '0' && buf[0] <= '9') {
		char *e;
		long v = strtol(buf, &e, 10);
		return (*e || v <= 0 || v >= NSIG || v == SIGKILL || v == SIGSTOP) ? -1 : (int)v;
	}
	const char *p = strncmp(buf, "SIG", 3) ? buf : buf + 3;
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
		if (!strcmp(p, tab[i].n))
			return tab[i].v;
	return -1;
}

const char *loom_ck_sig_name(int sig)
{
	static char buf[16];
	const char *n = sigabbrev_np(sig);
	if (n)
		return n;
	snprintf(buf, sizeof buf, "%d", sig);
	return buf;
}

void loom_ck_signals_install(void)
{
	const char *e = getenv("LOOM_CKPT_SIGNAL");
	pthread_mutex_lock(&ck_sig_lock);
	if (ck_sig_refs++ == 0) {
		int want[2], nw = 0;
		ck_flag = 0;    /* a stop of an earlier, closed handle is over */
		want[nw++] = SIGTERM;
		if (e && *e) {
			int s = ck_parse_signal(e);
			if (s < 0)
				LOOM_WARN("ckpt: LOOM_CKPT_SIGNAL=%s is not a signal name or number; "
					  "only SIGTERM is caught", e);
			else if (s != SIGTERM)
				want[nw++] = s;
		}
		ck_nsigs = 0;
		for (int i = 0; i < nw; i++) {
			struct sigaction old;
			if (sigaction(want[i], NULL, &old) != 0)
				continue;
			if (want[i] == ck_parked_sig && !(old.sa_flags & SA_SIGINFO) &&
			    old.sa_handler == SIG_IGN)
				old.sa_handler = SIG_DFL;  /* parked by us, not the program's */
			else if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN)
				continue; /* the program ignores it: leave it so */
			ck_sigs[ck_nsigs] = want[i];
			ck_old[ck_nsigs] = old;
			ck_nsigs++;
		}
		for (int i = 0; i < ck_nsigs; i++) {
			struct sigaction sa;
			memset(&sa, 0, sizeof sa);
			sa.sa_sigaction = ck_handler;
			sa.sa_flags = SA_SIGINFO | SA_RESTART;
			sigemptyset(&sa.sa_mask);
			sigaction(ck_sigs[i], &sa, NULL);
		}
	}
	pthread_mutex_unlock(&ck_sig_lock);
}

void loom_ck_signals_remove(void)
{
	pthread_mutex_lock(&ck_sig_lock);
	if (--ck_sig_refs == 0) {
		for (int i = 0; i < ck_nsigs; i++) {
			struct sigaction cur;
			/* put the old one back unless someone replaced ours meanwhile */
			if (sigaction(ck_sigs[i], NULL, &cur) != 0 || !(cur.sa_flags & SA_SIGINFO) ||
			    cur.sa_sigaction != ck_handler)
				continue;
			/* loom.so's timer signal (LOOM_CKPT_SIGNAL) means "checkpoint
			 * and stop", never "die": when it arrives after the last
			 * handle closed, the program is finishing a run whose last
			 * checkpoint is written, and its default action (USR1, USR2:
			 * terminate) would turn that run into a failed one. So the
			 * default is parked as ignored; SIGTERM gets its own back. */
			if (ck_sigs[i] != SIGTERM && !(ck_old[i].sa_flags & SA_SIGINFO) &&
			    ck_old[i].sa_handler == SIG_DFL) {
				struct sigaction ign = ck_old[i];
				ign.sa_handler = SIG_IGN;
				sigaction(ck_sigs[i], &ign, NULL);
				ck_parked_sig = ck_sigs[i];
			} else {
				sigaction(ck_sigs[i], &ck_old[i], NULL);
			}
		}
		ck_nsigs = 0;
	}
	pthread_mutex_unlock(&ck_sig_lock);
}

int loom_ck_signal_seen(void)
{
	return ck_flag;
}
