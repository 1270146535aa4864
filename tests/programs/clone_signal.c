/*
 * tests/programs/clone_signal.c - children made by glibc's clone() as a
 * fork with another exit signal: SIGUSR1 (handled, waited for with
 * __WCLONE), then none at all (waited for with __WALL). Each child writes
 * to a pipe its parent reads and ends with a status of its own.
 *
 * Output: what each child wrote, its status, and how many SIGUSR1 the
 * parent caught. Usage: clone_signal
 */
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t caught;
static int pipefd[2];

static void on_usr1(int sig)
{
	(void)sig;
	caught++;
}

static int child(void *arg)
{
	const char *word = arg;
	if (write(pipefd[1], word, strlen(word)) < 0)
		return 99;
	return (int)strlen(word);
}

static int run(const char *word, int exit_signal, int wait_flag)
{
	static char stack[2][64 * 1024];
	static int k;
	pid_t pid = clone(child, stack[k++] + sizeof(stack[0]), exit_signal, (void *)word);
	if (pid < 0) {
		perror("clone");
		return 1;
	}
	int status;
	if (waitpid(pid, &status, wait_flag) != pid) {
		perror("waitpid");
		return 1;
	}
	char buf[64] = {0};
	if (read(pipefd[0], buf, sizeof(buf) - 1) < 0)
		return 1;
	printf("child wrote <%s>, exited %d\n", buf, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

int main(void)
{
	struct sigaction sa = {.sa_handler = on_usr1};
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) || pipe(pipefd))
		return 1;
	if (run("first", SIGUSR1, __WCLONE) || run("second child", 0, __WALL))
		return 1;
	/* (the kernel sends the exit signal before the child can be waited
	 * for, so it has been handled once waitpid returned) */
	printf("parent caught %d SIGUSR1\n", (int)caught);
	return 0;
}
