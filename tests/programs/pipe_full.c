/*
 * tests/programs/pipe_full.c - a writer thread fills a pipe and writes
 * more while a reader thread is still to drain it: the second write
 * blocks until the reader's first read, and the writer's next event (a
 * sem_post) comes after that.
 *
 * The reader takes its place in the order only after its read returned,
 * so a recording may put that read after the writer's sem_post (the
 * reader was preempted in between). tests/e2e/test_processes.py makes
 * such a trace: its ordered replay must not wait for the writer's post
 * before draining the pipe the writer is blocked on.
 *
 * Usage: pipe_full   (prints the bytes read and their sum)
 */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fds[2];
static sem_t filled, wrote_more;
static char chunk[65536];

static void *writer(void *arg)
{
	(void)arg;
	for (int round = 0; round < 2; round++) {
		memset(chunk, 'a' + round, sizeof(chunk));
		if (write(fds[1], chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
			return (void *)1;
		sem_post(round == 0 ? &filled : &wrote_more);
	}
	close(fds[1]);
	return NULL;
}

/* All of n bytes (a pipe read may return fewer). */
static long read_all(char *buf, long n)
{
	long got = 0;
	while (got < n) {
		ssize_t r = read(fds[0], buf + got, (size_t)(n - got));
		if (r <= 0)
			break;
		got += r;
	}
	return got;
}

int main(void)
{
	static char buf[65536];
	pthread_t w;
	if (pipe(fds) || fcntl(fds[1], F_SETPIPE_SZ, 65536) != 65536) {
		perror("pipe");
		return 2;
	}
	sem_init(&filled, 0, 0);
	sem_init(&wrote_more, 0, 0);
	pthread_create(&w, NULL, writer, NULL);
	sem_wait(&filled); /* the pipe is full now */
	long total = 0, sum = 0;
	for (int round = 0; round < 2; round++) {
		long got = read_all(buf, sizeof(buf));
		for (long i = 0; i < got; i++)
			sum += buf[i];
		total += got;
	}
	sem_wait(&wrote_more);
	void *ret;
	pthread_join(w, &ret);
	printf("read %ld bytes, sum %ld, writer %s\n", total, sum, ret ? "failed" : "ok");
	return ret != NULL;
}
