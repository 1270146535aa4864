/* tests/programs/rawsyscall.c - reaches an input det cannot replay through
 * syscall(): det must stop with a message naming the call. */
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	char params[120] = {0};
	long r = syscall(SYS_io_uring_setup, 1, params);
	printf("io_uring_setup %ld\n", r);
	return 0;
}
