/*
 * tests/programs/alarm_loop.c - compute until a timer's handler clears a
 * flag, as benchmarks do (openssl speed): alarm(1), then a loop that makes
 * no call at all. The loop runs ROUNDS times; each prints that it counted
 * (not how far: that is timing).
 *
 * Usage: alarm_loop [ROUNDS]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t run;

static void stop(int sig)
{
	(void)sig;
	run = 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 2;
	signal(SIGALRM, stop);
	for (int k = 0; k < rounds; k++) {
		run = 1;
		alarm(1);
		unsigned long n = 0;
		while (run)
			n++;
		printf("round %d: counted %s\n", k, n ? "some" : "none");
		fflush(stdout);
	}
	return 0;
}
