/*
 * tests/programs/fifo_writer.c - write to a FIFO another process reads
 * (TLPI's fifo_seqnum_client, a shell's `cat < fifo`): the open waits for
 * the reader, then COUNT lines go in and the result of each write is
 * printed.
 *   fifo_writer PATH [COUNT]   (default 3)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: fifo_writer PATH [COUNT]\n");
		return 2;
	}
	int count = argc == 3 ? atoi(argv[2]) : 3;
	int fd = open(argv[1], O_WRONLY);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	printf("flags %s\n", fcntl(fd, F_GETFL) & O_NONBLOCK ? "nonblocking" : "blocking");
	for (int i = 0; i < count; i++) {
		char line[64];
		int len = snprintf(line, sizeof(line), "line %d\n", i);
		printf("wrote %zd\n", write(fd, line, (size_t)len));
	}
	printf("close %d\n", close(fd));
	return 0;
}
