/*
 * tests/programs/signal_outside.c - signals to processes outside the
 * program (TLPI's t_sigqueue, sig_sender):
 *   signal_outside QUEUE_PID KILL_PID
 * sigqueue(QUEUE_PID, SIGUSR1, 7), then kill(KILL_PID, SIGTERM), each
 * result printed. By replay the first may still be there and the second
 * is gone.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void said(const char *what, int r)
{
	printf("%s: %s\n", what, r == 0 ? "ok" : strerror(errno));
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: signal_outside QUEUE_PID KILL_PID\n");
		return 2;
	}
	said("sigqueue", sigqueue((pid_t)atoi(argv[1]), SIGUSR1, (union sigval){.sival_int = 7}));
	said("kill", kill((pid_t)atoi(argv[2]), SIGTERM));
	return 0;
}
