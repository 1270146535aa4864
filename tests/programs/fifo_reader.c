/*
 * tests/programs/fifo_reader.c - read a FIFO another process writes (TLPI's
 * epoll_input on a FIFO, fifo_seqnum_server): the open waits for the
 * writer, then everything read until the writer closes is printed.
 *   fifo_reader PATH
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: fifo_reader PATH\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	printf("flags %s\n", fcntl(fd, F_GETFL) & O_NONBLOCK ? "nonblocking" : "blocking");
	char buf[256];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		printf("read %zd: %.*s\n", n, (int)n, buf);
	printf("end %zd\n", n);
	return 0;
}
