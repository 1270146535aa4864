/*
 * tests/programs/values.c - calls whose successful results are values, not
 * error numbers: open returns a descriptor, sysconf a number of CPUs, read
 * a count. It prints each, so a test can compare what det's tools show.
 * It also says whether the signals that end a program (SIGSEGV, SIGABRT...)
 * are at their default action, as the program left them ("dfl 1").
 * With an argument N, it then locks and unlocks a mutex N times (a trace
 * of 2N more events).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int fd = open("/proc/self/stat", O_RDONLY);
	char buf[16];
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	int dfl = 1;
	const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGSYS};
	for (unsigned i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
		struct sigaction old;
		sigaction(fatal[i], NULL, &old);
		dfl &= old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO);
		dfl &= signal(fatal[i], SIG_DFL) == SIG_DFL;
	}
	printf("cpus %ld fd %d read %zd dfl %d\n", cpus, fd, n, dfl);
	for (long i = argc > 1 ? atol(argv[1]) : 0; i > 0; i--) {
		pthread_mutex_lock(&lock);
		pthread_mutex_unlock(&lock);
	}
	return 0;
}
