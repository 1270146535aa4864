/*
 * tests/programs/socketpair_bulk.c - one thread writes more into a socket
 * pair (or a pipe) in one call than the kernel buffers, another reads it in
 * small pieces: the write returns only after the reader took most of it.
 * A replay that holds the reads back until the write is over never ends.
 *
 * Usage: socketpair_bulk socketpair|pipe KIB
 * Prints the bytes read and their sum (the same every run).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fds[2];
static size_t total;

static void *writer(void *arg)
{
	(void)arg;
	char *buf = malloc(total);
	for (size_t i = 0; i < total; i++)
		buf[i] = (char)(i * 7);
	size_t off = 0;
	while (off < total) {
		ssize_t n = write(fds[1], buf + off, total - off);
		if (n <= 0) {
			perror("write");
			exit(2);
		}
		off += (size_t)n;
	}
	free(buf);
	close(fds[1]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s socketpair|pipe KIB\n", argv[0]);
		return 2;
	}
	total = (size_t)atol(argv[2]) * 1024;
	if (strcmp(argv[1], "pipe") ? socketpair(AF_UNIX, SOCK_STREAM, 0, fds) : pipe(fds)) {
		perror(argv[1]);
		return 2;
	}
	pthread_t th;
	pthread_create(&th, NULL, writer, NULL);
	char b[4096];
	size_t got = 0;
	unsigned long sum = 0;
	ssize_t n;
	while ((n = read(fds[0], b, sizeof(b))) > 0) {
		for (ssize_t i = 0; i < n; i++)
			sum += (unsigned char)b[i];
		got += (size_t)n;
	}
	pthread_join(th, NULL);
	printf("read %zu bytes, sum %lu\n", got, sum);
	return 0;
}
