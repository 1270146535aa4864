/*
 * tests/programs/file_rewrite.c - read a file through a descriptor open for
 * reading and writing, then rewrite it (a database, a file that keeps a
 * program's state): by replay, the bytes the recording read are gone.
 * Prints what read, pread and the offset saw.
 *   file_rewrite PATH
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: file_rewrite PATH\n");
		return 2;
	}
	int fd = open(argv[1], O_RDWR);
	if (fd < 0) {
		perror("open");
		return 1;
	}
	char buf[8];
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		printf("read %zd: %.*s\n", n, (int)n, buf);
	printf("read %zd at the end, offset %ld\n", n, (long)lseek(fd, 0, SEEK_CUR));
	n = pread(fd, buf, 5, 6);
	printf("pread %zd: %.*s, offset %ld\n", n, (int)(n > 0 ? n : 0), buf, (long)lseek(fd, 0, SEEK_CUR));
	const char *next = "rewritten by the program\n";
	if (ftruncate(fd, 0) != 0 || pwrite(fd, next, strlen(next), 0) != (ssize_t)strlen(next)) {
		perror("rewrite");
		return 1;
	}
	return close(fd);
}
