/*
 * tests/programs/temp_names.c - the old ways to pick a temporary name, as
 * old test suites still do (the linker warns of each): mktemp, tmpnam,
 * tmpnam_r and tempnam draw a name from glibc's own randomness, different in
 * every run. Creates nothing. Prints the names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char tpl[] = "/tmp/det-temp-XXXXXX";
	char own[L_tmpnam];
	char *named = tempnam("/tmp", "dtn");
	if (!mktemp(tpl)[0] || !tmpnam_r(own) || !named)
		return 2;
	printf("mktemp %s\ntmpnam %s\ntmpnam_r %s\ntempnam %s\n", tpl, tmpnam(NULL), own, named);
	free(named);
	return 0;
}
