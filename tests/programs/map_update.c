/*
 * tests/programs/map_update.c - a program that keeps state in a file it
 * maps, as a counter or a small database does: maps argv[1] shared and
 * writable, prints the count it holds and stores the count + 1 through the
 * mapping; maps argv[2] read-only (shared, from a read-only descriptor)
 * and privately, and prints its first line both ways. Creates argv[1] with
 * a count of 0 if it is missing.
 * Usage: map_update COUNTER_FILE TEXT_FILE
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define COUNTER_BYTES 32

static void first_line(const char *how, const char *p, size_t n)
{
	size_t k = 0;
	while (k < n && p[k] != '\n')
		k++;
	printf("%s: %.*s\n", how, (int)k, p);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int fd = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, COUNTER_BYTES) != 0)
		return 3;
	char *c = mmap(NULL, COUNTER_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c == MAP_FAILED)
		return 4;
	long count = atol(c);
	printf("count %ld\n", count);
	snprintf(c, COUNTER_BYTES, "%ld\n", count + 1);
	msync(c, COUNTER_BYTES, MS_SYNC);
	int tfd = open(argv[2], O_RDONLY);
	struct stat st;
	if (tfd < 0 || fstat(tfd, &st) != 0 || st.st_size == 0)
		return 5;
	char *shared = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, tfd, 0);
	char *own = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, tfd, 0);
	if (shared == MAP_FAILED || own == MAP_FAILED)
		return 6;
	first_line("shared", shared, (size_t)st.st_size);
	first_line("private", own, (size_t)st.st_size);
	return 0;
}
