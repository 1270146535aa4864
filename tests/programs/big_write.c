/*
 * tests/programs/big_write.c - one write of 400 kB to stdout, raw (write)
 * or through stdio (fwrite): into `| head -c 1000` it fills the pipe, head
 * reads the start and leaves, and the writer dies of SIGPIPE inside the
 * same call. That call never came back in the recording, yet its start was
 * read: replay skipped it and head's read came back short (or head waited
 * on a pipe whose writer's thread had vanished, its process still alive).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t n = 400000;
	char *b = malloc(n);
	if (!b)
		return 1;
	for (size_t i = 0; i < n; i++)
		b[i] = (char)('a' + i % 26);
	if (argc > 1 && strcmp(argv[1], "raw") == 0) {
		if (write(1, b, n) < 0)
			return 2;
	} else {
		fwrite(b, 1, n, stdout);
		fflush(stdout);
	}
	return 0;
}
