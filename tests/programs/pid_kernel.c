/*
 * tests/programs/pid_kernel.c - hands the kernel the pids and thread ids the
 * program was given (getpid, gettid, fork's result) and checks what comes
 * back: in replay those are the recorded ids, and every call must still
 * reach the process or thread they name (tests/e2e/test_pids.py).
 *
 * Rules of this file:
 *  - It prints one line per check, "ok NAME" or "FAIL NAME: why", and
 *    nothing that differs between a recording and its replay.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void check(const char *name, int ok, const char *why)
{
	if (ok)
		printf("ok %s\n", name);
	else
		printf("FAIL %s: %s (%s)\n", name, why, strerror(errno));
	fflush(stdout);
}

/* The number after `key` in /proc/<pid>/<file>, or -1. */
static long proc_field(pid_t pid, const char *file, const char *key)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *at = strstr(buf, key);
	return at ? strtol(at + strlen(key), NULL, 10) : -1;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pid_t worker_tid;
static int finished;

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	worker_tid = gettid();
	pthread_cond_broadcast(&cv);
	while (!finished)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static int task_listed(pid_t tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)getpid());
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int found = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (atoi(e->d_name) == tid)
			found = 1;
	closedir(d);
	return found;
}

static void self_checks(void)
{
	pid_t pid = getpid(), tid = gettid();
	check("main tid is pid", pid == tid, "gettid() != getpid() in the main thread");

	int s = socket(AF_INET, SOCK_STREAM, 0);
	check("F_SETOWN getpid", fcntl(s, F_SETOWN, pid) == 0, "fcntl(F_SETOWN) failed");
	check("F_GETOWN", fcntl(s, F_GETOWN) == pid, "fcntl(F_GETOWN) is not the pid set");
	struct f_owner_ex own = {F_OWNER_TID, tid};
	check("F_SETOWN_EX gettid", fcntl(s, F_SETOWN_EX, &own) == 0, "fcntl(F_SETOWN_EX) failed");
	memset(&own, 0, sizeof(own));
	check("F_GETOWN_EX", fcntl(s, F_GETOWN_EX, &own) == 0 && own.type == F_OWNER_TID && own.pid == tid,
	      "fcntl(F_GETOWN_EX) is not the tid set");

	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int owner = pid, got = 0;
	check("FIOSETOWN getpid", ioctl(s, FIOSETOWN, &owner) == 0, "ioctl(FIOSETOWN) failed");
	check("FIOGETOWN", ioctl(s, FIOGETOWN, &got) == 0 && got == pid, "ioctl(FIOGETOWN) is not the pid set");
	check("kill getppid 0", kill(getppid(), 0) == 0, "kill failed");

	check("pidfd_open getpid", pfd >= 0, "pidfd_open failed"); /* left open: a failure makes no other event */
	check("kcmp", syscall(SYS_kcmp, pid, pid, KCMP_FILE, s, s) == 0, "kcmp(getpid) failed");
	close(s);

	check("kill getpid 0", kill(pid, 0) == 0, "kill failed");
	check("tgkill", syscall(SYS_tgkill, pid, tid, 0) == 0, "tgkill failed");
	check("tkill", syscall(SYS_tkill, tid, 0) == 0, "tkill failed");
	union sigval v = {.sival_int = 0};
	check("sigqueue getpid 0", sigqueue(pid, 0, v) == 0, "sigqueue failed");

	cpu_set_t cpus;
	check("sched_getaffinity gettid", sched_getaffinity(tid, sizeof(cpus), &cpus) == 0, "failed");
	check("sched_setaffinity getpid", sched_setaffinity(pid, sizeof(cpus), &cpus) == 0, "failed");
	struct sched_param sp;
	check("sched_getparam getpid", sched_getparam(pid, &sp) == 0, "failed");
	errno = 0;
	int prio = getpriority(PRIO_PROCESS, (id_t)pid);
	check("getpriority getpid", prio != -1 || errno == 0, "failed");
	struct rlimit rl;
	check("prlimit getpid", prlimit(pid, RLIMIT_NOFILE, NULL, &rl) == 0, "failed");
	check("ioprio_get gettid", syscall(SYS_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, tid) >= 0, "failed");
	long word = 42, copy = 0;
	struct iovec local = {&copy, sizeof(copy)}, remote = {&word, sizeof(word)};
	check("process_vm_readv getpid", process_vm_readv(pid, &local, 1, &remote, 1, 0) == sizeof(word) && copy == 42,
	      "failed");
	int sv[2];
	struct ucred cred = {0};
	socklen_t len = sizeof(cred);
	check("SO_PEERCRED", socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 &&
				     getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid == pid,
	      "the peer is not getpid()");
	close(sv[0]);
	close(sv[1]);
	struct sigevent ev = {.sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGRTMIN};
	ev._sigev_un._tid = tid;
	timer_t timer;
	check("timer_create SIGEV_THREAD_ID gettid", timer_create(CLOCK_MONOTONIC, &ev, &timer) == 0, "failed");
	timer_delete(timer);
	check("getpgid getpid", getpgid(pid) >= 0, "failed");
	check("getsid getpid", getsid(pid) >= 0, "failed");
}

static pthread_t worker_thread;

static pid_t start_worker(void)
{
	pthread_create(&worker_thread, NULL, worker, NULL);
	pthread_mutex_lock(&mu);
	while (!worker_tid)
		pthread_cond_wait(&cv, &mu);
	pid_t tid = worker_tid;
	pthread_mutex_unlock(&mu);
	return tid;
}

static void stop_worker(void)
{
	pthread_mutex_lock(&mu);
	finished = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(worker_thread, NULL);
}

static void thread_checks(pid_t tid)
{
	check("thread tgkill", syscall(SYS_tgkill, getpid(), tid, 0) == 0, "tgkill failed");
	cpu_set_t cpus;
	check("thread sched_getaffinity", sched_getaffinity(tid, sizeof(cpus), &cpus) == 0, "failed");
}

/* A child's own ids and its parent's, checked in the child: the number of
 * calls that failed is its exit status. Its /proc opens come last: one
 * that fails makes the replay diverge. */
static int child_self_checks(void)
{
	pid_t pid = getpid(), tid = gettid(), parent = getppid();
	int failed = 0, s = socket(AF_INET, SOCK_STREAM, 0);
	failed += fcntl(s, F_SETOWN, pid) != 0 || fcntl(s, F_GETOWN) != pid;
	close(s);
	failed += syscall(SYS_tgkill, pid, tid, 0) != 0;
	failed += kill(parent, 0) != 0;
	cpu_set_t cpus;
	failed += sched_getaffinity(pid, sizeof(cpus), &cpus) != 0;
	failed += setsid() != pid || getsid(0) != pid || getpgrp() != pid;
	failed += proc_field(parent, "status", "\nPid:") != parent;
	failed += proc_field(pid, "status", "\nPPid:") != parent;
	return failed;
}

static void child_self_check(void)
{
	pid_t self_checker = fork();
	if (self_checker == 0)
		_exit(child_self_checks());
	int status = -1;
	check("child's own ids", waitpid(self_checker, &status, 0) == self_checker && WIFEXITED(status) &&
					 WEXITSTATUS(status) == 0,
	      "calls with the child's ids failed in the child");
}

static pid_t start_child(void)
{
	pid_t child = fork();
	if (child == 0) {
		setpgid(0, 0);
		for (;;)
			pause();
	}
	check("fork", child > 0, "fork failed");
	check("setpgid child", setpgid(child, child) == 0 || errno == EACCES, "setpgid failed");
	check("getpgid child", getpgid(child) == child, "the child's group is not its pid");
	check("kill child 0", kill(child, 0) == 0, "kill failed");
	cpu_set_t cpus;
	check("child sched_getaffinity", sched_getaffinity(child, sizeof(cpus), &cpus) == 0, "failed");
	return child;
}

static void end_child(pid_t child)
{
	check("kill child SIGTERM", kill(child, SIGTERM) == 0, "kill failed");
	int st = 0;
	check("waitpid child", waitpid(child, &st, 0) == child, "waitpid did not return the child");
	check("child died of SIGTERM", WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "wrong status");
}

/* /proc paths with ids in them, after the other checks: an open that fails
 * where the recording's succeeded makes the replay diverge. */
static void proc_checks(pid_t worker, pid_t child)
{
	pid_t pid = getpid(), tid = gettid();
	char path[96], link[256];
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	check("readlink /proc/PID/exe", readlink(path, link, sizeof(link)) > 0, "readlink failed");
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	check("stat /proc/PID/task/TID", stat(path, &st) == 0, "stat failed");
	check("access /proc/PID/task/TID", access(path, R_OK) == 0, "access failed");
	check("/proc/PID/status", proc_field(pid, "status", "\nPid:") == pid, "its Pid is not getpid()");
	check("thread /proc/TID/stat", proc_field(worker, "stat", "") == worker, "its first field is not the tid");
	check("thread listed in /proc/PID/task", task_listed(worker), "not listed");
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)worker);
	FILE *f = fopen(path, "r");
	check("fopen /proc/self/task/TID/stat", f != NULL, "fopen failed");
	if (f)
		fclose(f);
	check("child /proc/PID/stat", proc_field(child, "stat", "") == child, "its first field is not its pid");
}

int main(void)
{
	self_checks();
	pid_t worker = start_worker();
	thread_checks(worker);
	pid_t child = start_child();
	proc_checks(worker, child);
	end_child(child);
	stop_worker();
	child_self_check();
	printf("done\n");
	return 0;
}
