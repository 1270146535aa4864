/* tests/programs/raw_clone.c - makes a task with glibc's public clone() (or
 * the raw system call), as a few programs do instead of pthread_create or
 * fork. A thread-like one (CLONE_VM) shares its creator's memory and TLS,
 * so det must refuse it at the call; a fork-like one is a fork det can
 * record. Both tasks lock a mutex in a loop, so that a thread det did not
 * refuse would write events into its creator's ring.
 *
 * raw_clone thread|vm|vfork|fork|syscall|clone3|syscall_thread
 *   thread, vm, vfork: clone() with CLONE_VM (and CLONE_THREAD, or not)
 *   fork: clone() with SIGCHLD alone
 *   syscall, clone3: syscall(SYS_clone / SYS_clone3) as a fork
 *   syscall_thread: syscall(SYS_clone) as a thread, on a stack whose top
 *     holds the child's entry: glibc's syscall() returns through it there
 *     (x86-64: `ret` after the system call) */
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;

static void work(int rounds)
{
	for (int i = 0; i < rounds; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
	}
}

static int child(void *arg)
{
	work(20000);
	printf("child %s: %ld\n", (const char *)arg, counter);
	fflush(stdout);
	return 7;
}

static char stack[1 << 16] __attribute__((aligned(16)));
static uint64_t thread_stack[8192] __attribute__((aligned(16)));

static void __attribute__((noreturn)) syscall_child(void)
{
	child("syscall_thread");
	syscall(SYS_exit, 0); /* this thread only */
	__builtin_unreachable();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "thread";
	int flags;
	if (!strcmp(mode, "thread") || !strcmp(mode, "syscall_thread"))
		flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
	else if (!strcmp(mode, "vm"))
		flags = CLONE_VM | SIGCHLD;
	else if (!strcmp(mode, "vfork"))
		flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
	else
		flags = SIGCHLD;
	long pid;
	if (!strcmp(mode, "syscall")) {
		/* the fork-like flags through syscall(): its child returns here too */
		pid = syscall(SYS_clone, (long)SIGCHLD, 0L, NULL, NULL, 0L);
		if (pid == 0)
			_exit(child("syscall"));
	} else if (!strcmp(mode, "syscall_thread")) {
		uint64_t *top = &thread_stack[8190]; /* 16-byte aligned: the entry's frame is as after a call */
		*top = (uint64_t)(uintptr_t)syscall_child;
		pid = syscall(SYS_clone, (long)flags, top, NULL, NULL, 0L);
	} else if (!strcmp(mode, "clone3")) {
		struct clone_args ca = {.exit_signal = SIGCHLD};
		pid = syscall(SYS_clone3, &ca, sizeof(ca));
		if (pid == 0)
			_exit(child("clone3"));
	} else {
		pid = clone(child, stack + sizeof(stack), flags, (void *)mode);
	}
	if (pid < 0) {
		perror("clone");
		return 1;
	}
	work(20000);
	if (flags & CLONE_THREAD) {
		/* no wait for a thread: let it run a while */
		usleep(200000);
		printf("parent: %ld\n", counter);
		return 0;
	}
	int status = 0;
	if (waitpid((pid_t)pid, &status, 0) != pid) {
		perror("waitpid");
		return 1;
	}
	printf("parent: %ld, child exited %d\n", counter, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}
