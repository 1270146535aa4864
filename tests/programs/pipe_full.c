/*
 * tests/programs/pipe_full.c - a writer thread fills a pipe, then writes
 * three times as much with one fwrite while a reader thread is still to
 * drain it: the fwrite returns only after the reader's second read.
 *
 * A stdio write takes its place in the order before it runs, and a read
 * after it returns, so the reader's reads come after that fwrite in the
 * recording; its first one may too (the reader was preempted before it
 * took its place: tests/e2e/test_processes.py makes sure of it). An
 * ordered replay must not wait for the fwrite to end before draining the
 * pipe the fwrite is blocked on, over several reads.
 *
 * Usage: pipe_full   (prints the bytes read, their sum and the writer's result)
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK 65536

static int fds[2];
static sem_t filled;

static void *writer(void *arg)
{
	(void)arg;
	static char data[4 * CHUNK];
	for (int i = 0; i < 4; i++)
		memset(data + i * CHUNK, 'a' + i, CHUNK);
	FILE *f = fdopen(fds[1], "w");
	if (!f)
		return (void *)1;
	setvbuf(f, NULL, _IONBF, 0);
	int ok = fwrite(data, 1, CHUNK, f) == CHUNK; /* the pipe is full */
	sem_post(&filled);
	ok = ok && fwrite(data + CHUNK, 1, 3 * CHUNK, f) == 3 * CHUNK;
	fclose(f);
	return ok ? NULL : (void *)1;
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
	static char buf[CHUNK];
	pthread_t w;
	if (pipe(fds)) {
		perror("pipe");
		return 2;
	}
	sem_init(&filled, 0, 0);
	pthread_create(&w, NULL, writer, NULL);
	sem_wait(&filled);
	long total = 0, sum = 0;
	for (int round = 0; round < 4; round++) {
		long got = read_all(buf, CHUNK);
		for (long i = 0; i < got; i++)
			sum += buf[i];
		total += got;
	}
	void *ret;
	pthread_join(w, &ret);
	printf("read %ld bytes, sum %ld, writer %s\n", total, sum, ret ? "failed" : "ok");
	return ret != NULL;
}
