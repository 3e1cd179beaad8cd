/* signals — the stop signals held from the top of main until the daemon's
 * handlers exist (cli.h). */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

#include "cmd/cli.h"

static sigset_t start_mask;
static bool stop_signals_held;

void ga_release_stop_signals(void)
{
	if (!stop_signals_held)
		return;
	stop_signals_held = false;
	pthread_sigmask(SIG_SETMASK, &start_mask, NULL);
}

void ga_hold_stop_signals(void)
{
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGHUP);
	if (pthread_sigmask(SIG_BLOCK, &stop, &start_mask) == 0)
		stop_signals_held = true;
}
