/*
 * tests/programs/job_control.c - a shell's job control: the parent stops a
 * working child with SIGSTOP, sees it stopped (waitpid WUNTRACED, or
 * waitid WSTOPPED with argument `waitid`), continues it with SIGCONT, sees
 * that (WCONTINUED), and reaps it at its end.
 *
 * Replay stalled or failed before: the trace put the wait that saw the stop
 * after all the child's events (a wait that returns a child was taken for
 * its end), and the stop, no event, could land while the child waited for
 * its turn, holding back the parent's next event.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int use_waitid;

/* What the next report of child c says: 's' stopped, 'c' continued, or its exit code. */
static int report(pid_t c, int options)
{
	if (use_waitid) {
		siginfo_t si;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)c, &si, options == WUNTRACED ? WSTOPPED : options == 0 ? WEXITED : options))
			return -1;
		return si.si_code == CLD_STOPPED ? 's' : si.si_code == CLD_CONTINUED ? 'c' : si.si_status;
	}
	int st;
	if (waitpid(c, &st, options) != c)
		return -1;
	return WIFSTOPPED(st) ? 's' : WIFCONTINUED(st) ? 'c' : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
	use_waitid = argc > 1 && strcmp(argv[1], "waitid") == 0;
	int ready[2];
	if (pipe(ready))
		return 1;
	pid_t c = fork();
	if (c == 0) {
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		for (int i = 0; i < 200; i++)
			usleep(500); /* work: an event each time */
		_exit(9);
	}
	char b;
	if (read(ready[0], &b, 1) != 1)
		return 1;
	kill(c, SIGSTOP);
	printf("stopped: %s\n", report(c, WUNTRACED) == 's' ? "yes" : "no");
	kill(c, SIGCONT);
	printf("continued: %s\n", report(c, WCONTINUED) == 'c' ? "yes" : "no");
	printf("exit code %d\n", report(c, 0));
	return 0;
}
