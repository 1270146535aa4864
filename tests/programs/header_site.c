/* tests/programs/header_site.c - locks in a function defined in a header
 * (header_site.h). With gcc 12's DWARF 5, binutils 2.40's addr2line names
 * this file for those sites (the same line number, the includer's file);
 * det must name header_site.h, as gdb does. */
#include <stdio.h>

#include "header_site.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long v;

int main(void)
{
	long total = 0;
	for (int i = 0; i < 3; i++)
		total += header_add(&m, &v);
	printf("%ld\n", total);
	return 0;
}
