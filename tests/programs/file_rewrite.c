/*
 * tests/programs/file_rewrite.c - read a file, then save it anew, as
 * programs keep their state: by replay, the bytes the recording read are
 * gone. Prints what read, pread and the offset saw.
 *   file_rewrite PATH rdwr     read through a descriptor open for reading
 *                              and writing, then rewrite it in place (a
 *                              database, a state file)
 *   file_rewrite PATH rename   read through a read-only descriptor, then
 *                              write PATH.new and rename it over PATH
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[2], "rdwr") && strcmp(argv[2], "rename"))) {
		fprintf(stderr, "usage: file_rewrite PATH rdwr|rename\n");
		return 2;
	}
	int in_place = strcmp(argv[2], "rdwr") == 0;
	int fd = open(argv[1], in_place ? O_RDWR : O_RDONLY);
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
	size_t len = strlen(next);
	if (in_place) {
		if (ftruncate(fd, 0) != 0 || pwrite(fd, next, len, 0) != (ssize_t)len) {
			perror("rewrite");
			return 1;
		}
		return close(fd);
	}
	close(fd);
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.new", argv[1]);
	int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (out < 0 || write(out, next, len) != (ssize_t)len || close(out) != 0 || rename(tmp, argv[1]) != 0) {
		perror("save");
		return 1;
	}
	return 0;
}
