/*
 * tests/programs/signal_calls.c CASE - signal behaviours det got wrong
 * (each failed on main, found by a corpus of small programs):
 *   sleep     alarm(1) then sleep(3): sleep returns the whole seconds not
 *             slept (det rounded up: 3 where glibc says 2)
 *   siginfo   kill(getpid()) with an SA_SIGINFO handler: si_pid is the
 *             program's pid (replay: the live one)
 *   ticks     an interval timer and a loop with no call until 3 ticks
 *             (replay stalled at the second)
 *   semintr   SIGALRM interrupts sem_wait: EINTR (strict: never returned)
 *   semtime   sem_timedwait that nobody posts: ETIMEDOUT (strict: never)
 *   altstack  SA_ONSTACK handlers that call libc: one for a signal raise
 *             sends (det's own code was running: its frames were written
 *             over, SIGSEGV), one that interrupts a read; both run on the
 *             alternate stack (replay ran them on the thread's stack)
 *   unblock   signals sent while blocked, then unblocked: every handler has
 *             run when sigprocmask returns, in the kernel's order (det
 *             held them for the next call, and replay took the second as
 *             one that came while the thread made no event)
 *   samask    a handler raises a signal its sa_mask blocks: that one is
 *             handled when the handler ends, before raise returns
 *   futexintr SIGALRM interrupts a raw futex wait: EINTR, handler run
 *   timeleft  what timers have left (alarm(0), getitimer, timer_gettime,
 *             timer_getoverrun): replay skips sleeps and takes signals from
 *             the trace, and asked the kernel (alarm(0) said 1 after it fired)
 * Prints what it saw; exits 0 when it is what Linux does.
 */
#include <errno.h>
#include <linux/futex.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t hits, pid_ok;

static void count(int sig)
{
	(void)sig;
	hits++;
}

static void note_sender(int sig, siginfo_t *info, void *uc)
{
	(void)sig;
	(void)uc;
	pid_ok = info->si_pid == getpid() && info->si_code == SI_USER;
}

static char alt_stack[1 << 16];
static volatile sig_atomic_t on_alt;

static void alt_handler(int sig)
{
	char here;
	on_alt += &here >= alt_stack && &here < alt_stack + sizeof(alt_stack);
	hits++;
	if (getppid() <= 0 || write(1, sig == SIGALRM ? "alarm\n" : "usr1\n", sig == SIGALRM ? 6 : 5) < 0)
		on_alt = -100;
}

static int order[8], norder;

static void note_order(int sig)
{
	if (norder < 8)
		order[norder++] = sig;
}

static void raise_blocked(int sig)
{
	note_order(sig);
	raise(SIGUSR2); /* blocked by sa_mask until this handler ends */
	note_order(sig == SIGUSR1 && norder == 1 ? 0 : -1);
}

static void on(int sig, int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = count;
	sa.sa_flags = flags;
	sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	if (!strcmp(what, "sleep")) {
		on(SIGALRM, 0);
		alarm(1);
		unsigned left = sleep(3);
		printf("hits %d, left 1 or 2: %s\n", hits, left == 1 || left == 2 ? "yes" : "no");
		return !(hits == 1 && (left == 1 || left == 2));
	} else if (!strcmp(what, "siginfo")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = note_sender;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGUSR1, &sa, NULL);
		kill(getpid(), SIGUSR1);
		printf("sender is the program: %d\n", pid_ok);
		return !pid_ok;
	} else if (!strcmp(what, "ticks")) {
		on(SIGALRM, SA_RESTART);
		struct itimerval it = {{0, 10000}, {0, 10000}};
		setitimer(ITIMER_REAL, &it, NULL);
		while (hits < 3)
			;
		puts("three ticks");
		return 0;
	} else if (!strcmp(what, "semintr")) {
		sem_t sem;
		sem_init(&sem, 0, 0);
		on(SIGALRM, 0);
		struct itimerval it = {{0, 0}, {0, 20000}};
		setitimer(ITIMER_REAL, &it, NULL);
		int r = sem_wait(&sem);
		printf("sem_wait %d %s, hits %d\n", r, r < 0 && errno == EINTR ? "EINTR" : "?", hits);
		return !(r < 0 && errno == EINTR);
	} else if (!strcmp(what, "semtime")) {
		sem_t sem;
		sem_init(&sem, 0, 0);
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_nsec += 50000000;
		if (dl.tv_nsec >= 1000000000) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000;
		}
		int r = sem_timedwait(&sem, &dl);
		printf("sem_timedwait %d %s\n", r, r < 0 && errno == ETIMEDOUT ? "ETIMEDOUT" : "?");
		return !(r < 0 && errno == ETIMEDOUT);
	} else if (!strcmp(what, "altstack")) {
		stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof(alt_stack)};
		sigaltstack(&ss, NULL);
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = alt_handler;
		sa.sa_flags = SA_ONSTACK;
		sigaction(SIGUSR1, &sa, NULL);
		sigaction(SIGALRM, &sa, NULL);
		raise(SIGUSR1);
		int p[2];
		char ch;
		if (pipe(p))
			return 1;
		struct itimerval it = {{0, 0}, {0, 20000}};
		setitimer(ITIMER_REAL, &it, NULL);
		int r = (int)read(p[0], &ch, 1);
		printf("read %d %s, handlers %d, on the alternate stack %d\n", r, r < 0 && errno == EINTR ? "EINTR" : "?",
		       hits, on_alt);
		return !(r < 0 && errno == EINTR && hits == 2 && on_alt == 2);
	} else if (!strcmp(what, "unblock")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = note_order;
		sigaction(SIGUSR1, &sa, NULL);
		sigaction(SIGRTMIN, &sa, NULL);
		sigaction(SIGRTMIN + 1, &sa, NULL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigaddset(&set, SIGRTMIN);
		sigaddset(&set, SIGRTMIN + 1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		union sigval v = {.sival_int = 7};
		sigqueue(getpid(), SIGRTMIN + 1, v);
		sigqueue(getpid(), SIGRTMIN, v);
		kill(getpid(), SIGUSR1);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		int seen = norder;
		printf("handled before sigprocmask returned: %d, order %d %d %d\n", seen, order[0],
		       order[1] - SIGRTMIN, order[2] - SIGRTMIN);
		return seen != 3;
	} else if (!strcmp(what, "samask")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = raise_blocked;
		sigaddset(&sa.sa_mask, SIGUSR2);
		sigaction(SIGUSR1, &sa, NULL);
		sa.sa_handler = note_order;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR2, &sa, NULL);
		raise(SIGUSR1);
		int seen = norder;
		printf("handled before raise returned: %d (%d %d %d)\n", seen, order[0] == SIGUSR1, order[1] == 0,
		       order[2] == SIGUSR2);
		return seen != 3;
	} else if (!strcmp(what, "futexintr")) {
		on(SIGALRM, 0); /* (with SA_RESTART the kernel would wait again) */
		int word = 0;
		struct itimerval it = {{0, 0}, {0, 20000}};
		setitimer(ITIMER_REAL, &it, NULL);
		long r = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		printf("futex wait %ld %s, handler ran %d\n", r, r < 0 && errno == EINTR ? "EINTR" : "?", hits);
		return !(r < 0 && errno == EINTR && hits == 1);
	} else if (!strcmp(what, "timeleft")) {
		on(SIGALRM, 0);
		alarm(1);
		pause();
		unsigned left = alarm(0);
		struct itimerval it = {{0, 0}, {2, 0}}, cur;
		setitimer(ITIMER_REAL, &it, NULL);
		usleep(30000);
		getitimer(ITIMER_REAL, &cur);
		long usec = cur.it_value.tv_sec * 1000000l + cur.it_value.tv_usec;
		sigset_t rt;
		sigemptyset(&rt);
		sigaddset(&rt, SIGRTMIN);
		sigprocmask(SIG_BLOCK, &rt, NULL);
		timer_t id;
		struct sigevent ev;
		memset(&ev, 0, sizeof(ev));
		ev.sigev_notify = SIGEV_SIGNAL;
		ev.sigev_signo = SIGRTMIN;
		timer_create(CLOCK_MONOTONIC, &ev, &id);
		struct itimerspec its = {{0, 1000000}, {0, 1000000}};
		timer_settime(id, 0, &its, NULL);
		usleep(20000);
		siginfo_t si;
		sigwaitinfo(&rt, &si);
		int over = timer_getoverrun(id);
		printf("alarm left %u, itimer %ld us, overruns %d of %d\n", left, usec, over, si.si_overrun);
		return !(left == 0 && usec > 0 && usec < 2000000 && over == si.si_overrun);
	}
	fprintf(stderr, "usage: signal_calls sleep|siginfo|ticks|semintr|semtime|altstack|unblock|samask|futexintr|timeleft\n");
	return 2;
}
