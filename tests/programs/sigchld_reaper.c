/*
 * tests/programs/sigchld_reaper.c - a server's child reaping: a SIGCHLD
 * handler reaps with waitpid(-1, WNOHANG) in a loop and counts exit codes;
 * the parent forks children (each exits with its own code after a little
 * work, one is killed by the parent with SIGTERM, which it handles) and
 * waits in sigsuspend until all are reaped (argv[1] "pause": in pause,
 * "sleep": in a sleep loop). Prints the sum of exit codes and signals.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN 4
static volatile sig_atomic_t reaped, codes, killed;

static void on_chld(int sig)
{
	(void)sig;
	int saved = errno, st;
	pid_t p;
	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		reaped++;
		if (WIFEXITED(st))
			codes += WEXITSTATUS(st);
		else if (WIFSIGNALED(st))
			killed += WTERMSIG(st);
	}
	errno = saved;
}

static void on_term(int sig)
{
	(void)sig;
	_exit(40);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "suspend";
	setvbuf(stdout, NULL, _IONBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_chld;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	int ready[2];
	pipe(ready);
	pid_t last = 0;
	for (int i = 0; i < CHILDREN; i++) {
		pid_t p = fork();
		if (p == 0) {
			sigprocmask(SIG_SETMASK, &old, NULL);
			if (i == CHILDREN - 1) {
				signal(SIGTERM, on_term);
				write(ready[1], "r", 1);
				for (;;)
					pause();
			}
			usleep(1000 * (i + 1));
			_exit(i + 1);
		}
		last = p;
	}
	char c;
	read(ready[0], &c, 1);
	kill(last, SIGTERM);
	if (!strcmp(how, "suspend")) {
		while (reaped < CHILDREN)
			sigsuspend(&old);
	} else {
		sigprocmask(SIG_SETMASK, &old, NULL);
		while (reaped < CHILDREN)
			usleep(1000);
	}
	printf("reaped %d, exit codes %d, signals %d\n", (int)reaped, (int)codes, (int)killed);
	return 0;
}
