/*
 * iso_inputs - a racy program whose output also depends on its inputs: the
 * time (clock_gettime, gettimeofday, time), random bytes (getrandom, and a
 * read() of /dev/urandom) and a line read from stdin with read(), taken by
 * two threads that also race on a counter without a lock, and meet at a
 * mutex in between.
 *
 * Natively every run prints other values (and the counter varies). Under
 * detrec --isolated the inputs go into the trace and detreplay hands the
 * same ones back: the replay prints exactly what the recording printed,
 * whatever the clock, the random source and stdin say then.
 *
 * With a FILE argument, main also read()s the file's first bytes (a regular
 * file: read again in replay, where a changed file is a divergence).
 *
 * Output: one line per thread (its inputs mixed into a number), then
 * "counter = N, stdin = S" (and ", file = F").
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static unsigned long mixed[3];

static void *worker(void *arg)
{
	long me = (long)arg;
	struct timespec ts;
	struct timeval tv;
	unsigned long r = 0, u = 0;
	for (int i = 0; i < 20000; i++)
		counter++; /* racy */
	clock_gettime(CLOCK_REALTIME, &ts);
	gettimeofday(&tv, NULL);
	if (getrandom(&r, sizeof r, 0) != sizeof r)
		return NULL;
	int fd = open("/dev/urandom", O_RDONLY);
	if (fd < 0 || read(fd, &u, sizeof u) != sizeof u)
		return NULL;
	close(fd);
	pthread_mutex_lock(&lock);
	mixed[me] = (unsigned long)ts.tv_nsec ^ (unsigned long)tv.tv_usec ^ (unsigned long)time(NULL) ^ r ^ u;
	counter += 1000;
	pthread_mutex_unlock(&lock);
	return NULL;
}

static void first_line(int fd, char *line, size_t size)
{
	ssize_t n = read(fd, line, size - 1);
	line[n > 0 ? n : 0] = 0;
	line[strcspn(line, "\n")] = 0;
}

int main(int argc, char **argv)
{
	char line[64] = "", file[64] = "";
	first_line(0, line, sizeof line);
	if (argc > 1) {
		int fd = open(argv[1], O_RDONLY);
		if (fd < 0)
			return 2;
		first_line(fd, file, sizeof file);
		close(fd);
	}
	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (int i = 1; i <= 2; i++)
		printf("T%d mixed %lu\n", i, mixed[i]);
	printf("counter = %ld, stdin = %s%s%s\n", counter, line, argc > 1 ? ", file = " : "", file);
	return 0;
}
