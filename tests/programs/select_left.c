/*
 * tests/programs/select_left.c - select() on Linux writes back the time it
 * did not sleep (TLPI's t_select and self_pipe print it): a 2 s timeout on a
 * pipe that is ready at once leaves about 2 s, one that expires leaves 0.
 * Prints the time left in tenths of a second, and which fd was ready.
 */
#include <stdio.h>
#include <sys/select.h>
#include <unistd.h>

static void wait_for(int fd, long usec)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(fd, &r);
	struct timeval tv = {usec / 1000000, usec % 1000000};
	int n = select(fd + 1, &r, NULL, NULL, &tv);
	long tenths = (tv.tv_sec * 1000000 + tv.tv_usec + 50000) / 100000;
	printf("select: %d ready, fd %s, %ld.%ld s left\n", n, FD_ISSET(fd, &r) ? "set" : "clear", tenths / 10, tenths % 10);
}

int main(void)
{
	int p[2];
	if (pipe(p) != 0)
		return 1;
	wait_for(p[0], 200000);   /* nothing to read: times out */
	if (write(p[1], "x", 1) != 1)
		return 1;
	wait_for(p[0], 2000000);  /* readable at once */
	return 0;
}
