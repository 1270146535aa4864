/* tests/programs/rawsyscall.c - reaches an input det cannot replay through
 * syscall(): det must stop with a message naming the call. */
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	struct mmsghdr m[1] = {0};
	long r = syscall(SYS_recvmmsg, sv[1], m, 1, MSG_DONTWAIT, NULL);
	printf("recvmmsg %ld\n", r);
	return 0;
}
