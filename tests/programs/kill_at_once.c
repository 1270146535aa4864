/*
 * tests/programs/kill_at_once.c - children killed the moment they exist,
 * before they make their first event: one started by posix_spawn, one by
 * fork; each is reaped (waitid, waitpid), then the parent starts a thread.
 * Strict mode handed its turn to the dead child, which never passed it on,
 * and the thread waited for it for ever (the watchdog took the turn back
 * and gave it to the dead child again). Prints how each ended.
 */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void *worker(void *arg)
{
	(void)arg;
	return "worker ran";
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	pid_t pid;
	char *av[] = {"sleep", "5", NULL};
	int r = posix_spawnp(&pid, "sleep", NULL, NULL, av, environ);
	kill(pid, SIGKILL);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	waitid(P_PID, pid, &si, WEXITED);
	printf("spawned %d: killed %d by %d\n", r, si.si_code == CLD_KILLED, si.si_status);
	pid_t child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	kill(child, SIGKILL);
	int st;
	waitpid(child, &st, 0);
	printf("forked: killed by %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	pthread_t t;
	void *said;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, &said);
	printf("%s\n", (char *)said);
	return 0;
}
