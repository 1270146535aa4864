/*
 * tests/programs/self_send.c - every way a thread sends a signal to itself
 * or its own process besides kill/raise/pthread_kill (self_kill.c):
 * sigqueue, tgkill, and the raw system calls kill, tkill, tgkill,
 * rt_sigqueueinfo and rt_tgsigqueueinfo, and pthread_sigqueue to itself. Natively the handler has run, with
 * the value sent, when the call returns: the program prints how much the
 * count went up across each call and the value the handler saw.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static volatile int seen_value;
static volatile int seen_code;

static void on_signal(int sig, siginfo_t *info, void *ctx)
{
	(void)sig;
	(void)ctx;
	handled++;
	seen_value = info->si_value.sival_int;
	seen_code = info->si_code;
}

static void report(const char *how, int before, long r)
{
	printf("%s: ret %ld handled %d value %d code %s\n", how, r, handled - before, seen_value,
	       seen_code == SI_QUEUE ? "queue" : seen_code == SI_TKILL ? "tkill" : seen_code == SI_USER ? "user" : "other");
	seen_value = 0;
	seen_code = 0;
}

static siginfo_t queued(int sig, int value)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = value;
	return si;
}

static void *in_thread(void *arg)
{
	(void)arg;
	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &usr2, NULL);
	int before = handled;
	long r = sigqueue(getpid(), SIGUSR2, (union sigval){.sival_int = 77});
	report("thread sigqueue (main blocks it)", before, r);
	before = handled;
	r = tgkill(getpid(), gettid(), SIGUSR1);
	report("thread tgkill", before, r);
	return NULL;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGRTMIN, &sa, NULL);
	pid_t pid = getpid();
	pid_t tid = gettid();

	int before = handled;
	long r = sigqueue(pid, SIGUSR1, (union sigval){.sival_int = 11});
	report("sigqueue", before, r);
	before = handled;
	r = sigqueue(pid, SIGRTMIN, (union sigval){.sival_int = 12});
	report("sigqueue rt", before, r);
	before = handled;
	r = tgkill(pid, tid, SIGUSR1);
	report("tgkill", before, r);
	before = handled;
	r = syscall(SYS_kill, pid, SIGUSR1);
	report("raw kill", before, r);
	before = handled;
	r = syscall(SYS_tkill, tid, SIGUSR1);
	report("raw tkill", before, r);
	before = handled;
	r = syscall(SYS_tgkill, pid, tid, SIGUSR1);
	report("raw tgkill", before, r);
	before = handled;
	siginfo_t si = queued(SIGUSR1, 13);
	r = syscall(SYS_rt_sigqueueinfo, pid, SIGUSR1, &si);
	report("raw rt_sigqueueinfo", before, r);
	before = handled;
	si = queued(SIGRTMIN, 14);
	r = syscall(SYS_rt_tgsigqueueinfo, pid, tid, SIGRTMIN, &si);
	report("raw rt_tgsigqueueinfo", before, r);
	before = handled;
	r = pthread_sigqueue(pthread_self(), SIGUSR1, (union sigval){.sival_int = 15});
	report("pthread_sigqueue self", before, r);

	sigset_t usr2;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr2, NULL);
	pthread_t t;
	pthread_create(&t, NULL, in_thread, NULL);
	pthread_join(t, NULL);
	printf("total: %d\n", (int)handled);
	return 0;
}
