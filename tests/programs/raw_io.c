/* tests/programs/raw_io.c - reads and writes made with syscall(SYS_...)
 * rather than libc's functions (Go, Rust's std and static programs do):
 * readv, preadv, writev, recvmsg, recvmmsg, sendmsg, sendmmsg, on a pipe,
 * a regular file and a socket pair; each result printed. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	char a[8] = {0}, b[8] = {0};
	struct iovec two[2] = {{a, 4}, {b, 4}};

	int p[2];
	pipe(p);
	struct iovec w[2] = {{"abcd", 4}, {"efgh", 4}};
	printf("writev %ld\n", syscall(SYS_writev, p[1], w, 2));
	printf("readv %ld '%s' '%s'\n", syscall(SYS_readv, p[0], two, 2), a, b);

	char path[] = "/tmp/raw_io.XXXXXX";
	int f = mkstemp(path);
	unlink(path);
	write(f, "0123456789", 10);
	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	printf("preadv %ld '%s' '%s'\n", syscall(SYS_preadv, f, two, 2, 2L, 0L), a, b);
	memset(a, 0, sizeof(a));
	printf("pread64 %ld '%s'\n", syscall(SYS_pread64, f, a, 3L, 7L), a);

	int sv[2];
	socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
	struct iovec one = {"datagram", 8};
	struct msghdr m = {0};
	m.msg_iov = &one;
	m.msg_iovlen = 1;
	printf("sendmsg %ld\n", syscall(SYS_sendmsg, sv[1], &m, 0));
	char buf[16] = {0};
	struct iovec in = {buf, sizeof(buf) - 1};
	struct msghdr r = {0};
	r.msg_iov = &in;
	r.msg_iovlen = 1;
	printf("recvmsg %ld '%s'\n", syscall(SYS_recvmsg, sv[0], &r, 0), buf);

	struct mmsghdr out[3];
	struct iovec oi[3] = {{"one", 3}, {"three", 5}, {"five!", 5}};
	memset(out, 0, sizeof(out));
	for (int i = 0; i < 3; i++) {
		out[i].msg_hdr.msg_iov = &oi[i];
		out[i].msg_hdr.msg_iovlen = 1;
	}
	printf("sendmmsg %ld\n", syscall(SYS_sendmmsg, sv[1], out, 3, 0));
	char bufs[4][8];
	struct iovec ii[4];
	struct mmsghdr msgs[4];
	memset(bufs, 0, sizeof(bufs));
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < 4; i++) {
		ii[i].iov_base = bufs[i];
		ii[i].iov_len = 7;
		msgs[i].msg_hdr.msg_iov = &ii[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	long n = syscall(SYS_recvmmsg, sv[0], msgs, 4, MSG_DONTWAIT, NULL);
	printf("recvmmsg %ld:", n);
	for (long i = 0; i < n; i++)
		printf(" %u '%s'", msgs[i].msg_len, bufs[i]);
	printf("\n");
	n = recvmmsg(sv[0], msgs, 4, MSG_DONTWAIT, NULL);
	printf("recvmmsg empty %ld\n", n);
	return 0;
}
