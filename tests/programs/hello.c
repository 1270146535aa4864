/* tests/programs/hello.c - no threads at all (and, built with -static, a
 * program libdet.so cannot be preloaded into). */
#include <stdio.h>

int main(int argc, char **argv)
{
	printf("hello from %s with %d argument(s)\n", argv[0], argc - 1);
	return argc > 1 ? 7 : 0;
}
