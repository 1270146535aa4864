/*
 * tests/programs/pending_shown.c - a program that looks at its pending signals with
 * sigpending() while it blocks them, as TLPI's t_sigsuspend does before
 * sigsuspend(): one it sent itself (kill) and one a child sent it. Native:
 * both are pending, then both handlers run when sigsuspend unblocks them.
 * Replay has no kernel-pending signal (it delivers recorded ones itself), so
 * what sigpending() reports must come from the recording.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t handled;

static void on_signal(int sig)
{
	handled |= sig == SIGUSR1 ? 1 : 2;
}

static void show_pending(const char *when)
{
	sigset_t pending;
	if (sigpending(&pending) != 0) {
		perror("sigpending");
		exit(1);
	}
	printf("%s: SIGUSR1 %s, SIGUSR2 %s\n", when, sigismember(&pending, SIGUSR1) ? "pending" : "not pending",
	       sigismember(&pending, SIGUSR2) ? "pending" : "not pending");
}

int main(void)
{
	sigset_t block, old;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigprocmask(SIG_BLOCK, &block, &old);
	show_pending("at first");
	kill(getpid(), SIGUSR1);
	show_pending("after kill");
	pid_t child = fork();
	if (child == 0) {
		kill(getppid(), SIGUSR2);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	/* the child's signal is pending once it has exited (kill is synchronous) */
	show_pending("after the child");
	while (handled != 3)
		sigsuspend(&old);
	show_pending("after sigsuspend");
	printf("handled both\n");
	return 0;
}
