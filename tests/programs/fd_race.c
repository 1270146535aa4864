/*
 * tests/programs/fd_race.c - two threads open, read and close files over
 * and over: each new descriptor takes the lowest free number, which
 * depends on whether the other thread's close came first. Replay gives
 * every descriptor its recorded number, so closes are ordered too.
 *
 * Usage: fd_race N   (prints the sum of the numbers each thread got)
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int rounds;

static void *work(void *arg)
{
	const char *path = arg;
	long sum = 0;
	for (int i = 0; i < rounds; i++) {
		int fd = open(path, O_RDONLY);
		char c;
		if (fd < 0 || read(fd, &c, 1) < 0)
			perror(path);
		sum += fd;
		close(fd);
	}
	return (void *)sum;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atoi(argv[1]) : 1000;
	pthread_t a, b;
	pthread_create(&a, NULL, work, "/dev/zero");
	pthread_create(&b, NULL, work, "/dev/urandom");
	void *sa, *sb;
	pthread_join(a, &sa);
	pthread_join(b, &sb);
	printf("descriptor sums %ld %ld\n", (long)sa, (long)sb);
	return 0;
}
