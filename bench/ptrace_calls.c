/*
 * bench/ptrace_calls.c - N system calls of one kind in a loop, for
 * bench/ptrace.py (what detrec --ptrace costs per intercepted call).
 * MODE "getppid": an input the supervisor makes (one stop); "clock":
 * clock_gettime through libc (the vDSO, unless det hides it); "write": a
 * byte to /dev/null, a call that runs again in replay (two stops);
 * "floor": N getppid calls in a child under the least a seccomp tracer can
 * do (waitpid, PTRACE_CONT), the floor of this machine's stop cost now.
 * Usage: ptrace_calls getppid|clock|write|floor N
 *
 * Rules: no output but the exit status; nothing else in the loop.
 */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int floor_run(long n)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {4, f};
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) != 0 || raise(SIGSTOP) != 0 ||
		    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
			_exit(1);
		for (long i = 0; i < n; i++)
			syscall(SYS_getppid);
		_exit(0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid ||
	    ptrace(PTRACE_SETOPTIONS, pid, 0, (void *)(long)(PTRACE_O_TRACESECCOMP | PTRACE_O_EXITKILL)) != 0)
		return 1;
	ptrace(PTRACE_CONT, pid, 0, 0);
	while (waitpid(pid, &st, 0) == pid && WIFSTOPPED(st))
		ptrace(PTRACE_CONT, pid, 0, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	long n = atol(argv[2]);
	if (strcmp(argv[1], "floor") == 0)
		return floor_run(n);
	int fd = open("/dev/null", O_WRONLY);
	struct timespec ts;
	for (long i = 0; i < n; i++) {
		if (strcmp(argv[1], "getppid") == 0)
			syscall(SYS_getppid);
		else if (strcmp(argv[1], "clock") == 0)
			clock_gettime(CLOCK_MONOTONIC, &ts);
		else if (write(fd, "x", 1) != 1)
			return 1;
	}
	return 0;
}
