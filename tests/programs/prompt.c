/*
 * tests/programs/prompt.c - an interactive prompt, as a person meets it:
 * "name? " is printed without a newline and must show before the user
 * types (stdio flushes it only when stdout is a terminal); then it greets,
 * and says what its standard streams are.
 *
 * Rules: its output depends only on what was typed and on the kinds of its
 * streams, so a replay prints exactly what the recording printed.
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	char name[64] = "";
	printf("name? ");
	if (scanf("%63s", name) != 1)
		return 1;
	printf("hello %s; isatty: stdin %d stdout %d stderr %d\n", name, isatty(0), isatty(1), isatty(2));
	fprintf(stderr, "bye %s\n", name);
	return 0;
}
