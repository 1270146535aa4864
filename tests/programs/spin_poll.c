/* tests/programs/spin_poll.c - main busy-waits for a flag that a second
 * thread sets after some work of its own, polling the way MODE says:
 *   yield     sched_yield() in the loop
 *   trylock   pthread_mutex_trylock() on a lock the setter holds meanwhile
 *   poll      poll() with no descriptors and a zero timeout
 *   read      read() of an empty non-blocking pipe the setter writes to
 *   lockpoll  lock, read the flag, unlock (events, none of which fails)
 * Under strict chaos the setter often has the lower priority: the poller
 * must defer to it, or the run never ends. Prints how many times main
 * polled (0: the setter was done first), then "flag seen".
 *
 * Usage: spin_poll MODE [WORK]
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int flag;
static int fds[2];
static long work = 50;
static volatile long done;

static void *setter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&m);
	for (long i = 0; i < work; i++) { /* events of its own before the flag */
		pthread_mutex_lock(&work_lock);
		done++;
		pthread_mutex_unlock(&work_lock);
	}
	flag = 1;
	pthread_mutex_unlock(&m);
	if (write(fds[1], "x", 1) != 1)
		return (void *)1;
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "yield";
	if (argc > 2)
		work = atol(argv[2]);
	if (pipe(fds) || fcntl(fds[0], F_SETFL, O_NONBLOCK))
		return 2;
	pthread_t t;
	pthread_create(&t, NULL, setter, NULL);
	long polls = 0;
	char c;
	for (;;) {
		if (!strcmp(mode, "yield")) {
			if (flag)
				break;
			sched_yield();
		} else if (!strcmp(mode, "trylock")) {
			if (pthread_mutex_trylock(&m) == 0) {
				int f = flag;
				pthread_mutex_unlock(&m);
				if (f)
					break;
			}
		} else if (!strcmp(mode, "poll")) {
			if (flag)
				break;
			poll(NULL, 0, 0);
		} else if (!strcmp(mode, "read")) {
			if (read(fds[0], &c, 1) == 1)
				break;
			if (errno != EAGAIN)
				return 2;
		} else if (!strcmp(mode, "lockpoll")) {
			pthread_mutex_lock(&work_lock);
			long d = done;
			pthread_mutex_unlock(&work_lock);
			if (d == work && flag)
				break;
		} else {
			fprintf(stderr, "spin_poll: unknown mode %s\n", mode);
			return 2;
		}
		polls++;
	}
	pthread_join(t, NULL);
	printf("polled %ld times\nflag seen\n", polls);
	return 0;
}
