/*
 * tests/programs/sigwaiter.c - signals taken synchronously by a dedicated
 * thread, as pbzip2 does: every thread blocks SIGUSR1 and SIGUSR2, a waiter
 * thread takes them with sigwait, sigwaitinfo, sigtimedwait or a signalfd
 * (argv[1]), counts the SIGUSR1s (sent from outside, e.g. by a test; "got N"
 * after each, so that the sender can wait for it: two standard signals
 * pending at once are one), and ends on the SIGUSR2 that main sends the
 * process when its work is done and EXPECT SIGUSR1s were taken.
 *
 * Output: "got 1" ... "got N", then "waiter (MODE): N SIGUSR1 (from pids
 * P...), then SIGUSR2 from itself; counter C". Rules: a replay prints the
 * recording's lines, though the outside SIGUSR1s are not sent again.
 * Usage: sigwaiter sigwait|sigwaitinfo|sigtimedwait|signalfd [ITERS [EXPECT]]
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

static const char *mode;
static sigset_t set;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static int usr1;
static long usr1_pids;

static int take(void)
{
	static int fd = -1;
	siginfo_t info;
	if (!strcmp(mode, "sigwait")) {
		int sig;
		return sigwait(&set, &sig) == 0 ? sig : -1;
	}
	if (!strcmp(mode, "sigwaitinfo")) {
		int sig = sigwaitinfo(&set, &info);
		usr1_pids += sig == SIGUSR1 ? info.si_pid != 0 : 0;
		return sig;
	}
	if (!strcmp(mode, "sigtimedwait")) {
		for (;;) {
			struct timespec ts = {0, 20 * 1000 * 1000};
			int sig = sigtimedwait(&set, &info, &ts);
			if (sig > 0) {
				usr1_pids += sig == SIGUSR1 ? info.si_pid != 0 : 0;
				return sig;
			}
		}
	}
	if (fd < 0)
		fd = signalfd(-1, &set, 0);
	struct signalfd_siginfo si;
	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return -1;
	usr1_pids += si.ssi_signo == SIGUSR1 ? si.ssi_pid != 0 : 0;
	return (int)si.ssi_signo;
}

static void *waiter(void *arg)
{
	(void)arg;
	for (;;) {
		int sig = take();
		if (sig == SIGUSR2)
			return NULL;
		if (sig == SIGUSR1) {
			pthread_mutex_lock(&m);
			int n = ++usr1;
			pthread_mutex_unlock(&m);
			printf("got %d\n", n);
			fflush(stdout);
		} else
			return (void *)1;
	}
}

int main(int argc, char **argv)
{
	mode = argc > 1 ? argv[1] : "sigwait";
	long iters = argc > 2 ? atol(argv[2]) : 100000;
	int expect = argc > 3 ? atoi(argv[3]) : 0;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	pthread_t t;
	pthread_create(&t, NULL, waiter, NULL);
	for (long i = 0; i < iters; i++) {
		pthread_mutex_lock(&m);
		counter++;
		pthread_mutex_unlock(&m);
		if (i % 1000 == 0)
			usleep(200);
	}
	for (;;) { /* the sender's signals are all taken before the end */
		pthread_mutex_lock(&m);
		int n = usr1;
		pthread_mutex_unlock(&m);
		if (n >= expect)
			break;
		usleep(1000);
	}
	kill(getpid(), SIGUSR2);
	void *bad;
	pthread_join(t, &bad);
	printf("waiter (%s): %d SIGUSR1 (%ld with a sender), then SIGUSR2 from itself%s; counter %ld\n", mode, usr1,
	       usr1_pids, bad ? " (and something else)" : "", counter);
	return 0;
}
