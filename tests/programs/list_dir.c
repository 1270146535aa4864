/*
 * tests/programs/list_dir.c - lists its working directory with readdir and
 * prints the names it found, sorted, and how many.
 *
 * What a directory holds changes between a recording and its replay (the
 * trace det was writing beside the program, files made since): replay must
 * show the program the recorded listing (tests/e2e/test_inputs.py).
 *
 * Usage: list_dir   (prints "N entries" then the names)
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	DIR *d = opendir(".");
	if (!d) {
		perror("opendir");
		return 1;
	}
	char *names[4096];
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 4096)
		names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	printf("%zu entries\n", n);
	for (size_t i = 0; i < n; i++)
		printf("%s\n", names[i]);
	return 0;
}
