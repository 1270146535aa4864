/*
 * tests/programs/traces_child.c - a parent that traces its child, as debuggers and
 * sandboxes do: the child asks to be traced and stops itself (traceme), or
 * the parent attaches to it (attach); either way the parent reads a word of
 * the child's memory, writes another, and lets it go on. With argument
 * `raw` the requests go through syscall(SYS_ptrace).
 *
 * In replay the program knows its child by the recorded pid, the kernel by
 * this run's: every request named no process until ptrace took ids as the
 * other pid calls do (the child stayed stopped, the replay stalled).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long word = 1;
static int raw;

static long trace(enum __ptrace_request req, pid_t pid, void *addr, void *data)
{
	if (!raw)
		return ptrace(req, pid, addr, data);
	if (req == PTRACE_PEEKDATA) { /* the kernel stores the word at data */
		long v;
		long r = syscall(SYS_ptrace, req, pid, addr, &v);
		return r < 0 ? r : v;
	}
	return syscall(SYS_ptrace, req, pid, addr, data);
}

int main(int argc, char **argv)
{
	int attach = argc > 1 && strcmp(argv[1], "attach") == 0;
	raw = argc > 2 && strcmp(argv[2], "raw") == 0;
	int ready[2];
	if (pipe(ready))
		return 1;
	pid_t c = fork();
	if (c == 0) {
		word = 0x5eed;
		if (!attach) {
			trace(PTRACE_TRACEME, 0, 0, 0);
			raise(SIGSTOP);
		} else {
			if (write(ready[1], "r", 1) != 1)
				_exit(1);
			while (word == 0x5eed)
				usleep(1000); /* until the tracer's poke */
		}
		_exit((int)(word & 0x7f));
	}
	int st;
	if (attach) {
		char b;
		if (read(ready[0], &b, 1) != 1 || trace(PTRACE_ATTACH, c, 0, 0) != 0) {
			printf("attach: %s\n", strerror(errno));
			return 1;
		}
	}
	if (waitpid(c, &st, 0) != c || !WIFSTOPPED(st)) {
		printf("the child did not stop\n");
		return 1;
	}
	errno = 0;
	long v = trace(PTRACE_PEEKDATA, c, (void *)&word, 0);
	printf("stopped by %s, word %#lx (%s)\n", WSTOPSIG(st) == SIGSTOP ? "SIGSTOP" : "another signal", v,
	       errno ? strerror(errno) : "read");
	if (trace(PTRACE_POKEDATA, c, (void *)&word, (void *)0x42) != 0)
		printf("poke: %s\n", strerror(errno));
	if (trace(attach ? PTRACE_DETACH : PTRACE_CONT, c, 0, 0) != 0)
		printf("go on: %s\n", strerror(errno));
	if (waitpid(c, &st, 0) != c)
		return 1;
	printf("child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}
